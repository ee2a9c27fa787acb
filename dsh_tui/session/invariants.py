"""Event validation shared by appends and seeds: envelope, per-type payload shape and the
relational turn/step rules (docs/format.md, "Envelope", "Seed validation", "Turns and steps"). Pure; every
failure raises :class:`SessionValidationError` naming the seq and the field."""

from __future__ import annotations

import math
from typing import Any

from .errors import SessionValidationError
from .events import (
    ASSISTANT_CHUNK,
    ASSISTANT_MESSAGE,
    ENVELOPE_KEYS,
    KNOWN_EVENT_TYPES,
    REQUEST_CONTEXT,
    REQUEST_HEADER,
    STEP_END,
    STEP_START,
    TODO_WRITE,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
)
from .jsonutil import MAX_SAFE_INTEGER

_ADAPTER_MARKERS = frozenset(("reasoningEffort", "maxTokens"))
_HEADER_REASONS = frozenset(("initial", "resume", "change"))


def _err(msg: str, code: str = "INVALID_EVENT") -> SessionValidationError:
    return SessionValidationError(msg, code)


def _neg_zero(v: Any) -> bool:
    return type(v) is float and v == 0 and math.copysign(1.0, v) < 0


def check_envelope(ev: Any, expected_seq: int) -> None:
    """Envelope rules for a stored/seeded event at index ``expected_seq``."""
    if type(ev) is not dict:
        raise _err(f"event at index {expected_seq} is not an object")
    if not ev.keys() <= ENVELOPE_KEYS:
        extra = sorted(k for k in ev if k not in ENVELOPE_KEYS)
        raise _err(f"event at index {expected_seq}: unknown envelope key(s) {extra}")
    t = ev.get("type")
    if type(t) is not str or not t:
        raise _err(f"event at index {expected_seq}: type must be a non-empty string")
    seq = ev.get("seq")
    if type(seq) is not int or seq != expected_seq:
        raise _err(f"event at index {expected_seq}: seq must equal its index, got {seq!r}", "SEQ_MISMATCH")
    time = ev.get("time")
    if type(time) is not int or not -MAX_SAFE_INTEGER <= time <= MAX_SAFE_INTEGER:
        raise _err(f"seq {seq}: time must be a safe integer, got {time!r}")
    if "data" not in ev:
        raise _err(f"seq {seq}: data is required")
    if "ignorable" in ev and ev["ignorable"] is not True:
        raise _err(f"seq {seq}: ignorable may only be the literal true")


def _check_message(msg: Any, seq: int, where: str, role: str) -> dict:
    """``msg`` when it is a well-formed message object of ``role``; else the error."""
    if not isinstance(msg, dict):
        raise _err(f"seq {seq}: {where} must be a message object")
    mid = msg.get("id")
    if type(mid) is not str or not mid:
        raise _err(f"seq {seq}: {where}.id must be a non-empty string")
    if msg.get("role") != role:
        raise _err(f"seq {seq}: {where}.role must be {role!r}, got {msg.get('role')!r}")
    src = msg.get("source")
    if not isinstance(src, dict) or type(src.get("kind")) is not str or not src["kind"]:
        raise _err(f"seq {seq}: {where}.source.kind must be a non-empty string")
    if not isinstance(msg.get("content"), list):
        raise _err(f"seq {seq}: {where}.content must be an array")
    return msg


# the types check_payload looks into (the others only need an object as data, when known)
PAYLOAD_CHECKED_TYPES = frozenset((USER_MESSAGE, ASSISTANT_MESSAGE, TOOL_RESULT, REQUEST_HEADER, REQUEST_CONTEXT,
                                   TOOL_CALL, TODO_WRITE))


def check_payload(ev: dict) -> None:
    """Per-type payload shape for the core vocabulary. Unknown/plugin types are opaque."""
    t = ev["type"]
    if t not in KNOWN_EVENT_TYPES:
        return
    seq = ev["seq"]
    d = ev["data"]
    if not isinstance(d, dict):
        raise _err(f"seq {seq}: {t} data must be an object")
    if t == USER_MESSAGE:
        _check_message(d, seq, "data", "user")
    elif t == ASSISTANT_MESSAGE:
        msg = _check_message(d.get("message"), seq, "data.message", "assistant")
        src = msg["source"]
        if src["kind"] != "model":
            raise _err(f"seq {seq}: data.message.source.kind must be 'model'")
        for f in ("provider", "model"):
            if type(src.get(f)) is not str or not src[f]:
                raise _err(f"seq {seq}: data.message.source.{f} must be a non-empty string")
        if "interrupted" in d and d["interrupted"] is not True:
            raise _err(f"seq {seq}: data.interrupted may only be true")
    elif t == TOOL_RESULT:
        msg = _check_message(d.get("message"), seq, "data.message", "user")
        src = msg["source"]
        if src["kind"] != "tool" or type(src.get("callId")) is not str:
            raise _err(f"seq {seq}: data.message.source must be {{kind:'tool', callId}}")
        content = msg["content"]
        if (len(content) != 1 or not isinstance(content[0], dict) or content[0].get("type") != "tool-result"
                or content[0].get("toolCallId") != src["callId"]):
            raise _err(f"seq {seq}: data.message.content must be exactly one tool-result block for callId "
                       f"{src['callId']!r}")
        if "error" in d:
            e = d["error"]
            if not isinstance(e, dict) or type(e.get("name")) is not str or type(e.get("code")) is not str:
                raise _err(f"seq {seq}: data.error must be {{name, code}} strings")
    elif t == REQUEST_HEADER:
        check_request_header_data(d, seq)
    elif t == REQUEST_CONTEXT:
        for f in ("provider", "model"):
            if type(d.get(f)) is not str or not d[f]:
                raise _err(f"seq {seq}: data.{f} must be a non-empty string")
    elif t == TOOL_CALL:
        for f in ("callId", "name", "arguments"):
            if type(d.get(f)) is not str:
                raise _err(f"seq {seq}: data.{f} must be a string")
    elif t == TODO_WRITE and not isinstance(d.get("todos"), list):
        raise _err(f"seq {seq}: data.todos must be an array")


def check_payload_v4(ev: dict) -> None:
    """Format v4's payload shapes for the types dsh-tui interprets (docs/format.md, "Format v4"): messages
    carry an id, their role and a producer-owned ``source.kind`` (never ``plugin``); a tool result is a
    ``role: "tool"`` message naming its call (``toolCallId``), never a ``tool-result`` wrapper block. Other
    types are opaque here (dsh checks them; dsh-tui keeps them verbatim)."""
    t = ev["type"]
    seq = ev["seq"]
    d = ev["data"]
    if t in ("user/message", "assistant/message", "tool/result", "system/message", "developer/message",
             "request/header", "request/context", "tool/call", "todo/write") and not isinstance(d, dict):
        raise _err(f"seq {seq}: {t} data must be an object")
    if t == USER_MESSAGE:
        _check_message(d, seq, "data", "user")
    elif t in ("system/message", "developer/message"):
        _check_message(d.get("message"), seq, "data.message", t.split("/")[0])
    elif t == ASSISTANT_MESSAGE:
        _check_message(d.get("message"), seq, "data.message", "assistant")
    elif t == TOOL_RESULT:
        msg = d.get("message")
        _check_message(msg, seq, "data.message", "tool")
        if type(msg.get("toolCallId")) is not str:
            raise _err(f"seq {seq}: data.message.toolCallId must be a string")
        if any(isinstance(b, dict) and b.get("type") == "tool-result" for b in msg["content"]):
            raise _err(f"seq {seq}: a format v4 tool result has no tool-result wrapper block")
    elif t == REQUEST_HEADER:
        h = d.get("header")
        if not isinstance(h, dict) or not isinstance(h.get("config"), dict) or "system" in h:
            raise _err(f"seq {seq}: data.header must be an object with config (and no retired system)")
    elif t == TOOL_CALL:
        for f in ("callId", "name", "arguments"):
            if type(d.get(f)) is not str:
                raise _err(f"seq {seq}: data.{f} must be a string")
    if t in (USER_MESSAGE, ASSISTANT_MESSAGE, TOOL_RESULT, "system/message", "developer/message"):
        msg = d if t == USER_MESSAGE else d["message"]
        if msg["source"]["kind"] == "plugin":
            raise _err(f"seq {seq}: a format v4 message requires a producer-owned source kind (not plugin)")


def check_request_header_data(d: Any, seq: int) -> None:
    if not isinstance(d, dict) or not isinstance(d.get("header"), dict):
        raise _err(f"seq {seq}: data.header must be an object")
    h = d["header"]
    cfg = h.get("config")
    if not isinstance(cfg, dict):
        raise _err(f"seq {seq}: data.header.config must be an object")
    for f in ("provider", "model"):
        if type(cfg.get(f)) is not str or not cfg[f]:
            raise _err(f"seq {seq}: data.header.config.{f} must be a non-empty string")
    if "reasoningEffort" in cfg and (type(cfg["reasoningEffort"]) is not str or not cfg["reasoningEffort"]):
        raise _err(f"seq {seq}: data.header.config.reasoningEffort must be a non-empty string")
    if "adapterDefaults" in h:
        ad = h["adapterDefaults"]
        if not isinstance(ad, dict) or not ad.keys() <= _ADAPTER_MARKERS:
            raise _err(f"seq {seq}: data.header.adapterDefaults may only hold reasoningEffort/maxTokens")
        for k, v in ad.items():
            if v is not True:
                raise _err(f"seq {seq}: data.header.adapterDefaults.{k} must be true")
            if k not in cfg:
                raise _err(f"seq {seq}: data.header.adapterDefaults.{k} needs config.{k}")
    r = d.get("reason")
    if r == "fallback":
        raise _err(f"seq {seq}: request/header reason 'fallback' is unsupported legacy", "UNSUPPORTED_LEGACY")
    if type(r) is not str or r not in _HEADER_REASONS:
        raise _err(f"seq {seq}: data.reason must be initial, resume or change, got {r!r}")


def _num(v: Any) -> bool:
    t = type(v)
    return (t is int or t is float) and not _neg_zero(v)


class Relations:
    """The turn/step state machine. ``check(ev)`` validates without mutating; ``apply(ev)`` commits."""

    __slots__ = ("open_turn", "last_turn", "open_step", "last_step", "step_calls", "answered")

    def __init__(self) -> None:
        self.open_turn: Any = None
        self.last_turn: Any = 0
        self.open_step: Any = None
        self.last_step: Any = 0
        self.step_calls: set[Any] = set()
        # call ids an append-origin tool/result already answered since the last turn/step boundary
        self.answered: set[Any] = set()

    def copy(self) -> Relations:
        r = Relations()
        r.open_turn, r.last_turn, r.open_step, r.last_step = self.open_turn, self.last_turn, self.open_step, self.last_step
        r.step_calls = set(self.step_calls)
        r.answered = set(self.answered)
        return r

    def _names_open_step(self, ev: dict) -> None:
        d = ev["data"]
        if self.open_turn is None or self.open_step is None:
            raise _err(f"seq {ev['seq']}: {ev['type']} outside an open step", "RELATION")
        if not isinstance(d, dict) or d.get("turn") != self.open_turn or d.get("step") != self.open_step:
            got = (d.get("turn"), d.get("step")) if isinstance(d, dict) else None
            raise _err(f"seq {ev['seq']}: {ev['type']} must name the open turn/step "
                       f"({self.open_turn}/{self.open_step}), got {got}", "RELATION")

    def check(self, ev: dict) -> None:
        t = ev["type"]
        seq = ev["seq"]
        if t in (ASSISTANT_CHUNK, STEP_END, ASSISTANT_MESSAGE, TOOL_CALL):
            self._names_open_step(ev)
            return
        if t == TURN_START:
            d = ev["data"]
            turn = d.get("turn") if isinstance(d, dict) else None
            if self.open_turn is not None:
                raise _err(f"seq {seq}: turn/start while turn {self.open_turn} is open", "RELATION")
            if type(turn) is not int or turn != self.last_turn + 1:
                raise _err(f"seq {seq}: turn/start must open turn {self.last_turn + 1}, got {turn!r}", "RELATION")
        elif t == TURN_END:
            d = ev["data"]
            if self.open_turn is None:
                raise _err(f"seq {seq}: turn/end without an open turn", "RELATION")
            if not isinstance(d, dict) or d.get("turn") != self.open_turn:
                raise _err(f"seq {seq}: turn/end must close turn {self.open_turn}", "RELATION")
            if self.open_step is not None:
                raise _err(f"seq {seq}: turn/end while step {self.open_step} is open", "RELATION")
            if not isinstance(d.get("reason"), dict) or type(d["reason"].get("kind")) is not str:
                raise _err(f"seq {seq}: turn/end data.reason.kind must be a string")
        elif t == STEP_START:
            d = ev["data"]
            if self.open_turn is None:
                raise _err(f"seq {seq}: step/start outside a turn", "RELATION")
            if not isinstance(d, dict) or d.get("turn") != self.open_turn:
                raise _err(f"seq {seq}: step/start must name the open turn {self.open_turn}", "RELATION")
            if self.open_step is not None:
                raise _err(f"seq {seq}: step/start while step {self.open_step} is open", "RELATION")
            step = d.get("step")
            if type(step) is not int or step != self.last_step + 1:
                raise _err(f"seq {seq}: step/start must open step {self.last_step + 1}, got {step!r}", "RELATION")
        elif t == TOOL_RESULT:
            if self.open_turn is None:
                raise _err(f"seq {seq}: tool/result outside a turn", "RELATION")
            if ev.get("surfaceOp") != "append":
                return  # a replacing tool/result only needs an open turn
            d = ev["data"]
            call_id = d["message"]["source"]["callId"]
            if call_id in self.answered:
                # one result answers one call: a second one would feed the model two answers for one call
                raise _err(f"seq {seq}: tool/result for {call_id!r} already answered in this step", "RELATION")
            err = d.get("error")
            if isinstance(err, dict) and err.get("code") == "TOOL_NOT_STARTED":
                return
            self._names_open_step(ev)
            if call_id not in self.step_calls:
                raise _err(f"seq {seq}: tool/result for {call_id!r} has no tool/call in step {self.open_step}",
                           "RELATION")
        elif t in (TODO_WRITE, REQUEST_HEADER, REQUEST_CONTEXT) and self.open_turn is None:
            raise _err(f"seq {seq}: {t} outside a turn", "RELATION")

    def apply(self, ev: dict) -> None:
        t = ev["type"]
        if t == TURN_START:
            self.start_turn(ev["data"]["turn"])
        elif t == TURN_END:
            self.end_turn()
        elif t == STEP_START:
            self.start_step(ev["data"]["step"])
        elif t == STEP_END:
            self.end_step()
        elif t == TOOL_CALL:
            self.step_calls.add(ev["data"]["callId"])
        elif t == TOOL_RESULT and ev.get("surfaceOp") == "append":
            self.answered.add(ev["data"]["message"]["source"]["callId"])

    # the state changes of apply(), one per boundary type (a seed's fast path calls them directly)
    def start_turn(self, turn: Any) -> None:
        self.open_turn = self.last_turn = turn
        self.open_step = None
        self.last_step = 0
        self.step_calls = set()
        self.answered = set()

    def end_turn(self) -> None:
        self.open_turn = None
        self.open_step = None
        self.step_calls = set()
        self.answered = set()

    def start_step(self, step: Any) -> None:
        self.open_step = self.last_step = step
        self.step_calls = set()
        self.answered = set()

    def end_step(self) -> None:
        self.open_step = None
        self.step_calls = set()
        self.answered = set()


def check_relations(events: list[dict]) -> Relations:
    """Run the turn/step rules over a whole log; returns the final state."""
    r = Relations()
    for ev in events:
        r.check(ev)
        r.apply(ev)
    return r
