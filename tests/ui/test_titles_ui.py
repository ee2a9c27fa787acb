"""Titles and project instructions in the app: the chat header shows the fallback title, then the LLM
title; a workspace with AGENTS.md shows a collapsed "Context · instructions · AGENTS.md" row."""

from __future__ import annotations

from dsh_tui.llm.scripted import text
from dsh_tui.ui.widgets.render import render_context
from tests.ui.conftest import items, scripted_app, submit, wait_for


async def test_a_new_chat_gets_a_title_header_and_an_instructions_row(tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "AGENTS.md").write_text("Answer in one line.\n")
    app = scripted_app(tmp_path, [text("Done.")], titles=[text("Login bug fix")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None, 20)
        assert app.chat.title_bar is None  # no title yet: no header line
        await submit(pilot, "Fix the login bug in auth.py please")
        await wait_for(pilot, lambda: app.chat.title_text == "Login bug fix", 20)
        # the header line is mounted on first use: laid out a refresh later
        await wait_for(pilot, lambda: app.chat.title_bar.region.height == 1)
        assert app.chat.title_bar.region.y == 0
        session = app.bridge.harness.session
        assert [(e["data"]["title"], e["data"]["source"]["kind"]) for e in session.events
                if e["type"] == "session/title"] == [("Fix the login bug in", "fallback"),
                                                     ("Login bug fix", "provider")]
        (row,) = [i for i in items(app, "context") if i.producer.startswith("instructions")]
        assert row.producer == "instructions · AGENTS.md"
        assert "Answer in one line." in row.text
        assert render_context(row, expanded=False).plain.startswith("▸ Context · instructions · AGENTS.md")


async def test_renaming_the_open_session_in_the_browser_pins_a_user_title(tmp_path):
    """``n`` on the session the chat has open: its log is locked by this process, so the live session
    appends the ``source: user`` title; the browser row and the chat header show it, and no later automatic
    title replaces it."""
    from dsh_tui.ui.screens.browser import BrowserScreen, TextModal

    app = scripted_app(tmp_path, [text("Done.")], titles=[text("Generated title")])
    async with app.run_test(size=(110, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None, 20)
        await submit(pilot, "Fix the login bug in auth.py please")
        await wait_for(pilot, lambda: app.chat.title_text == "Generated title", 20)
        await pilot.press("ctrl+b")
        await wait_for(pilot, lambda: isinstance(app.screen, BrowserScreen), 20)
        browser = app.screen
        await wait_for(pilot, lambda: bool(browser.list.entries), 20)
        browser.list.focus()
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, TextModal))
        app.screen.query_one("#text").value = "  My \x1b[1mrenamed\x1b[0m   session "
        await pilot.press("enter")
        await wait_for(pilot, lambda: any(e.row.title == "My renamed session" for e in browser.list.entries), 20)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.chat.title_text == "My renamed session", 20)
        session = app.bridge.harness.session
        last = [e for e in session.events if e["type"] == "session/title"][-1]
        assert last["data"] == {"title": "My renamed session", "messageSeqs": [], "source": {"kind": "user"}}
