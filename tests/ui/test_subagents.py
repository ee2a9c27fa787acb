"""Pilot tests: the subagent card (the child's live state while it runs, its result when it settles, the
running count in the status bar) and opening a live child's transcript (read-only; Esc returns), with the
real harness, agent host, subagents plugin and store, and scripted models for parent and child."""

from __future__ import annotations

import asyncio
import threading

from dsh_tui.llm import scripted
from dsh_tui.llm.protocol import RetryPolicy
from dsh_tui.llm.scripted import ScriptedProvider
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.harness import HarnessSpec, open_harness
from dsh_tui.ui.screens.subagent import SubagentScreen
from dsh_tui.ui.settings import UiSettings
from dsh_tui.ui.widgets.subagent import SubagentCard
from tests.ui.conftest import submit, wait_for
from tests.ui.screen_text import screen_text


class GatedChild(ScriptedProvider):
    """The child's model: streams 'working on it. still ', then waits for ``gate`` before finishing."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__([], name="mock")
        self.gate = gate

    async def stream(self, request):
        yield {"type": "block-start", "index": 0, "blockType": "text"}
        yield {"type": "text-delta", "index": 0, "text": "working on it. "}
        yield {"type": "text-delta", "index": 0, "text": "still "}
        while not self.gate.is_set():
            await asyncio.sleep(0.01)
        yield {"type": "text-delta", "index": 0, "text": "CHILD_RESULT"}
        yield {"type": "block-end", "index": 0, "block": {"type": "text", "text": "working on it. still CHILD_RESULT"}}
        yield {"type": "usage", "usage": {"inputTokens": 1200, "outputTokens": 34}}
        yield {"type": "finish", "reason": {"kind": "stop"}}


class Parent(ScriptedProvider):
    def __init__(self, responses, gate):
        super().__init__(responses, name="mock", context_window=100_000,
                         retry_policy=RetryPolicy(initial_delay_ms=1, max_delay_ms=2, jitter_ratio=0.0))
        self.gate = gate

    def child_provider(self, child_id):
        return GatedChild(self.gate)


def _app(tmp_path, gate, *, background=False):
    ws = tmp_path / "ws"
    ws.mkdir()
    args = {"description": "Find the answer", "prompt": "Find the answer and reply with it."}
    if not background:
        args["run_in_background"] = False
    provider = Parent([scripted.call("call_sub", "subagent", args), scripted.text("PARENT_DONE")], gate)
    spec = HarnessSpec(root=tmp_path / "sessions", cwd=ws, provider=provider, model="mock-model", preset="full-access")
    return DshApp(lambda bridge: open_harness(bridge, spec), settings=UiSettings(values={"ui.theme": "dsh-dark"}))


def _card(app) -> SubagentCard | None:
    cards = [v for v in app.chat.transcript.views.values() if isinstance(v, SubagentCard)]
    return cards[0] if cards else None


async def _delegate(pilot, app) -> None:
    """Send the delegating prompt and wait for the child's card, running."""
    await wait_for(pilot, lambda: app.bridge.harness is not None)
    await submit(pilot, "delegate it")
    await wait_for(pilot, lambda: _card(app) is not None and "● running" in screen_text(app))


async def test_card_shows_the_live_child_then_its_result_and_the_bar_counts_running_children(tmp_path):
    gate = threading.Event()
    app = _app(tmp_path, gate)
    async with app.run_test(size=(110, 30)) as pilot:
        await _delegate(pilot, app)
        text = screen_text(app)
        assert "Find the answer" in text  # the card names the delegated task
        assert "1 subagent running" in text.rstrip("\n").split("\n")[-1]  # the status bar
        # the answer streaming counts before its usage comes: at least "working on it. " (15 characters)
        await wait_for(pilot, lambda: "~4 tok" in screen_text(app) or "~6 tok" in screen_text(app))
        gate.set()
        await wait_for(pilot, lambda: "✓ finished" in screen_text(app))
        await wait_for(pilot, lambda: "PARENT_DONE" in screen_text(app))
        text = screen_text(app)
        assert "CHILD_RESULT" in text and "1.2k tok" in text and "~" not in text.split("1.2k tok")[0][-2:]
        assert "subagent running" not in text.rstrip("\n").split("\n")[-1]


async def test_enter_on_the_card_opens_the_live_child_read_only_and_escape_returns(tmp_path):
    gate = threading.Event()
    app = _app(tmp_path, gate)
    async with app.run_test(size=(110, 30)) as pilot:
        await _delegate(pilot, app)
        _card(app).focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SubagentScreen))
        child = app.screen
        # the child's own prompt and its streaming answer, live
        await wait_for(pilot, lambda: "Find the answer and reply with it." in screen_text(app))
        assert "read-only" in child.composer.placeholder
        child.composer.value = "hello child"
        await pilot.press("enter")
        await pilot.pause(0.1)
        session = app.bridge.harness.child_session(child.snap["id"])
        assert not any(e["type"] == "agent/inbox/spliced" and "hello child" in str(e["data"])
                       for e in session.events)  # nothing was sent to the child
        gate.set()
        await wait_for(pilot, lambda: "CHILD_RESULT" in screen_text(app))
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.chat)
        await wait_for(pilot, lambda: "PARENT_DONE" in screen_text(app))


async def test_the_keys_the_card_names_open_the_child_from_the_composer(tmp_path):
    # the card's hint named Tab, which moves the focus forward from the composer, away from the cards
    gate = threading.Event()
    app = _app(tmp_path, gate)
    async with app.run_test(size=(110, 30)) as pilot:
        await _delegate(pilot, app)
        assert "Shift+Tab, Enter: open" in screen_text(app)
        assert app.focused is app.chat.composer
        await pilot.press("shift+tab", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SubagentScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.chat)
        gate.set()
        await wait_for(pilot, lambda: "PARENT_DONE" in screen_text(app))


async def test_the_timeline_shows_each_child_as_a_lane_under_its_tool_call(tmp_path):
    from dsh_tui.session.spans import Node
    from dsh_tui.ui.screens.timeline import TimelineScreen

    gate = threading.Event()
    gate.set()
    app = _app(tmp_path, gate)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "delegate it")
        await wait_for(pilot, lambda: "PARENT_DONE" in screen_text(app))
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.folded.is_set())
        screen = app.screen
        rows = [r for r in screen.spans.rows if isinstance(r, Node)]
        tool = next(r for r in rows if r.kind == "tool")
        assert tool.label == "subagent" and tool.ref == "call_sub"
        (child,) = [c for c in tool.children if c.kind == "subagent"]  # the child's lane under its call
        assert child in rows and child.label == "subagent Find the answer" and child.state == "completed"
        assert child.start >= tool.start and child.end is not None
        line = "".join(t for t, _ in screen.spans._format(rows.index(child), 110))
        assert "↳ subagent Find the answer" in line and "▚" in line
