"""``!command`` in the composer (Claude Code's shell mode): the user runs a command on the real app and harness,
sees its output above the composer, and the scripted model gets input and output with the next prompt."""

from __future__ import annotations

import json

from dsh_tui.llm import scripted
from tests.ui.conftest import scripted_app, wait_for
from tests.ui.screen_text import screen_text


def _turns(app) -> list[str]:
    """The turn requests the model got (the title request left out), as JSON text."""
    return [json.dumps(r["messages"]) for r in app.provider.requests if r.get("purpose", "turn") == "turn"
            and "Create a concise title" not in json.dumps(r["messages"])[:400]]


async def test_bang_runs_a_command_shows_its_output_and_the_model_gets_it_next(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("I see the files.")])
    (tmp_path / "ws" / "notes.txt").write_text("hello\n")
    async with app.run_test(size=(100, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        app.chat.composer.value = "!ls; echo oops >&2; exit 3"
        await pilot.press("enter")
        await wait_for(pilot, lambda: "[exit code: 3]" in screen_text(app))
        text = screen_text(app)
        assert "$ ls; echo oops >&2; exit 3" in text and "notes.txt" in text and "oops" in text
        assert app.chat.composer.value == "" and app.provider.requests == []  # no turn started
        app.chat.composer.value = "what did you see?"
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(_turns(app)) == 1)
        sent = _turns(app)[0]
    assert "<bash-input>ls; echo oops >&2; exit 3</bash-input>" in sent
    assert "<bash-stdout>notes.txt</bash-stdout><bash-stderr>oops\\n[exit code: 3]</bash-stderr>" in sent
    assert sent.index("bash-input") < sent.index("what did you see?")


async def test_a_bare_bang_is_a_prompt(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("ok")])
    async with app.run_test(size=(100, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        app.chat.composer.value = "!"
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(_turns(app)) == 1)
