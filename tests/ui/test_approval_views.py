"""What an approval shows and what it leaves behind (issue #26.9): a write/edit approval shows the new file or the
diff (never escaped JSON); a rejection reason shows on the card, live and after resume; "allow for this
session" is logged (``approval/decided`` with ``scope: "session"``) and holds again after resume."""

from __future__ import annotations

from dsh_tui.llm import scripted
from dsh_tui.llm.scripted import ScriptedProvider
from dsh_tui.session.transcript import TranscriptFold
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.harness import HarnessSpec, open_harness
from dsh_tui.ui.settings import UiSettings
from dsh_tui.ui.widgets.toolcard import render_tool
from tests.ui.conftest import items, scripted_app, submit, wait_for
from tests.ui.screen_text import screen_text

GREET = "def greet(name):\n    return f'hi {name}'\n"


def _decided(app) -> list:
    return [e["data"] for e in app.bridge.harness.session.events if e["type"] == "approval/decided"]


async def test_a_write_approval_shows_the_new_file_numbered_and_a_reason_shows_on_the_card(tmp_path):
    (tmp_path / "ws").mkdir()
    outside = tmp_path / "outside.py"  # outside the workspace: workspace-write asks
    app = scripted_app(tmp_path, [scripted.call("w1", "write", {"file_path": str(outside), "content": GREET}),
                                  scripted.text("ok")], preset="workspace-write")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "write it")
        await wait_for(pilot, lambda: app.chat.approval.request is not None)
        await wait_for(pilot, lambda: "Approve write?" in screen_text(app))
        text = screen_text(app)
        assert "1 + def greet(name):" in text and "2 +     return f'hi {name}'" in text
        assert "\\n" not in text and '"content"' not in text
        await pilot.press("e")
        await wait_for(pilot, lambda: app.chat.approval.asking_reason)
        await pilot.press(*"not there", "enter")
        await wait_for(pilot, lambda: any(e["type"] == "turn/end" for e in app.bridge.harness.session.events))
        await wait_for(pilot, lambda: "rejected: not there" in render_tool(items(app, "tool")[0], False).plain)
        assert "rejected: not" in screen_text(app)  # on the card, live
        events = list(app.bridge.harness.session.events)
    assert not outside.exists()
    fold = TranscriptFold(None)  # the same log folded cold, as a resume shows it
    for event in events:
        fold.apply(event)
    (card,) = [i for i in fold.items if i.kind == "tool"]
    assert "rejected: not there" in render_tool(card, expanded=False).plain


async def test_an_edit_approval_shows_the_diff():
    from dsh_tui.ui.widgets.toolcard import describe_call

    shown = describe_call("edit", '{"file_path": "a.py", "old_string": "x = 1\\ny = 2", "new_string": "x = 3"}').plain
    assert shown.splitlines() == ["a.py", "     - x = 1", "     - y = 2", "     + x = 3"]


async def test_a_session_allowance_is_logged_and_holds_after_resume(tmp_path):
    (tmp_path / "ws").mkdir()
    call = {"command": "echo again >> log.txt", "description": "append"}
    app = scripted_app(tmp_path, [scripted.call("c1", "bash", call), scripted.text("ok")], preset="workspace-write")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "run it")
        await wait_for(pilot, lambda: app.chat.approval.request is not None)
        await pilot.press("s")
        await wait_for(pilot, lambda: len(items(app, "footer")) == 1)
        assert [(d["outcome"], d.get("scope")) for d in _decided(app)] == [("allowed-once", "session")]
        session_id = app.bridge.harness.session.header["id"]
    provider = ScriptedProvider([scripted.call("c2", "bash", call), scripted.text("done")], name="mock",
                                context_window=100_000)
    spec = HarnessSpec(root=tmp_path / "sessions", cwd=None, provider=provider, model="mock-model",
                       resume_id=session_id)
    again = DshApp(lambda bridge: open_harness(bridge, spec),
                   settings=UiSettings(values={"ui.theme": "dsh-dark"}))
    async with again.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: again.bridge.harness is not None)
        await submit(pilot, "again")
        await wait_for(pilot, lambda: len(items(again, "footer")) == 2)
        assert again.chat.approval.request is None
    assert (tmp_path / "ws" / "log.txt").read_text() == "again\nagain\n"  # allowed without asking
