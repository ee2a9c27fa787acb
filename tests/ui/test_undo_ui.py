"""Pilot tests of ``/undo`` and ``/diff`` in the app (issue #31): the real harness, a scripted model, real bash
and write tools on real files; the question lists the files and is never answered by keys typed for the
composer."""

from __future__ import annotations

import json

from dsh_tui.extensions.undo import ops
from dsh_tui.llm import scripted
from dsh_tui.ui.screens import undo as undo_screen
from dsh_tui.ui.screens.undo import UndoModal
from tests.ui.conftest import items, scripted_app, submit, wait_for
from tests.ui.screen_text import screen_text

BASH = json.dumps({"command": "printf 'changed by turn 1\\n' > a.txt && echo c > c.txt", "description": "edit"})
WRITE = json.dumps({"file_path": "b.txt", "content": "b from turn 2\n"})


def _journey_app(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("original a\n")
    return ws, scripted_app(tmp_path, [scripted.call("c1", "bash", BASH), scripted.text("turn 1 done"),
                                       scripted.call("c2", "write", WRITE), scripted.text("turn 2 done")])


async def _two_turns(pilot, app):
    await wait_for(pilot, lambda: app.bridge.harness is not None, timeout=30)
    await submit(pilot, "change a, make c")
    await wait_for(pilot, lambda: len(items(app, "footer")) == 1, timeout=30)
    await submit(pilot, "make b")
    await wait_for(pilot, lambda: len(items(app, "footer")) == 2, timeout=30)
    await wait_for(pilot, lambda: len([e for e in app.bridge.harness.session.events
                                       if e["type"] == ops.TURN_EVENT]) == 2, timeout=30)


async def test_undo_asks_lists_the_files_and_puts_them_back(tmp_path, monkeypatch):
    monkeypatch.setattr(undo_screen, "GRACE_S", 0)
    ws, app = _journey_app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await _two_turns(pilot, app)
        text = screen_text(app)  # the turn footers name the files each turn changed
        assert "changed a.txt +1 −1, c.txt (new)" in text and "changed b.txt (new)" in text
        await submit(pilot, "/diff")
        await wait_for(pilot, lambda: "b from turn 2" in screen_text(app), timeout=30)
        assert "changed by turn 1" in screen_text(app)

        await submit(pilot, "/undo")
        await wait_for(pilot, lambda: isinstance(app.screen, UndoModal), timeout=30)
        text = screen_text(app)
        assert "b.txt" in text and "a.txt" not in text.split("Put these files back?")[0].split("Undo turn 2")[1]
        await pilot.press("escape")  # cancelled: nothing changes
        await wait_for(pilot, lambda: not isinstance(app.screen, UndoModal), timeout=30)
        assert (ws / "b.txt").exists()

        await submit(pilot, "/undo")
        await wait_for(pilot, lambda: isinstance(app.screen, UndoModal), timeout=30)
        await pilot.press("up", "enter")  # Cancel is highlighted: up to "Undo"
        await wait_for(pilot, lambda: not (ws / "b.txt").exists(), timeout=30)
        assert (ws / "a.txt").read_text() == "changed by turn 1\n"

        await submit(pilot, "/undo 1")
        await wait_for(pilot, lambda: isinstance(app.screen, UndoModal), timeout=30)
        await pilot.press("up", "enter")
        await wait_for(pilot, lambda: not (ws / "c.txt").exists(), timeout=30)
        assert (ws / "a.txt").read_text() == "original a\n"
        await wait_for(pilot, lambda: "put back" in screen_text(app), timeout=30)
        assert "undone" in screen_text(app)
        undos = [e["data"]["turns"] for e in app.bridge.harness.session.events if e["type"] == ops.UNDO_EVENT]
        assert undos == [[2], [1]]


async def test_keys_typed_for_the_composer_never_answer_the_question(tmp_path, monkeypatch):
    monkeypatch.setattr(undo_screen, "GRACE_S", 30)  # the choices refuse keys all through this test
    ws, app = _journey_app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await _two_turns(pilot, app)
        await submit(pilot, "/undo")
        await wait_for(pilot, lambda: isinstance(app.screen, UndoModal), timeout=30)
        modal = app.screen
        await pilot.press("y", "enter")  # typed on, for the composer
        await pilot.pause(0.2)
        assert app.screen is modal and (ws / "b.txt").exists()
        assert "Undo cancelled" not in screen_text(app)


async def test_a_file_changed_since_is_named_and_kept_unless_overwriting_is_chosen(tmp_path, monkeypatch):
    monkeypatch.setattr(undo_screen, "GRACE_S", 0)
    ws, app = _journey_app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await _two_turns(pilot, app)
        (ws / "b.txt").write_text("my edit\n")
        await submit(pilot, "/undo")
        await wait_for(pilot, lambda: isinstance(app.screen, UndoModal), timeout=30)
        assert "Changed since the turn" in screen_text(app) and "overwriting" in screen_text(app)
        await pilot.press("enter")  # Cancel
        await wait_for(pilot, lambda: not isinstance(app.screen, UndoModal), timeout=30)
        assert (ws / "b.txt").read_text() == "my edit\n"


async def test_rewind_offers_conversation_only_or_conversation_and_files(tmp_path, monkeypatch):
    from dsh_tui.ui.screens.modals import ChoiceModal
    from dsh_tui.ui.screens.rewind import RewindModal

    ws, app = _journey_app(tmp_path)
    async with app.run_test(size=(120, 30)) as pilot:
        await _two_turns(pilot, app)
        parent_chat = app.chat
        await pilot.press("escape", "escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RewindModal), timeout=30)
        await pilot.press("up", "enter")  # before turn 1
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceModal) and not isinstance(app.screen, RewindModal), timeout=30)
        text = screen_text(app)
        assert "conversation only" in text and "conversation and files (3 files put back" in text
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: app.chat is not parent_chat and app.chat.attached, timeout=30)
        assert (ws / "a.txt").read_text() == "original a\n"
        assert not (ws / "b.txt").exists() and not (ws / "c.txt").exists()
        assert app.chat.composer.text == "change a, make c"


async def test_rewind_conversation_only_leaves_the_files(tmp_path):
    from dsh_tui.ui.screens.modals import ChoiceModal
    from dsh_tui.ui.screens.rewind import RewindModal

    ws, app = _journey_app(tmp_path)
    async with app.run_test(size=(120, 30)) as pilot:
        await _two_turns(pilot, app)
        parent_chat = app.chat
        await pilot.press("escape", "escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RewindModal), timeout=30)
        await pilot.press("enter")  # before turn 2
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceModal) and not isinstance(app.screen, RewindModal), timeout=30)
        assert "(1 file put back: b.txt)" in screen_text(app)
        await pilot.press("enter")  # conversation only: the first choice
        await wait_for(pilot, lambda: app.chat is not parent_chat and app.chat.attached, timeout=30)
        assert (ws / "b.txt").exists() and (ws / "c.txt").exists()


async def test_browser_fork_offers_conversation_and_files(tmp_path, monkeypatch):
    from dsh_tui.ui.app import DshApp
    from dsh_tui.ui.screens.browser import BrowserScreen, ChoiceModal
    from tests.runtime.test_undo import two_turns

    ws, root, sid = two_turns(tmp_path)  # headless run + resume: turn 1 (bash: a, c), turn 2 (write: b)
    monkeypatch.chdir(ws)
    app = DshApp(None, start="chat")
    browser = BrowserScreen(app, roots=[root], db_path=tmp_path / "cat.sqlite", cwd=str(ws))
    async with app.run_test(size=(120, 32)) as pilot:
        await app.push_screen(browser)
        await wait_for(pilot, lambda: browser.indexed.is_set() and browser.indexing is None, timeout=30)
        await pilot.pause()
        browser.list.focus()
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceModal), timeout=30)
        assert [v for _, v in app.screen.choices] == [2, 1]
        await pilot.press("down", "enter")  # after turn 1
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceModal) and "What goes" in screen_text(app), timeout=30)
        assert "conversation and files (1 file put back: b.txt)" in screen_text(app)
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: len(browser.list.entries) == 2, timeout=30)
    assert not (ws / "b.txt").exists()
    assert (ws / "a.txt").read_text() == "changed by turn 1\n" and (ws / "c.txt").exists()


async def test_a_cancelled_turn_is_recorded_after_its_end_and_undoable(tmp_path, monkeypatch):
    from dsh_tui.llm.scripted import Hang

    monkeypatch.setattr(undo_screen, "GRACE_S", 0)
    ws = tmp_path / "ws"
    ws.mkdir()
    bash = json.dumps({"command": "echo made > made.txt", "description": "make"})
    app = scripted_app(tmp_path, [scripted.call("c1", "bash", bash),
                                  [{"type": "block-start", "index": 0, "blockType": "text"},
                                   {"type": "text-delta", "index": 0, "text": "thinking about it"}, Hang()]])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None, timeout=30)
        await submit(pilot, "make a file")
        await wait_for(pilot, lambda: "thinking about it" in screen_text(app), timeout=30)
        assert (ws / "made.txt").exists()
        await pilot.press("escape")  # cancel: the turn ends without stopping
        await wait_for(pilot, lambda: "changed made.txt (new)" in screen_text(app), timeout=30)
        events = app.bridge.harness.session.events
        ends = [e["seq"] for e in events if e["type"] == "turn/end"]
        recs = [e["seq"] for e in events if e["type"] == ops.TURN_EVENT]
        assert len(ends) == 1 and len(recs) == 1 and recs[0] > ends[0]  # after its end
        await submit(pilot, "/undo")
        await wait_for(pilot, lambda: isinstance(app.screen, UndoModal), timeout=30)
        await pilot.press("up", "enter")
        await wait_for(pilot, lambda: not (ws / "made.txt").exists(), timeout=30)


async def test_undo_says_why_when_snapshots_are_off(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("HOME", str(ws))  # the workspace is the home folder: never snapshotted
    bash = json.dumps({"command": "echo made > made.txt", "description": "make"})
    app = scripted_app(tmp_path, [scripted.call("c1", "bash", bash), scripted.text("done")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None, timeout=30)
        await submit(pilot, "make a file")
        await wait_for(pilot, lambda: len(items(app, "footer")) == 1, timeout=30)
        assert (ws / "made.txt").exists()
        await submit(pilot, "/undo")
        await wait_for(pilot, lambda: "not recorded here" in screen_text(app), timeout=30)
        assert "home folder" in screen_text(app) and (ws / "made.txt").exists()
