"""The surface fold and the message projection (docs/format.md, "Surface and projection").

:class:`SurfaceFold` keeps the ordered model-visible node seqs and ``replace_generation``. ``plan(event)``
validates a candidate without mutating anything and returns a plan; ``apply(plan)`` commits it. A full
replay and incremental use run the same code.

:class:`FrozenDict` / :class:`FrozenList` are the immutable message objects ``derive_messages`` shares
between calls (plain ``dict``/``list`` subclasses, so ``json``/``orjson`` serialize them unchanged).
"""

from __future__ import annotations

from collections.abc import Callable, MutableSequence
from itertools import islice
from typing import Any

from .errors import SessionValidationError
from .events import (
    ASSISTANT_MESSAGE,
    DEVELOPER_MESSAGE,
    SURFACE_TYPES,
    SYSTEM_MESSAGE,
    TOOL_RESULT,
    USER_MESSAGE,
)
from .jsonutil import MAX_SAFE_INTEGER

_REPLACE_KEYS = frozenset(("op", "start", "end"))
_INT_ONLY = {int}


def _frozen(*_a: Any, **_k: Any) -> Any:
    raise TypeError("session messages are immutable (derive_messages shares them); copy before editing")


class FrozenDict(dict):
    """A dict whose mutators raise. ``copy.deepcopy`` gives a plain mutable deep copy (the way to edit one);
    pickle gives a FrozenDict back; ``copy.copy`` returns the object itself."""

    __slots__ = ()
    __setitem__ = __delitem__ = _frozen  # type: ignore[assignment]
    update = pop = popitem = clear = setdefault = _frozen  # type: ignore[assignment]
    __ior__ = _frozen  # type: ignore[assignment]

    def __reduce__(self) -> Any:
        return (FrozenDict, (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: Any) -> dict:
        return thaw(self)

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"


class FrozenList(list):
    """A list whose mutators raise."""

    __slots__ = ()
    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = _frozen  # type: ignore[assignment]
    sort = reverse = __iadd__ = __imul__ = _frozen  # type: ignore[assignment]

    def __reduce__(self) -> Any:
        return (FrozenList, (list(self),))

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: Any) -> list:
        return thaw(self)

    def __repr__(self) -> str:
        return f"FrozenList({list.__repr__(self)})"


class MessagesView(MutableSequence):
    """An O(1) snapshot of the first ``n`` messages of a cache list that only ever grows (``derive_messages``'s
    cache between replace generations). Reads never copy; it compares equal to a list (or another view) of the
    same messages; ``to_list()`` / ``list(view)`` give a plain list and :mod:`jsonutil` serialises it as an
    array. The snapshot is the caller's: the first mutation copies it (copy-on-write), never touching the
    shared cache. Slices return plain lists."""

    __slots__ = ("_items", "_n", "_own")
    __json_array__ = True
    __hash__ = None  # type: ignore[assignment]  # mutable, like list

    def __init__(self, items: list[Any], n: int | None = None) -> None:
        self._items = items
        self._n = len(items) if n is None else n
        self._own = False

    def _mine(self) -> list[Any]:
        if not self._own:
            self._items = self._items[: self._n]
            self._own = True
        return self._items

    def __len__(self) -> int:
        return len(self._items) if self._own else self._n

    def __getitem__(self, index: Any) -> Any:
        if self._own:
            return self._items[index]
        n = self._n
        if type(index) is slice:
            return self._items[:n][index] if n != len(self._items) else self._items[index]
        i = index.__index__()
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("list index out of range")
        return self._items[i]

    def __iter__(self) -> Any:
        if self._own or self._n == len(self._items):
            return iter(self._items)
        return islice(self._items, self._n)

    def __reversed__(self) -> Any:
        items = self._items
        return (items[i] for i in range(len(self) - 1, -1, -1))

    def __contains__(self, value: Any) -> bool:
        return any(m is value or m == value for m in self)

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, list | MessagesView):
            return NotImplemented
        if len(self) != len(other):
            return False
        return all(a is b or a == b for a, b in zip(self, other, strict=True))

    def __ne__(self, other: Any) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __add__(self, other: Any) -> list[Any]:
        return self.to_list() + list(other)

    def __radd__(self, other: Any) -> list[Any]:
        return list(other) + self.to_list()

    def to_list(self) -> list[Any]:
        """A plain list of the same (shared, immutable) messages."""
        return list(self._items) if self._own else self._items[: self._n]

    # copy-on-write mutators (the snapshot is the caller's, as a fresh list was)
    def __setitem__(self, index: Any, value: Any) -> None:
        self._mine()[index] = value

    def __delitem__(self, index: Any) -> None:
        del self._mine()[index]

    def insert(self, index: int, value: Any) -> None:
        self._mine().insert(index, value)

    def append(self, value: Any) -> None:
        self._mine().append(value)

    def extend(self, values: Any) -> None:
        self._mine().extend(values)

    def sort(self, *, key: Any = None, reverse: bool = False) -> None:
        self._mine().sort(key=key, reverse=reverse)

    def reverse(self) -> None:
        self._mine().reverse()

    def __iadd__(self, values: Any) -> MessagesView:
        self._mine().extend(values)
        return self

    def copy(self) -> list[Any]:
        return self.to_list()

    def __copy__(self) -> list[Any]:
        return self.to_list()

    def __reduce__(self) -> Any:
        return (MessagesView, (self.to_list(),))

    def __repr__(self) -> str:
        return f"MessagesView({self.to_list()!r})"


def freeze(value: Any) -> Any:
    """Deep immutable copy (FrozenDict/FrozenList); already-frozen containers are shared, not copied."""
    t = type(value)
    if t is dict:
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if t is list:
        return FrozenList([freeze(v) for v in value])
    return value


def thaw(value: Any) -> Any:
    """Deep plain (mutable) copy of a frozen value."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thaw(v) for v in value]
    return value


_V4_REPLACE_KEYS = frozenset(("op", "startSeq", "endSeq"))


def _is_seq(v: Any) -> bool:
    return type(v) is int and 0 <= v <= MAX_SAFE_INTEGER


def event_message(event: dict) -> Any:
    """The message an event projects to, or None (non-surface, or assistant message with empty content)."""
    t = event["type"]
    if t == USER_MESSAGE:
        return event["data"]
    if t == ASSISTANT_MESSAGE:
        msg = event["data"]["message"]
        return msg if msg["content"] else None
    if t == TOOL_RESULT:
        return event["data"]["message"]
    if t in (SYSTEM_MESSAGE, DEVELOPER_MESSAGE):  # format v4 only (a v0 log never has them on its surface)
        msg = event["data"]["message"]
        return msg if msg["content"] else None
    return None


def _invalid(msg: str) -> SessionValidationError:
    return SessionValidationError(msg, "INVALID_SURFACE")


def check_markers(event: dict, surface_types: frozenset[str] = SURFACE_TYPES) -> Any:
    """Event-local surface-marker checks: returns the surfaceOp ("append", the replace dict, or None for a
    non-surface event). Raises SessionValidationError. ``surface_types``: format v4 has five."""
    t = event["type"]
    seq = event["seq"]
    if t not in surface_types:
        if "surfaceOp" in event:
            raise _invalid(f"seq {seq}: {t} is not a surface event and cannot carry surfaceOp")
        if "sourceEventSeqs" in event:
            raise _invalid(f"seq {seq}: {t} is not a surface event and cannot carry sourceEventSeqs")
        return None
    if "surfaceOp" not in event:
        raise _invalid(f"seq {seq}: {t} requires a surfaceOp")
    op = event["surfaceOp"]
    if op != "append":
        if surface_types is not SURFACE_TYPES:  # format v4: {op: "replace", startSeq, endSeq}
            if type(op) is not dict or op.keys() != _V4_REPLACE_KEYS or op["op"] != "replace":
                raise _invalid(f"seq {seq}: surfaceOp must be \"append\" or exactly {{op:'replace', startSeq, endSeq}}")
            if not _is_seq(op["startSeq"]) or not _is_seq(op["endSeq"]):
                raise _invalid(f"seq {seq}: surfaceOp.startSeq/endSeq must be non-negative safe integers")
        elif type(op) is not dict or op.keys() != _REPLACE_KEYS or op["op"] != "replace":
            raise _invalid(f"seq {seq}: surfaceOp must be \"append\" or exactly {{op:'replace', start, end}}")
        elif not _is_seq(op["start"]) or not _is_seq(op["end"]):
            raise _invalid(f"seq {seq}: surfaceOp.start/end must be non-negative safe integers")
    if "sourceEventSeqs" in event:
        src = event["sourceEventSeqs"]
        if surface_types is not SURFACE_TYPES and type(src) is list and any(type(s) is list for s in src):
            src = decode_seq_ranges(src, seq)
        # the common valid cases at C speed (all ints, in 0..seq-1, no duplicates): a run of consecutive seqs
        # (a step's chunks), or any such list; anything else is walked below, which names the first problem
        if type(src) is list and src:
            first = src[0]
            last = src[-1]
            if (first.__class__ is int and last.__class__ is int and first >= 0 and last < seq
                    and last - first == len(src) - 1 and src == [*range(first, last + 1)]
                    and set(map(type, src)) == _INT_ONLY):
                return op
            if (set(map(type, src)) == _INT_ONLY and min(src) >= 0 and max(src) < seq
                    and len(set(src)) == len(src)):
                return op
        if type(src) is not list:
            raise _invalid(f"seq {seq}: sourceEventSeqs must be an array")
        if not src and t != ASSISTANT_MESSAGE:
            raise _invalid(f"seq {seq}: sourceEventSeqs may be empty only on assistant/message")
        for s in src:
            if not _is_seq(s):
                raise _invalid(f"seq {seq}: sourceEventSeqs entries must be non-negative safe integers")
            if s >= seq:
                raise _invalid(f"seq {seq}: sourceEventSeqs must reference earlier events ({s} >= {seq})")
        if len(set(src)) != len(src):
            raise _invalid(f"seq {seq}: sourceEventSeqs must not contain duplicates")
    return op


def decode_seq_ranges(src: list, seq: int) -> list[int]:
    """Format v4 stores a run of 3+ consecutive ``sourceEventSeqs`` as an inclusive ``[start, end]`` pair
    (dsh 0.2 ``encodeSeqRanges``); the expanded list."""
    out: list[int] = []
    for entry in src:
        if type(entry) is list:
            if len(entry) != 2 or not _is_seq(entry[0]) or not _is_seq(entry[1]) or entry[1] < entry[0]:
                raise _invalid(f"seq {seq}: sourceEventSeqs range entries must be [start, end] pairs")
            out.extend(range(entry[0], entry[1] + 1))
        else:
            out.append(entry)
    return out


def _strip_result_content(data: Any) -> Any:
    """tool/result data with the inner tool-result block's ``content`` removed (for the content-only rule), or
    None for data of another shape (a malformed replacement: it then differs from every stored result)."""
    if not isinstance(data, dict):
        return None
    msg = data.get("message")
    if not isinstance(msg, dict):
        return None
    content = msg.get("content")
    if not isinstance(content, list) or len(content) != 1 or not isinstance(content[0], dict):
        return None
    block = {k: v for k, v in content[0].items() if k != "content"}
    return {**data, "message": {**msg, "content": [block]}}


class SurfaceFold:
    """Ordered surface nodes (event seqs) and the replace generation. ``get_event(seq)`` resolves a seq
    to its event (needed for the tool/result replacement rule)."""

    __slots__ = ("nodes", "replace_generation", "base_seq", "_pos", "_get_event", "surface_types")

    def __init__(self, get_event: Callable[[int], dict], base_seq: int = 0,
                 surface_types: frozenset[str] = SURFACE_TYPES) -> None:
        self.surface_types = surface_types
        self.nodes: list[int] = []
        self.replace_generation = 0
        self.base_seq = base_seq
        self._pos: dict[int, int] = {}
        self._get_event = get_event

    def plan(self, event: dict) -> Any:
        """Validate a candidate; returns None (no surface change), ``("append", seq)`` or
        ``("replace", seq, i, j)``. Nothing is mutated."""
        op = check_markers(event, self.surface_types)
        if op is None:
            return None
        seq = event["seq"]
        if op == "append":
            return ("append", seq)
        v4 = self.surface_types is not SURFACE_TYPES
        start, end = (op["startSeq"], op["endSeq"]) if v4 else (op["start"], op["end"])
        if start < self.base_seq or end < self.base_seq:
            raise _invalid(f"seq {seq}: surface replace range {start}..{end} lies before the loaded window")
        i = self._pos.get(start)
        j = self._pos.get(end)
        if i is None:
            raise _invalid(f"seq {seq}: surface replace start {start} is not on the surface")
        if j is None:
            raise _invalid(f"seq {seq}: surface replace end {end} is not on the surface")
        if i > j:
            raise _invalid(f"seq {seq}: surface replace start {start} comes after end {end}")
        shadowed = self.nodes[i : j + 1]
        src = event.get("sourceEventSeqs")
        if self.surface_types is not SURFACE_TYPES and type(src) is list:
            src = decode_seq_ranges(src, seq)
        cited = set(src) if src is not None else set()
        missing = [s for s in shadowed if s not in cited]
        if missing:
            raise _invalid(f"seq {seq}: surface replace must cite every shadowed seq in sourceEventSeqs (missing {missing})")
        if event["type"] == TOOL_RESULT and not v4:
            if len(shadowed) != 1:
                raise _invalid(f"seq {seq}: a tool/result replacement must shadow exactly one node")
            old = self._get_event(shadowed[0])
            if old["type"] != TOOL_RESULT:
                raise _invalid(f"seq {seq}: a tool/result replacement must shadow a tool/result")
            if _strip_result_content(old["data"]) != _strip_result_content(event["data"]):
                raise _invalid(f"seq {seq}: a tool/result replacement may change only the tool-result content")
        return ("replace", seq, i, j)

    def apply(self, plan: Any) -> None:
        if plan is None:
            return
        if plan[0] == "append":
            seq = plan[1]
            self._pos[seq] = len(self.nodes)
            self.nodes.append(seq)
            return
        _, seq, i, j = plan
        for s in self.nodes[i : j + 1]:
            del self._pos[s]
        self.nodes[i : j + 1] = [seq]
        for k in range(i, len(self.nodes)):
            self._pos[self.nodes[k]] = k
        self.replace_generation += 1

    def fold(self, event: dict) -> None:
        self.apply(self.plan(event))


def fold_surface(events: list[dict], base_seq: int = 0) -> SurfaceFold:
    """Replay the surface over a contiguous event list (``events[i].seq == base_seq + i``)."""
    fold = SurfaceFold(lambda s: events[s - base_seq], base_seq)
    for ev in events:
        fold.fold(ev)
    return fold


def derive_messages_from(events: list[dict], base_seq: int = 0) -> list[Any]:
    """From-scratch projection of a log (no caching; messages are the stored objects)."""
    fold = fold_surface(events, base_seq)
    out = []
    for s in fold.nodes:
        m = event_message(events[s - base_seq])
        if m is not None:
            out.append(m)
    return out
