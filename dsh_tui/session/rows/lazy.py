"""Packed rows kept compact in memory: :class:`PackedRun` (a row's members decoded on demand),
:func:`lazy_row`, and :class:`EventList` -- the logical event sequence of a loaded log whose packed runs
stay unexpanded until an event is read."""

from __future__ import annotations

from array import array
from collections.abc import Collection, Iterator, Sequence
from itertools import accumulate, islice
from typing import Any

from dsh_tui.session.events import TEXT_CHUNKS, TOOL_CALL_CHUNKS
from dsh_tui.session.jsonutil import MAX_SAFE_INTEGER

from .blocks import BLOCK_EVENTS as BLOCK_EVENTS  # (re-exported with RawBlock)
from .blocks import RawBlock
from .codec import _INT_ONLY, _MISSING, _REASONING, _TEXT, _TOOL, _member_events


class PackedRun:
    """One decoded packed row kept compact: its members as one joined string with their lengths, the time gaps
    and the shared fields. Its members become event dicts only when read (:meth:`event` / :meth:`events`), each
    time fresh and equal to what :func:`expand_row` returns for the row. Built by :func:`lazy_row` after the
    whole row was validated.

    ``lens`` and ``dt`` are ``bytes`` when every value fits in 0..255 (the usual case: one byte per member
    instead of a pointer and an object), else lists; ``text`` holds the members back to back."""

    __slots__ = ("seq0", "time0", "dt", "turn", "step", "index", "ctype", "cid", "name", "n", "text", "lens")

    def __init__(self, seq0: int, time0: int, dt: bytes | list[int], turn: Any, step: Any, index: Any, ctype: str,
                 cid: Any, name: Any, text: str, lens: bytes | list[int]) -> None:
        self.seq0 = seq0
        self.time0 = time0
        self.dt = dt
        self.turn = turn
        self.step = step
        self.index = index
        self.ctype = ctype
        self.cid = cid
        self.name = name  # _MISSING when the row has no name
        self.n = len(lens)  # members
        self.text = text
        self.lens = lens

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"PackedRun(seq0={self.seq0}, n={self.n}, {self.ctype})"

    def members(self, start: int = 0) -> list[str]:
        """The member texts ``start..``."""
        text = self.text
        if self.n == 1:
            return [text] if start == 0 else []
        ends = list(accumulate(self.lens))
        starts = [0, *ends[:-1]]
        return list(map(text.__getitem__, map(slice, starts[start:], ends[start:])))

    def events(self, start: int = 0) -> list[dict]:
        """Member events ``start..`` as fresh dicts."""
        times: Iterator[int] = accumulate(self.dt, initial=self.time0)
        if start:
            times = islice(times, start, None)
        seqs = range(self.seq0 + start, self.seq0 + self.n)
        return _member_events(seqs, times, self.members(start), self.turn, self.step, self.index, self.ctype,
                              self.cid, self.name)

    def event(self, k: int) -> dict:
        """Member ``k`` (0-based) as a fresh dict."""
        t = self.time0 + sum(self.dt[:k]) if k else self.time0
        a = sum(self.lens[:k]) if k else 0
        m = self.text[a : a + self.lens[k]]
        if self.ctype == _TOOL:
            chunk = {"type": _TOOL, "index": self.index, "id": self.cid}
            if self.name is not _MISSING:
                chunk["name"] = self.name
            chunk["argumentsDelta"] = m
        else:
            chunk = {"type": self.ctype, "index": self.index, "text": m}
        return {"type": "assistant/chunk", "seq": self.seq0 + k, "time": t,
                "data": {"turn": self.turn, "step": self.step, "chunk": chunk}}


_NUM_TYPES = (int, float)


def lazy_row(obj: dict) -> PackedRun | None:
    """A parsed row-tagged line as a :class:`PackedRun`, validated exactly as :func:`validate_row` (plus the
    member time bounds) without building member events; None when it is not a well-formed packed row (the
    caller then takes :func:`expand_line`, which raises the precise error or keeps an ignorable event).

    Written for the scanner's hot loop (one call per stored row): exact key sets are checked as "this many
    keys, and each expected one present"; members as strings by joining them (a parsed line holds no ``str``
    subclasses); ``dt`` bounds by ``bytes(dt)`` first (every gap in 0..255 ms, the usual case)."""
    if len(obj) != 4:
        return None
    try:
        tag = obj["type"]
        seq0 = obj["seq0"]
        time0 = obj["time0"]
        data = obj["data"]
        if type(data) is not dict:
            return None
        nd = len(data)
        name: Any = _MISSING
        cid: Any = None
        if tag == TOOL_CALL_CHUNKS:
            if nd == 7:
                name = data["name"]
                if type(name) is not str:
                    return None
            elif nd != 6:
                return None
            cid = data["id"]
            if type(cid) is not str:
                return None
            members = data["args"]
            ctype = _TOOL
        elif nd == 5:
            members = data["texts"]
            ctype = _TEXT if tag == TEXT_CHUNKS else _REASONING
        else:
            return None
        turn = data["turn"]
        step = data["step"]
        index = data["index"]
        dt = data["dt"]
    except KeyError:
        return None
    if type(members) is not list or type(dt) is not list:
        return None
    n = len(members)
    hi = MAX_SAFE_INTEGER
    if not (n and len(dt) == n - 1 and type(seq0) is int and seq0 >= 0 and seq0 + n - 1 <= hi
            and type(time0) is int and -hi <= time0 <= hi
            and type(turn) in _NUM_TYPES and type(step) in _NUM_TYPES and type(index) in _NUM_TYPES):
        return None
    try:
        text = "".join(members)  # TypeError unless every member is a string
    except TypeError:
        return None
    try:
        lens: bytes | list[int] = bytes(map(len, members))
    except ValueError:  # a member of 256 characters or more
        lens = list(map(len, members))
    if n > 1:
        if set(map(type, dt)) != _INT_ONLY:
            return None
        try:
            dt = bytes(dt)  # every gap in 0..255: times only grow, by at most 255 per member
            small = True
        except ValueError:
            small = False
        if small:
            if time0 + 255 * (n - 1) > hi and time0 + sum(dt) > hi:
                return None
        else:
            lo_dt = min(dt)
            hi_dt = max(dt)
            if lo_dt < -hi or hi_dt > hi:
                return None
            if lo_dt >= 0:  # times only grow: the last one is the largest, at most time0 + (n - 1) * max(dt)
                if time0 + hi_dt * (n - 1) > hi and time0 + sum(dt) > hi:
                    return None
            else:
                times = list(accumulate(dt, initial=time0))
                if min(times) < -hi or max(times) > hi:
                    return None
    return PackedRun(seq0, time0, b"" if n == 1 else dt, turn, step, index, ctype, cid, name, text, lens)


_RUNS = (PackedRun, RawBlock)


def slot_event(items: Sequence[Any], i: int) -> Any:
    """The event at index ``i`` of an :class:`EventList`'s slot list (a compact member decoded)."""
    e = items[i]
    if e.__class__ is RawBlock or e.__class__ is PackedRun:
        return e.event(i - e.seq0)
    return e


class _PlainView(Sequence):
    """:meth:`EventList.plain` of a list holding :class:`RawBlock` members: the plain events, a block member
    decoded when read."""

    __slots__ = ("_pidx", "_pev")

    def __init__(self, pidx: array[int], pev: list[Any]) -> None:
        self._pidx = pidx
        self._pev = pev

    def __len__(self) -> int:
        return len(self._pev)

    def __getitem__(self, k: Any) -> Any:
        if type(k) is slice:
            return [self[j] for j in range(*k.indices(len(self._pev)))]
        e = self._pev[k]
        if e.__class__ is RawBlock:
            return e.event(self._pidx[k] - e.seq0)
        return e

    def __iter__(self) -> Iterator[Any]:
        for i, e in zip(self._pidx, self._pev, strict=True):
            yield e.event(i - e.seq0) if e.__class__ is RawBlock else e

    def __reversed__(self) -> Iterator[Any]:
        for i, e in zip(reversed(self._pidx), reversed(self._pev), strict=True):
            yield e.event(i - e.seq0) if e.__class__ is RawBlock else e


class EventList(Sequence):
    """A read-only sequence of logical events where packed rows stay compact (:class:`PackedRun`, one slot per
    member, all pointing at the row) until read. Reading an event (index, iteration, slice) gives the same
    dicts an eager list of :func:`expand_lines` would hold — a row member as a fresh dict on every read, every
    other event as its stored object. Index ``i`` holds the event with ``seq`` i. Slices are plain lists; it
    compares equal to a list of the same events; ``jsonutil.dumps`` serialises it as an array. It has no
    mutators (``Session`` appends through its private slot list)."""

    __slots__ = ("_items", "_pidx", "_pev", "_pn", "_blocks")
    __json_array__ = True
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, items: list[Any] | None = None,
                 plain: tuple[array[int], list[Any], int] | None = None) -> None:
        """``plain``: a filled plain-event cache for ``items`` (see :meth:`plain_cache`), taken as is."""
        self._items = [] if items is None else items
        # the plain (non-member) events among _items[:_pn], and their indexes
        self._pidx: array[int]  # (an array: one machine word per index, no int objects)
        self._pev: list[Any]
        self._pidx, self._pev, self._pn = (array("q"), [], 0) if plain is None else plain
        # whether the plain events include RawBlock members (then plain() decodes them when read)
        self._blocks = plain is not None and RawBlock in set(map(type, self._pev))

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: Any) -> Any:
        if type(index) is slice:
            start, stop, step = index.indices(len(self._items))
            if step == 1:
                return self._span(start, stop)
            return [self[i] for i in range(start, stop, step)]
        item = self._items[index]
        if item.__class__ in _RUNS:
            i = index.__index__()
            if i < 0:
                i += len(self._items)
            return item.event(i - item.seq0)
        return item

    def _span(self, start: int, stop: int) -> list[Any]:
        items = self._items
        if stop <= start:
            return []
        out: list[Any] = []
        i = start
        while i < stop:
            item = items[i]
            if item.__class__ is RawBlock:
                out.append(item.event(i - item.seq0))
                i += 1
            elif item.__class__ is PackedRun:
                k = i - item.seq0
                evs = item.events(k)
                take = min(len(evs), stop - i)
                out.extend(evs if take == len(evs) else evs[:take])
                i += take
            else:
                out.append(item)
                i += 1
        return out

    def __iter__(self) -> Iterator[Any]:
        items = self._items
        skip = 0
        for i, item in enumerate(items):
            if skip:
                skip -= 1
                continue
            if item.__class__ is RawBlock:
                yield item.event(i - item.seq0)
            elif item.__class__ is PackedRun:
                evs = item.events(i - item.seq0)
                skip = len(evs) - 1
                yield from evs
            else:
                yield item

    def __reversed__(self) -> Iterator[Any]:
        items = self._items
        i = len(items) - 1
        while i >= 0:
            item = items[i]
            if item.__class__ is RawBlock:
                yield item.event(i - item.seq0)
                i -= 1
            elif item.__class__ is PackedRun:
                start = item.seq0  # the row's first member sits at index seq0
                yield from reversed(item.events()[: i - start + 1])
                i = start - 1
            else:
                yield item
                i -= 1

    def __contains__(self, value: Any) -> bool:
        return any(e is value or e == value for e in self)

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, list | EventList):
            return NotImplemented
        if len(self) != len(other):
            return False
        if type(other) is EventList and other._items is self._items:
            return True
        return all(a is b or a == b for a, b in zip(self, other, strict=True))

    def __ne__(self, other: Any) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __add__(self, other: Any) -> EventList:
        """Events appended after these (their index stays their seq)."""
        if type(other) is EventList:
            return EventList(self._items + other._items)
        return EventList(self._items + list(other))

    def __radd__(self, other: Any) -> list[Any]:
        return list(other) + self.to_list()

    def __repr__(self) -> str:
        return f"EventList({self.to_list()!r})"

    def __reduce__(self) -> Any:
        return (EventList, (self.to_list(),))

    def to_list(self) -> list[Any]:
        """Every event as a plain list (row members materialised)."""
        return self._span(0, len(self._items))

    def copy(self) -> list[Any]:
        return self.to_list()

    def _plain_cache(self) -> None:
        items = self._items
        n = len(items)
        start = self._pn
        if start == n:
            return
        if start > n:  # never for an append-only slot list; stay correct anyway
            self._pidx, self._pev, start = array("q"), [], 0
        new = [i for i, e in enumerate(islice(items, start, None), start) if e.__class__ is not PackedRun]
        self._pidx.extend(new)
        pev = list(map(items.__getitem__, new))
        self._pev.extend(pev)
        self._pn = n
        if not self._blocks and RawBlock in set(map(type, pev)):
            self._blocks = True

    def plain_cache(self) -> tuple[array[int], list[Any], int]:
        """A copy of the filled plain-event cache, for an ``EventList`` over a list of the same slots."""
        self._plain_cache()
        return array("q", self._pidx), list(self._pev), self._pn

    def plain(self) -> Sequence[Any]:
        """The events that are not members of a compact packed row (stored objects, in order): every event a
        scan for a non-chunk type needs to look at. Cached (extended as the slots grow); do not mutate. With
        :class:`RawBlock` members (a loaded v4 log) a read-only view decoding them when read."""
        self._plain_cache()
        if self._blocks:
            return _PlainView(self._pidx, self._pev)
        return self._pev

    def plain_indices(self) -> Sequence[int]:
        """The indexes of the :meth:`plain` events (same caching; do not mutate)."""
        self._plain_cache()
        return self._pidx

    def plain_indexed(self) -> list[tuple[int, Any]]:
        """``(index, event)`` of the :meth:`plain` events."""
        self._plain_cache()
        if self._blocks:
            return list(zip(self._pidx, _PlainView(self._pidx, self._pev), strict=True))
        return list(zip(self._pidx, self._pev, strict=True))

    def of_types(self, types: Collection[str]) -> Iterator[Any]:
        """The events whose type is one of ``types`` (never a packed-row chunk), in order; a :class:`RawBlock`
        member is decoded only when its type matches."""
        self._plain_cache()
        for i, e in zip(self._pidx, self._pev, strict=True):
            if e.__class__ is RawBlock:
                if e.types[i - e.seq0] in types:
                    yield e.event(i - e.seq0)
            elif e.get("type") in types:
                yield e

    def snapshot(self) -> EventList:
        """The events as of now, as an ``EventList`` of its own (a copy of the slot list: later appends to this
        one do not show; compact members stay compact)."""
        return EventList(self._items[:], self.plain_cache())

    def has_blocks(self) -> bool:
        """Whether some events are :class:`RawBlock` members (a loaded v4 log)."""
        self._plain_cache()
        return self._blocks

    def last_index_of(self, types: frozenset[str]) -> int:
        """The index of the last event whose type is one of ``types`` (never a packed-row chunk), or -1; a
        :class:`RawBlock` member is not decoded for it."""
        items = self._items
        for i in range(len(items) - 1, -1, -1):
            e = items[i]
            c = e.__class__
            if c is RawBlock:
                if e.types[i - e.seq0] in types:
                    return i
            elif c is not PackedRun and type(e) is dict and e.get("type") in types:
                return i
        return -1

    def packed_count(self) -> int:
        """How many events are members of a compact packed row."""
        return sum(1 for e in self._items if e.__class__ is PackedRun)


def events_of(events: Any, types: Collection[str]) -> Iterator[Any]:
    """The events of ``events`` whose type is one of ``types``, in order (see :meth:`EventList.of_types`)."""
    if type(events) is EventList:
        return events.of_types(types)
    return (e for e in events if e.get("type") in types)


def plain_events(events: Any) -> Any:
    """The events of ``events`` that can be anything but a packed-row chunk member (all of a plain list)."""
    return events.plain() if type(events) is EventList else events
