"""The packed-row codec (docs/format.md, "Packed rows"): packing one append batch into rows, validating and
expanding rows.

A storage line is either an event verbatim or a packed row ``{type, seq0, time0, data}`` standing for a run
of >= 3 consecutive whitelisted ``assistant/chunk`` delta events. Rows are an encoding, never events.

* :func:`pack_batch` — encode one append batch (runs never cross batch boundaries). ``max_members`` /
  ``max_bytes`` are the SQLite packer's caps (1,024 members / 1 MiB of row ``data`` JSON).
* :func:`expand_line` — decode one parsed line into its events; a malformed row raises
  :class:`SessionCorruptionError` (never silently dropped).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from itertools import accumulate
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


