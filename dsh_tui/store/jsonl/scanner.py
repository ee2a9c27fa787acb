"""The incremental JSONL line scanner (docs/format.md, "Read path: torn tail or corruption"): decoded
plaintext split on ``\\n``, packed rows expanded, seq contiguity checked, a torn tail told from
corruption."""

from __future__ import annotations

from array import array
from itertools import accumulate, repeat
from operator import contains
from typing import Any

import orjson

from dsh_tui.session.errors import (
    DshError,
    SessionCorruptionError,
)
from dsh_tui.session.legacy import IMPORT, REFUSE, TYPE_ROLES, type_role
from dsh_tui.session.rows import BLOCK_EVENTS as _BLOCK_EVENTS
from dsh_tui.session.rows import EventList
from dsh_tui.session.rows import PackedRun as _PackedRun
from dsh_tui.session.rows import RawBlock as _RawBlock
from dsh_tui.session.rows import lazy_row as _lazy_row
from dsh_tui.session.sharing import SHARERS
from dsh_tui.session.sharing import share_block as _share_block
from dsh_tui.store.fsio import MAX_LINE_BYTES, LineSplitter

from .codec import MAX_SAFE, ROW_TAGS, parse_header_record

_TURN_END = b'"turn/end"'
_ROW_KEYS = frozenset(("type", "seq0", "time0", "data"))
_TEXT_ROW_DATA = frozenset(("turn", "step", "index", "dt", "texts"))
_TOOL_ROW_DATA = frozenset(("turn", "step", "index", "id", "dt", "args"))
_TOOL_ROW_DATA_NAMED = frozenset(("turn", "step", "index", "id", "name", "dt", "args"))
_STR_ONLY = {str}
# a known event type -> (its name as the shared constant, legacy.type_role, its sharing.SHARERS entry or None)
_TYPE_INFO: dict[str, tuple[str, int, Any]] = {t: (t, role, SHARERS.get(t)) for t, role in TYPE_ROLES.items()}

_CHUNK_SHARE = SHARERS["assistant/chunk"]  # taken inline by the hot loop (sharing.share_block)
_INT_ONLY = {int}
_NUM = (int, float)


def _expand_row(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """Expand a packed row in a tight loop (C-level validation: set/min/max/accumulate).

    Anything this fast path does not fully recognise goes to the session core's
    ``rows.expand_line``, which is the reference (exact errors, ignorable row-tagged events); the two
    are differential-tested against each other."""
    data = obj["data"] if obj.keys() == _ROW_KEYS else None
    if type(data) is dict:
        tag = obj["type"]
        seq0 = obj["seq0"]
        time0 = obj["time0"]
        dkeys = data.keys()
        members: Any
        dt: Any
        if tag == "tool-call-chunks":
            named = dkeys == _TOOL_ROW_DATA_NAMED
            ok = named or dkeys == _TOOL_ROW_DATA
            members = data["args"] if ok else None
        else:
            named = False
            ok = dkeys == _TEXT_ROW_DATA
            members = data["texts"] if ok else None
        dt = data["dt"] if ok else None
        n = len(members) if type(members) is list else 0
        if (
            n
            and type(seq0) is int and seq0 >= 0 and seq0 + n - 1 <= MAX_SAFE
            and type(time0) is int and -MAX_SAFE <= time0 <= MAX_SAFE
            and type(dt) is list and len(dt) == n - 1
            and set(map(type, members)) == _STR_ONLY
            and (n == 1 or (set(map(type, dt)) == _INT_ONLY))
            and type(data["turn"]) in _NUM and type(data["step"]) in _NUM and type(data["index"]) in _NUM
        ):
            times = list(accumulate(dt, initial=time0))
            if n == 1 or (min(times) >= -MAX_SAFE and max(times) <= MAX_SAFE
                          and min(dt) >= -MAX_SAFE and max(dt) <= MAX_SAFE):
                turn = data["turn"]
                step = data["step"]
                index = data["index"]
                seqs = range(seq0, seq0 + n)
                if tag == "tool-call-chunks":
                    cid = data["id"]
                    if type(cid) is str:
                        if named:
                            name = data["name"]
                            if type(name) is str:
                                return [
                                    {"type": "assistant/chunk", "seq": q, "time": t, "data": {
                                        "turn": turn, "step": step, "chunk": {
                                            "type": "tool-call-delta", "index": index, "id": cid, "name": name,
                                            "argumentsDelta": m}}}
                                    for q, t, m in zip(seqs, times, members)
                                ]
                        else:
                            return [
                                {"type": "assistant/chunk", "seq": q, "time": t, "data": {
                                    "turn": turn, "step": step, "chunk": {
                                        "type": "tool-call-delta", "index": index, "id": cid, "argumentsDelta": m}}}
                                for q, t, m in zip(seqs, times, members)
                            ]
                else:
                    ct = "text-delta" if tag == "text-chunks" else "reasoning-delta"
                    return [
                        {"type": "assistant/chunk", "seq": q, "time": t, "data": {
                            "turn": turn, "step": step, "chunk": {"type": ct, "index": index, "text": m}}}
                        for q, t, m in zip(seqs, times, members)
                    ]
    from dsh_tui.session import rows

    return rows.expand_line(obj)


class LineScanner:
    """Incremental scanner of complete JSONL event records following a header record.

    On the first problem (unparsable line, malformed row, seq gap) it stops accepting events but
    keeps scanning: a later complete record holding a ``turn/end`` means the damage is in the
    committed region and raises :class:`SessionCorruptionError`; otherwise the problem and
    everything after it is a torn tail. ``committed_bytes`` is the end of the last accepted line.

    ``projected`` (fixture form): body lines carry no seq/time; they are synthesised (seq =
    running count, time = 0; packed rows get ``time0 = 0``). ``None`` = detect from the first line.
    """

    __slots__ = ("header", "events", "input_bytes", "committed_bytes", "line_no", "issue",
                 "_split", "_edge", "_armed", "projected", "runs", "_pidx", "_pev", "_pn", "looks", "_pool", "_v4", "_block",
                 "floats_checked")

    def __init__(self, header_record: bytes, *, lenient: bool = False, projected: bool | None = False) -> None:
        self.header = parse_header_record(header_record, lenient=lenient)
        # the slots: event dicts, and a PackedRun / RawBlock per member of a compact row / v4 block
        self.events: list[Any] = []
        self.input_bytes = len(header_record)
        self.committed_bytes = len(header_record)
        self.line_no = 0
        self.issue: SessionCorruptionError | None = None
        # lines split in linear time, one held at most MAX_LINE_BYTES long (a longer one, or zeros, is not kept)
        self._split = LineSplitter()
        self._edge = b""  # past a problem: the last bytes of the previous chunk, and whether a turn/end is
        self._armed = False  # in the line it left unfinished
        self.projected = projected
        # (index, count) of every packed row the hot loop expanded into ``events`` (for
        # ``Session(..., packed_runs=...)``: the row decoder already validated those members)
        self.runs: list[tuple[int, int]] = []
        # the plain (non-PackedRun) events among events[:_pn] and their indexes, for EventList's cache: the hot
        # loop records them as it goes, so a cold load never walks the million slots again to find them
        self._pidx: array[int] = array("q")
        self._pev: list[Any] = []
        self._pn = 0
        # positions among those plain events that the legacy import / the refusals look at (legacy.type_role)
        self.looks: tuple[array[int], array[int]] = (array("q"), array("q"))
        self._pool: dict[str, str] = {}  # sharing.SHARERS' pool: one object per repeated string
        # the events whose whole data the sharers walked and found free of bad floats (NaN, ±Infinity, -0): the
        # seed check need not walk them again (``Session(..., floats_checked=...)``); ascending indexes
        self.floats_checked: array[int] = array("q")
        # format v4: the events of known types stay their lines, compressed in blocks (rows.RawBlock), parsed
        # again only when read; ``_block`` is the one being filled
        self._v4 = self.header.get("version") == 4
        self._block: Any = None

    def event_list(self) -> EventList:
        """The scanned events as an :class:`EventList` (its plain-event cache already filled)."""
        if self._block is not None:
            self._block.seal()
            self._block = None
        self._catch_up()
        return EventList(self.events, (self._pidx, self._pev, self._pn))

    def _catch_up(self) -> None:
        """Record the plain events appended outside the hot loop (the slow path expands rows into dicts)."""
        events = self.events
        for i in range(self._pn, len(events)):
            ev = events[i]
            if ev.__class__ is not _PackedRun:
                self._add_plain(i, ev)
        self._pn = len(events)

    def _add_plain(self, i: int, ev: Any) -> None:
        """Record plain event ``ev`` at index ``i`` (the hot loop does the same inline)."""
        role = type_role(ev.get("type")) if type(ev) is dict else REFUSE
        if role:
            p = len(self._pev)
            if role & IMPORT:
                self.looks[0].append(p)
            if role & REFUSE:
                self.looks[1].append(p)
        self._pidx.append(i)
        self._pev.append(ev)

    def _hand_over(self, parts: list[bytes], i: int, pos: int, n: int) -> None:
        """The hot loop stops at line ``i`` of ``parts`` (an unparsable line, a malformed row or a seq gap; ``pos``:
        where ``parts`` starts): the slow path takes it from there and reports it precisely."""
        self.line_no += i
        pos += sum(map(len, parts[:i])) + i
        self.committed_bytes = pos
        self._pn = n
        self._slow(parts[i:], pos)

    def write(self, chunk: bytes) -> None:
        if not chunk:
            return
        base = self.input_bytes - self._split.pending
        self.input_bytes += len(chunk)
        if self.issue is not None:
            # past the first problem only a complete record holding a turn/end matters: a chunk without one
            # (nor one across its edges, nor one in a line it leaves unfinished) is not even split into lines
            edge = self._edge + chunk[:len(_TURN_END)]
            self._edge = (self._edge + chunk)[-len(_TURN_END):]  # (a chunk can be shorter than a turn/end)
            armed = self._armed
            nl = chunk.rfind(b"\n")
            # the line this chunk leaves unfinished holds a turn/end: after its last newline, or, in a chunk
            # without one (the middle of a long line), anywhere in the line so far
            self._armed = (chunk.rfind(_TURN_END) > nl if nl >= 0
                           else armed or _TURN_END in edge or _TURN_END in chunk)
            if not armed and _TURN_END not in edge and _TURN_END not in chunk:
                self.line_no += chunk.count(b"\n")
                self._split.skip(chunk)
                return
        parts = self._split.feed(chunk)
        if not parts:
            return
        if self.issue is not None:
            self._after_issue(parts)
            return
        if self.projected is False:
            self._fast(parts, base)
        else:
            self._slow(parts, base)
        if self.issue is not None:  # the first problem is in this chunk: what the next chunk's check starts from
            self._edge = chunk[-len(_TURN_END):]
            self._armed = chunk.rfind(_TURN_END) > chunk.rfind(b"\n")

    def _after_issue(self, parts: list[bytes]) -> None:
        """Past the first problem only a later complete record holding a ``turn/end`` matters (it makes the
        problem corruption): lines are looked at one by one only where the text holds one, so a billion
        blank lines (a zstd bomb) are skipped at the speed of a substring search."""
        if any(map(contains, parts, repeat(_TURN_END))):
            for line in parts:
                self.line_no += 1
                if _TURN_END in line:
                    decoded = self._decode(line)
                    if decoded and any(type(e) is dict and e.get("type") == "turn/end" for e in decoded):
                        raise self.issue  # type: ignore[misc]
        else:
            self.line_no += len(parts)

    def _fast(self, parts: list[bytes], pos: int) -> None:
        """Hot loop for complete-form logs; hands over to :meth:`_slow` at the first problem. ``pos`` (the end of
        the last accepted line) and the line number are worked out at the exit (:meth:`_hand_over`, or the end of
        the batch), not kept per line."""
        events = self.events
        if self._pn != len(events):
            self._catch_up()
        append = events.append
        extend = events.extend
        add_run = self.runs.append
        add_pidx = self._pidx.append
        pev = self._pev
        add_pev = pev.append
        type_info = _TYPE_INFO.get
        pool = self._pool
        pool_sd = pool.setdefault
        chunk_share = _CHUNK_SHARE
        share_block = _share_block
        add_import = self.looks[0].append
        add_refuse = self.looks[1].append
        add_checked = self.floats_checked.append
        loads = orjson.loads
        row_tags = ROW_TAGS
        lazy = _lazy_row
        block_events = _BLOCK_EVENTS
        packed_run = _PackedRun
        v4 = self._v4
        blk = self._block
        n = len(events)
        for i, line in enumerate(parts):
            try:
                obj = loads(line)
            except orjson.JSONDecodeError:
                self._hand_over(parts, i, pos, n)
                return
            if type(obj) is dict:
                t = obj.get("type")
                if t.__class__ is str and t in row_tags:
                    # a well-formed row stays one compact PackedRun (one slot per member, expanded on read)
                    run = lazy(obj)
                    if run.__class__ is packed_run and run.seq0 == n:
                        k = run.n
                        extend(repeat(run, k))
                        n += k
                        continue
                    try:
                        expanded = _expand_row(obj)
                    except (DshError, ValueError, TypeError, KeyError):
                        self._hand_over(parts, i, pos, n)
                        return
                    if not expanded or expanded[0]["seq"] != n:
                        self._hand_over(parts, i, pos, n)
                        return
                    if expanded[0] is not obj:  # a decoded row (not an ignorable row-tagged event)
                        add_run((n, len(expanded)))
                    extend(expanded)
                    for k, ev in enumerate(expanded, n):
                        self._add_plain(k, ev)
                    n += len(expanded)
                else:
                    seq = obj.get("seq")
                    if seq != n or seq.__class__ is not int:
                        self._hand_over(parts, i, pos, n)
                        return
                    info = type_info(t) if t.__class__ is str else None
                    if v4 and t.__class__ is str:
                        # format v4: the line itself is kept (compressed with its block), not the parsed event
                        if blk is None or blk.n == block_events or blk.seq0 + blk.n != n:
                            if blk is not None:
                                blk.seal()
                            blk = self._block = _RawBlock(n)
                        if info is not None:
                            t, role, _ = info
                        else:
                            t = pool.setdefault(t, t)
                            role = REFUSE
                        blk.add(line, t)
                        obj = blk
                    elif info is not None:
                        # a known type: its one shared name (not a copy per event), which passes look at it, and
                        # the strings it repeats from earlier events made one object with them (sharing.py)
                        obj["type"], role, share = info
                        if share is not None:
                            try:
                                if share is chunk_share:  # the sharer inline: most chunks are no block-end
                                    d = obj["data"]
                                    c = d["chunk"]
                                    # (a block-end's data holds exactly turn, step, chunk: type, index, block)
                                    if (c["type"] == "block-end" and share_block(c["block"], pool_sd)
                                            and len(c) == 3 and c["index"].__class__ is int and len(d) == 3
                                            and d["turn"].__class__ is int and d["step"].__class__ is int
                                            and d.__class__ is dict and c.__class__ is dict):
                                        add_checked(n)
                                elif share(obj, pool):
                                    add_checked(n)
                            except (KeyError, TypeError, AttributeError):
                                pass  # not the expected shape: validation reports it
                    else:
                        role = REFUSE
                    if role:
                        if role & IMPORT:
                            add_import(len(pev))
                        if role & REFUSE:
                            add_refuse(len(pev))
                    append(obj)
                    add_pidx(n)
                    add_pev(obj)
                    n += 1
            else:
                self._hand_over(parts, i, pos, n)
                return
        self.committed_bytes = pos + sum(map(len, parts)) + len(parts)
        self.line_no += len(parts)
        self._pn = n

    def _decode(self, line: bytes) -> list[Any] | None:
        """One line → its logical events (fixture synthesis applied), or None if unparsable."""
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            try:  # JavaScript accepts lone-surrogate escapes orjson refuses
                from dsh_tui.session import jsonutil

                obj = jsonutil.loads(line)
            except (ValueError, UnicodeDecodeError, RecursionError):  # too deep for Python: unparsable
                return None
        if type(obj) is not dict:
            return [obj]
        is_row = type(t := obj.get("type")) is str and t in ROW_TAGS
        if self.projected is None:
            self.projected = ("seq0" not in obj) if is_row else ("seq" not in obj)
        if self.projected:
            n = len(self.events)
            if is_row:
                if "seq0" in obj or "time0" in obj:
                    return None
                obj = {"type": obj["type"], "seq0": n, "time0": 0, **{k: v for k, v in obj.items() if k != "type"}}
            else:
                if "seq" in obj or "time" in obj:
                    return None
                ev: dict[str, Any] = {}
                for k, v in obj.items():  # seq/time go right after "type"; the rest keeps file order
                    ev[k] = v
                    if k == "type":
                        ev["seq"] = n
                        ev["time"] = 0
                if "seq" not in ev:
                    return None
                obj = ev
        if is_row:
            try:
                return _expand_row(obj)
            except (DshError, ValueError, TypeError, KeyError):
                return None
        return [obj]

    def _slow(self, parts: list[bytes], pos: int) -> None:
        for i, line in enumerate(parts):
            pos += len(line) + 1
            self._consume(line, pos)
            if self.issue is not None:
                self._after_issue(parts[i + 1:])
                return
            if self.issue is None and self.projected is False and i + 1 < len(parts):
                self._fast(parts[i + 1 :], pos)  # form decided and no damage: back to the hot loop
                return

    def _consume(self, line: bytes, end: int) -> None:
        self.line_no += 1
        decoded = self._decode(line)
        if decoded is None:
            if self.issue is None:
                self.issue = SessionCorruptionError(
                    f"corrupt session log: unparsable committed event at line {self.line_no}"
                    if line != LineSplitter.OVERLONG else
                    f"corrupt session log: line {self.line_no} is longer than {MAX_LINE_BYTES:,} bytes (dsh's longest)"
                )
            return
        if self.issue is not None:
            if any(type(e) is dict and e.get("type") == "turn/end" for e in decoded):
                raise self.issue
            return
        start = len(self.events)
        for ev in decoded:
            n = len(self.events)
            seq = ev.get("seq") if type(ev) is dict else None
            if seq != n or seq.__class__ is not int:
                del self.events[start:]
                self.issue = SessionCorruptionError(
                    f"corrupt session log: seq gap in committed region at line {self.line_no} "
                    f"(expected {n}, got {seq if seq is not None else 'none'})"
                )
                if any(type(e) is dict and e.get("type") == "turn/end" for e in decoded):
                    raise self.issue
                return
            self.events.append(ev)
        self.committed_bytes = end

    def finish(self) -> None:
        """A final fragment without ``\\n`` is a torn tail; nothing else to do."""
