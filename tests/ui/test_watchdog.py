"""The chat always drains (issue #26.11): a turn the log has ended but the screen still shows as running (seen
once: a lost ``turn/end``, the answer cut, Esc doing nothing, the queue stuck) is ended by the watchdog, and Esc
resets it at once. The loss is simulated by dropping the turn's ``turn/end`` on its way to the screen."""

from __future__ import annotations

from dsh_tui.harness_messages import StatusChanged
from dsh_tui.llm import scripted
from dsh_tui.llm.scripted import Delay
from dsh_tui.ui.screens import chat_stream as chat_module
from tests.ui.conftest import scripted_app, submit, wait_for


def _lose_first_turn_end(app) -> None:
    bridge = app.bridge
    drain = bridge.drain
    lost = []

    def lossy():
        events, notices = drain()
        if not lost:
            for event in events:
                if event.get("type") == "turn/end":
                    lost.append(event)
            events = [e for e in events if e not in lost]
        if len(lost) < 2:
            idle = [n for n in notices if n == StatusChanged("idle")]
            lost.extend(idle)
            notices = [n for n in notices if n not in idle]
        return events, notices

    bridge.drain = lossy


def _users(app) -> list[str]:
    return [e["data"]["content"][0]["text"] for e in app.bridge.harness.session.events
            if e["type"] == "user/message" and e["data"]["source"]["kind"] == "user"]


async def test_the_watchdog_drains_when_the_flush_timer_was_lost(tmp_path, monkeypatch):
    monkeypatch.setattr(chat_module, "WATCHDOG_S", 0.2, raising=False)
    app = scripted_app(tmp_path, [[Delay(0.3), *scripted.text("the whole answer")], scripted.text("second")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "one")
        await wait_for(pilot, lambda: app.chat.running)
        await submit(pilot, "two")  # queued
        chat = app.chat
        await pilot.pause(0.05)
        if hasattr(chat.pump.flush_timer, "stop"):
            chat.pump.flush_timer.stop()
        chat.pump.flush_timer = "after-echo"  # a flush said to be due whose callback never comes: nothing drains
        await wait_for(pilot, lambda: _users(app) == ["one", "two"])
        await wait_for(pilot, lambda: not chat.running and not chat.queue)
        assert any(i.kind == "footer" for i in chat.fold.items)


async def test_the_watchdog_ends_a_turn_the_screen_missed_and_the_queue_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(chat_module, "WATCHDOG_S", 0.2, raising=False)
    app = scripted_app(tmp_path, [[Delay(0.4), *scripted.text("first")], scripted.text("second")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        _lose_first_turn_end(app)
        await submit(pilot, "one")
        await wait_for(pilot, lambda: app.chat.running)
        await submit(pilot, "two")  # queued
        assert app.chat.queue == ["two"]
        await wait_for(pilot, lambda: _users(app) == ["one", "two"])  # the watchdog ended turn 1 here
        await wait_for(pilot, lambda: not app.chat.running and not app.chat.queue)


async def test_esc_resets_a_turn_the_log_has_ended(tmp_path, monkeypatch):
    monkeypatch.setattr(chat_module, "WATCHDOG_S", 1000.0, raising=False)  # no watchdog: Esc alone
    app = scripted_app(tmp_path, [scripted.text("first")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        _lose_first_turn_end(app)
        await submit(pilot, "one")
        await wait_for(pilot, lambda: any(e["type"] == "turn/end" for e in app.bridge.harness.session.events))
        await pilot.pause(0.2)
        assert app.chat.running  # wedged: the screen never saw the turn end
        await pilot.press("escape")
        assert not app.chat.running
        assert app.chat.status.info.status == "idle"
