"""Ctrl+G: the draft in ``$VISUAL`` / ``$EDITOR`` (issue #20).

The editors are real programs (small shell scripts that rewrite the file they are given, or fail); the
round trip is tested as a function and through the composer on the real app. A pilot has no terminal to
hand over, so the app's suspend (which needs one) is replaced by a no-op there; the real suspend is driven
in tmux (see the issue).
"""

from __future__ import annotations

import contextlib
import stat
from pathlib import Path

from dsh_tui.llm import scripted
from dsh_tui.ui.editor import edit_text, editor_command
from tests.ui.conftest import items, scripted_app, wait_for
from tests.ui.screen_text import screen_text


def _script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _rewriter(tmp_path: Path) -> Path:
    """An editor that records the file it was given and what was in it, then rewrites it."""
    return _script(tmp_path, "editor.sh",
                   f'echo "$1" > {tmp_path}/given\ncp "$1" {tmp_path}/seen\n'
                   'printf "edited line 1\\nedited: %s\\n\\n" "$(cat "$1")" > "$1"\n')


def test_edit_round_trip_takes_the_saved_text_trims_trailing_newlines_and_removes_the_file(tmp_path):
    editor = _rewriter(tmp_path)
    result = edit_text("my draft\nsecond", env={"EDITOR": str(editor)})
    assert result.problem == "" and result.text == "edited line 1\nedited: my draft\nsecond"
    assert (tmp_path / "seen").read_text(encoding="utf-8") == "my draft\nsecond"  # the draft, as it was
    assert not Path((tmp_path / "given").read_text(encoding="utf-8").strip()).exists()  # cleaned up


def test_visual_wins_over_editor_and_arguments_are_split_as_a_shell_would(tmp_path):
    editor = _script(tmp_path, "with args.sh", 'printf "%s" "$1" > "$2"\n')
    env = {"VISUAL": f"'{editor}' --flag", "EDITOR": "/nonexistent/editor"}
    assert editor_command(env) == [str(editor), "--flag"]
    assert edit_text("x", env=env).text == "--flag"
    assert editor_command({}) == ["vi"]


def test_a_failing_or_missing_editor_keeps_the_draft_with_one_line_why(tmp_path):
    failing = _script(tmp_path, "fail.sh", f'echo "$1" > {tmp_path}/given\necho changed > "$1"\nexit 3\n')
    result = edit_text("draft", env={"EDITOR": str(failing)})
    assert result.text is None and result.problem == "The editor exited with status 3: the draft is unchanged."
    missing = edit_text("draft", env={"EDITOR": str(tmp_path / "no-such-editor")})
    assert missing.text is None and "not found (set $VISUAL or $EDITOR)" in missing.problem
    assert "\n" not in missing.problem
    assert not Path((tmp_path / "given").read_text(encoding="utf-8").strip()).exists()  # cleaned up too
    assert edit_text("draft", env={"EDITOR": "'unbalanced"}).text is None


async def test_ctrl_g_replaces_the_draft_with_the_edited_text_which_sends_whole(tmp_path, monkeypatch):
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", str(_rewriter(tmp_path)))
    app = scripted_app(tmp_path, [scripted.text("ok")])
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        composer = app.chat.composer
        suspended: list[bool] = []

        @contextlib.contextmanager
        def no_terminal():  # what App.suspend does around the editor, minus the terminal hand-over
            suspended.append(True)
            yield

        composer.suspend_app = no_terminal
        await pilot.press(*"fix it", "ctrl+g")
        await pilot.pause()
        assert suspended == [True]
        assert composer.value == "edited line 1\nedited: fix it" and composer.has_focus
        assert composer.cursor_location == (1, len("edited: fix it"))
        assert "edited: fix it" in screen_text(app)
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(items(app, "footer")) == 1)
        sent = [e["data"]["content"][0]["text"] for e in app.bridge.harness.session.events
                if e["type"] == "user/message" and e["data"]["source"]["kind"] == "user"]
        assert sent == ["edited line 1\nedited: fix it"]


async def test_ctrl_g_with_a_failing_editor_or_no_terminal_says_so_and_keeps_the_draft(tmp_path, monkeypatch):
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", str(_script(tmp_path, "fail.sh", 'echo changed > "$1"\nexit 1\n')))
    app = scripted_app(tmp_path, [])
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        composer = app.chat.composer
        await pilot.press(*"keep me", "ctrl+g")  # the pilot's driver cannot suspend: the real App.suspend
        await pilot.pause(0.1)
        assert composer.value == "keep me" and "needs a terminal" in screen_text(app)
        composer.suspend_app = contextlib.nullcontext
        await pilot.press("ctrl+g")
        await pilot.pause(0.1)
        assert composer.value == "keep me" and "exited with status 1" in screen_text(app)
