"""Packed chunk rows (§3.3): ``text-chunks`` / ``reasoning-chunks`` / ``tool-call-chunks`` storage lines.

A storage line is either an event verbatim or a packed row ``{type, seq0, time0, data}`` standing for a run
of >= 3 consecutive whitelisted ``assistant/chunk`` delta events. Rows are an encoding, never events.

* :func:`pack_batch` — encode one append batch (runs never cross batch boundaries). ``max_members`` /
  ``max_bytes`` are the SQLite packer's caps (1,024 members / 1 MiB of row ``data`` JSON).
* :func:`expand_line` — decode one parsed line into its events; a malformed row raises
  :class:`SessionCorruptionError` (never silently dropped).
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate, islice
from operator import sub
from typing import Any

import orjson

from dsh_tui.session.errors import SessionCorruptionError
from dsh_tui.session.events import REASONING_CHUNKS, ROW_TAGS, TEXT_CHUNKS, TOOL_CALL_CHUNKS
from dsh_tui.session.jsonutil import MAX_SAFE_INTEGER, dumps

_encode_str = json.encoder.encode_basestring  # == dumps(str) for text without surrogates
_orjson_dumps = orjson.dumps
_OrjsonError = orjson.JSONEncodeError

MIN_RUN = 3  # format constant, not a knob
SQLITE_MAX_MEMBERS = 1024
SQLITE_MAX_BYTES = 1024 * 1024

_TEXT = "text-delta"
_REASONING = "reasoning-delta"
_TOOL = "tool-call-delta"
_MISSING = object()  # a tool row's absent ``name``
_KIND_TAG = {_TEXT: TEXT_CHUNKS, _REASONING: REASONING_CHUNKS, _TOOL: TOOL_CALL_CHUNKS}

_ENV_KEYS = frozenset(("type", "seq", "time", "data"))
_DATA_KEYS = frozenset(("turn", "step", "chunk"))
_TEXT_CHUNK_KEYS = frozenset(("type", "index", "text"))
_TOOL_KEYS = frozenset(("type", "index", "id", "argumentsDelta"))
_TOOL_KEYS_NAMED = frozenset(("type", "index", "id", "name", "argumentsDelta"))
_ROW_KEYS = frozenset(("type", "seq0", "time0", "data"))
_STR_ONLY = {str}
_INT_ONLY = {int}
_TEXT_ROW_DATA = frozenset(("turn", "step", "index", "dt", "texts"))
_TOOL_ROW_DATA = frozenset(("turn", "step", "index", "id", "dt", "args"))
_TOOL_ROW_DATA_NAMED = frozenset(("turn", "step", "index", "id", "name", "dt", "args"))


def _is_num(v: Any) -> bool:
    t = type(v)
    return t is int or t is float


def _safe(v: Any) -> bool:
    return type(v) is int and -MAX_SAFE_INTEGER <= v <= MAX_SAFE_INTEGER


def classify(event: Any) -> str | None:
    """The delta kind of a pack-eligible event (the whole shape whitelisted), else None."""
    if type(event) is not dict or event.get("type") != "assistant/chunk" or event.keys() != _ENV_KEYS:
        return None
    seq = event["seq"]
    if type(seq) is not int or not 0 <= seq <= MAX_SAFE_INTEGER or not _safe(event["time"]):
        return None
    data = event["data"]
    if type(data) is not dict or data.keys() != _DATA_KEYS:
        return None
    if not _is_num(data["turn"]) or not _is_num(data["step"]):
        return None
    chunk = data["chunk"]
    if type(chunk) is not dict or not _is_num(chunk.get("index")):
        return None
    ct = chunk.get("type")
    if ct in (_TEXT, _REASONING):
        if chunk.keys() == _TEXT_CHUNK_KEYS and type(chunk["text"]) is str:
            return ct
        return None
    if ct == _TOOL:
        keys = chunk.keys()
        named_ok = keys == _TOOL_KEYS_NAMED and type(chunk["name"]) is str
        if (keys == _TOOL_KEYS or named_ok) and type(chunk["id"]) is str and type(chunk["argumentsDelta"]) is str:
            return ct
        return None
    return None


def _continues(prev: dict, nxt: dict, kind: str) -> bool:
    if nxt["seq"] != prev["seq"] + 1:
        return False
    if not _safe(nxt["time"] - prev["time"]):
        return False
    pd, nd = prev["data"], nxt["data"]
    if nd["turn"] != pd["turn"] or nd["step"] != pd["step"]:
        return False
    # JS compares numbers: 1 == 1.0 but the row keeps the first member's value, so require same type too
    if type(nd["turn"]) is not type(pd["turn"]) or type(nd["step"]) is not type(pd["step"]):
        return False
    pc, nc = pd["chunk"], nd["chunk"]
    if nc["index"] != pc["index"] or type(nc["index"]) is not type(pc["index"]):
        return False
    if kind != _TOOL:
        return True
    if pc["id"] != nc["id"]:
        return False
    if ("name" in pc) != ("name" in nc):
        return False
    return pc.get("name") == nc.get("name")


def _member(event: dict, kind: str) -> str:
    c = event["data"]["chunk"]
    return c["argumentsDelta"] if kind == _TOOL else c["text"]


def _build_row(kind: str, run: list[dict]) -> dict:
    first = run[0]
    d = first["data"]
    c = d["chunk"]
    times = [e["time"] for e in run]
    dt = list(map(sub, times[1:], times))
    data: dict[str, Any] = {"turn": d["turn"], "step": d["step"], "index": c["index"], "dt": dt}
    if kind == _TOOL:
        data["id"] = c["id"]
        if "name" in c:
            data["name"] = c["name"]
        data["args"] = [e["data"]["chunk"]["argumentsDelta"] for e in run]
    else:
        data["texts"] = [e["data"]["chunk"]["text"] for e in run]
    return {"type": _KIND_TAG[kind], "seq0": first["seq"], "time0": first["time"], "data": data}


def _row_fixed_bytes(kind: str, first: dict) -> int:
    """UTF-8 size of the row data JSON with empty ``dt`` and member lists."""
    d = first["data"]
    c = d["chunk"]
    data: dict[str, Any] = {"turn": d["turn"], "step": d["step"], "index": c["index"], "dt": []}
    if kind == _TOOL:
        data["id"] = c["id"]
        if "name" in c:
            data["name"] = c["name"]
        data["args"] = []
    else:
        data["texts"] = []
    return len(dumps(data).encode("utf-8"))


def _json_str_bytes(text: str) -> int:
    """UTF-8 size of ``dumps(text)`` (a JSON string literal)."""
    try:
        return len(_encode_str(text).encode("utf-8"))
    except UnicodeEncodeError:  # lone surrogates: dumps escapes them as \\udXXX
        return len(dumps(text).encode("utf-8"))


def _fits(kind: str, members: list[dict], max_bytes: int) -> bool:
    """True when the row of all ``members`` stays within ``max_bytes`` (then the member-by-member sizing below
    would take them all). The member-array and ``dt`` JSON sizes are measured in one go: they equal the
    per-member sums plus the commas. Lone surrogates (orjson refuses them) answer False: measure one by one."""
    field = "argumentsDelta" if kind == _TOOL else "text"  # == _member, without a call per member
    texts = [e["data"]["chunk"][field] for e in members]
    times = [e["time"] for e in members]
    try:
        texts_len = len(_orjson_dumps(texts))
    except _OrjsonError:
        return False
    dt_len = len(_orjson_dumps(list(map(sub, times[1:], times))))
    return _row_fixed_bytes(kind, members[0]) + (texts_len - 2) + (dt_len - 2) <= max_bytes


def _emit_run(kind: str, run: list[dict], out: list[dict], max_members: int | None, max_bytes: int | None) -> None:
    n = len(run)
    if n < MIN_RUN:
        out.extend(run)
        return
    if max_members is None and max_bytes is None:
        out.append(_build_row(kind, run))
        return
    cap_m = max_members if max_members is not None else n
    if cap_m < MIN_RUN:
        out.extend(run)
        return
    i = 0
    while n - i >= MIN_RUN:
        limit = min(cap_m, n - i)
        if max_bytes is not None and not _fits(kind, run[i : i + limit], max_bytes):
            size = _row_fixed_bytes(kind, run[i])
            m = 0
            while m < limit:
                e = run[i + m]
                add = _json_str_bytes(_member(e, kind))
                if m > 0:
                    add += 1 + len(str(e["time"] - run[i + m - 1]["time"])) + (1 if m > 1 else 0)
                if size + add > max_bytes:
                    break
                size += add
                m += 1
            limit = m
        if limit >= MIN_RUN:
            out.append(_build_row(kind, run[i : i + limit]))
            i += limit
        else:
            out.append(run[i])  # not even a 3-member prefix fits: this member stays scalar
            i += 1
    out.extend(run[i:])


def pack_batch(
    events: list[dict], *, max_members: int | None = None, max_bytes: int | None = None
) -> list[dict]:
    """Encode one batch: each run of >= 3 eligible same-block delta chunks becomes one packed row; every
    other event passes through verbatim (the same dict object), in order."""
    out: list[dict] = []
    kind: str | None = None
    run: list[dict] = []
    # The open run's continuation state: an event continues a text/reasoning run exactly when
    # ``classify(ev) == kind and _continues(run[-1], ev, kind)``; the inline test below accepts only events
    # that satisfy both (same-type equality is transitive, so comparing with the run's first turn/step/index
    # equals comparing with the previous member's); anything else takes the general path.
    p_seq = p_time = 0
    r_turn: Any = None
    r_step: Any = None
    r_index: Any = None
    tt = ts = ti = None
    hi = MAX_SAFE_INTEGER
    lo = -hi
    fast = False  # the open run is a text/reasoning run
    for ev in events:
        if fast and type(ev) is dict and len(ev) == 4:
            # len() + four present keys == exactly the envelope keys (likewise for data and chunk)
            try:
                seq = ev["seq"]
                t = ev["time"]
                d = ev["data"]
                if (type(seq) is int and seq == p_seq + 1 and seq <= hi and type(t) is int and lo <= t <= hi
                        and lo <= t - p_time <= hi and ev["type"] == "assistant/chunk"
                        and type(d) is dict and len(d) == 3):
                    c = d["chunk"]
                    dt_ = d["turn"]
                    ds_ = d["step"]
                    if (type(dt_) is tt and dt_ == r_turn and type(ds_) is ts and ds_ == r_step
                            and type(c) is dict and len(c) == 3):
                        ci = c["index"]
                        if (type(ci) is ti and ci == r_index and c["type"] == kind
                                and type(c["text"]) is str):
                            run.append(ev)
                            p_seq = seq
                            p_time = t
                            continue
            except KeyError:
                pass  # not the whitelisted shape: the general path decides
        k = classify(ev)
        if k is None:
            if run:
                _emit_run(kind, run, out, max_members, max_bytes)  # type: ignore[arg-type]
                run = []
                kind = None
                fast = False
            out.append(ev)
            continue
        if k == kind and run and _continues(run[-1], ev, k):
            run.append(ev)
            p_seq, p_time = ev["seq"], ev["time"]
            continue
        if run:
            _emit_run(kind, run, out, max_members, max_bytes)  # type: ignore[arg-type]
        kind = k
        run = [ev]
        d = ev["data"]
        p_seq, p_time = ev["seq"], ev["time"]
        r_turn, r_step, r_index = d["turn"], d["step"], d["chunk"]["index"]
        tt, ts, ti = type(r_turn), type(r_step), type(r_index)
        fast = k != _TOOL
    if run:
        _emit_run(kind, run, out, max_members, max_bytes)  # type: ignore[arg-type]
    return out


def is_packed_row(obj: Any) -> bool:
    """True for a storage row (a row-tagged value). An event that happens to carry a row tag as its type
    and is marked ``ignorable: true`` stays a logical event."""
    return type(obj) is dict and obj.get("type") in ROW_TAGS and obj.get("ignorable") is not True


def row_length(row: dict) -> int:
    d = row["data"]
    return len(d["args"] if row["type"] == TOOL_CALL_CHUNKS else d["texts"])


def _malformed(tag: Any, why: str) -> SessionCorruptionError:
    return SessionCorruptionError(f"malformed {tag} storage row: {why}")


def validate_row(row: dict) -> list[str]:
    """Validate a row-tagged value; returns its member payload list. Raises SessionCorruptionError."""
    tag = row.get("type")
    if row.keys() != _ROW_KEYS:
        raise _malformed(tag, "envelope must be exactly {type, seq0, time0, data}")
    seq0 = row["seq0"]
    if type(seq0) is not int or not 0 <= seq0 <= MAX_SAFE_INTEGER:
        raise _malformed(tag, "seq0 must be a non-negative safe integer")
    if not _safe(row["time0"]):
        raise _malformed(tag, "time0 must be a safe integer")
    data = row["data"]
    if type(data) is not dict:
        raise _malformed(tag, "data must be an object")
    if tag == TOOL_CALL_CHUNKS:
        keys = data.keys()
        named = keys == _TOOL_ROW_DATA_NAMED
        if not named and keys != _TOOL_ROW_DATA:
            raise _malformed(tag, "data must be exactly {turn, step, index, id, name?, dt, args}")
        if type(data["id"]) is not str or (named and type(data["name"]) is not str):
            raise _malformed(tag, "id (and name when present) must be strings")
        members = data["args"]
        pk = "args"
    else:
        if data.keys() != _TEXT_ROW_DATA:
            raise _malformed(tag, "data must be exactly {turn, step, index, dt, texts}")
        members = data["texts"]
        pk = "texts"
    if not (_is_num(data["turn"]) and _is_num(data["step"]) and _is_num(data["index"])):
        raise _malformed(tag, "turn/step/index must be numbers")
    if type(members) is not list or not members or set(map(type, members)) != _STR_ONLY:
        raise _malformed(tag, f"{pk} must be a non-empty string array")
    dt = data["dt"]
    if type(dt) is not list or (dt and set(map(type, dt)) != _INT_ONLY):
        raise _malformed(tag, "dt must be an array of safe integers")
    if dt and (min(dt) < -MAX_SAFE_INTEGER or max(dt) > MAX_SAFE_INTEGER):
        raise _malformed(tag, "dt must be an array of safe integers")
    if len(dt) != len(members) - 1:
        raise _malformed(tag, f"dt length {len(dt)} does not match {len(members)} members")
    if seq0 + len(members) - 1 > MAX_SAFE_INTEGER:
        raise _malformed(tag, "member seqs must stay safe integers")
    if dt:
        times = list(accumulate(dt, initial=row["time0"]))
        if min(times) < -MAX_SAFE_INTEGER or max(times) > MAX_SAFE_INTEGER:
            raise _malformed(tag, "member times must stay safe integers")
    return members


def expand_row(row: dict) -> list[dict]:
    members = validate_row(row)
    tag = row["type"]
    data = row["data"]
    turn, step, index = data["turn"], data["step"], data["index"]
    seq0 = row["seq0"]
    times = accumulate(data["dt"], initial=row["time0"])
    seqs = range(seq0, seq0 + len(members))
    if tag == TOOL_CALL_CHUNKS:
        return _member_events(seqs, times, members, turn, step, index, _TOOL, data["id"],
                              data.get("name", _MISSING))
    return _member_events(seqs, times, members, turn, step, index, _TEXT if tag == TEXT_CHUNKS else _REASONING)


def _member_events(seqs: Iterable[int], times: Iterable[int], members: list[str], turn: Any, step: Any, index: Any,
                   ctype: str, cid: Any = None, name: Any = None) -> list[dict]:
    """A packed row's member events as fresh dicts, in dsh's key order (``name`` is ``_MISSING`` for a tool
    row without one)."""
    if ctype == _TOOL:
        if name is not _MISSING:
            return [{"type": "assistant/chunk", "seq": q, "time": t, "data": {
                "turn": turn, "step": step,
                "chunk": {"type": _TOOL, "index": index, "id": cid, "name": name, "argumentsDelta": m}}}
                for q, t, m in zip(seqs, times, members)]
        return [{"type": "assistant/chunk", "seq": q, "time": t, "data": {
            "turn": turn, "step": step, "chunk": {"type": _TOOL, "index": index, "id": cid, "argumentsDelta": m}}}
            for q, t, m in zip(seqs, times, members)]
    return [{"type": "assistant/chunk", "seq": q, "time": t,
             "data": {"turn": turn, "step": step, "chunk": {"type": ctype, "index": index, "text": m}}}
            for q, t, m in zip(seqs, times, members)]


def expand_line(obj: Any) -> list[dict]:
    """Decode one parsed storage line into the logical event(s) it holds."""
    if type(obj) is dict and obj.get("type") in ROW_TAGS and obj.get("ignorable") is not True:
        return expand_row(obj)
    return [obj]


def expand_lines(objs: list[Any]) -> list[dict]:
    """Decode many parsed storage lines into one flat event list."""
    out: list[dict] = []
    for obj in objs:
        if type(obj) is dict and obj.get("type") in ROW_TAGS and obj.get("ignorable") is not True:
            out.extend(expand_row(obj))
        else:
            out.append(obj)
    return out


def expand_lines_with_runs(objs: list[Any]) -> tuple[list[dict], list[tuple[int, int]]]:
    """Like :func:`expand_lines`, plus the ``(index, count)`` of every expanded packed row in the output.
    Those runs' shapes, seqs and times were validated by the row decoder, so ``Session(header, seed,
    packed_runs=runs)`` can skip re-checking their members one by one."""
    out: list[dict] = []
    runs: list[tuple[int, int]] = []
    for obj in objs:
        if type(obj) is dict and obj.get("type") in ROW_TAGS and obj.get("ignorable") is not True:
            evs = expand_row(obj)
            runs.append((len(out), len(evs)))
            out.extend(evs)
        else:
            out.append(obj)
    return out, runs


# ------------------------------------------------------------------------------------ lazy packed rows


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
        times = accumulate(self.dt, initial=self.time0)
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


class EventList(Sequence):
    """A read-only sequence of logical events where packed rows stay compact (:class:`PackedRun`, one slot per
    member, all pointing at the row) until read. Reading an event (index, iteration, slice) gives the same
    dicts an eager list of :func:`expand_lines` would hold — a row member as a fresh dict on every read, every
    other event as its stored object. Index ``i`` holds the event with ``seq`` i. Slices are plain lists; it
    compares equal to a list of the same events; ``jsonutil.dumps`` serialises it as an array. It has no
    mutators (``Session`` appends through its private slot list)."""

    __slots__ = ("_items", "_pidx", "_pev", "_pn")
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

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: Any) -> Any:
        if type(index) is slice:
            start, stop, step = index.indices(len(self._items))
            if step == 1:
                return self._span(start, stop)
            return [self[i] for i in range(start, stop, step)]
        item = self._items[index]
        if item.__class__ is PackedRun:
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
            if item.__class__ is PackedRun:
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
            if item.__class__ is PackedRun:
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
            if item.__class__ is PackedRun:
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
        self._pev.extend(map(items.__getitem__, new))
        self._pn = n

    def plain_cache(self) -> tuple[array[int], list[Any], int]:
        """A copy of the filled plain-event cache, for an ``EventList`` over a list of the same slots."""
        self._plain_cache()
        return array("q", self._pidx), list(self._pev), self._pn

    def plain(self) -> list[Any]:
        """The events that are not members of a compact packed row (stored objects, in order): every event a
        scan for a non-chunk type needs to look at. Cached (extended as the slots grow); do not mutate."""
        self._plain_cache()
        return self._pev

    def plain_indices(self) -> Sequence[int]:
        """The indexes of the :meth:`plain` events (same caching; do not mutate)."""
        self._plain_cache()
        return self._pidx

    def plain_indexed(self) -> list[tuple[int, Any]]:
        """``(index, event)`` of the :meth:`plain` events."""
        self._plain_cache()
        return list(zip(self._pidx, self._pev, strict=True))

    def packed_count(self) -> int:
        """How many events are members of a compact packed row."""
        return sum(1 for e in self._items if e.__class__ is PackedRun)


def plain_events(events: Any) -> Any:
    """The events of ``events`` that can be anything but a packed-row chunk member (all of a plain list)."""
    return events.plain() if type(events) is EventList else events
