"""What the catalog lists: :class:`SessionRow`, :class:`SearchHit`, the listed states and the header facts of a row."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from dsh_tui.session.errors import DshError

# States shown by the browser and `dsh-tui sessions`.
COMPLETED = "completed"
INTERRUPTED = "interrupted"
OPEN_ELSEWHERE = "open elsewhere"
UNREADABLE = "unreadable"
BLANK = "blank"
FAILED = "failed"  # the last turn ended with an error (turn/end reason ``error``)
CANCELLED = "cancelled"  # the last turn was aborted (by the user, a parent, a hook, disposal)
BLOCKED = "blocked"
MAX_TOKENS = "max tokens"  # the last turn hit the output cap
INDEXING = "indexing…"  # a session directory on disk the index has not seen yet (listing only)
BAD_NAME = "its file name is not valid UTF-8 (rename the directory to list and open it)"  # an unreadable row's reason


_END_STATES = {"completed": COMPLETED, "error": FAILED, "aborted": CANCELLED, "blocked": BLOCKED,
               "max-tokens": MAX_TOKENS, "interrupted": INTERRUPTED}


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]")


def end_state(kind: str | None) -> str:
    """The listed state of a session whose last turn ended with reason ``kind`` (an unknown kind, which
    dsh keeps, is shown as it is)."""
    if kind is None:
        return COMPLETED
    return _END_STATES.get(kind, kind)


def one_line(text: str) -> str:
    """``text`` on one line: whitespace runs collapsed to a space, control and invisible characters dropped."""
    return _CONTROL.sub("", " ".join(text.split()))


class CatalogError(DshError):
    """The catalog cannot do what was asked (a session id that is not in the roots, ...)."""


# ---------------------------------------------------------------------------------------------
# Rows


@dataclass(slots=True)
class SessionRow:
    """One session log as the browser lists it. ``id`` is ``None`` only when the header is unreadable."""

    path: str
    root: str
    revision: str
    id: str | None = None
    cwd: str | None = None
    title: str | None = None
    title_source: str | None = None
    prompt: str | None = None  # the first human prompt, on one line (the title until one is written)
    fork_turn: int | None = None  # a fork child: the last turn of its seed ("after turn N")
    created_at: int = 0
    updated_at: int = 0
    last_time: int = 0
    turns: int = 0
    steps: int = 0
    events: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cache: int = 0
    tokens_reasoning: int = 0
    state: str = INTERRUPTED
    reason: str | None = None
    parent: str | None = None
    seed_length: int | None = None
    origin: str | None = None
    delegation_depth: int = 0
    agent_preset: str | None = None
    size: int = 0
    indexed: bool = False
    children: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out + self.tokens_cache

    @property
    def is_subagent(self) -> bool:
        return self.origin == "subagent"

    @property
    def display_title(self) -> str | None:
        """What a list shows: the log's title, else the first prompt."""
        return self.title or self.prompt

    @property
    def is_fork(self) -> bool:
        return bool(self.parent) and not self.is_subagent


@dataclass
class SearchHit:
    """A content-search match: the session, the event seq it came from, and a snippet."""

    path: str
    id: str | None
    seq: int
    kind: str
    snippet: str  # the matched words in [brackets] (plain text output)
    text: str = ""  # the same snippet without marks
    marks: tuple[tuple[int, int], ...] = ()  # (start, end) of each matched word in ``text``


_MARK_OPEN, _MARK_CLOSE = "\x02", "\x03"  # snippet() markers; the same characters in a log's text are dropped
_SNIPPET_CONTROL = re.compile(
    r"[\x00\x01\x04-\x1f\x7f-\x9f\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]")


def _marked(snippet: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """(plain text on one line, match ranges) of an FTS snippet marked with ``_MARK_OPEN``/``_MARK_CLOSE``."""
    snippet = _SNIPPET_CONTROL.sub("", re.sub(r"\s+", " ", snippet))
    out: list[str] = []
    marks: list[tuple[int, int]] = []
    n = 0
    start = None
    for part in re.split("([\x02\x03])", snippet):
        if part == _MARK_OPEN:
            start = n
        elif part == _MARK_CLOSE:
            if start is not None and n > start:
                marks.append((start, n))
            start = None
        else:
            out.append(part)
            n += len(part)
    return "".join(out), tuple(marks)


def _apply_header(row: SessionRow, h: dict) -> None:
    row.id = h.get("id")
    row.cwd = h.get("cwd") if isinstance(h.get("cwd"), str) else None
    ca = h.get("createdAt")
    row.created_at = ca if isinstance(ca, int) else 0
    row.parent = h.get("parentSession") if isinstance(h.get("parentSession"), str) else None
    sl = h.get("seedLength")
    row.seed_length = sl if isinstance(sl, int) else None
    row.origin = h.get("origin") if isinstance(h.get("origin"), str) else None
    dd = h.get("delegationDepth")
    row.delegation_depth = dd if isinstance(dd, int) else 0
    row.agent_preset = h.get("agentPreset") if isinstance(h.get("agentPreset"), str) else None
