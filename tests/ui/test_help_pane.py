"""F1: the help pane of the chat and of the session browser can be read to its last line at 80x24 and
120x36 (Textual's pane gave the text half the height and cut the rest; Shift+PageUp/PageDown scroll it), and the chat's help names the
keys that leave it (Ctrl+B, Ctrl+T) and the scrolling keys."""

from __future__ import annotations

import re

import pytest
from textual.widgets import Markdown

from dsh_tui.ui.app import DshApp
from tests.ui.screen_text import screen_text
from tests.ui.test_browser_nav import browser, indexed, world


def pane_text(app) -> str:
    """The help pane's text as one line (its column of the screen; wrapping undone)."""
    panel = app.screen.query_one("HelpPanel")
    x0 = panel.region.x
    column = [row[x0:] for row in screen_text(app).splitlines()]
    return re.sub(r"\s+", " ", " ".join(column).replace("▏", " "))


async def read_to_the_end(app, pilot) -> str:
    """Shift+PageDown until the text stops moving (the keyboard scrolls the pane's text)."""
    help_text = app.screen.query_one("HelpPanel").query_one("#widget-help", Markdown)
    for _ in range(40):
        before = help_text.scroll_y
        await pilot.press("shift+pagedown")
        await pilot.pause(0.05)
        if help_text.scroll_y == before:
            break
    await pilot.pause(0.2)
    return pane_text(app)


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_the_chats_help_reads_to_its_last_line(size):
    app = DshApp(None)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await pilot.press("f1")
        await pilot.pause(0.3)
        source = app.screen.query_one("HelpPanel").query_one("#widget-help", Markdown).source
        for key in ("**Ctrl+B**", "**Ctrl+T**", "**PageUp / PageDown**", "**Ctrl+Q**"):
            assert key in source
        shown = await read_to_the_end(app, pilot)
        assert "Ctrl+Q quits and prints how to resume." in shown, shown


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_the_browsers_help_reads_to_its_last_line(tmp_path, monkeypatch, size):
    w = world(tmp_path, monkeypatch)
    app = DshApp(None, start="chat")
    async with app.run_test(size=size) as pilot:
        screen = browser(app, w)
        await app.push_screen(screen)
        await indexed(pilot, screen)
        await pilot.press("f1")
        await pilot.pause(0.3)
        shown = await read_to_the_end(app, pilot)
        assert "archived sessions (Enter unarchives)." in shown, shown
