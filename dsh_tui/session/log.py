"""The append-only session log: :class:`Session`.

``Session(header, seed=None, *, clock=None)`` validates the header and the seed (docs/format.md, "Seed
validation": envelope, payload shapes, relational turn/step rules, surface fold — a tight path for
``assistant/chunk``), then appends ``session/end-seed`` when a seed was supplied (even empty) unless it
already ends with one (a resume, docs/format.md "Resume").

``append`` assigns ``seq`` (= length) and ``time`` (``clock()``, epoch ms), validates everything before
touching state (a rejected append leaves the log unchanged), then notifies observers in order. An append
from inside an observer raises (no re-entrant appends).

``events`` is the log, never to be mutated by callers: a plain list, except for a session seeded with a
store's :class:`~.rows.EventList` holding compact packed rows (a cold load), where it is that read-only
``EventList`` (row members are built as dicts when read, so a million-event log costs a fraction of the
memory). Both are sequences of the same event dicts; use ``list(...)`` / ``to_list()`` where a real list is
needed.

``derive_messages()`` is the projection of docs/format.md "What the model sees" with a generation-keyed
cache: every surface node is projected (frozen) once; the cached list is extended incrementally and rebuilt
only when ``replace_generation`` changed; each call returns an O(1) copy-on-write snapshot
(``surface.MessagesView``) of shared immutable messages, equal to the list of them (``to_list()`` gives that
list).

Seed validation and ``append`` share one set of fast paths and incremental state (relations, surface fold,
tracked headers) in this class; the seed loop itself is in ``seed.py`` (``Session._load_seed``), format v4's
write shapes in ``v4shapes.py`` (re-exported here).
"""

from __future__ import annotations

import time as _time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .errors import SessionValidationError
from .events import (
    ASSISTANT_CHUNK,
    ASSISTANT_MESSAGE,
    LEGACY_REFUSED_TYPES,
    REQUEST_CONTEXT,
    REQUEST_HEADER,
    ROW_TAGS,
    SESSION_END_SEED,
    SESSION_TITLE,
    SURFACE_TYPES,
    TODO_WRITE,
    V4_SURFACE_TYPES,
)
from .folds import canonical_header, fold_agent_preset, fold_plan_mode, title_update
from .headers import validate_header
from .invariants import Relations, check_payload, check_payload_v4
from .jsonutil import MAX_SAFE_INTEGER, check_lossless
from .rows import EventList, PackedRun, RawBlock, events_of, slot_event
from .seed import _DELTA_FIELD, load_seed
from .surface import MessagesView, SurfaceFold, event_message, freeze
from .v4shapes import v4_message as v4_message  # (re-exported: the v4 write shapes moved to v4shapes)
from .v4shapes import v4_runtime_message, v4_write_shape
from .v4shapes import v4_source as v4_source

Observer = Callable[["Session", dict], Any]

_NONE = object()


def check_seed(header: dict[str, Any], seed: Any, *, lenient: bool = False,
               packed_runs: Iterable[tuple[int, int]] | None = None,
               floats_checked: Sequence[int] | None = None) -> None:
    """Validate ``header`` and ``seed`` exactly as ``Session(header, seed, ...)`` does (same errors), without
    keeping a session: a read-only open needs the verdict, not a second million-slot list of the same events."""
    if type(seed) is not EventList and type(seed) is not list:
        seed = list(seed)
    Session(header, seed, lenient=lenient, packed_runs=packed_runs, floats_checked=floats_checked, _check_only=True)


_time_ns = _time.time_ns


def _default_clock() -> int:
    return _time_ns() // 1_000_000


class Session:
    """One session: header + append-only event list + surface fold + incremental folds."""

    def __init__(
        self,
        header: dict[str, Any],
        seed: list[dict] | EventList | None = None,
        *,
        clock: Callable[[], int] | None = None,
        lenient: bool = False,
        check_relations: bool = True,
        packed_runs: Iterable[tuple[int, int]] | None = None,
        floats_checked: Sequence[int] | None = None,
        _check_only: bool = False,
    ) -> None:
        """``lenient`` accepts fixture placeholders in the header (see ``validate_header``);
        ``check_relations=False`` skips the turn/step rules for the seed only (foreign/replay logs);
        ``packed_runs`` — ``(index, count)`` spans of the seed that ``rows.expand_row`` produced (see
        ``rows.expand_lines_with_runs``): their members are trusted as decoded and only the span's first
        event (turn/step relation, floats) and its boundary seqs are checked. Only pass spans you got from
        the row decoder for exactly this list. A seed that is a ``rows.EventList`` (the JSONL scanner's) has
        its compact rows checked the same way, as rows, and kept compact in ``events``. ``floats_checked``:
        indexes of seed events whose data the decoder already found free of NaN, ±Infinity and -0 (the JSONL
        scanner's ``floats_checked``; only for exactly the scanner's own events).

        ``_check_only`` (see :func:`check_seed`): the seed's own slot list serves as the log while the seed is
        checked (no second list is built) and no ``session/end-seed`` is appended; the object is for nothing
        but the checking and must be dropped."""
        validate_header(header, lenient=lenient)
        self.header = header
        #: the session's format version: 0, or 4 (dsh 0.2's; docs/format.md "Format v4")
        self.format = 4 if header.get("version") == 4 else 0
        self._surface_types = V4_SURFACE_TYPES if self.format == 4 else SURFACE_TYPES
        self._check_payload = check_payload_v4 if self.format == 4 else check_payload
        self._clock = clock or _default_clock
        self._wall_clock = clock is None  # the chunk fast path reads the wall clock inline
        # the log's slots: event dicts, or (a seed's compact packed rows) the row's PackedRun per member
        self._items: list[Any] = []
        if _check_only and seed is not None:
            self._items = seed._items if isinstance(seed, EventList) else seed
        self.events: list[dict] | EventList = self._items
        # surface events are never packed-row members
        items = self._items
        self._fold = SurfaceFold(lambda i: slot_event(items, i), surface_types=self._surface_types)
        self._rel = Relations()
        self._observers: list[Observer] = []
        self._notifying = False
        self._msg_cache: dict[int, Any] = {}
        self._derived: list[Any] = []
        self._derived_nodes = 0
        self._derived_gen = 0
        self._header_ev: dict | None = None
        self._context_ev: dict | None = None
        self._title: dict | None = None
        self._todos_ev: dict | None = None
        self._end_seed: int | None = None
        if seed is None:
            self.first_live_seq = 0
            return
        self._load_seed(seed, check_relations, dict(packed_runs) if packed_runs else None, not _check_only,
                        floats_checked)
        self.first_live_seq = len(self._items)
        if _check_only:
            return
        last = self._items[-1] if self._items else None
        if last.__class__ is RawBlock:
            last = slot_event(self._items, len(self._items) - 1)
        if last is None or last.__class__ is PackedRun or last["type"] != SESSION_END_SEED:
            self.append(SESSION_END_SEED, {})

    # ------------------------------------------------------------------ properties
    @property
    def id(self) -> str:
        return self.header["id"]

    @property
    def cwd(self) -> str | None:
        return self.header.get("cwd")

    @property
    def open_turn(self) -> int | None:
        return self._rel.open_turn

    @property
    def open_step(self) -> int | None:
        return self._rel.open_step

    @property
    def last_turn(self) -> int:
        return self._rel.last_turn

    @property
    def last_step(self) -> int:
        """Number of the latest step of the latest turn (0 before the first step of a turn)."""
        return self._rel.last_step

    @property
    def surface_nodes(self) -> tuple[int, ...]:
        return tuple(self._fold.nodes)

    @property
    def replace_generation(self) -> int:
        return self._fold.replace_generation

    @property
    def end_seed_seq(self) -> int | None:
        """Seq of the last ``session/end-seed`` (None if the log never had a seed)."""
        return self._end_seed

    def __len__(self) -> int:
        return len(self._items)

    # ------------------------------------------------------------------ observers
    def subscribe(self, fn: Observer) -> Callable[[], None]:
        """Call ``fn(session, event)`` after every committed append; returns an unsubscribe function."""
        self._observers.append(fn)

        def unsubscribe() -> None:
            try:
                self._observers.remove(fn)
            except ValueError:
                pass

        return unsubscribe

    # ------------------------------------------------------------------ seed
    _load_seed = load_seed  # (dsh_tui/session/seed.py: the seed check, with its fast paths)

    # ------------------------------------------------------------------ append
    def append(
        self,
        type: str,  # noqa: A002 - dsh field name
        data: Any,
        *,
        surface_op: Any = None,
        source_event_seqs: list[int] | None = None,
        ignorable: bool = False,
    ) -> dict:
        """Validate and append one event; returns the stored event dict (do not mutate it). ``ignorable``
        marks a plugin's own event type (``ignorable: true``) so that a reader that does not know it skips it."""
        if self._notifying:
            raise SessionValidationError("re-entrant append from a session observer is not allowed", "REENTRANT")
        if self.format == 4 and builtins_type(type) is str:
            if type == ASSISTANT_MESSAGE and builtins_type(data) is dict and "stream" not in data:
                # a v4 assistant message embeds its stream (dsh 0.2 requires the array): the attempt's chunks
                items = self._items
                stream = []
                for s in source_event_seqs or ():
                    ev = slot_event(items, s) if builtins_type(s) is int and 0 <= s < len(items) else None
                    if builtins_type(ev) is dict and ev.get("type") == ASSISTANT_CHUNK:
                        stream.append({"type": "chunk", "time": ev["time"], "chunk": ev["data"]["chunk"]})
                data = {**data, "stream": stream}
            data, surface_op, source_event_seqs, ignorable = v4_write_shape(
                type, data, surface_op, source_event_seqs, ignorable)
        events = self._items
        rel = self._rel
        T = builtins_type
        # fast path: chunks are the bulk of every log
        if (type == ASSISTANT_CHUNK and surface_op is None and source_event_seqs is None and not ignorable
                and T(data) is dict and (step := rel.open_step) is not None
                and data.get("turn") == rel.open_turn and data.get("step") == step):
            c = data.get("chunk")
            f = _DELTA_FIELD.get(c.get("type")) if T(c) is dict else None
            if (f is None or len(data) != 3 or T(c.get(f)) is not str
                    or T(idx := c.get("index")) is not int or len(c) > 5):
                check_lossless(data, "data")
            elif len(c) == 3:
                # exactly {type, index, f}: f is a str and index an int (checked above)
                if T(c["type"]) is not str or not -MAX_SAFE_INTEGER <= idx <= MAX_SAFE_INTEGER:
                    check_lossless(data, "data")  # raises with the path
            else:
                for v in c.values():
                    tv = T(v)
                    if tv is str:
                        continue
                    if tv is not int or not -MAX_SAFE_INTEGER <= v <= MAX_SAFE_INTEGER:
                        check_lossless(data, "data")  # raises with the path
                        break
            if self._wall_clock:
                t = _time_ns() // 1_000_000  # an int, a safe integer until the year 287,000
            else:
                t = self._clock()
                if T(t) is not int or not -MAX_SAFE_INTEGER <= t <= MAX_SAFE_INTEGER:
                    t = self._check_time(t)
            ev = {"type": type, "seq": len(events), "time": t, "data": data}
            events.append(ev)
            obs = self._observers
            if obs:
                if len(obs) == 1:
                    self._notifying = True
                    try:
                        obs[0](self, ev)
                    finally:
                        self._notifying = False
                else:
                    self._notify(ev)
            return ev
        seq = len(events)
        if builtins_type(type) is not str or not type:
            raise SessionValidationError(f"event type must be a non-empty string, got {type!r}")
        if type in LEGACY_REFUSED_TYPES:
            raise SessionValidationError(f"{type} is an unsupported legacy event type", "UNSUPPORTED_LEGACY")
        if type in ROW_TAGS:
            raise SessionValidationError(f"{type!r} is a storage row tag, not an event type")
        check_lossless(data, "data")
        ev = {"type": type, "seq": seq, "time": 0, "data": data}
        if source_event_seqs is not None:
            check_lossless(source_event_seqs, "sourceEventSeqs")
            ev["sourceEventSeqs"] = source_event_seqs
        if surface_op is not None:
            check_lossless(surface_op, "surfaceOp")
            ev["surfaceOp"] = surface_op
        if ignorable:
            ev["ignorable"] = True
        plan = self._fold.plan(ev)
        self._check_payload(ev)
        rel.check(ev)
        ev["time"] = self._now()
        # commit
        events.append(ev)
        self._fold.apply(plan)
        rel.apply(ev)
        self._track(ev)
        if self._observers:
            self._notify(ev)
        return ev

    def _now(self) -> int:
        return self._check_time(self._clock())

    @staticmethod
    def _check_time(t: Any) -> int:
        if builtins_type(t) is not int:
            if builtins_type(t) is float and t.is_integer():
                t = int(t)
            else:
                raise SessionValidationError(f"clock returned {t!r}; time must be integer epoch milliseconds")
        if not -MAX_SAFE_INTEGER <= t <= MAX_SAFE_INTEGER:
            raise SessionValidationError(f"clock returned {t}; time must be a safe integer")
        return t

    def _track(self, ev: dict) -> None:
        t = ev["type"]
        if t == REQUEST_HEADER:
            self._header_ev = ev
        elif t == REQUEST_CONTEXT:
            self._context_ev = ev
        elif t == SESSION_TITLE:
            self._title = title_update(self._title, ev)
        elif t == TODO_WRITE:
            self._todos_ev = ev
        elif t == SESSION_END_SEED:
            self._end_seed = ev["seq"]

    def _notify(self, ev: dict) -> None:
        self._notifying = True
        first_error: BaseException | None = None
        try:
            for fn in list(self._observers):
                try:
                    fn(self, ev)
                except Exception as e:  # keep notifying the others, then surface the first failure
                    if first_error is None:
                        first_error = e
        finally:
            self._notifying = False
        if first_error is not None:
            raise first_error

    # ------------------------------------------------------------------ projections
    def derive_messages(self) -> MessagesView:
        """What the model sees, in O(1): a snapshot (``MessagesView``) of the shared, immutable message
        objects. It compares equal to the list of those messages; later appends and replaces never change it;
        mutating it copies it first (copy-on-write, so it is the caller's as a fresh list would be).
        ``jsonutil.dumps`` / ``dumps_bytes`` serialise it; use ``to_list()`` where a real ``list`` is needed
        (``json.dumps``, ``orjson.dumps``, ``isinstance(x, list)``)."""
        derived = self._refresh_derived()
        return MessagesView(derived, len(derived))

    def messages_view(self) -> MessagesView:
        """Same as :meth:`derive_messages` (kept for callers written against the earlier copying version)."""
        derived = self._refresh_derived()
        return MessagesView(derived, len(derived))

    def _refresh_derived(self) -> list[Any]:
        """The cache list, brought up to date. It is only appended to: a replace generation starts a new list,
        so earlier views keep their snapshot."""
        fold = self._fold
        if fold.replace_generation != self._derived_gen:
            self._derived = []
            self._derived_nodes = 0
            self._derived_gen = fold.replace_generation
        nodes = fold.nodes
        n = len(nodes)
        if self._derived_nodes != n:
            cache = self._msg_cache
            events = self._items  # surface nodes are never packed-row members (a v4 one can be a RawBlock's)
            out = self._derived
            for s in nodes[self._derived_nodes:]:
                m = cache.get(s, _NONE)
                if m is _NONE:
                    raw = (v4_runtime_message(slot_event(events, s)) if self.format == 4
                           else event_message(events[s]))
                    m = None if raw is None else freeze(raw)
                    cache[s] = m
                if m is not None:
                    out.append(m)
            self._derived_nodes = n
        return self._derived

    def request_header(self) -> dict | None:
        """The latest ``request/header`` canonicalized (docs/format.md, "Request header"), or None. Format v4
        keeps the system prompt in the log (the ``system/message`` surface head), not in the header: it is put
        back here, so a v4 session reads like a v0 one to the runtime."""
        ev = self._header_ev
        if ev is None:
            return None
        if self.format == 4:
            system = self.system_head_text()
            header = dict(ev["data"]["header"])
            if system:
                header["system"] = system
            return canonical_header(header)
        return canonical_header(ev["data"]["header"])

    def system_head(self) -> dict | None:
        """Format v4: the ``system/message`` event that is the protected first surface node, or None."""
        nodes = self._fold.nodes
        if not nodes:
            return None
        ev = slot_event(self._items, nodes[0])
        return ev if ev.__class__ is dict and ev["type"] == "system/message" else None

    def system_head_text(self) -> str | None:
        head = self.system_head()
        if head is None:
            return None
        return "".join(b.get("text", "") for b in head["data"]["message"]["content"]
                       if isinstance(b, dict) and b.get("type") == "text")

    def set_system_prompt(self, system: str, turn: int, step: int) -> dict | None:
        """Format v4: make ``system`` the session's system prompt, as dsh 0.2 does: the first ``system/message``
        (appended while the surface is still empty), or a replacement of the protected head when the text
        differs. Returns the appended event, or None (unchanged, empty, v0, or too late for a first head)."""
        if self.format != 4 or not system:
            return None
        head = self.system_head()
        if head is not None and self.system_head_text() == system:
            return None
        if head is None and self._fold.nodes:
            return None  # dsh refuses a first system head after other surface nodes
        import uuid as _uuid

        data = {"turn": turn, "step": step, "message": {
            "role": "system", "content": [{"type": "text", "text": system}], "source": {"kind": "system-prompt"},
            "id": str(_uuid.uuid4())}}
        if head is None:
            return self.append("system/message", data, surface_op="append")
        return self.append("system/message", data, surface_op={"op": "replace", "startSeq": head["seq"],
                                                                "endSeq": head["seq"]},
                           source_event_seqs=[head["seq"]])

    def request_context(self) -> dict | None:
        ev = self._context_ev
        return None if ev is None else ev["data"]

    def title(self) -> str | None:
        return None if self._title is None else self._title["title"]

    def title_data(self) -> dict | None:
        return self._title

    def todos(self) -> list[dict]:
        ev = self._todos_ev
        return [] if ev is None else list(ev["data"].get("todos", []))

    def plan_mode(self) -> bool:
        return fold_plan_mode(self.events)

    def agent_preset(self) -> str | None:
        return fold_agent_preset(self.events, self.header)

    def append_origin_events(self) -> list[dict]:
        """Surface events that entered the log with ``surfaceOp == "append"`` (the human transcript source)."""
        # surfaceOp is only on surface events (validated): a loaded v4 log decodes only those
        return [e for e in events_of(self.events, self._surface_types) if e.get("surfaceOp") == "append"]


builtins_type = type
