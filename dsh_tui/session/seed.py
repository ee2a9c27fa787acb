"""Taking a seed into a :class:`~.log.Session` (docs/format.md, "Seed validation"): every seed event checked —
envelope, payload shape, relational turn/step rules, surface fold — with fast paths for the common
well-formed shapes, and a store's compact packed rows kept compact (``events`` becomes an ``EventList``).

``Session.__init__`` runs :func:`load_seed` as its ``_load_seed`` method: it reads and sets the session's own
state (relations, surface fold, tracked events), so it belongs to the class; it lives here because it is
one long loop over local aliases (the cold-load hot path), not a concept of the log's API.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .errors import SessionValidationError
from .events import (
    ASSISTANT_CHUNK,
    ASSISTANT_MESSAGE,
    REQUEST_CONTEXT,
    REQUEST_HEADER,
    SESSION_END_SEED,
    SESSION_TITLE,
    STEP_END,
    STEP_START,
    SURFACE_TYPES,
    TODO_WRITE,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    V4_KNOWN_EVENT_TYPES,
)
from .invariants import PAYLOAD_CHECKED_TYPES, check_envelope
from .jsonutil import MAX_SAFE_INTEGER, _floats_ok, find_bad_float
from .rows import EventList, PackedRun, RawBlock

if TYPE_CHECKING:
    from .log import Session

_DELTA_FIELD = {"text-delta": "text", "reasoning-delta": "text", "tool-call-delta": "argumentsDelta"}
# the types Relations.check looks at / Relations.apply changes state for / _track records (others: no-ops)
_RELATION_TYPES = frozenset((ASSISTANT_CHUNK, STEP_END, ASSISTANT_MESSAGE, TOOL_CALL, TURN_START, TURN_END,
                             STEP_START, TOOL_RESULT, TODO_WRITE, REQUEST_HEADER, REQUEST_CONTEXT))
_BOUNDARY_TYPES = frozenset((TURN_START, TURN_END, STEP_START, STEP_END, TOOL_CALL, TOOL_RESULT))
_TRACKED_TYPES = frozenset((REQUEST_HEADER, REQUEST_CONTEXT, SESSION_TITLE, TODO_WRITE, SESSION_END_SEED))
# every type with a rule beyond the envelope and lossless JSON (payload shape, surface, relations, tracking)
_ACTIVE_TYPES = SURFACE_TYPES | _RELATION_TYPES | _TRACKED_TYPES | PAYLOAD_CHECKED_TYPES
# the seed loader's fast paths for common shapes (tests turn them off to compare with the generic path)
_SEED_FAST_PATHS = True
_INT_ONLY = {int}


def _seqs_ok(src: Any, seq: int, empty_ok: bool) -> bool:
    """True when ``src`` is a valid format-v0 ``sourceEventSeqs`` of the event at ``seq`` (``surface.check_markers``'
    rule: exact ints in ``0..seq-1``, no duplicates; empty only where ``empty_ok``); False lets the generic path
    judge it (and name the problem)."""
    if type(src) is not list:
        return False
    if not src:
        return empty_ok
    first = src[0]
    last = src[-1]
    if (first.__class__ is int and last.__class__ is int and first >= 0 and last < seq
            and last - first == len(src) - 1 and src == [*range(first, last + 1)]):
        return set(map(type, src)) == _INT_ONLY  # (a run of a step's chunks: equal ints, no duplicates)
    return (set(map(type, src)) == _INT_ONLY and min(src) >= 0 and max(src) < seq
            and len(set(src)) == len(src))


def load_seed(self: Session, seed: Any, check_relations: bool, runs: dict[int, int] | None, keep: bool,
              floats_checked: Sequence[int] | None = None) -> None:
    """Validate and take the seed; when compact packed rows were kept, ``events`` becomes an EventList (with
    the seed's plain-event cache when every slot was taken as it was). ``keep=False``: the seed's own list
    already is ``_items`` (a check-only load), so nothing is pushed. ``floats_checked``: the indexes whose
    data need no float walk (the decoder walked it, ``sharing.py``)."""
    events = self._items
    compact = False
    verbatim = True
    seed_list = seed
    rel = self._rel
    fold = self._fold
    push = events.append if keep else deque(maxlen=0).append  # check-only: the seed holds the slots
    lo, hi = -MAX_SAFE_INTEGER, MAX_SAFE_INTEGER
    delta_field = _DELTA_FIELD
    chunk_type = ASSISTANT_CHUNK
    floats_ok = _floats_ok
    fast = _SEED_FAST_PATHS and self.format == 0
    surface_types = self._surface_types
    check_pl = self._check_payload
    v4 = self.format == 4
    open_turn = rel.open_turn
    open_step = rel.open_step
    surface_nodes = fold.nodes  # (a surface append inline: what SurfaceFold.apply does for ("append", seq))
    surface_pos = fold._pos
    if type(seed) is EventList:
        seed = seed._items  # compact rows stay compact: a PackedRun member slot is checked as a row
    n_seed = len(seed)
    checked = bytearray(n_seed)  # 1: the decoder found no bad float in this event's data
    for k in floats_checked or ():
        if k < n_seed:
            checked[k] = 1
    nxt = 0  # the next slot to look at (a row taken whole moves it past all its members at once)
    while nxt < n_seed:
        i = nxt
        ev = slot = seed[i]
        nxt = i + 1
        if ev.__class__ is RawBlock:
            # a v4 line kept compressed: checked as the event it parses to, its slot kept as it is
            ev = ev.event(i - ev.seq0)
            compact = True
        elif ev.__class__ is PackedRun:
            # a row the decoder validated whole (shape, member strings, seqs, times): only its place in
            # the log is checked here (its seqs, the open turn/step, no -0 among turn/step/index)
            n = ev.n
            j = i + n - 1
            if (open_step is not None and ev.seq0 == i and j < n_seed and seed[j] is ev
                    and ev.step == open_step and ev.turn == open_turn
                    and (float not in (ev.turn.__class__, ev.step.__class__, ev.index.__class__)
                         or find_bad_float([ev.turn, ev.step, ev.index]) is None)):
                if keep:
                    events.extend(seed[i : j + 1])
                compact = True
                nxt = j + 1
                continue
            ev = ev.event(i - ev.seq0)  # not in place: the member goes the event-by-event way (exact errors)
            verbatim = False
        # Fast paths for the common well-formed shapes (a 4-key envelope with a dict payload). Each one
        # accepts only what the generic path below accepts, with the same effect on the log's state, and
        # otherwise falls through to it (which reports the first problem precisely).
        env_ok = False  # the envelope rules hold (checked inline, so the generic path skips check_envelope)
        if fast and type(ev) is dict and 4 <= (nk := len(ev)) <= 6:
            try:
                t = ev["type"]
                seq = ev["seq"]
                tm = ev["time"]
                d = ev["data"]
                env_ok = (type(seq) is int and seq == i and type(tm) is int and lo <= tm <= hi
                          and type(t) is str and t != ""
                          and (nk == 4 or ("surfaceOp" in ev and (nk == 5 or "sourceEventSeqs" in ev))))
                if not env_ok or type(d) is not dict:
                    pass  # the generic path below, without a raise to get there
                elif nk != 4:
                    # a surface event (its surfaceOp, and sourceEventSeqs with 6 keys): the common v0 appends
                    if t == USER_MESSAGE:
                        # a prompt appended to the surface (no relation rule): markers and payload shape inline
                        if (nk == 5 and ev["surfaceOp"] == "append" and type(v := d["id"]) is str and v
                                and d["role"] == "user" and type(src := d["source"]) is dict
                                and type(v := src["kind"]) is str and v and type(d["content"]) is list
                                and (checked[i] or floats_ok(d))):
                            push(ev)
                            surface_pos[i] = len(surface_nodes)
                            surface_nodes.append(i)
                            continue
                    elif t == ASSISTANT_MESSAGE and check_relations:
                        # the open step's message appended to the surface: markers, payload shape, relation inline
                        if (open_step is not None and open_turn is not None and ev["surfaceOp"] == "append"
                                and d["turn"] == open_turn and d["step"] == open_step
                                and type(m := d["message"]) is dict and type(v := m["id"]) is str and v
                                and m["role"] == "assistant" and type(src := m["source"]) is dict
                                and type(v := src["kind"]) is str and v == "model"
                                and type(v := src["provider"]) is str and v and type(v := src["model"]) is str and v
                                and type(m["content"]) is list and ("interrupted" not in d or d["interrupted"] is True)
                                and (nk == 5 or _seqs_ok(ev["sourceEventSeqs"], i, True))
                                and (checked[i] or floats_ok(d))):
                            push(ev)
                            surface_pos[i] = len(surface_nodes)
                            surface_nodes.append(i)
                            continue
                    elif (t == TOOL_RESULT and check_relations
                          # the answer to one of the open step's calls, appended to the surface (no error): inline
                          and open_step is not None and open_turn is not None and ev["surfaceOp"] == "append"
                          and "error" not in d and d["turn"] == open_turn and d["step"] == open_step
                          and type(m := d["message"]) is dict and type(v := m["id"]) is str and v
                          and m["role"] == "user" and type(src := m["source"]) is dict
                          and type(v := src["kind"]) is str and v == "tool"
                          and type(cid := src["callId"]) is str
                          and cid in rel.step_calls and cid not in rel.answered
                          and type(c := m["content"]) is list and len(c) == 1 and type(b := c[0]) is dict
                          and b["type"] == "tool-result" and b["toolCallId"] == cid
                          and (nk == 5 or _seqs_ok(ev["sourceEventSeqs"], i, False))
                          and (checked[i] or floats_ok(d))):
                        push(ev)
                        surface_pos[i] = len(surface_nodes)
                        surface_nodes.append(i)
                        rel.answered.add(cid)
                        continue
                elif t == chunk_type:
                    # the vast majority: an assistant/chunk inside the open step
                    if open_step is None or d["step"] != open_step or d["turn"] != open_turn:
                        raise TypeError
                    if runs is not None and i in runs:
                        n = runs[i]
                        j = i + n - 1
                        if (n >= 1 and j < n_seed and type(seed[j]) is dict and type(seed[j].get("seq")) is int
                                and seed[j].get("seq") == j and floats_ok(d)):
                            if keep:
                                events.extend(seed[i : j + 1])
                            nxt = j + 1
                            continue
                    if len(d) == 3:
                        # turn/step equal the open ones (ints, never -0): only the chunk can hold a bad float
                        c = d["chunk"]
                        f = delta_field.get(c["type"])
                        if (f is not None and len(c) == 3 and type(c["index"]) is int
                                and type(c[f]) is str) or checked[i] or floats_ok(c):
                            push(ev)
                            continue
                elif t not in _ACTIVE_TYPES:
                    # no payload, relation, surface or tracking rule: only the lossless-JSON rule
                    if checked[i] or floats_ok(d):
                        push(ev)
                        continue
                elif not check_relations:
                    pass
                elif t == STEP_START:
                    if (open_turn is not None and open_step is None and len(d) == 2 and d["turn"] == open_turn
                            and type(step := d["step"]) is int and step == rel.last_step + 1):
                        push(ev)
                        rel.start_step(step)
                        open_step = step
                        continue
                elif t == STEP_END:
                    if open_step is not None and len(d) == 2 and d["turn"] == open_turn and d["step"] == open_step:
                        push(ev)
                        rel.end_step()
                        open_step = None
                        continue
                elif t == TOOL_CALL:
                    if (open_step is not None and len(d) == 5 and d["turn"] == open_turn and d["step"] == open_step
                            and type(d["callId"]) is str and type(d["name"]) is str
                            and type(d["arguments"]) is str):
                        push(ev)
                        rel.step_calls.add(d["callId"])
                        continue
                elif t == TURN_START:
                    if (open_turn is None and len(d) == 1 and type(turn := d["turn"]) is int
                            and turn == rel.last_turn + 1):
                        push(ev)
                        rel.start_turn(turn)
                        open_turn = turn
                        open_step = None
                        continue
                elif (t == TURN_END and open_turn is not None and open_step is None and len(d) == 2
                      and d["turn"] == open_turn and type(r := d["reason"]) is dict
                      and type(r.get("kind")) is str and floats_ok(r)):
                    push(ev)
                    rel.end_turn()
                    open_turn = None
                    continue
            except (KeyError, TypeError, AttributeError):
                pass  # not the common shape: the generic path below reports it precisely
        if not env_ok:
            check_envelope(ev, i)
        if not (checked[i] or floats_ok(ev["data"])):
            raise SessionValidationError(f"seq {i}: {find_bad_float(ev['data'])}")
        t = ev["type"]
        if v4 and t not in V4_KNOWN_EVENT_TYPES and ev.get("ignorable") is not True:
            raise SessionValidationError(
                f"seq {i}: format v4 event type {t!r} is unknown and not ignorable (written by a newer harness?)",
                "UNSUPPORTED_FORMAT")
        plan = fold.plan(ev) if t in surface_types or "surfaceOp" in ev or "sourceEventSeqs" in ev else None
        check_pl(ev)
        if check_relations and t in _RELATION_TYPES:
            rel.check(ev)
        push(slot if slot.__class__ is RawBlock else ev)
        if plan is not None:
            fold.apply(plan)
        if t in _BOUNDARY_TYPES:
            try:
                rel.apply(ev)
            except (KeyError, TypeError, AttributeError):
                pass  # only reachable with check_relations=False on a malformed boundary event
            if check_relations:
                open_turn = rel.open_turn
                open_step = rel.open_step
        if t in _TRACKED_TYPES:
            self._track(ev)
    if compact and keep:
        self.events = EventList(events, seed_list.plain_cache() if verbatim else None)
