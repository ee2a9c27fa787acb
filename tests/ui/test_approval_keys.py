"""Decisions are deliberate (issue #26.7): the approval panel never takes keys typed for the composer."""

from __future__ import annotations

from textual import events

from dsh_tui.llm import scripted
from dsh_tui.llm.scripted import Delay
from dsh_tui.ui.widgets import approval
from tests.ui.conftest import scripted_app, submit, wait_for


def _asks_after(tmp_path, delay: float = 0.0):
    (tmp_path / "ws").mkdir()
    first = scripted.call("c1", "bash", {"command": "echo hi > hi.txt", "description": "say hi"})
    return scripted_app(tmp_path, [[Delay(delay), *first] if delay else first, scripted.text("ok")],
                        preset="workspace-write")


def _decided(app) -> list:
    return [e["data"]["outcome"] for e in app.bridge.harness.session.events if e["type"] == "approval/decided"]


async def test_an_approval_does_not_take_the_focus_from_a_composer_being_typed_in(tmp_path):
    app = _asks_after(tmp_path, 0.3)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "run it")
        await pilot.press(*"sure")  # typing a follow-up while the model thinks
        await wait_for(pilot, lambda: app.chat.approval.request is not None)
        await pilot.press(*"yes now", "space", "r", "n", "s", "a")
        await pilot.pause(0.1)
        assert app.chat.approval.request is not None and _decided(app) == []
        assert app.chat.composer.has_focus and app.chat.composer.text == "sureyes now rnsa"
        assert "Tab answers it" in str(app.chat.approval._help.render())
        await pilot.press("tab")  # deliberate: the panel's keys act now
        assert app.chat.approval.has_focus_within
        await pilot.press("a")
        await wait_for(pilot, lambda: _decided(app) == ["allowed-once"])
        assert (tmp_path / "ws" / "hi.txt").exists()
        assert app.chat.composer.display and app.chat.composer.text == "sureyes now rnsa"


async def test_keys_within_the_grace_period_go_back_to_the_composer(tmp_path, monkeypatch):
    monkeypatch.setattr(approval, "GRACE_S", 30.0)  # every key here is "just after the panel appeared"
    app = _asks_after(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "run it")
        await wait_for(pilot, lambda: app.chat.approval.request is not None and app.chat.approval.has_focus_within)
        assert not app.chat.composer.display  # nobody was typing: the panel took the focus
        await pilot.press(*"sure thing")
        await pilot.pause(0.1)
        assert _decided(app) == [] and app.chat.approval.request is not None
        assert app.chat.composer.display and app.chat.composer.has_focus
        assert app.chat.composer.text == "sure thing"
        await pilot.press("tab", "s")  # deliberate: Tab, then the key
        await wait_for(pilot, lambda: len(_decided(app)) == 1)
        assert len(app.bridge.harness.allowances) == 1  # "s": this command for the rest of the session


async def test_enter_alone_does_not_approve(tmp_path):
    app = _asks_after(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "run it")
        await wait_for(pilot, lambda: app.chat.approval.request is not None and app.chat.approval.has_focus_within)
        await pilot.press("enter", "enter", "y", "n")
        await pilot.pause(0.1)
        assert _decided(app) == [] and app.chat.approval.request is not None
        await pilot.press("r")
        await wait_for(pilot, lambda: _decided(app) == ["rejected"])


async def test_a_paste_within_the_grace_period_lands_in_the_composer(tmp_path, monkeypatch):
    monkeypatch.setattr(approval, "GRACE_S", 30.0)
    app = _asks_after(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "run it")
        await wait_for(pilot, lambda: app.chat.approval.request is not None and app.focused is not None)
        app.post_message(events.Paste("a pasted\nr line"))
        await wait_for(pilot, lambda: app.chat.composer.text == "a pasted\nr line")
        assert _decided(app) == []


async def test_ctrl_c_clears_the_idle_composer_and_ctrl_z_brings_it_back(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("ok")])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await pilot.press(*"draft")
        await pilot.press("ctrl+c")
        assert app.chat.composer.text == "" and app.is_running
        await pilot.press("ctrl+z")
        assert app.chat.composer.text == "draft"


async def test_the_command_and_every_choice_stay_visible_at_small_sizes(tmp_path):
    """#26.8: at 60×20 the fourth button was cut, at 40×10 the command was scrolled away."""
    from tests.ui.screen_text import screen_text

    app = _asks_after(tmp_path)
    async with app.run_test(size=(60, 20)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "run it")
        await wait_for(pilot, lambda: app.chat.approval.request is not None)
        for size in ((60, 20), (40, 10), (100, 30)):
            await pilot.resize_terminal(*size)
            await pilot.pause(0.2)
            shown = screen_text(app)
            lines = [line for line in shown.splitlines() if "┃" in line]
            panel = "\n".join(lines)
            assert "$ echo hi > hi.txt" in panel, (size, shown)
            for label in ("[a]", "[s]", "[r]", "[e]"):
                assert label in panel, (size, label, shown)
            buttons = list(app.chat.approval.query("DecideButton"))
            region = app.chat.approval.region
            assert all(region.contains_region(b.region) for b in buttons), size
        await pilot.resize_terminal(40, 10)
        await pilot.pause(0.1)
        await pilot.press("a")
        await wait_for(pilot, lambda: _decided(app) == ["allowed-once"])


async def test_a_burst_typed_as_the_panel_appears_lands_whole_in_the_composer(tmp_path, monkeypatch):
    """A terminal delivers a typed burst at once, all of it to the widget focused then (the panel's button):
    every key of it reaches the composer, in order, and none decides ("sure" once lost "u" and "r")."""
    monkeypatch.setattr(approval, "GRACE_S", 30.0)
    app = _asks_after(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "run it")
        await wait_for(pilot, lambda: app.chat.approval.request is not None and app.chat.approval.has_focus_within)
        for key in "sure ras":
            app.post_message(events.Key("space" if key == " " else key, key))
        await pilot.pause(0.2)
        assert app.chat.composer.text == "sure ras"
        assert _decided(app) == [] and app.chat.approval.request is not None


async def test_at_40x10_while_typing_the_command_and_the_composer_stay_visible(tmp_path):
    from tests.ui.screen_text import screen_text

    app = _asks_after(tmp_path, 0.3)
    async with app.run_test(size=(40, 10)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "run it")
        await pilot.press(*"sure")
        await wait_for(pilot, lambda: app.chat.approval.request is not None)
        await pilot.pause(0.2)
        shown = screen_text(app)
        assert "$ echo hi > hi.txt" in shown and "Tab answers it" in shown and "sure" in shown, shown
        assert "waiting for approval" in shown  # the status bar is not pushed off
        await pilot.press("tab")
        await pilot.pause(0.1)
        assert "[a]" in screen_text(app)
        await pilot.press("a")
        await wait_for(pilot, lambda: _decided(app) == ["allowed-once"])
        assert app.chat.composer.text == "sure"
