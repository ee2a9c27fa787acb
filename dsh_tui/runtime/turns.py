"""Turn control read from the log: the prompts a session can be rewound to, the failed turn a retry resends,
and the fork "just before turn N" that rewinding makes.

dsh's fork rules (``dsh_tui/store/lifecycle.py``): a fork after turn N carries the log through turn N's
``turn/end`` and never the next prompt's inbox insert. Rewinding to turn N is therefore the fork after turn
N-1; rewinding to turn 1 carries only what came before the first prompt (a mode switch, a title), possibly
nothing (a child with ``seedLength: 0``). The parent is never written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dsh_tui.session.errors import DshError


@dataclass(frozen=True)
class Prompt:
    """The user prompt that opened ``turn`` (its text blocks joined)."""

    turn: int
    text: str
    seq: int  # of its user/message
    ended: str | None  # the turn-end kind ("completed", "error", "aborted", ...), None while open


def _text(message: dict) -> str:
    return "".join(b.get("text", "") for b in message.get("content") or []
                   if isinstance(b, dict) and b.get("type") == "text")


_TURN_TYPES = frozenset(("turn/start", "user/message", "turn/end"))


def prompts(events: Any) -> list[Prompt]:
    """Every turn opened by a user prompt, oldest first (turns woken by a notice or a subagent are not)."""
    out: list[Prompt] = []
    turn: int | None = None
    have = False
    for i, e in enumerate(events):
        etype = e["type"]
        if etype not in _TURN_TYPES:  # most events (chunks, tool calls): one set lookup
            continue
        if etype == "turn/start":
            turn, have = (e.get("data") or {}).get("turn"), False
        elif etype == "user/message" and turn is not None and not have:
            data = e.get("data") or {}
            if (data.get("source") or {}).get("kind") == "user":
                have = True
                out.append(Prompt(turn, _text(data), e.get("seq", i), None))
        elif etype == "turn/end" and turn is not None:
            if have:
                kind = ((e.get("data") or {}).get("reason") or {}).get("kind")
                out[-1] = Prompt(turn, out[-1].text, out[-1].seq, kind)
            turn = None
    return out


def failed_prompt(events: Any) -> str | None:
    """The prompt of the last turn when that turn failed (ended with an error), else None. Reads the log
    from its end: the cost is the last turn's length, not the session's."""
    end = None
    for i in range(len(events) - 1, -1, -1):
        etype = events[i].get("type")
        if etype == "turn/end":
            end = i
            break
        if etype == "turn/start":
            return None  # a turn is open
    if end is None or ((events[end].get("data") or {}).get("reason") or {}).get("kind") != "error":
        return None
    turn = (events[end].get("data") or {}).get("turn")
    start = end
    while start > 0 and not (events[start].get("type") == "turn/start"
                             and (events[start].get("data") or {}).get("turn") == turn):
        start -= 1
    for p in prompts(events[start:end + 1]):
        return p.text or None
    return None


class RewindError(DshError):
    """No legal fork before that turn (it is not a user turn, or it is still open)."""


def fork_before_turn(store: Any, source_id: str, turn: int, *, clock: Any = None) -> dict:
    """Fork the persisted session ``source_id`` just before ``turn``; returns the child header (durable).
    ``store.lifecycle.fork(before_turn=...)`` does it; a fork error is a ``RewindError`` here."""
    from dsh_tui.store import lifecycle

    try:
        return lifecycle.fork(store, source_id, before_turn=turn, clock=clock)
    except lifecycle.ForkError as err:
        raise RewindError(str(err)) from err
