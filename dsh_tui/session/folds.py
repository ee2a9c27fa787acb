"""Whole-value folds over a log (docs/format.md, "Request header" and "Other folds"): request header
canonicalization/equality, request context, title, todos, plan mode, approval/sandbox overrides, agent
preset. Each ``fold_*`` takes an event list and reads the latest relevant event; :class:`Session` keeps the
same values incrementally."""

from __future__ import annotations

from typing import Any

from .events import (
    AGENT_PRESET_SELECTED,
    PLAN_MODE,
    REQUEST_CONTEXT,
    REQUEST_HEADER,
    SESSION_TITLE,
    TODO_WRITE,
)
from .jsonutil import dumps
from .rows import EventList, PackedRun, RawBlock, events_of

_TITLE = frozenset({SESSION_TITLE})
_CONFIG_FIELDS = ("provider", "model", "reasoningEffort", "temperature", "maxTokens", "stop")


def canonical_header(h: dict[str, Any] | None) -> dict[str, Any] | None:
    """Canonical EpochHeader: ``config`` (as logged), ``adapterDefaults`` only when a marker is true (only the
    true markers kept), ``system`` unless empty, ``tools`` unless empty; unknown keys (legacy
    ``messagePrefix``) are ignored."""
    if h is None:
        return None
    out: dict[str, Any] = {"config": h.get("config")}
    ad = h.get("adapterDefaults")
    if isinstance(ad, dict):
        marks = {k: True for k in ("reasoningEffort", "maxTokens") if ad.get(k) is True}
        if marks:
            out["adapterDefaults"] = marks
    system = h.get("system")
    if system is not None and system != "" and system != []:
        out["system"] = system
    tools = h.get("tools")
    if tools is not None and tools != []:
        out["tools"] = tools
    return out


def header_equals(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """dsh ``headerEquals`` over canonical headers: config field-wise (``stop`` element-wise), both
    adapterDefaults markers, ``system``, and tools in order by JSON text."""
    if a is None or b is None:
        return a is b
    a, b = canonical_header(a), canonical_header(b)
    assert a is not None and b is not None
    ca, cb = a.get("config") or {}, b.get("config") or {}
    for f in _CONFIG_FIELDS:
        if (f in ca) != (f in cb):
            return False
        if f not in ca:
            continue
        x, y = ca[f], cb[f]
        if f == "stop" and isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y) or not all(_js_eq(p, q) for p, q in zip(x, y)):
                return False
        elif not _js_eq(x, y):
            return False
    ada, adb = a.get("adapterDefaults", {}), b.get("adapterDefaults", {})
    for k in ("reasoningEffort", "maxTokens"):
        if (ada.get(k) is True) != (adb.get(k) is True):
            return False
    if ("system" in a) != ("system" in b) or a.get("system") != b.get("system"):
        return False
    ta, tb = a.get("tools", []), b.get("tools", [])
    if not isinstance(ta, list) or not isinstance(tb, list):
        return dumps(ta) == dumps(tb)
    return len(ta) == len(tb) and all(dumps(x) == dumps(y) for x, y in zip(ta, tb))


def _js_eq(x: Any, y: Any) -> bool:
    if type(x) is bool or type(y) is bool:
        return type(x) is type(y) and x == y
    return x == y


def _last(events: list[dict] | EventList, type_: str) -> dict | None:
    if type(events) is EventList:  # packed-row members are chunks: skip them unread
        items = events._items
        for i in range(len(items) - 1, -1, -1):
            ev = items[i]
            if ev.__class__ is RawBlock:  # a v4 line kept compressed: its type is known without decoding it
                if ev.types[i - ev.seq0] == type_:
                    return ev.event(i - ev.seq0)
            elif ev.__class__ is not PackedRun and ev.get("type") == type_:
                return ev
        return None
    for ev in reversed(events):
        if ev.get("type") == type_:
            return ev
    return None


def fold_request_header(events: list[dict]) -> dict[str, Any] | None:
    ev = _last(events, REQUEST_HEADER)
    return None if ev is None else canonical_header(ev["data"]["header"])


def fold_request_context(events: list[dict]) -> dict[str, Any] | None:
    ev = _last(events, REQUEST_CONTEXT)
    return None if ev is None else ev["data"]


def title_update(current: dict | None, ev: dict) -> dict | None:
    """Fold one ``session/title`` into the current title event data: last wins, but a ``user`` title pins
    it (later non-user titles do not replace it)."""
    d = ev.get("data")
    if not isinstance(d, dict) or not isinstance(d.get("title"), str):
        return current
    if current is not None and _title_kind(current) == "user" and _title_kind(d) != "user":
        return current
    return d


def _title_kind(d: dict) -> Any:
    src = d.get("source")
    return src.get("kind") if isinstance(src, dict) else None


def fold_title_data(events: list[dict]) -> dict | None:
    cur = None
    for ev in events_of(events, _TITLE):
        if ev.get("type") == SESSION_TITLE:
            cur = title_update(cur, ev)
    return cur


def fold_title(events: list[dict]) -> str | None:
    d = fold_title_data(events)
    return None if d is None else d["title"]


def fold_todos(events: list[dict]) -> list[dict]:
    ev = _last(events, TODO_WRITE)
    return [] if ev is None else list(ev["data"].get("todos", []))


def fold_plan_mode(events: list[dict] | EventList) -> bool:
    ev = _last(events, PLAN_MODE)
    return bool(ev is not None and isinstance(ev["data"], dict) and ev["data"].get("active") is True)


def fold_agent_preset(events: list[dict] | EventList, header: dict | None = None) -> Any:
    ev = _last(events, AGENT_PRESET_SELECTED)
    if ev is not None and isinstance(ev["data"], dict) and "agentPreset" in ev["data"]:
        return ev["data"]["agentPreset"]
    return None if header is None else header.get("agentPreset")


def last_end_seed(events: list[dict]) -> int | None:
    """Seq of the last ``session/end-seed`` (events before it came from a seed), or None."""
    ev = _last(events, "session/end-seed")
    return None if ev is None else ev["seq"]
