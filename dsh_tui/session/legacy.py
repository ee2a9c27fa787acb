"""Read-only import of older same-version (v0) shapes (docs/format.md, "Legacy import") and the format
refusals that follow it.

:func:`import_legacy` returns a new list (events that need no change are the same dict objects; changed ones
are fresh dicts — the input is never mutated). :func:`check_refusals` raises
:class:`SessionFormatUnsupportedError` for the legacy shapes dsh no longer reads and for unknown event types
not marked ``ignorable: true``. Anything current-looking but malformed is left alone for validation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import SessionFormatUnsupportedError
from .events import KNOWN_EVENT_TYPES, LEGACY_REFUSED_TYPES, REQUEST_HEADER
from .rows import EventList, plain_events

_LEGACY_TYPES = frozenset({"turn/start", "turn/end", "steering/message", "user/message", "assistant/message",
                           "tool/result"})


_LEGACY_END_KINDS = frozenset(("aborted", "disposed", "error"))
# the known types neither the import nor the refusals look at
_ORDINARY_TYPES = KNOWN_EVENT_TYPES - _LEGACY_TYPES - {REQUEST_HEADER}
# which pass looks at an event of a type (bits): the import, the refusals; a type not listed here (unknown, or
# not even a string) is the refusals' (see type_role)
IMPORT, REFUSE = 1, 2
TYPE_ROLES: dict[str, int] = {
    **dict.fromkeys(_ORDINARY_TYPES, 0),
    **{t: IMPORT | (0 if t in KNOWN_EVENT_TYPES else REFUSE) for t in _LEGACY_TYPES},
    REQUEST_HEADER: REFUSE,
}


def type_role(t: Any) -> int:
    return TYPE_ROLES.get(t, REFUSE) if type(t) is str else REFUSE


def legacy_message_id(session_id: str, seq: Any) -> str:
    return f"legacy-message:{session_id}:{seq}"


def _is_turn(v: Any) -> bool:
    return type(v) is int and v >= 1


def _import_turn_start(ev: dict) -> dict | None:
    d = ev.get("data")
    if type(d) is not dict or "trigger" not in d or set(d) != {"turn", "trigger"}:
        return None
    trig = d["trigger"]
    if not _is_turn(d["turn"]) or type(trig) is not dict:
        return None
    kind = trig.get("kind")
    if type(kind) is not str or not kind:
        return None
    return {**ev, "data": {"turn": d["turn"]}}


def _import_turn_end(ev: dict) -> dict | None:
    d = ev.get("data")
    if type(d) is not dict or type(d.get("reason")) is not dict:
        return None
    r = d["reason"]
    kind = r.get("kind")
    new: dict | None = None
    if kind == "aborted" and set(r) == {"kind"}:
        new = {"kind": "aborted", "reason": {"kind": "legacy"}}
    elif kind == "disposed" and set(r) == {"kind"}:
        new = {"kind": "aborted", "reason": {"kind": "disposed"}}
    elif kind == "error" and "error" not in r and "step" in r:
        if "failure" in r and set(r) == {"kind", "step", "failure"}:
            new = {"kind": "error", "error": r["failure"]}
        elif "message" in r and set(r) <= {"kind", "step", "message", "code"}:
            code = r.get("code")
            new = {"kind": "error", "error": {"message": r["message"], "code": "UNKNOWN" if code is None else code}}
    if new is None:
        return None
    return {**ev, "data": {**d, "reason": new}}


def _import_steering(ev: dict, sid: str) -> dict | None:
    d = ev.get("data")
    if type(d) is not dict:
        return None
    if set(d) == {"turn", "message"} and type(d["message"]) is dict:
        msg = d["message"]
    elif set(d) == {"turn", "content", "source"}:
        msg = {"content": d["content"], "source": d["source"], "id": legacy_message_id(sid, ev.get("seq")),
               "role": "user"}
    else:
        return None
    out = {k: v for k, v in ev.items() if k not in ("type", "data", "surfaceOp")}
    return {"type": "user/message", **{k: out[k] for k in ("seq", "time") if k in out}, "data": msg,
            **{k: v for k, v in out.items() if k not in ("seq", "time")}, "surfaceOp": ev.get("surfaceOp", "append")}


def _import_user(ev: dict, sid: str) -> dict | None:
    d = ev.get("data")
    if type(d) is not dict or "id" in d or "role" in d or "content" not in d or "source" not in d:
        return None
    return {**ev, "data": {**d, "id": legacy_message_id(sid, ev.get("seq")), "role": "user"}}  # dsh's key order


def _import_assistant(ev: dict, sid: str) -> dict | None:
    d = ev.get("data")
    if type(d) is not dict or "message" in d or "content" not in d or "provenance" not in d:
        return None
    prov = d["provenance"]
    if type(prov) is not dict:
        return None
    msg = {"id": legacy_message_id(sid, ev.get("seq")), "role": "assistant", "content": d["content"],
           "source": {**prov, "kind": "model"}}
    # dsh's key order: the remaining data keys as they were, then ``message``
    new: dict[str, Any] = {k: v for k, v in d.items() if k != "content" and k != "provenance"}
    new["message"] = msg
    return {**ev, "data": new}


def _event_at(events: list[dict], seq: Any) -> dict | None:
    if type(seq) is int and 0 <= seq < len(events):
        ev = events[seq]
        if type(ev) is dict and ev.get("seq") == seq:
            return ev
    for ev in events:  # seq != index (a window or a hand-built list)
        if type(ev) is dict and ev.get("seq") == seq:
            return ev
    return None


def _import_tool_result(ev: dict, sid: str, events: list[dict]) -> dict | None:
    d = ev.get("data")
    if type(d) is not dict or "message" in d or "callId" not in d or "content" not in d:
        return None
    call_id = d["callId"]
    block: dict[str, Any] = {"type": "tool-result", "toolCallId": call_id, "content": d["content"]}
    if "isError" in d:
        block["isError"] = d["isError"]
    mid = legacy_message_id(sid, ev.get("seq"))
    op = ev.get("surfaceOp")
    if type(op) is dict and op.get("op") == "replace":
        target = _event_at(events, op.get("start"))  # a replacing legacy tool/result inherits the shadowed id
        if target is not None:
            tm = target.get("data", {}).get("message") if type(target.get("data")) is dict else None
            if type(tm) is dict and "id" in tm:
                mid = tm["id"]
    msg = {"id": mid, "role": "user", "content": [block], "source": {"kind": "tool", "callId": call_id}}
    # dsh's key order: the remaining data keys as they were, then ``message``
    new: dict[str, Any] = {k: v for k, v in d.items() if k not in ("callId", "content", "isError")}
    new["message"] = msg
    return {**ev, "data": new}


def notable_positions(events: list[dict]) -> list[int]:
    """Positions, in ``plain_events(events)``, of the events :func:`import_legacy` and :func:`check_refusals`
    look at: every event that is not of an ordinary known type (a legacy-shaped type, ``request/header``, an
    unknown type, or no event at all). Computed once, it serves both (the import keeps every position). The
    JSONL scanner notes the exact lists of each pass as it reads (:func:`type_role`)."""
    plain = plain_events(events)
    ordinary = _ORDINARY_TYPES
    try:  # fast scan: only a small fraction of events need a look
        return [p for p, ev in enumerate(plain) if ev["type"] not in ordinary]
    except (KeyError, TypeError, IndexError):
        return [p for p, ev in enumerate(plain)
                if type(ev) is not dict or type(t := ev.get("type")) is not str or t not in ordinary]


def _maybe_legacy(ev: Any) -> bool:
    """A legacy-typed event that is not in the current shape of its type (which the importers leave alone)."""
    if type(ev) is not dict or type(t := ev.get("type")) is not str or t not in _LEGACY_TYPES:
        return False
    d = ev.get("data")
    if type(d) is dict:
        if t == "user/message":
            return "id" not in d
        if t == "assistant/message" or t == "tool/result":
            return "message" not in d
        if t == "turn/start":
            return "trigger" in d
        if t == "turn/end":
            r = d.get("reason")
            return type(r) is dict and r.get("kind") in _LEGACY_END_KINDS
    return True


def import_legacy(events: list[dict], session_id: str, notable: Sequence[int] | None = None) -> list[dict]:
    """Apply the legacy import in log order. Returns ``events`` itself when nothing needed importing; otherwise
    a new list (an :class:`~.rows.EventList` for one, compact packed-row members being chunks, never legacy
    shapes) where only the imported events are new dicts. ``notable``: :func:`notable_positions` of ``events``."""
    plain = plain_events(events)
    if notable is None:
        notable = notable_positions(events)
    indices = events.plain_indices() if type(events) is EventList else None
    out: Any = None
    for p in notable:
        ev = plain[p]
        if not _maybe_legacy(ev):
            continue
        new = _import_one(ev, session_id, out if out is not None else events)
        if new is None:
            continue
        if indices is None:
            if out is None:
                out = list(events)
            out[p] = new
        else:
            if out is None:
                out = EventList(list(events._items), events.plain_cache())
            out._items[indices[p]] = new
            out._pev[p] = new
    return events if out is None else out


def _import_one(ev: dict, session_id: str, events: Any) -> dict | None:
    t = ev.get("type")
    if t == "turn/start":
        return _import_turn_start(ev)
    if t == "turn/end":
        return _import_turn_end(ev)
    if t == "steering/message":
        return _import_steering(ev, session_id)
    if t == "user/message":
        return _import_user(ev, session_id)
    if t == "assistant/message":
        return _import_assistant(ev, session_id)
    return _import_tool_result(ev, session_id, events)


def check_refusals(events: list[dict], where: str = "session log", notable: Sequence[int] | None = None) -> None:
    """Refuse legacy shapes dsh no longer reads and unknown required event types (after import). ``notable``:
    :func:`notable_positions` of the events before the import (the same positions)."""
    known = KNOWN_EVENT_TYPES
    plain = plain_events(events)  # packed-row members are assistant/chunk (a known type)
    if notable is None:
        notable = notable_positions(events)
    for p in notable:
        ev = plain[p]
        if type(ev) is not dict or type(t := ev.get("type")) is not str:
            continue  # not an event at all: validation names it
        if t in known:
            if t == REQUEST_HEADER:
                d = ev.get("data")
                if type(d) is dict and d.get("reason") == "fallback":
                    raise SessionFormatUnsupportedError(
                        f"{where}: unsupported legacy request/header reason 'fallback' at seq {ev.get('seq')}"
                    )
            continue
        if t in LEGACY_REFUSED_TYPES:
            raise SessionFormatUnsupportedError(f"{where}: unsupported legacy event {t!r} at seq {ev.get('seq')}")
        if ev.get("ignorable") is True:
            continue
        raise SessionFormatUnsupportedError(
            f"{where}: event type {t!r} at seq {ev.get('seq')} is unknown and not marked ignorable"
            " (written by a newer harness?)"
        )
