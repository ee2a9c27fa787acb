"""Session lifecycles at store level: start, resume and fork (docs/format.md, "Resume and fork";
docs/storage.md).

``start``/``resume`` return ``(Session, SessionWriter)``; the writer holds the cross-process session lock and
releases it on ``close()``. ``fork`` reads the persisted parent (never writes it: it stays byte-identical) and
writes the child's first batch — header + seed + ``session/end-seed`` — in one durable append.
"""

from __future__ import annotations

import copy
import inspect
import time
import uuid
from dataclasses import dataclass

from dsh_tui.session.errors import DshError
from dsh_tui.store import lock as locks
from dsh_tui.store.writer import DEFAULT_WINDOW_MS, SessionWriter


class ForkError(DshError):
    """A fork request names no legal boundary (code ``OPEN_TURN``, ``INVALID_BOUNDARY``, ...)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ResumeFacts:
    """What the runtime needs to continue: the stored length before this lifecycle, whether the log
    already has a request header (⇒ the next request logs ``reason: resume``), and the repair done."""

    stored_length: int
    has_request_header: bool
    repaired: bool
    closers: int
    truncated_bytes: int


def _now_ms() -> int:
    return int(time.time() * 1000)


def start(store, header: dict, *, clock=None, window_ms: float = DEFAULT_WINDOW_MS, on_error=None,
          seed: list[dict] | None = None):
    """A brand-new session: lazy ``create``, lock, empty Session, writer. ``seed`` (a fork's parent prefix or a
    subagent's descriptor, seqs from 0) is the log's first events; ``session/end-seed`` follows it. The writer
    persists the seed with the first flush."""
    from dsh_tui.session.log import Session

    store.create(header)
    lk = locks.acquire(store, header["id"], header)
    try:
        session = Session(header, copy.deepcopy(seed), clock=clock) if seed else Session(header, clock=clock)
        writer = SessionWriter(store, session, window_ms, persisted=0, lock=lk, on_error=on_error)
    except BaseException:
        lk.release()
        raise
    return session, writer


def _accepts_clock(fn) -> bool:
    try:
        return "clock" in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # no signature to read (a C callable): it is called without the clock
        return False


def resume(store, session_id: str, clock=None, *, window_ms: float = DEFAULT_WINDOW_MS, on_error=None):
    """Resume a stored session: lock, ``load`` (torn tail cut + closers committed), then
    ``Session(header, events)``, which appends ``session/end-seed`` unless the log already ends with one.
    The writer persists only what follows the stored prefix. Returns ``(session, writer)``; the facts are
    on ``writer.resume_facts``."""
    from dsh_tui.session.log import Session

    lk = locks.acquire(store, session_id)
    try:
        # a store whose load takes the clock builds (validates) the Session once, with that clock
        takes_clock = _accepts_clock(store.load)
        res = store.load(session_id, clock=clock) if takes_clock else store.load(session_id)
        if res.header.get("id") != session_id:
            raise DshError(f"session {session_id}: stored header names {res.header.get('id')}")
        stored = len(res.events)
        session = res.session if takes_clock else None
        if (session is None or session.header is not res.header or session.first_live_seq != stored
                or (stored and session.events[stored - 1] != res.events[-1])):  # a row member reads fresh
            session = Session(res.header, res.events, clock=clock)
        writer = SessionWriter(store, session, window_ms, persisted=stored, lock=lk, on_error=on_error)
    except BaseException:
        lk.release()
        raise
    writer.resume_facts = ResumeFacts(
        stored_length=stored,
        has_request_header=session.request_header() is not None,
        repaired=bool(res.closers or res.truncated_bytes or res.recovered_events),
        closers=len(res.closers),
        truncated_bytes=res.truncated_bytes,
    )
    return session, writer


def _stored_events(store, session_id: str) -> tuple[dict, list[dict]]:
    """The parent's persisted logical events (legacy import applied, in-memory closers dropped)."""
    res = store.inspect(session_id)
    events = res.events[: len(res.events) - len(res.closers)] if res.closers else res.events
    return res.header, events


def _turn_ends(events: list[dict]) -> dict[int, int]:
    """turn number -> seq of its ``turn/end`` (the first one, as dsh numbers turns once per log)."""
    ends: dict[int, int] = {}
    for i, ev in enumerate(events):
        if ev["type"] == "turn/end":
            ends.setdefault(ev["data"].get("turn"), i)
    return ends


def turn_boundary(events: list[dict], turn: int) -> int:
    """The seq of turn N's ``turn/end``: "after turn N" (dsh ``Session.fork``) — the seed ends there, so the
    standalone events after it (the next prompt's inbox insert, a title) stay with the parent. ``turn`` is a
    positive int (``fork`` checks it before reading the log)."""
    ends = _turn_ends(events)
    if turn in ends:
        return ends[turn]
    if any(ev["type"] == "turn/start" and ev["data"].get("turn") == turn for ev in events):
        raise ForkError(f"turn {turn} never ended; cannot fork inside an open turn", "OPEN_TURN")
    last = max(ends) if ends else None
    completed = f"the last completed turn is {last}" if last is not None else "no turn has completed"
    raise ForkError(f"the session has no turn {turn} ({completed})", "INVALID_BOUNDARY")


def default_boundary(events: list[dict]) -> int:
    """After the last completed turn (its ``turn/end``); a log without any turn forks whole."""
    last_end = next((i for i in reversed(range(len(events))) if events[i]["type"] == "turn/end"), None)
    if last_end is not None:
        return last_end
    if not events:
        raise ForkError("the session has no events to fork", "INVALID_BOUNDARY")
    if any(ev["type"] == "turn/start" for ev in events):
        raise ForkError("the session's only turn is still open; there is no completed turn to fork after",
                        "OPEN_TURN")
    return len(events) - 1


def check_boundary(events: list[dict], boundary: int) -> None:
    """dsh's legal boundary: an existing seq whose last ``turn/start``/``turn/end`` at or before it is a
    ``turn/end`` (or none) — trailing standalone events after a turn are allowed. ``boundary`` is a
    non-negative int (``fork`` checks a given seq before reading the log)."""
    if boundary >= len(events):
        last = f"last seq {len(events) - 1}" if events else "the log is empty"
        raise ForkError(f"fork seq {boundary} names no event ({last})", "INVALID_BOUNDARY")
    for i in range(boundary, -1, -1):
        t = events[i]["type"]
        if t == "turn/end":
            return
        if t == "turn/start":
            raise ForkError(
                f"seq {boundary} is inside open turn {events[i]['data'].get('turn')}; fork at a turn end",
                "OPEN_TURN",
            )


def _before_first_turn(events: list[dict]) -> int | None:
    """The seq just before the first turn starts (or the first inbox splice, which opens one): rewinding to
    the first prompt keeps what preceded it; None when nothing did (the child then carries nothing — a v4
    child is still a seeded log, with nothing inherited)."""
    cut = next((i for i, e in enumerate(events) if e["type"] in ("turn/start", "agent/inbox/spliced")),
               len(events))
    return cut - 1 if cut else None


def fork(
    store,
    source_id: str,
    *,
    at_seq: int | None = None,
    at_turn: int | None = None,
    before_turn: int | None = None,
    child_id: str | None = None,
    clock=None,
) -> dict:
    """Fork a persisted session; returns the child header (already durable). The one fork implementation:
    the CLI, ``/fork``, the browser (``store.catalog.actions.fork_at_turn``) and rewinding
    (``runtime.turns.fork_before_turn``) all call it.

    ``at_seq`` = inclusive boundary seq (must not be inside an open turn: ``OPEN_TURN``); ``at_turn`` = after
    turn N, i.e. through its ``turn/end`` and nothing after it; ``before_turn`` = just before turn N (what
    rewinding to turn N makes: after turn N-1, or for the first turn everything before the first turn starts,
    possibly nothing); none of them = after the last completed turn. The seed is what is committed on disk: a
    crashed (unclosed) turn's in-memory closers are never part of it."""
    from dsh_tui.session.headers import make_header
    from dsh_tui.session.log import Session

    if at_seq is not None and at_turn is not None:
        raise ForkError("give either a fork seq or a fork turn, not both", "INVALID_BOUNDARY")
    if at_seq is not None and (isinstance(at_seq, bool) or not isinstance(at_seq, int) or at_seq < 0):
        raise ForkError(f"fork seq must be a non-negative integer, got {at_seq!r}", "INVALID_BOUNDARY")
    if at_turn is not None and (isinstance(at_turn, bool) or not isinstance(at_turn, int) or at_turn < 1):
        raise ForkError(f"fork turn must be a positive integer, got {at_turn!r}", "INVALID_BOUNDARY")
    if before_turn is not None:
        if at_seq is not None or at_turn is not None:
            raise ForkError("give one fork point, not several", "INVALID_BOUNDARY")
        if isinstance(before_turn, bool) or not isinstance(before_turn, int):
            raise ForkError(f"fork turn must be an integer, got {before_turn!r}", "INVALID_BOUNDARY")
        if before_turn > 1:
            at_turn = before_turn - 1
    parent, events = _stored_events(store, source_id)
    boundary: int | None
    if at_seq is not None:
        boundary = at_seq
    elif at_turn is not None:
        boundary = turn_boundary(events, at_turn)
    elif before_turn is not None:
        boundary = _before_first_turn(events)
    else:
        boundary = default_boundary(events)
    if boundary is not None:
        check_boundary(events, boundary)
    seed = copy.deepcopy(events[: boundary + 1]) if boundary is not None else []
    cid = child_id or f"session-{uuid.uuid4()}"
    if store.exists(cid):
        raise ForkError(f"session {cid} already exists", "SESSION_ALREADY_EXISTS")
    clock = clock or _now_ms
    v4 = parent.get("version") == 4
    if v4 and boundary is not None:
        # dsh 0.2's buildForkSeed: the prefix, then the inherited cut {inherited: true} at the boundary's time
        # (a boundary is never inside an open turn here, so there are no forked closers)
        from dsh_tui.session.repair import interrupted_turn_closers_v4

        seed.append({"type": "session/end-seed", "seq": boundary + 1, "time": events[boundary]["time"],
                     "data": {"inherited": True}})
        seed.extend(interrupted_turn_closers_v4(seed, cid, cause="forked"))
    header = make_header(
        cid,
        cwd=parent.get("cwd"),
        created_at=clock(),
        parent_session=source_id,
        seed_length=boundary + 1 if boundary is not None else 0,
        version=4 if v4 else 0,
    )
    child = Session(header, seed, clock=clock)
    store.create(header)
    with locks.acquire(store, cid, header):
        store.append(cid, list(child.events))
    return header
