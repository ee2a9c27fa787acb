"""The timeline fold: lanes per turn (requests, tools, retries, compaction, steps) and per-step tokens.

Pure and incremental: ``TimelineFold.apply(event)`` is O(1), so a 200k-event log folds in one pass
and a live session feeds the same fold event by event. Times are the events' own ``time`` fields
(epoch ms); nothing here reads a clock.

A model request is one attempt: it starts at ``step/start`` (or ``llm/retry-started`` /
``compaction/end`` for a later attempt in the same step), its first token is the first
``assistant/chunk`` of the attempt (waiting = time to first token) and it ends at the attempt's
``assistant/message`` or last chunk (decoding). A tool runs from ``tool/call`` to its
``tool/result``; calls that overlap get different ``slot`` numbers so they are drawn side by side.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dsh_tui.session.content import content_text
from dsh_tui.session.stats import Usage, UsageFold


@dataclass(slots=True, eq=False)
class Span:
    """One bar on a lane. ``end`` is ``None`` while it is still running (or was never closed)."""

    kind: str  # request | tool | retry | compaction
    turn: int
    step: int
    seq: int
    start: int
    end: int | None = None
    end_seq: int | None = None
    label: str = ""
    first_token: int | None = None  # requests: time of the first chunk
    slot: int = 0  # tools: parallel position
    state: str = "running"  # running / ok / error / aborted / unknown / interrupted

    @property
    def waiting_ms(self) -> int | None:
        """Requests: time to first token."""
        return None if self.first_token is None else self.first_token - self.start

    @property
    def decoding_ms(self) -> int | None:
        if self.first_token is None or self.end is None:
            return None
        return self.end - self.first_token

    @property
    def duration_ms(self) -> int | None:
        return None if self.end is None else self.end - self.start


@dataclass(slots=True, eq=False)
class StepMark:
    turn: int
    step: int
    seq: int
    start: int
    end: int | None = None
    end_seq: int | None = None
    usage: Usage = field(default_factory=Usage)


@dataclass(slots=True, eq=False)
class TurnLane:
    turn: int
    seq: int
    start: int
    end: int | None = None
    end_seq: int | None = None
    reason: str | None = None  # TurnEndReason kind once closed
    steps: list[StepMark] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)

    @property
    def duration_ms(self) -> int | None:
        return None if self.end is None else self.end - self.start

    def of_kind(self, kind: str) -> list[Span]:
        return [s for s in self.spans if s.kind == kind]


class TimelineFold:
    """Incremental fold from events to turn lanes; also keeps the turn of every seq (for the ledger)."""

    def __init__(self) -> None:
        self.turns: list[TurnLane] = []
        self.turn_of: list[int] = []  # turn number (0 = between turns) of each seq
        self.usage = UsageFold()
        self.loose: list[Span] = []  # compaction etc. outside a turn
        self._lane: TurnLane | None = None
        self._step: StepMark | None = None
        self._request: Span | None = None
        self._tools: dict[str, Span] = {}
        self._active_slots: set[int] = set()
        self._retries: dict[str, Span] = {}
        self._compactions: dict[str, Span] = {}
        self._model = "request"

    # -- folding ------------------------------------------------------------------------------
    def apply_all(self, events: list[dict[str, Any]]) -> None:
        for e in events:
            self.apply(e)

    def apply(self, event: dict[str, Any]) -> None:
        etype = event.get("type")
        data = event.get("data")
        if not isinstance(data, dict):
            data = {}
        seq = event.get("seq", len(self.turn_of))
        t = event.get("time")
        t = t if isinstance(t, int) else 0
        self.usage.apply(event)
        lane = self._lane
        if etype == "turn/start":
            lane = self._lane = TurnLane(turn=_int(data.get("turn")) or len(self.turns) + 1, seq=seq, start=t)
            self.turns.append(lane)
            self._step = self._request = None
            self._tools.clear()
            self._active_slots.clear()
        self.turn_of.append(lane.turn if lane is not None else 0)
        if lane is None:
            if etype in ("compaction/start", "compaction/end"):
                self._compaction(None, etype, data, seq, t)
            return
        handler = _HANDLERS.get(etype)
        if handler is not None:
            handler(self, lane, data, seq, t)

    def _on_turn_end(self, lane: TurnLane, data, seq, t) -> None:
        lane.end, lane.end_seq = t, seq
        reason = data.get("reason")
        lane.reason = reason.get("kind") if isinstance(reason, dict) else str(reason)
        self._close_request(t, seq)
        if self._step is not None and self._step.end is None:
            self._step.end, self._step.end_seq = t, seq
        for span in lane.spans:
            if span.end is None:
                span.state = "interrupted" if lane.reason == "interrupted" else "aborted"
        lane.usage = self.usage.turns.get(lane.turn, lane.usage)
        self._lane = None

    def _on_step_start(self, lane: TurnLane, data, seq, t) -> None:
        step = _int(data.get("step")) or len(lane.steps) + 1
        self._step = StepMark(lane.turn, step, seq, t)
        lane.steps.append(self._step)
        self._open_request(lane, seq, t)

    def _on_step_end(self, lane: TurnLane, data, seq, t) -> None:
        self._close_request(t, seq)
        if self._step is not None:
            self._step.end, self._step.end_seq = t, seq
            su = self.usage.steps.get((lane.turn, self._step.step))
            if su is not None:
                self._step.usage = su.usage
        lane.usage = self.usage.turns.get(lane.turn, lane.usage)

    def _open_request(self, lane: TurnLane, seq: int, t: int) -> None:
        step = self._step.step if self._step else 0
        self._request = Span("request", lane.turn, step, seq, t, label=f"{self._model} {lane.turn}.{step}")
        lane.spans.append(self._request)

    def _close_request(self, t: int, seq: int, state: str | None = None) -> None:
        r = self._request
        if r is None or r.end is not None:
            return
        if r.first_token is None:
            # nothing streamed: an empty attempt (waiting only)
            r.end, r.end_seq = t, seq
            r.state = state or "error"
        else:
            r.end = r.end if r.end is not None else t
            r.end_seq = r.end_seq if r.end_seq is not None else seq
            r.state = state or r.state
        self._request = None

    def _on_header(self, lane: TurnLane, data, seq, t) -> None:
        r = self._request
        if r is not None and r.first_token is None:
            config = ((data.get("header") or {}).get("config")) or {}
            self._model = str(config.get("model") or self._model)
            r.label = f"{self._model} {lane.turn}.{r.step}"
            r.start = t  # dispatch follows the header

    def _on_chunk(self, lane: TurnLane, data, seq, t) -> None:
        r = self._request
        if r is None or r.end is not None:
            self._open_request(lane, seq, t)
            r = self._request
        if r.first_token is None:
            r.first_token = t
        chunk = data.get("chunk") or {}
        if chunk.get("type") == "finish":
            reason = (chunk.get("reason") or {}).get("kind")
            r.end, r.end_seq = t, seq
            r.state = {"stop": "ok", "tool-calls": "ok", "max-tokens": "ok", "aborted": "aborted"}.get(reason, "error")

    def _on_message(self, lane: TurnLane, data, seq, t) -> None:
        r = self._request
        if r is None:
            return
        r.end, r.end_seq = t, seq
        if r.state == "running" or r.state == "ok":
            r.state = "aborted" if data.get("interrupted") else "ok"
        self._request = None

    def _on_tool_call(self, lane: TurnLane, data, seq, t) -> None:
        slot = 0
        while slot in self._active_slots:
            slot += 1
        self._active_slots.add(slot)
        step = _int(data.get("step"))
        span = Span("tool", lane.turn, step, seq, t, label=str(data.get("name", "tool")), slot=slot)
        lane.spans.append(span)
        self._tools[str(data.get("callId"))] = span

    def _on_tool_result(self, lane: TurnLane, data, seq, t) -> None:
        msg = data.get("message") or {}
        call_id = str((msg.get("source") or {}).get("callId"))
        span = self._tools.pop(call_id, None)
        if span is None:
            return
        self._active_slots.discard(span.slot)
        span.end, span.end_seq = t, seq
        err = data.get("error") or {}
        blocks = msg.get("content") or []
        is_error = any(isinstance(b, dict) and b.get("isError") for b in blocks)
        code = err.get("code") if isinstance(err, dict) else None
        if code in ("ABORTED", "ABORTED_BEFORE_DISPATCH"):
            span.state = "aborted"
        elif code == "TOOL_OUTCOME_UNKNOWN":
            span.state = "unknown"
        elif is_error or code:
            span.state = "error"
        else:
            span.state = "ok"

    def _on_retry(self, lane: TurnLane, data, seq, t) -> None:
        self._close_request(t, seq, "error")
        delay = _int(data.get("delayMs"))
        failure = data.get("failure") or {}
        span = Span("retry", lane.turn, _int(data.get("step")), seq, t, end=t + delay,
                    label=f"retry {data.get('retry', '?')} {failure.get('code', '')}".strip(), state="ok")
        lane.spans.append(span)
        self._retries[str(data.get("retryId"))] = span

    def _on_retry_started(self, lane: TurnLane, data, seq, t) -> None:
        span = self._retries.get(str(data.get("retryId")))
        if span is not None:
            span.end, span.end_seq = t, seq
        self._open_request(lane, seq, t)

    def _on_compaction(self, lane: TurnLane, data, seq, t) -> None:
        self._compaction(lane, None, data, seq, t)

    def _compaction(self, lane: TurnLane | None, etype: str | None, data, seq, t) -> None:
        cid = str(data.get("compactionId"))
        if "shadowedRange" in data or "summary" in data:
            return  # compaction/summary, compaction/prune: inside the bracket
        span = self._compactions.get(cid)
        if span is None:
            self._close_request(t, seq, "error")
            span = Span("compaction", lane.turn if lane else 0, self._step.step if (lane and self._step) else 0,
                        seq, t, label="compaction")
            self._compactions[cid] = span
            (lane.spans if lane is not None else self.loose).append(span)
            return
        span.end, span.end_seq = t, seq
        span.state = "error" if data.get("error") else "ok"
        self._compactions.pop(cid, None)
        if lane is not None and self._step is not None and self._step.end is None:
            self._open_request(lane, seq, t)

    # -- figures ------------------------------------------------------------------------------
    def lane(self, turn: int) -> TurnLane | None:
        for lane in self.turns:
            if lane.turn == turn:
                return lane
        return None


_HANDLERS = {
    "turn/end": TimelineFold._on_turn_end,
    "step/start": TimelineFold._on_step_start,
    "step/end": TimelineFold._on_step_end,
    "request/header": TimelineFold._on_header,
    "assistant/chunk": TimelineFold._on_chunk,
    "assistant/message": TimelineFold._on_message,
    "tool/call": TimelineFold._on_tool_call,
    "tool/result": TimelineFold._on_tool_result,
    "llm/retry": TimelineFold._on_retry,
    "llm/retry-started": TimelineFold._on_retry_started,
    "compaction/start": TimelineFold._on_compaction,
    "compaction/end": TimelineFold._on_compaction,
}


def fold_timeline(events: list[dict[str, Any]]) -> TimelineFold:
    fold = TimelineFold()
    fold.apply_all(events)
    return fold


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


# -------------------------------------------------------------------------------------------------
# Ledger rows and the request inspector


def summarize(event: dict[str, Any], width: int = 120) -> str:
    """A one-line description of an event for the ledger (no JSON parsing beyond the dict)."""
    etype = event.get("type")
    d = event.get("data")
    d = d if isinstance(d, dict) else {}
    text = ""
    if etype == "assistant/chunk":
        c = d.get("chunk") or {}
        ct = c.get("type")
        if ct in ("text-delta", "reasoning-delta"):
            text = f"{ct} {c.get('text', '')!r}"
        elif ct == "tool-call-delta":
            text = f"tool-call-delta {c.get('name') or ''} {c.get('argumentsDelta', '')!r}"
        elif ct == "usage":
            u = c.get("usage") or {}
            text = f"usage in {u.get('inputTokens', 0)} out {u.get('outputTokens', 0)} cache {u.get('cacheReadTokens', 0)}"
        elif ct == "finish":
            text = f"finish {(c.get('reason') or {}).get('kind')}"
        else:
            text = str(ct)
    elif etype in ("user/message",):
        text = f"{(d.get('source') or {}).get('kind', '?')}: {_blocks(d.get('content'))}"
    elif etype == "assistant/message":
        text = _blocks((d.get("message") or {}).get("content"))
        if d.get("interrupted"):
            text = "(interrupted) " + text
    elif etype == "tool/call":
        text = f"{d.get('name')} {d.get('arguments', '')}"
    elif etype == "tool/result":
        text = _blocks((d.get("message") or {}).get("content"))
        err = d.get("error")
        if isinstance(err, dict):
            text = f"[{err.get('code')}] {text}"
    elif etype in ("turn/start", "step/start", "step/end"):
        text = f"turn {d.get('turn')}" + (f" step {d['step']}" if "step" in d else "")
    elif etype == "turn/end":
        text = f"turn {d.get('turn')} {(d.get('reason') or {}).get('kind')}"
    elif etype == "request/header":
        config = (d.get("header") or {}).get("config") or {}
        text = f"{d.get('reason')} {config.get('provider')}/{config.get('model')}"
    elif etype == "session/title":
        text = str(d.get("title"))
    elif etype == "llm/retry":
        text = f"retry {d.get('retry')} in {d.get('delayMs')} ms {(d.get('failure') or {}).get('code', '')}"
    else:
        try:
            import json

            text = json.dumps(d, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError):
            text = str(d)
    text = text.replace("\n", "⏎ ")
    return text[:width]


def dispatch_seq(events: list[dict[str, Any]], seq: int) -> int | None:
    """For an event inside a model request, the seq before which the request was dispatched: the
    first ``assistant/chunk`` of that attempt (messages derived over ``events[:result]``)."""
    n = len(events)
    if not 0 <= seq < n:
        return None
    # walk back to the attempt start, then forward to its first chunk
    start = seq
    while start > 0 and events[start].get("type") not in ("step/start", "llm/retry-started", "compaction/end",
                                                          "turn/start"):
        if events[start].get("type") in ("step/end", "turn/end") and start != seq:
            return None
        start -= 1
    for k in range(start, n):
        t = events[k].get("type")
        if t == "assistant/chunk":
            return k
        if t in ("step/end", "turn/end") or (k > start and t in ("llm/retry-started", "step/start")):
            return None
    return None


def request_header_at(events: list[dict[str, Any]], before: int) -> dict[str, Any] | None:
    """The latest ``request/header`` envelope before ``before`` (the one the request used)."""
    for k in range(min(before, len(events)) - 1, -1, -1):
        if events[k].get("type") == "request/header":
            return (events[k].get("data") or {}).get("header")
    return None


def _blocks(blocks: Any) -> str:
    return content_text(blocks, sep=" ", calls="→ {name}({arguments})", marks=True)
