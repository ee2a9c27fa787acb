"""Served to a browser (``DSH_TUI_SERVED=1``, set by ``dsh-tui serve``): the keys a browser keeps for itself
(Ctrl+N new window, Ctrl+T new tab) have function-key alternatives, shown in the footer and the F1 help."""

from __future__ import annotations

from textual.widgets import Markdown

from dsh_tui.ui.app import DshApp
from dsh_tui.ui.screens.chat import ChatScreen
from tests.ui.conftest import submit, wait_for
from tests.ui.test_browser_nav import browser, footer, indexed, provider, world


def help_markdown(app) -> str:
    panel = app.screen.query_one("HelpPanel")
    return panel.query_one(Markdown).source


def _visible(app) -> str:
    """The text on the screen (the SVG screenshot's), each run of spaces as one."""
    import html
    import re

    svg = app.export_screenshot()
    return " ".join(html.unescape(" ".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg))).split())


async def test_served_app_names_f2_and_f3_for_the_keys_a_browser_keeps(tmp_path, monkeypatch):
    monkeypatch.setenv("DSH_TUI_SERVED", "1")
    w = world(tmp_path, monkeypatch)
    app = DshApp(None, start="chat")
    model = provider("fresh answer")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = browser(app, w, provider_route=lambda: (model, "mock-model", ""))
        await app.push_screen(screen)
        await indexed(pilot, screen)
        screen.query_one("#filter").focus()
        await pilot.pause()
        text = footer(screen)
        assert "f2 New session" in text and "^n" not in text, text
        await pilot.press("f1")
        await wait_for(pilot, lambda: bool(app.screen.query("HelpPanel")))
        await pilot.pause()
        shown = help_markdown(app)
        assert "**F2** starts a new session" in shown and "Ctrl+N" not in shown, shown
        await pilot.press("f1")
        await pilot.press("f2")  # the new session, as Ctrl+N does outside a browser
        await wait_for(pilot, lambda: isinstance(app.screen, ChatScreen) and app.bridge.harness is not None)
        session = app.bridge.harness.session
        await pilot.press("f1")  # the chat's help names F3 for the timeline, not the browser's Ctrl+T
        await wait_for(pilot, lambda: bool(app.screen.query("HelpPanel")))
        await pilot.pause()
        shown = help_markdown(app)
        assert "**F3** the timeline of this session" in shown and "Ctrl+T" not in shown, shown
        # the chat's help is longer than the panel's half: it scrolls (Textual's clips it), down to that line
        markdown = app.screen.query_one("HelpPanel").query_one(Markdown)
        assert markdown.allow_vertical_scroll and markdown.max_scroll_y > 0
        assert "F3" not in _visible(app)
        markdown.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        assert "F3 the timeline" in _visible(app)
        await pilot.press("f1")
        await submit(pilot, "a question from the browser")
        await wait_for(pilot, lambda: "turn/end" in [e["type"] for e in session.events])
        await pilot.press("f3")  # the chat's timeline, as Ctrl+T does outside a browser
        await wait_for(pilot, lambda: type(app.screen).__name__ == "TimelineScreen")


async def test_outside_a_browser_the_keys_and_help_are_unchanged(tmp_path, monkeypatch):
    monkeypatch.delenv("DSH_TUI_SERVED", raising=False)
    w = world(tmp_path, monkeypatch)
    app = DshApp(None, start="chat")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = browser(app, w)
        await app.push_screen(screen)
        await indexed(pilot, screen)
        screen.query_one("#filter").focus()
        await pilot.pause()
        assert "^n New session" in footer(screen) and "f2" not in footer(screen)
        assert "**Ctrl+N** starts a new session" in screen.HELP
        assert "**Ctrl+T** the timeline of this session" in ChatScreen.HELP
        await pilot.press("f2")  # not bound here
        await pilot.pause()
        assert app.screen is screen


async def test_a_keymap_entry_in_settings_wins_over_the_served_alternative(tmp_path, monkeypatch):
    monkeypatch.setenv("DSH_TUI_SERVED", "1")
    w = world(tmp_path, monkeypatch)
    app = DshApp(None, start="chat")
    app.settings.set("keymap.browser.new", "f9")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = browser(app, w)
        await app.push_screen(screen)
        await indexed(pilot, screen)
        screen.query_one("#filter").focus()
        await pilot.pause()
        assert "f9 New session" in footer(screen)
