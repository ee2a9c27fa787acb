"""Child sessions of the subagent tools: opened through the agent host in the parent's store, tracked in the
session tree's ``SubagentState`` (``dsh_tui.runtime.subagent_state``, owned by the root agent host: what the
control tools, the settlement notices and the UI read).

A child is a real session: header ``parentSession``/``seedLength``/``origin: "subagent"``/``delegationDepth``,
``subagent/descriptor``, the delegated ``sandbox/mode``/``approval/policy`` (docs/extensions.md, "Subagents").
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from dsh_tui.extensions.subagents import texts
from dsh_tui.runtime.inbox import NEXT_STEP, NEXT_TURN
from dsh_tui.runtime.subagent_state import SubagentState

log = logging.getLogger("dsh_tui.extensions.subagents")


def state_of(agent: Any) -> SubagentState:
    """The subagent state of ``agent``'s session tree: its agent host's (``AgentHost.subagents``)."""
    return agent.host.subagents


@dataclass
class Child:
    id: str
    parent_id: str
    depth: int
    mode: str  # "one-shot" | "continuable"
    provider: str  # "spawn" | "fork"
    label: str
    tool_name: str
    call_id: str
    created_at: float = field(default_factory=time.monotonic)
    host: Any = None  # the AgentHost while the child is live
    session: Any = None  # the child's Session (kept after close: the UI shows its transcript)
    epoch_start: int = 0  # index in the child's log where the current activation began
    outcome: dict | None = None  # {"kind", "text", "error"} once settled
    ended_at: float | None = None
    closing: asyncio.Task | None = None
    state: SubagentState = field(default_factory=SubagentState)  # the tree's (its root host's)
    _offs: list[Callable[[], Any]] = field(default_factory=list)

    @property
    def agent(self) -> Any:
        return self.host.agent if self.host is not None else None

    @property
    def status(self) -> str:
        """``running`` / ``idle`` (live) or ``ready`` (stored only)."""
        agent = self.agent
        if agent is None:
            return "ready"
        return "running" if agent.status == "running" else "idle"

    def activation_outcome(self) -> dict:
        """What the current activation produced (``epoch_outcome`` of the child's log from ``epoch_start``)."""
        return epoch_outcome(self.session.events if self.session is not None else [], self.epoch_start)

    async def close(self) -> None:
        """Close the child's host (``close_child``); it stays in its tree's state, its session kept."""
        await close_child(self)


def notify_watchers(child: Child) -> None:
    child.state.notify(child)


def epoch_outcome(events: list[dict], start: int) -> dict:
    """What an activation produced: the last turn-end kind in ``events[start:]`` and the last non-empty
    assistant message (its blocks, and the concatenation of its text blocks)."""
    kind, error, blocks, text = "completed", None, [], ""
    ended = False
    for ev in events[start:]:
        t = ev["type"]
        if t == "turn/end":
            reason = ev["data"].get("reason") or {}
            kind, ended = reason.get("kind", "error"), True
            error = (reason.get("error") or {}).get("message") if kind == "error" else None
        elif t == "assistant/message":
            content = ev["data"]["message"].get("content") or []
            joined = "".join(b.get("text", "") for b in content if b.get("type") == "text")
            if joined:
                blocks, text = [b for b in content if b.get("type") == "text"], joined
    if not ended:
        kind = "aborted"
    return {"kind": kind, "error": error, "blocks": blocks, "text": text}


def foreground_error(outcome: dict) -> str:
    """The tool-result error of a foreground run that did not complete (without ``Error: ``)."""
    kind = outcome["kind"]
    text = texts.FAILURES.get(kind, f"subagent run ended abnormally ({kind})")
    if outcome.get("error"):
        text += f"\nDiagnostic: {outcome['error']}"
    if outcome.get("text"):
        text += f"\nPartial output before the run ended:\n{outcome['text']}"
    return text


def settlement_notice(child: Child, outcome: dict) -> dict:
    kind = outcome["kind"] if outcome["kind"] in texts.SETTLED else "error"
    summary = texts.SETTLED[kind].format(id=child.id)
    content = [{"type": "text", "text": summary}]
    if outcome["blocks"]:
        content.append({"type": "text", "text": texts.CLOSING})
        content.extend(copy.deepcopy(outcome["blocks"]))
    else:
        content.append({"type": "text", "text": texts.NO_CLOSING})
    short = summary if len(summary) <= 120 else summary[:119] + "…"
    return {"role": "user", "content": content,
            "source": {"kind": "subagent-settled", "form": "notice", "summary": short, "senderSessionId": child.id}}


def deliver(parent: Any, message: dict, *, notice: bool) -> dict | None:
    """Hand ``message`` to a live parent: an idle one starts a turn with it (notices) or a step (reports);
    a busy one gets it at its next step."""
    if parent is None or getattr(parent, "_disposed", False):
        return None
    if parent.status == "running":
        return parent.send(message, NEXT_STEP, True)
    return parent.send(message, NEXT_TURN if notice else NEXT_STEP, True)


LIVE_TYPES = {"tool/call", "tool/result", "assistant/message", "turn/start", "turn/end", "step/start"}
CHUNK_NOTIFY_S = 0.5  # a streaming child tells the watchers at most this often


def watch(child: Child) -> None:
    """Tell the watchers (the app's card) about the child's phase, tools and tokens as they change."""
    agent = child.agent
    child._offs.append(agent.on("agent/phase", lambda _p: notify_watchers(child)))

    last = [0.0]
    trailing: list[Any] = [None]  # the pending notice for chunks that came inside the window

    def tell() -> None:
        trailing[0] = None
        last[0] = time.monotonic()
        notify_watchers(child)

    def on_event(_session: Any, event: dict) -> None:
        etype = event.get("type")
        if etype in LIVE_TYPES:
            if trailing[0] is not None:
                trailing[0].cancel()
            tell()
        elif etype == "assistant/chunk" and child.state.watchers:
            wait = CHUNK_NOTIFY_S - (time.monotonic() - last[0])
            if wait <= 0:
                tell()
            elif trailing[0] is None:  # the last chunks of a burst are told too, at the window's end
                try:
                    trailing[0] = asyncio.get_running_loop().call_later(wait, tell)
                except RuntimeError:  # appended off the loop (a test's bare session): the next event tells
                    pass

    child._offs.append(agent.session.subscribe(on_event))
    child._offs.append(lambda: trailing[0].cancel() if trailing[0] is not None else None)


def watch_continuable(child: Child) -> None:
    """Every activation end of a live continuable child sends the parent a settlement notice, then the
    child is closed (it stays resumable from its descriptor: ``ready``)."""
    agent = child.agent

    def on_status(payload: dict) -> None:
        if payload.get("status") == "idle":
            asyncio.get_running_loop().call_soon(_settle, child)

    child._offs.append(agent.on("agent/status", on_status))


def snapshot(child: Child, now: float | None = None) -> dict:
    """The child's live state for a UI card: status, phase, current tool, tokens, elapsed, outcome."""
    session = child.session
    events = session.events if session is not None else []
    tool, tokens, turn_open, streaming = None, 0, False, False
    streamed = 0  # characters of the answer streaming now (its usage comes with its message)
    open_calls: dict[str, str] = {}
    for ev in events[(session.header.get("seedLength") or 0) if session is not None else 0:]:
        t = ev["type"]
        if t == "tool/call":
            open_calls[ev["data"]["callId"]] = ev["data"]["name"]
        elif t == "tool/result":
            call_id = ((ev["data"].get("message") or {}).get("source") or {}).get("callId")
            if isinstance(call_id, str):
                open_calls.pop(call_id, None)
        elif t == "assistant/message":
            usage = ev["data"].get("usage") or {}
            tokens += int(usage.get("inputTokens") or 0) + int(usage.get("outputTokens") or 0)
            streaming, streamed = False, 0
        elif t == "assistant/chunk":
            streaming = True
            chunk = ev["data"].get("chunk") or {}
            streamed += len(chunk.get("text") or chunk.get("argumentsDelta") or "")
        elif t == "step/start":
            streaming, streamed = False, 0
        elif t == "turn/start":
            turn_open = True
        elif t == "turn/end":
            turn_open, open_calls = False, {}
    if open_calls:
        tool = list(open_calls.values())[-1]
    agent = child.agent
    phase = ""
    if agent is not None and agent.status == "running":
        p = agent.phase
        phase = f"step {p.get('step')}" if p.get("step") else "starting"
        if p.get("step"):
            phase += " responding" if streaming else (" tools" if open_calls else " waiting")
    status = child.status
    if child.outcome is not None and (agent is None or agent.status != "running"):
        status = "settled"
    elif agent is not None and turn_open:
        status = "running"
    now = time.monotonic() if now is None else now
    return {"id": child.id, "parentId": child.parent_id, "callId": child.call_id, "label": child.label,
            "toolName": child.tool_name, "mode": child.mode, "status": status, "phase": phase, "tool": tool,
            # while an answer streams: about 4 characters a token, until its usage replaces the guess
            "tokens": tokens + (streamed + 3) // 4, "estimated": streamed > 0, "elapsed": max(0.0, (child.ended_at or now) - child.created_at),
            "outcome": dict(child.outcome, blocks=None) if child.outcome else None, "depth": child.depth}


def _settle(child: Child) -> None:
    agent = child.agent
    if agent is None or agent.status == "running" or agent._wake_requested or child.closing is not None:
        return  # a queued message starts the next turn: the activation goes on (parked input settles)
    outcome = epoch_outcome(agent.session.events, child.epoch_start)
    child.outcome = outcome
    child.epoch_start = len(agent.session.events)
    deliver(child.state.agents.get(child.parent_id), settlement_notice(child, outcome), notice=True)
    child.closing = asyncio.get_running_loop().create_task(close_child(child))


async def close_child(child: Child, *, strict: bool = False) -> None:
    """Close a child's host; ``strict``: a failure to close is raised (after the child is released) instead
    of logged (a foreground run reports it, as dsh's subagent tool does)."""
    host, child.host = child.host, None
    child.ended_at = time.monotonic()
    for off in child._offs:
        off()
    child._offs.clear()
    failure: Exception | None = None
    if host is not None:
        try:
            await host.close()
        except Exception as err:  # noqa: BLE001 - closing a child must not break the parent
            log.exception("closing subagent %s failed", child.id)
            failure = err
    notify_watchers(child)
    if strict and failure is not None:
        raise failure


def descendants(state: SubagentState, parent_id: str) -> list[tuple[Child, int]]:
    """The children opened under ``parent_id``, tree pre-order, each with its depth below the parent."""
    out: list[tuple[Child, int]] = []

    def walk(pid: str, depth: int) -> None:
        kids = sorted((c for c in state.children.values() if c.parent_id == pid), key=lambda c: (c.created_at, c.id))
        for c in kids:
            out.append((c, depth))
            walk(c.id, depth + 1)

    walk(parent_id, 1)
    return out


def live_children(state: SubagentState, parent_id: str) -> list[Child]:
    return [c for c in state.children.values() if c.parent_id == parent_id and c.host is not None]


async def settle(agent: Any, timeout: float = 600.0) -> None:
    """Wait until ``agent`` and every child below it are idle, their settlements delivered and handled."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    state = state_of(agent)
    resuming = state.resuming.pop(agent.id, None)
    if resuming is not None:
        await asyncio.shield(resuming)
    while True:
        await agent.wait_idle()
        busy = [c for c, _d in descendants(state, agent.id)
                if c.host is not None or (c.closing is not None and not c.closing.done())]
        if not busy:
            await asyncio.sleep(0)  # a settlement scheduled with call_soon
            if agent.status == "idle" and not agent.inbox.pending() and not any(
                    c.host is not None for c, _d in descendants(state, agent.id)):
                return
        if loop.time() > deadline:
            raise TimeoutError("subagents did not settle")
        for c in busy:
            if c.closing is not None:
                await asyncio.shield(c.closing)
            elif c.agent is not None:
                await c.agent.wait_idle()
        await asyncio.sleep(0.001)


def tree_root(state: SubagentState, agent_id: str) -> str:
    """The id of the root agent of ``agent_id``'s tree (itself when it is no child in ``state``)."""
    seen = set()
    while agent_id in state.children and agent_id not in seen:
        seen.add(agent_id)
        agent_id = state.children[agent_id].parent_id
    return agent_id


def _live(child: Child) -> bool:
    return child.host is not None or (child.closing is not None and not child.closing.done())


def check_fanout(parent: Any, *, new: bool = True) -> None:
    """Refuse (``ToolError``, the message the model sees) a child ``parent`` may not open now: it has
    ``max_children`` live children, its tree ``max_tree_live`` live subagents, or (a ``new`` child) its tree
    has opened ``max_tree_total`` in all. Children being opened count as live."""
    from dsh_tui.tools.base import ToolError

    state = state_of(parent)
    caps = state.caps.get(parent.id)
    if not caps:
        return
    root = tree_root(state, parent.id)
    tree = [c for c, _d in descendants(state, root)]
    mine = sum(1 for c in tree if c.parent_id == parent.id and _live(c)) + state.opening.get(parent.id, 0)
    opening_now = sum(state.opening.get(a, 0) for a in {root, *(c.id for c in tree)})
    live = sum(1 for c in tree if _live(c)) + opening_now
    if mine >= caps["max_children"]:
        raise ToolError(f"subagent refused: this agent already has {mine} running subagents (max_children = "
                        f"{caps['max_children']}); wait for one to settle, or stop one, then try again")
    if live >= caps["max_tree_live"]:
        raise ToolError(f"subagent refused: {live} subagents are running in this session tree (max_tree_live = "
                        f"{caps['max_tree_live']}); wait for some to settle, then try again")
    if new and len(tree) + opening_now >= caps["max_tree_total"]:
        raise ToolError(f"subagent refused: this session tree has started {len(tree) + opening_now} subagents "
                        f"(max_tree_total = {caps['max_tree_total']}); no more can be started in this run")


@contextlib.contextmanager
def opening(parent: Any) -> Iterator[None]:
    """While a child of ``parent`` is being opened it counts against the caps (parallel spawns)."""
    opening = state_of(parent).opening
    opening[parent.id] = opening.get(parent.id, 0) + 1
    try:
        yield
    finally:
        opening[parent.id] -= 1
        if not opening[parent.id]:
            del opening[parent.id]
