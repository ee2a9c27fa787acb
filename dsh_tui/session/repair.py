"""Crash-recovery closers for a log that ends inside a turn (docs/format.md, "Crash closers"; dsh
``repair.ts``). Pure and deterministic."""

from __future__ import annotations

from itertools import islice
from typing import Any

from .rows import plain_events

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
        ev: dict[str, Any] = {
            "type": "tool/result", "seq": seq, "time": time,
            "data": {"turn": open_turn, "step": entry["step"], "message": message, "error": error},
            "surfaceOp": "append",
        }
        if started:
            ev["sourceEventSeqs"] = [entry["callSeq"]]
        closers.append(ev)
        seq += 1
    if open_step is not None:
        closers.append({"type": "step/end", "seq": seq, "time": time, "data": {"turn": open_turn, "step": open_step}})
        seq += 1
    closers.append({"type": "turn/end", "seq": seq, "time": time,
                    "data": {"turn": open_turn, "reason": {"kind": "interrupted"}}})
    return closers
