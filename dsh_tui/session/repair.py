"""Crash-recovery closers for a log that ends inside a turn (docs/format.md, "Crash closers"; dsh
``repair.ts``). Pure and deterministic."""

from __future__ import annotations

from itertools import islice
from typing import Any

from .rows import EventList, plain_events

TOOL_NOT_STARTED = "TOOL_NOT_STARTED"
TOOL_OUTCOME_UNKNOWN = "TOOL_OUTCOME_UNKNOWN"

OUTCOME_UNKNOWN_TEXT = (
    "The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is "
    "unknown. Decide whether to retry from the tool semantics: retry only if the operation is read-only or "
    "idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly."
)
NOT_STARTED_TEXT = (
    "The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed."
)


# what the walk from the last turn/start on looks at (no turn/start or turn/end can follow it there)
_TURN_BOUNDARIES = frozenset({"turn/start", "turn/end"})
_BOUNDARY_TYPES = frozenset({"step/start", "step/end", "assistant/message", "tool/call", "tool/result"})


def interrupted_turn_closers(events: list[dict]) -> list[dict]:
    """The synthetic events that balance a log ending inside a turn; ``[]`` for a balanced or empty log.

    One ``tool/result`` per unanswered assistant tool call (TOOL_OUTCOME_UNKNOWN when a ``tool/call`` was
    recorded, else TOOL_NOT_STARTED), then ``step/end`` if a step is open, then ``turn/end{interrupted}``;
    seqs continue the log and every closer reuses the last event's time.

    ``turn/start`` and ``turn/end`` reset the whole walk, so only the events from the last of them on can
    leave anything open: the log is searched backwards for it (a balanced log ends at its own ``turn/end``)."""
    pending: dict[Any, dict[str, Any]] = {}
    plain = plain_events(events)
    start = len(plain)
    for ev in reversed(plain):
        t = ev["type"]
        if t == "turn/end":
            return []
        start -= 1
        if t == "turn/start":
            break
    else:
        return []  # no turn was ever opened
    open_turn = plain[start]["data"]["turn"]  # the turn to close: nothing after it starts or ends one
    open_step: Any = None
    boundary = _BOUNDARY_TYPES
    for ev in [ev for ev in islice(plain, start, None) if ev["type"] in boundary]:  # (not the turn/start)
        t = ev["type"]
        if t == "step/start":
            open_step = ev["data"]["step"]
        elif t == "step/end":
            pending.clear()
            open_step = None
        elif t == "assistant/message":
            for block in ev["data"]["message"]["content"]:
                if type(block) is dict and block.get("type") == "tool-call":
                    # Map.set on an existing key keeps its position but replaces the entry
                    pending[block["id"]] = {"step": ev["data"]["step"]}
        elif t == "tool/call":
            entry = pending.get(ev["data"]["callId"])
            if entry is not None:
                entry["callSeq"] = ev["seq"]
        elif t == "tool/result":
            pending.pop(ev["data"]["message"]["source"]["callId"], None)

    last = events[-1]
    seq = last["seq"] + 1
    time = last["time"]
    closers: list[dict] = []
    for call_id, entry in pending.items():
        started = "callSeq" in entry
        message = {
            "id": f"interrupted-tool-result-{call_id}-{seq}",
            "role": "user",
            "source": {"kind": "tool", "callId": call_id},
            "content": [{
                "type": "tool-result",
                "toolCallId": call_id,
                "isError": True,
                "content": [{"type": "text", "text": OUTCOME_UNKNOWN_TEXT if started else NOT_STARTED_TEXT}],
            }],
        }
        error = (
            {"name": "ToolOutcomeUnknownError", "code": TOOL_OUTCOME_UNKNOWN}
            if started
            else {"name": "ToolNotStartedError", "code": TOOL_NOT_STARTED}
        )
        closer: dict[str, Any] = {
            "type": "tool/result", "seq": seq, "time": time,
            "data": {"turn": open_turn, "step": entry["step"], "message": message, "error": error},
            "surfaceOp": "append",
        }
        if started:
            closer["sourceEventSeqs"] = [entry["callSeq"]]
        closers.append(closer)
        seq += 1
    if open_step is not None:
        closers.append({"type": "step/end", "seq": seq, "time": time, "data": {"turn": open_turn, "step": open_step}})
        seq += 1
    closers.append({"type": "turn/end", "seq": seq, "time": time,
                    "data": {"turn": open_turn, "reason": {"kind": "interrupted"}}})
    return closers


FORKED_STARTED_TEXT = (
    "The history inherited by this branch records this tool call starting but does not include its result. The "
    "parent session may have completed it after the fork point. Decide whether to retry from the tool semantics: "
    "retry only if the operation is read-only or idempotent; if it may have side effects, first verify external "
    "state or ask the user. Do not retry blindly."
)
FORKED_NOT_STARTED_TEXT = (
    "The history inherited by this branch has no record of this tool call starting. The parent session may have "
    "executed it after the fork point. Decide whether to retry from the tool semantics: retry only if the "
    "operation is read-only or idempotent; if it may have side effects, first verify external state or ask the "
    "user. Do not retry blindly."
)


def interrupted_turn_closers_v4(events: list[dict], session_id: str = "", cause: str = "interrupted") -> list[dict]:
    """Format v4's closers (dsh 0.2 ``openTurnClosers``; docs/format.md "Format v4"): the same walk as v0, but
    a result is a native ``role: "tool"`` message (id ``<cause>-tool-result-<callId>-<seq>``, no wrapper
    block), only an append-origin result of the call's own turn and step answers it, and ``cause`` is
    ``interrupted`` (crash recovery) or ``forked`` (a fork's open tail)."""
    pending: dict[Any, dict[str, Any]] = {}
    open_turn: Any = None
    open_step: Any = None
    plain = plain_events(events)
    walk: Any = plain
    if type(events) is EventList and events.has_blocks():
        # a loaded v4 log whose lines stay compressed: the walk starts at the last turn boundary (a turn/start or
        # turn/end resets everything it tracks), found without decoding the events before it
        k = events.last_index_of(_TURN_BOUNDARIES)
        if k > 0:
            walk = events[k:]
    for ev in walk:
        t = ev["type"]
        if t == "turn/start":
            pending.clear()
            open_turn, open_step = ev["data"]["turn"], None
        elif t == "turn/end":
            pending.clear()
            open_turn = open_step = None
        elif t == "step/start":
            open_step = ev["data"]["step"]
        elif t == "step/end":
            pending.clear()
            open_step = None
        elif t == "assistant/message":
            d = ev["data"]
            for block in d["message"]["content"]:
                if type(block) is dict and block.get("type") == "tool-call":
                    pending[block["id"]] = {"turn": d.get("turn"), "step": d.get("step")}
        elif t == "tool/call":
            entry = pending.get(ev["data"]["callId"])
            if entry is not None:
                entry["callSeq"] = ev["seq"]
        elif t == "tool/result":
            d = ev["data"]
            call_id = d["message"]["source"]["callId"]
            entry = pending.get(call_id)
            if (ev.get("surfaceOp") == "append" and entry is not None and entry["turn"] == d.get("turn")
                    and entry["step"] == d.get("step")):
                del pending[call_id]
    if open_turn is None or not plain:
        return []
    last = plain[-1]
    seq = last["seq"] + 1
    time = last["time"]
    forked = cause == "forked"
    closers: list[dict] = []
    for call_id, entry in pending.items():
        started = "callSeq" in entry
        text = ((FORKED_STARTED_TEXT if started else FORKED_NOT_STARTED_TEXT) if forked
                else (OUTCOME_UNKNOWN_TEXT if started else NOT_STARTED_TEXT))
        message = {"id": f"{cause}-tool-result-{call_id}-{seq}", "role": "tool", "toolCallId": call_id,
                   "isError": True, "source": {"kind": "tool", "callId": call_id},
                   "content": [{"type": "text", "text": text}]}
        error = ({"name": "ToolOutcomeUnknownError", "code": TOOL_OUTCOME_UNKNOWN} if started
                 else {"name": "ToolNotStartedError", "code": TOOL_NOT_STARTED})
        closer: dict[str, Any] = {"type": "tool/result", "seq": seq, "time": time,
                                  "data": {"turn": entry["turn"], "step": entry["step"], "message": message,
                                           "error": error}}
        if started:
            closer["sourceEventSeqs"] = [entry["callSeq"]]
        closer["surfaceOp"] = "append"
        closers.append(closer)
        seq += 1
    if open_step is not None:
        closers.append({"type": "step/end", "seq": seq, "time": time, "data": {"turn": open_turn, "step": open_step}})
        seq += 1
    closers.append({"type": "turn/end", "seq": seq, "time": time,
                    "data": {"turn": open_turn, "reason": {"kind": cause}}})
    return closers
