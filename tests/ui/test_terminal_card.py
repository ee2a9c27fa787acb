"""The terminal card (dsh_tui/ui/widgets/terminal.py): the live screen of the agent's terminal above the
composer, and the user attached to it (Enter), typing the answer to the prompt a command is stuck on, then
detaching (F12). The real app, harness and terminals plugin on a real PTY, with a scripted model."""

from __future__ import annotations

import sys

import pytest

from dsh_tui.llm import scripted
from tests.ui.conftest import scripted_app, wait_for
from tests.ui.screen_text import screen_text

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PTYs: Linux")


@pytest.fixture(autouse=True)
def _terminals_on(tmp_path, monkeypatch):
    config = tmp_path / "config"
    (config / "dsh-tui").mkdir(parents=True)
    (config / "dsh-tui" / "settings.toml").write_text("[plugins.terminals]\nenabled = true\nidle_silence_ms = 500\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def _screen(app) -> list[str]:
    session = app.bridge.harness.agent.terminals.session("pty-1")
    return session.screen() if session is not None else []


async def test_a_user_attaches_to_a_stuck_terminal_answers_it_and_detaches(tmp_path):
    app = scripted_app(tmp_path, [
        scripted.call("c1", "terminal_open", {"type": "shell", "name": "main"}),
        scripted.call("c2", "terminal_send", {"sessionId": "pty-1", "text": "read -p 'Name? ' n; echo hello $n"}),
        scripted.text("It is waiting for a name."),
    ])
    async with app.run_test(size=(100, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        app.chat.composer.value = "ask me my name in a terminal"
        await pilot.press("enter")
        await wait_for(pilot, lambda: "It is waiting for a name." in screen_text(app), timeout=20)
        await wait_for(pilot, lambda: "▣ terminal pty-1 (main) · running" in screen_text(app))
        assert "Name?" in screen_text(app)  # the live screen
        await pilot.press("f6")
        await wait_for(pilot, lambda: "Enter attaches" in screen_text(app))
        await pilot.press("enter")
        await wait_for(pilot, lambda: "attached: keys go to the terminal" in screen_text(app))
        for key in "Bob":
            await pilot.press(key)
        await pilot.press("enter")
        await wait_for(pilot, lambda: "hello Bob" in _screen(app))
        await wait_for(pilot, lambda: "hello Bob" in screen_text(app))
        assert app.chat.composer.value == ""  # the keys went to the terminal, not the composer
        await pilot.press("f12")
        await wait_for(pilot, lambda: "Enter attaches" in screen_text(app))
        await pilot.press("escape")
        await pilot.pause()
        assert app.chat.composer.has_focus
        await pilot.press("x")
        assert app.chat.composer.value == "x"
