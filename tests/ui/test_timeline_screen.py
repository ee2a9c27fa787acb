"""The timeline screen with the real app: lanes, ledger filters, the inspector of a model request."""

from __future__ import annotations

import asyncio
import json
import time

from textual.app import App

from dsh_tui.session.rows import expand_lines
from dsh_tui.ui.screens.timeline import TimelineScreen, parse_filter, render_lane
from tests.store.test_catalog_support import load_fixture

PARALLEL = "examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl"


async def until(pilot, cond, timeout: float = 10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        await pilot.pause()
        if cond():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached")


def fixture_screen():
    header, rows = load_fixture(PARALLEL, session_id="tl-1")
    events = expand_lines(rows)
    return header, events, TimelineScreen(header=header, events=events)


class Host(App):
    def __init__(self, screen):
        super().__init__()
        self._tl = screen

    def on_mount(self) -> None:
        self.push_screen(self._tl)


def lanes_text(screen) -> str:
    return str(screen.query_one("#lanes").render())


async def test_lanes_show_requests_parallel_tools_and_step_tokens():
    header, events, screen = fixture_screen()
    async with Host(screen).run_test(size=(120, 40)) as pilot:
        await until(pilot, screen.folded.is_set)
        text = lanes_text(screen)
        assert "Turn 1" in text and "completed" in text
        assert "tools[0]" in text and "tools[1]" in text  # the two reads side by side
        assert "requests" in text and "█" in text and "░" in text
        assert "step 1   in 10" in text and "step 2   in 10" in text
        assert text.count("tool read") == 2


async def test_ledger_lists_every_event_and_filters_by_type_turn_and_text():
    header, events, screen = fixture_screen()
    async with Host(screen).run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        ledger = screen.ledger
        assert ledger.count == len(events)
        assert ledger.current_seq == len(events) - 1
        await pilot.press("slash", *"type:tool/")
        await pilot.pause()
        shown = [ledger.seq_at(i) for i in range(ledger.count)]
        assert [events[s]["type"] for s in shown] == ["tool/call", "tool/call", "tool/result", "tool/result"]
        screen.query_one("#ledger-filter").value = "type:assistant/message turn:1 DONE"
        await pilot.pause()
        shown = [ledger.seq_at(i) for i in range(ledger.count)]
        assert len(shown) == 1 and events[shown[0]]["type"] == "assistant/message"
        screen.query_one("#ledger-filter").value = "no-such-text-anywhere"
        await pilot.pause()
        assert ledger.count == 0
        await pilot.press("escape")
        await pilot.pause()
        assert ledger.count == len(events)


async def test_inspector_of_a_request_shows_what_the_model_received():
    header, events, screen = fixture_screen()
    async with Host(screen).run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        # the second step's assistant/message: its request saw the prompt, context, the tool round
        msg2 = [e["seq"] for e in events if e["type"] == "assistant/message"][1]
        screen.ledger.show_seq(msg2)
        await until(pilot, lambda: "Messages (" in str(screen.query_one("#inspect").render()))
        text = str(screen.query_one("#inspect").render())
        first_chunk = next(e["seq"] for e in events if e["type"] == "assistant/chunk"
                           and e["data"]["step"] == 2)
        assert f"request dispatched before #{first_chunk}" in text
        assert "System prompt" in text and "{{system}}" in text
        from dsh_tui.session.log import Session

        expected = Session(header, events[:first_chunk]).derive_messages().to_list()
        assert f"Messages ({len(expected)})" in text
        assert json.dumps(expected, indent=2, ensure_ascii=False) in text
        assert "call_read_b" in text
        # a plain event shows only its raw JSON
        screen.ledger.show_seq(0)
        await pilot.pause()
        text = str(screen.query_one("#inspect").render())
        assert text.startswith("#0 agent/inbox/spliced") and "Messages (" not in text


async def test_turn_navigation_and_filter_parsing():
    assert parse_filter("type:tool/ turn:3 hello world") == ("tool/", 3, "hello world")
    assert parse_filter("") == ("", None, "")
    header, events, screen = fixture_screen()
    async with Host(screen).run_test(size=(100, 30)) as pilot:
        await until(pilot, screen.folded.is_set)
        lane = screen.fold.turns[0]
        assert "Turn 1" in str(render_lane(lane, 80))
        await pilot.press("left_square_bracket")
        await pilot.pause()
        assert screen.turn_index == 0
        assert screen.ledger.current_seq == lane.seq  # jumped to the turn's start


async def test_reachable_from_the_chat_screen(tmp_path):
    """Ctrl+T in the chat opens the timeline of the live session (the app's screen hook)."""
    from dsh_tui.llm import scripted
    from tests.ui.conftest import scripted_app, submit, wait_for

    app = scripted_app(tmp_path, [scripted.text("hello there")])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "say hello")
        session = app.bridge.harness.session
        await wait_for(pilot, lambda: any(e["type"] == "turn/end" for e in session.events))
        await pilot.pause(0.1)
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen))
        screen = app.screen
        await until(pilot, screen.folded.is_set)
        assert screen.ledger.count == len(session.events)
        assert [lane.reason for lane in screen.fold.turns] == ["completed"]
        assert "Turn 1" in lanes_text(screen)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.chat)
