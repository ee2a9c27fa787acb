"""The per-log fold: the listing facts of one log (turns, tokens, title, first prompt, end state,
searchable text), folded event by event. Incremental: its state is stored in the index."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from dsh_tui.session.content import content_text
from dsh_tui.session.errors import SessionCorruptionError
from dsh_tui.store.fsio import MAX_LINE_BYTES, LineSplitter

from .reader import _expand, _loads
from .rows import BLANK, INTERRUPTED, UNREADABLE, SessionRow, _apply_header, end_state, one_line

_MAX_TEXT = 20_000  # characters of one event kept for content search


_CHUNK_PREFIX = b'{"type":"assistant/chunk","seq":'


_PROMPT_CHARS = 200  # of the first prompt kept for the list (it is cut to the column anyway)


# ---------------------------------------------------------------------------------------------
# The per-log fold (incremental; its state is stored in the index)


def _text_of(blocks, *, reasoning: bool = True) -> str:
    """Searchable text: text (and reasoning), tool calls as ``name arguments``, tool results."""
    return content_text(blocks, reasoning=reasoning, calls="{name} {arguments}")


class FoldState(TypedDict):
    """A log's fold state: what it has seen so far (stored as JSON in the index, resumed from there)."""

    next_seq: int  # the seq the next event must have
    line: int  # lines read (the header is line 1)
    open_turn: int | None
    open_step: int | None
    turns: int
    steps: int
    title: str | None
    title_source: str | None
    prompt: str | None
    last_turn: int | None
    last_end: str | None  # the last turn/end's reason kind
    fork_turn: int | None
    updated_at: int
    last_time: int
    tin: int  # tokens: input, output, cache (read + write), reasoning
    tout: int
    tcache: int
    treason: int
    step_usage: bool  # the open step has reported its usage in a chunk
    preset: str | None
    problem: str | None  # the first problem (a torn tail unless a committed turn/end follows)
    problem_line: int | None
    corrupt: str | None
    sig: NotRequired[str]  # a JSONL log's tail signature at the indexed offset (the index checks it)


class _Fold:
    """Listing facts of one log, folded event by event. ``state`` is a plain dict (stored as JSON)."""

    FIELDS: FoldState = {
        "next_seq": 0, "line": 1, "open_turn": None, "open_step": None, "turns": 0, "steps": 0,
        "title": None, "title_source": None, "prompt": None, "last_turn": None, "last_end": None,
        "fork_turn": None, "updated_at": 0, "last_time": 0,
        "tin": 0, "tout": 0, "tcache": 0, "treason": 0, "step_usage": False,
        "preset": None, "problem": None, "problem_line": None, "corrupt": None,
    }

    def __init__(self, state: FoldState | None, header: dict, known: frozenset[str] | None) -> None:
        self.s: FoldState = self.FIELDS.copy()
        if state:
            self.s.update(state)
        else:
            ca = header.get("createdAt")
            self.s["updated_at"] = ca if isinstance(ca, int) else 0
        self.v4 = header.get("version") == 4
        if self.v4 and known is not None:  # format v4's own vocabulary (docs/format.md, "Format v4")
            from dsh_tui.session.events import V4_KNOWN_EVENT_TYPES

            known = V4_KNOWN_EVENT_TYPES
        self.known = known
        self.texts: list[tuple[int, str, str]] = []
        seed = header.get("seedLength")
        # a fork's own end-seed follows its seed (seq == seedLength); the seed's end-seeds are its parent's
        # resumes and forks, and a log without a seed is no fork (its end-seeds are its resumes)
        self.seed_length = seed if isinstance(seed, int) and not isinstance(seed, bool) else None

    def line(self, raw: bytes) -> None:
        s = self.s
        s["line"] += 1
        if s["problem"] is not None:
            # Past the first problem: only look for a committed turn/end (=> corruption).
            if s["corrupt"] is None and b'"turn/end"' in raw:
                s["corrupt"] = s["problem"]
            return
        if raw.startswith(_CHUNK_PREFIX) and b'"usage"' not in raw and raw.endswith(b"}"):
            # Fast path for the bulk of a log (dsh writes type, seq first): a streamed delta only
            # advances the seq; nothing in it is listed or searched.
            end = raw.find(b",", len(_CHUNK_PREFIX))
            digits = raw[len(_CHUNK_PREFIX):end]
            if digits.isdigit() and int(digits) == s["next_seq"]:
                s["next_seq"] += 1
                return
        try:
            obj = _loads(raw)
        except (ValueError, RecursionError):
            s["problem"] = f"unparsable line {s['line']}"
            if raw == LineSplitter.OVERLONG:
                s["problem"] = f"line {s['line']} is longer than {MAX_LINE_BYTES:,} bytes (dsh's longest)"
            return
        if not isinstance(obj, dict):
            s["problem"] = f"line {s['line']} is not an event"
            return
        try:
            events = _expand(obj)
        except (KeyError, TypeError, IndexError, SessionCorruptionError):
            s["problem"] = f"malformed packed row at line {s['line']}"
            return
        for ev in events:
            seq = ev.get("seq")
            if seq != s["next_seq"]:
                s["problem"] = f"seq gap at line {s['line']} (expected {s['next_seq']}, got {seq})"
                return
            t = ev.get("type")
            if self.known is not None and t not in self.known and ev.get("ignorable") is not True:
                s["problem"] = f"written by a newer harness (unknown event type {t!r} at line {s['line']})"
                s["corrupt"] = s["problem"]
                return
            s["next_seq"] += 1
            self.event(ev)

    def event(self, ev: dict) -> None:
        s = self.s
        t = ev.get("type")
        data = ev.get("data")
        d: dict = data if isinstance(data, dict) else {}
        seq = ev["seq"]
        t_ = ev.get("time")
        time: int = t_ if isinstance(t_, int) else 0
        s["last_time"] = max(s["last_time"], time)
        if t == "assistant/chunk":
            chunk = d.get("chunk") or {}
            if chunk.get("type") == "usage":
                self._usage(chunk.get("usage"))
                s["step_usage"] = True
            return
        if t == "turn/start":
            s["open_turn"] = d.get("turn")
            s["turns"] += 1
        elif t == "turn/end":
            s["open_turn"] = None
            s["open_step"] = None
            s["last_turn"] = d.get("turn")
            reason = d.get("reason")
            kind = reason.get("kind") if isinstance(reason, dict) else reason
            s["last_end"] = kind if isinstance(kind, str) else None
        elif t == "step/start":
            s["open_step"] = d.get("step")
            s["steps"] += 1
            s["step_usage"] = False
        elif t == "step/end":
            s["open_step"] = None
        elif t == "user/message":
            src = d.get("source") or {}
            text = _text_of(d.get("content"))
            if src.get("kind") == "user":
                s["updated_at"] = max(s["updated_at"], time)
                self._text(seq, "user", text)
                if s["prompt"] is None:
                    s["prompt"] = one_line(_text_of(d.get("content"), reasoning=False))[:_PROMPT_CHARS] or None
            elif src.get("kind") == "tool":
                self._text(seq, "tool", text)
            else:
                self._text(seq, "context", text)
        elif t == "assistant/message":
            msg = d.get("message") or {}
            self._text(seq, "assistant", _text_of(msg.get("content")))
            if not s["step_usage"] and isinstance(d.get("usage"), dict):
                self._usage(d["usage"])
        elif t == "tool/call":
            self._text(seq, "tool-call", f"{d.get('name', '')} {d.get('arguments', '')}")
        elif t == "tool/result":
            msg = d.get("message") or {}
            self._text(seq, "tool", _text_of(msg.get("content")))
        elif t == "session/title":
            if isinstance(d.get("title"), str):
                s["title"] = d["title"]
                s["title_source"] = (d.get("source") or {}).get("kind")
        elif t == "session/end-seed" and self.v4:
            # a v4 fork marks the end of its inherited prefix with ``{inherited: true}``
            if s["fork_turn"] is None and d.get("inherited") is True and isinstance(s["last_turn"], int):
                s["fork_turn"] = s["last_turn"]
        elif t == "session/end-seed":
            if s["fork_turn"] is None and isinstance(s["last_turn"], int) \
                    and self.seed_length is not None and seq >= self.seed_length:
                s["fork_turn"] = s["last_turn"]
        elif t == "agent-preset/selected":
            s["preset"] = d.get("agentPreset")

    def _usage(self, u) -> None:
        if not isinstance(u, dict):
            return
        s = self.s
        s["tin"] += _int(u.get("inputTokens"))
        s["tout"] += _int(u.get("outputTokens"))
        s["tcache"] += _int(u.get("cacheReadTokens")) + _int(u.get("cacheWriteTokens"))
        s["treason"] += _int(u.get("reasoningTokens"))

    def _text(self, seq: int, kind: str, text: str) -> None:
        if text:
            text = text[:_MAX_TEXT]
            if "\x02" in text or "\x03" in text:  # the search snippet's markers
                text = text.replace("\x02", "").replace("\x03", "")
            self.texts.append((seq, kind, text))


def _int(v) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def finish_row(row: SessionRow, header: dict, fold: _Fold) -> None:
    """Fill ``row`` from the log's header and its fold: the listed facts and the end state."""
    _apply_header(row, header)
    s = fold.s
    row.title, row.title_source = s["title"], s["title_source"]
    row.prompt, row.fork_turn = s["prompt"], s["fork_turn"]
    row.updated_at, row.last_time = s["updated_at"], s["last_time"]
    row.turns, row.steps, row.events = s["turns"], s["steps"], s["next_seq"]
    row.tokens_in, row.tokens_out, row.tokens_cache, row.tokens_reasoning = (
        s["tin"], s["tout"], s["tcache"], s["treason"])
    if s["preset"]:
        row.agent_preset = s["preset"]
    if s["corrupt"]:
        row.state, row.reason = UNREADABLE, s["corrupt"]
    elif s["problem"]:
        row.state, row.reason = INTERRUPTED, f"torn tail: {s['problem']}"
    elif s["open_turn"] is not None:
        row.state, row.reason = INTERRUPTED, f"turn {s['open_turn']} is open"
    elif s["turns"] == 0:
        row.state, row.reason = BLANK, None
    else:
        row.state, row.reason = end_state(s["last_end"]), None
    row.indexed = True
