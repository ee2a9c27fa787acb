"""JSONL session persistence in dsh's exact on-disk format (spec session-format.md §3).

Layers of this module, bottom up:

* :class:`LineScanner` — incremental scanner over decoded plaintext (split on ``\\n``) that expands
  packed rows, checks seq contiguity and tells a torn tail from corruption (§3.5).
* :func:`scan_buffer` — a whole file (raw or zstd frames) → :class:`StoredPrefix` (header, committed
  events, torn-tail marker). Zstd is decoded frame by frame; raw text is fed in bounded slices, so the
  whole plaintext and its line array are never held at once.
* file primitives — lazy materialisation (temp file + ``os.link`` + directory fsync, 0700/0600),
  fsynced append with rollback to the previous length, truncation.
* :func:`prepare` — §3.6 legacy import, refusals, §3.8 closers and §3.7 seed validation.
* :class:`JsonlStore` — the :class:`~dsh_tui.store.base.SessionStore` over a root directory.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import secrets
import stat as stat_mod
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, repeat
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from dsh_tui.session.errors import (
    DshError,
    SessionCorruptionError,
    SessionFormatUnsupportedError,
    SessionValidationError,
)
from dsh_tui.session.legacy import IMPORT, REFUSE, TYPE_ROLES, type_role
from dsh_tui.session.rows import EventList
from dsh_tui.session.rows import PackedRun as _PackedRun
from dsh_tui.session.rows import lazy_row as _lazy_row
from dsh_tui.session.sharing import SHARERS
from dsh_tui.store import layout, zstdframes
from dsh_tui.store.base import LoadResult, RawLog, Snapshot

ROW_TAGS = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})
HEADER_ORDER = (
    "type", "version", "id", "createdAt", "cwd", "parentSession", "seedLength", "origin",
    "delegationDepth", "agentPreset",
)
RAW_SLICE = 1 << 20  # files are read in 1 MiB slices (raw: scanned; zstd: frames located, then decoded)
MAX_SAFE = 2**53 - 1
DIR_MODE = 0o700
FILE_MODE = 0o600


class StoreError(DshError):
    """A store operation that cannot proceed (missing session, duplicate id, wrong seq...)."""


# --------------------------------------------------------------------------------------------- header


def _safe_nonneg_int(v: Any) -> bool:
    return type(v) is int and 0 <= v <= MAX_SAFE


def parse_header_record(record: bytes, *, lenient: bool = False, refuse_version: bool = True) -> dict[str, Any]:
    """Parse the first record (exactly one ``\\n``-terminated line) into a header dict.

    Strict mode follows dsh's JSONL reader (``isHeaderLine``); lenient mode (projected fixtures)
    tolerates placeholders and a missing ``delegationDepth``. A foreign ``version`` is refused
    before any shape check (format refusal, not corruption).
    """
    from dsh_tui.session import headers

    if not record or record[-1:] != b"\n" or record.find(b"\n") != len(record) - 1:
        raise SessionCorruptionError("empty or header-less session log")
    try:
        parsed = orjson.loads(record[:-1])
    except orjson.JSONDecodeError:
        raise SessionCorruptionError("corrupt session log: header line is not valid JSON") from None
    if refuse_version:
        headers.check_header_version(parsed)
    if lenient:
        try:
            # authored test stubs omit "version" (and older fixtures delegationDepth)
            probe = {"version": 0, **parsed} if isinstance(parsed, dict) else parsed
            headers.validate_header(probe, lenient=True)
        except SessionValidationError as err:
            raise SessionCorruptionError(f"corrupt session log: first line is not a session header ({err})") from None
        if parsed.get("type") != "session":
            raise SessionCorruptionError("corrupt session log: first line is not a session header")
        return parsed
    if not (
        isinstance(parsed, dict)
        and parsed.get("type") == "session"
        and type(parsed.get("version")) in (int, float)
        and isinstance(parsed.get("id"), str)
        and _safe_nonneg_int(parsed.get("createdAt"))
        and _safe_nonneg_int(parsed.get("delegationDepth"))
        and parsed.get("origin", "subagent") == "subagent"
        and isinstance(parsed.get("agentPreset", ""), str)
    ):
        raise SessionCorruptionError("corrupt session log: first line is not a session header")
    if "sandboxMode" in parsed or "approvalPolicy" in parsed:
        raise SessionCorruptionError("corrupt session log: session header uses retired policy baseline fields")
    return {k: parsed[k] for k in HEADER_ORDER if k in parsed}


def header_line(header: dict[str, Any]) -> bytes:
    """The header as dsh writes it (``toHeaderLine``): fixed key order, delegationDepth always."""
    from dsh_tui.session import jsonutil

    h = {"type": "session", "version": header.get("version", 0), "id": header["id"],
         "createdAt": header["createdAt"]}
    for k in ("cwd", "parentSession", "seedLength", "origin"):
        if header.get(k) is not None:
            h[k] = header[k]
    h["delegationDepth"] = header.get("delegationDepth") or 0
    if header.get("agentPreset") is not None:
        h["agentPreset"] = header["agentPreset"]
    return jsonutil.dumps_bytes(h) + b"\n"


# -------------------------------------------------------------------------------------------- scanner


_ROW_KEYS = frozenset(("type", "seq0", "time0", "data"))
_TEXT_ROW_DATA = frozenset(("turn", "step", "index", "dt", "texts"))
_TOOL_ROW_DATA = frozenset(("turn", "step", "index", "id", "dt", "args"))
_TOOL_ROW_DATA_NAMED = frozenset(("turn", "step", "index", "id", "name", "dt", "args"))
_STR_ONLY = {str}
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
    """Incremental scanner of complete JSONL event records following a header record (§3.5).

    On the first problem (unparsable line, malformed row, seq gap) it stops accepting events but
    keeps scanning: a later complete record holding a ``turn/end`` means the damage is in the
    committed region and raises :class:`SessionCorruptionError`; otherwise the problem and
    everything after it is a torn tail. ``committed_bytes`` is the end of the last accepted line.

    ``projected`` (fixture form, §1.1): body lines carry no seq/time; they are synthesised (seq =
    running count, time = 0; packed rows get ``time0 = 0``). ``None`` = detect from the first line.
    """

    __slots__ = ("header", "events", "input_bytes", "committed_bytes", "line_no", "issue",
                 "_frag", "projected", "runs", "_pidx", "_pev", "_pn", "looks", "_pool")

    def __init__(self, header_record: bytes, *, lenient: bool = False, projected: bool | None = False) -> None:
        self.header = parse_header_record(header_record, lenient=lenient)
        self.events: list[dict[str, Any]] = []
        self.input_bytes = len(header_record)
        self.committed_bytes = len(header_record)
        self.line_no = 0
        self.issue: SessionCorruptionError | None = None
        self._frag = b""
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

    def event_list(self) -> EventList:
        """The scanned events as an :class:`EventList` (its plain-event cache already filled)."""
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

    def _hand_over(self, parts: list[bytes], i: int, pos: int, line_no: int, n: int) -> None:
        """The hot loop stops at line ``i`` (an unparsable line, a malformed row or a seq gap): the slow path
        takes it from there and reports it precisely."""
        self.line_no = line_no - 1
        self.committed_bytes = pos
        self._pn = n
        self._slow(parts[i:], pos)

    def write(self, chunk: bytes) -> None:
        if not chunk:
            return
        base = self.input_bytes - len(self._frag)
        self.input_bytes += len(chunk)
        if self._frag:
            chunk = self._frag + chunk
        parts = chunk.split(b"\n")
        self._frag = parts.pop()
        if self.issue is None and self.projected is False:
            self._fast(parts, base)
        else:
            self._slow(parts, base)

    def _fast(self, parts: list[bytes], pos: int) -> None:
        """Hot loop for complete-form logs; hands over to :meth:`_slow` at the first problem. ``pos`` (the end of
        the last accepted line) is stored in ``committed_bytes`` at every exit, not per line."""
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
        add_import = self.looks[0].append
        add_refuse = self.looks[1].append
        loads = orjson.loads
        row_tags = ROW_TAGS
        lazy = _lazy_row
        packed_run = _PackedRun
        n = len(events)
        line_no = self.line_no
        for i, line in enumerate(parts):
            line_no += 1
            try:
                obj = loads(line)
            except orjson.JSONDecodeError:
                self._hand_over(parts, i, pos, line_no, n)
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
                        pos += len(line) + 1
                        continue
                    try:
                        expanded = _expand_row(obj)
                    except (DshError, ValueError, TypeError, KeyError):
                        self._hand_over(parts, i, pos, line_no, n)
                        return
                    if not expanded or expanded[0]["seq"] != n:
                        self._hand_over(parts, i, pos, line_no, n)
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
                        self._hand_over(parts, i, pos, line_no, n)
                        return
                    info = type_info(t) if t.__class__ is str else None
                    if info is not None:
                        # a known type: its one shared name (not a copy per event), which passes look at it, and
                        # the strings it repeats from earlier events made one object with them (sharing.py)
                        obj["type"], role, share = info
                        if share is not None:
                            try:
                                share(obj, pool)
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
                self._hand_over(parts, i, pos, line_no, n)
                return
            pos += len(line) + 1
        self.committed_bytes = pos
        self.line_no = line_no
        self._pn = n

    def _decode(self, line: bytes) -> list[Any] | None:
        """One line → its logical events (fixture synthesis applied), or None if unparsable."""
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            try:  # JavaScript accepts lone-surrogate escapes orjson refuses
                from dsh_tui.session import jsonutil

                obj = jsonutil.loads(line)
            except (ValueError, UnicodeDecodeError):
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


# ------------------------------------------------------------------------------------------- decoding


@dataclass
class TornMarker:
    truncate_to: int  # file offset to cut at
    recovered_events: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class StoredPrefix:
    header: dict[str, Any]
    events: list[dict[str, Any]]
    compression: str
    torn: TornMarker | None = None
    file_size: int = 0
    header_record: bytes = b""
    projected: bool = False
    revision: str | None = None
    path: Path | None = None
    runs: list[tuple[int, int]] | None = None  # packed-row spans of ``events`` (see LineScanner.runs)
    looks: tuple[Sequence[int], Sequence[int]] | None = None  # see LineScanner.looks


def detect_compression(buf: bytes) -> str:
    return "zstd" if buf[:4] == b"\x28\xb5\x2f\xfd" else "none"


FREEZE_AFTER = 100_000  # container objects created by one bulk load before they are frozen (gc.freeze)


@contextlib.contextmanager
def bulk_load() -> Iterator[None]:
    """Pause the cyclic GC while a log is materialised: a load allocates millions of small dicts that
    all stay alive, and every generation-2 pass would re-traverse them (measured: ~2.4x slower).

    After a big load (>= ``FREEZE_AFTER`` new container objects) the outermost block moves the tracked
    objects to the permanent generation (``gc.freeze()``) before re-enabling the GC: the loaded events
    are long-lived by nature, and otherwise the first collection after the load traverses them all
    (~0.3 s per 200k events) and every later full collection again, for the life of the process.
    Reference counting still frees frozen objects; only cycles frozen with them (none in event data)
    would wait for ``gc.unfreeze()``."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_count()[0] >= FREEZE_AFTER:
                gc.freeze()
            gc.enable()


def scan_buffer(buf: bytes, compression: str | None = None, *, lenient: bool = False,
                projected: bool | None = False) -> StoredPrefix:
    """Decode a whole log file's bytes into its committed prefix (+ torn-tail marker)."""
    if compression is None:
        compression = detect_compression(buf)
    with bulk_load():
        if compression == "zstd":
            return _scan_zstd(io.BytesIO(buf), lenient=lenient, projected=projected)
        return _scan_raw_stream(io.BytesIO(buf), lenient=lenient, projected=projected)


def scan_file(path: Path, compression: str | None = None, *, lenient: bool = False,
              projected: bool | None = False) -> StoredPrefix:
    """Decode a log file from disk. Raw text is streamed in slices (the file is never held whole);
    the read is retried while the file's (dev, ino, size, mtime, ctime) identity changes under it."""
    while True:
        before = revision_of(os.stat(path))
        with open(path, "rb") as f:
            comp = compression or detect_compression(f.read(4))
            f.seek(0)
            with bulk_load():
                if comp == "zstd":
                    prefix = _scan_zstd(f, lenient=lenient, projected=projected)
                else:
                    prefix = _scan_raw_stream(f, lenient=lenient, projected=projected)
        after = revision_of(os.stat(path))
        if before == after:
            prefix.revision = after
            prefix.path = Path(path)
            return prefix


def _scan_raw_stream(f: BinaryIO, *, lenient: bool, projected: bool | None) -> StoredPrefix:
    head = b""
    while True:
        block = f.read(RAW_SLICE)
        if not block:
            raise SessionCorruptionError("empty or header-less session log")
        head += block
        end = head.find(b"\n")
        if end != -1:
            break
    record = head[: end + 1]
    scanner = LineScanner(record, lenient=lenient, projected=projected)
    total = len(head)
    scanner.write(head[end + 1 :])
    del head
    while True:
        block = f.read(RAW_SLICE)
        if not block:
            break
        total += len(block)
        scanner.write(block)
    scanner.finish()
    torn = TornMarker(scanner.committed_bytes) if scanner.committed_bytes < total else None
    return StoredPrefix(scanner.header, scanner.event_list(), "none", torn, total, record,
                        bool(scanner.projected), runs=scanner.runs, looks=scanner.looks)


def _scan_zstd(f: BinaryIO, *, lenient: bool, projected: bool | None) -> StoredPrefix:
    """Locate and decode the frames a slice of the file at a time (the compressed file is never held whole):
    a frame cut by the end of a slice waits for the next slice; one cut by the end of the file is torn."""
    scanner: LineScanner | None = None
    record = b""
    window = f.read(RAW_SLICE)
    total = len(window)
    base = 0  # file offset of window[0]
    while True:
        fs = zstdframes.scan_frames(window, base=base)
        frames = fs.frames
        with memoryview(window) as view:
            if scanner is None and frames:
                s, e = frames[0]
                record = zstdframes.decode_frame(view[s:e], base + s)
                if not record or record.find(b"\n") != len(record) - 1:
                    raise SessionCorruptionError(
                        "corrupt Zstandard session log: first frame is not exactly one header line")
                scanner = LineScanner(record, lenient=lenient, projected=projected)
                frames = frames[1:]
            if scanner is not None:
                # ~1 MiB at a time, the next batch decoding meanwhile
                for plain in zstdframes.decode_frames(view, frames, base):
                    scanner.write(plain)
        end = len(window) if fs.torn_start is None else fs.torn_start
        block = f.read(RAW_SLICE)
        if not block:
            break
        total += len(block)
        window = window[end:] + block
        base += end
    if scanner is None:
        raise SessionCorruptionError("empty or header-less Zstandard session log")
    if scanner.committed_bytes != scanner.input_bytes:
        raise SessionCorruptionError("corrupt Zstandard session log: complete frame contains a torn JSONL record")
    torn = None
    if fs.torn_start is not None:
        complete = len(scanner.events)
        scanner.write(zstdframes.decode_prefix(window[fs.torn_start :]))
        scanner.finish()
        torn = TornMarker(base + fs.torn_start, EventList(scanner.events)[complete:])
    return StoredPrefix(scanner.header, scanner.event_list(), "zstd", torn, total, record,
                        bool(scanner.projected), runs=scanner.runs, looks=scanner.looks)


def decode_raw_text(buf: bytes, compression: str | None = None) -> bytes:
    """Plaintext of a log verbatim: raw bytes, or the complete zstd frames concatenated."""
    if compression is None:
        compression = detect_compression(buf)
    if compression == "none":
        return bytes(buf)
    fs = zstdframes.scan_frames(buf)
    if not fs.frames:
        raise SessionCorruptionError("empty or header-less Zstandard session log")
    view = memoryview(buf)
    return b"".join(zstdframes.decode_frame(view[s:e], s) for s, e in fs.frames)


# ------------------------------------------------------------------------------------------- encoding


def encode_lines(events: list[dict[str, Any]], pack: bool = True) -> bytes:
    """A batch as JSONL text, each line ``\\n``-terminated; chunk runs packed per batch."""
    from dsh_tui.session import jsonutil, rows

    lines = rows.pack_batch(events) if pack else events
    return b"".join(jsonutil.dumps_bytes(line) + b"\n" for line in lines)


def encode_batch(events: list[dict[str, Any]], compression: str, pack: bool = True) -> bytes:
    body = encode_lines(events, pack)
    return zstdframes.compress_frame(body) if compression == "zstd" else body


def encode_materialization(header: dict[str, Any], events: list[dict[str, Any]], compression: str,
                           pack: bool = True) -> bytes:
    head = header_line(header)
    if compression == "zstd":
        return zstdframes.compress_frame(head) + encode_batch(events, compression, pack)
    return head + encode_lines(events, pack)


# ------------------------------------------------------------------------------------- file primitives


def revision_of(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def read_stable(path: Path) -> tuple[bytes, str]:
    """Read a file, retrying while its (dev, ino, size, mtime ns, ctime ns) identity changes."""
    while True:
        before = revision_of(os.stat(path))
        with open(path, "rb") as f:
            data = f.read()
        after = revision_of(os.stat(path))
        if before == after:
            return data, after


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _mkdir_durable(path: Path) -> None:
    """mkdir -p with mode 0700, fsyncing the parent of every directory created."""
    missing = []
    p = Path(path)
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, DIR_MODE)
        except FileExistsError:
            pass
        fsync_dir(d.parent)
    if not Path(path).is_dir():
        raise StoreError(f"{path} exists but is not a directory")


def write_new_file(final: Path, content: bytes) -> None:
    """Publish a new file atomically: ``<final>.<12 hex>.tmp`` (O_EXCL, 0600), fsync, ``link`` (never
    clobbers), fsync the directory, unlink the temp file."""
    _mkdir_durable(final.parent)
    tmp = final.with_name(f"{final.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    linked = False
    try:
        try:
            view = memoryview(content)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, final)
        except FileExistsError:
            raise StoreError(f"refusing to materialize {final}: a log already exists on disk") from None
        linked = True
        fsync_dir(final.parent)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            if not linked:
                raise


def append_bytes(path: Path, data: bytes) -> None:
    """Append + fsync; on any write/sync error truncate back to the previous size, fsync, re-raise."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        before = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        except BaseException:
            try:
                os.ftruncate(fd, before)
                os.fsync(fd)
            except OSError as rollback:
                raise StoreError(f"failed to roll back append to {path}: {rollback}") from rollback
            raise
    finally:
        os.close(fd)


def truncate_file(path: Path, size: int) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------------------- preparation


@dataclass
class Prepared:
    header: dict[str, Any]
    stored: list[dict[str, Any]]  # after legacy import
    closers: list[dict[str, Any]]
    session: Any = None

    @property
    def events(self) -> list[dict[str, Any]]:
        return self.stored + self.closers if self.closers else self.stored


def prepare(prefix: StoredPrefix, *, session_id: str | None = None, lenient: bool = False,
            validate: bool = True, clock: Any = None, keep_session: bool = True) -> Prepared:
    """§3.6 import + refusals, §3.8 closers, §3.7 validation (by constructing a Session, with ``clock``; with
    ``keep_session=False`` the events are checked the same way but no Session is kept: ``session`` is None)."""
    sid = session_id or prefix.header.get("id") or ""
    with bulk_load():
        return _prepare(prefix, sid, lenient, validate, clock, keep_session)


# a known event type -> (its name as the shared constant, legacy.type_role, its sharing.SHARERS entry or None)
_TYPE_INFO: dict[str, tuple[str, int, Any]] = {t: (t, role, SHARERS.get(t)) for t, role in TYPE_ROLES.items()}


def _looks(prefix: StoredPrefix) -> tuple[Sequence[int], Sequence[int]]:
    """The positions the legacy import and the refusals look at: as the scanner noted them, else computed."""
    if prefix.looks is not None:
        return prefix.looks
    from dsh_tui.session import legacy

    notable = legacy.notable_positions(prefix.events)
    return notable, notable


def _prepare(prefix: StoredPrefix, sid: str, lenient: bool, validate: bool, clock: Any = None,
             keep_session: bool = True) -> Prepared:
    from dsh_tui.session import legacy, repair

    try:
        to_import, to_refuse = _looks(prefix)
        events = legacy.import_legacy(prefix.events, sid, to_import)
        legacy.check_refusals(events, str(prefix.path) if prefix.path is not None else "session log", to_refuse)
        try:
            closers = repair.interrupted_turn_closers(events)
        except (KeyError, TypeError, AttributeError):
            if validate:  # a malformed event in the open turn: validation names it when it can
                _construct(prefix.header, events, lenient=lenient, packed_runs=prefix.runs, keep=False)
            raise
        prepared = Prepared(prefix.header, events, closers)
        if validate:
            # legacy import keeps every index (it rewrites turn/message events in place, never chunks), so
            # the scanner's packed-row spans still point at the same decoded members
            prepared.session = _construct(prefix.header, prepared.events, lenient=lenient, packed_runs=prefix.runs,
                                          clock=clock, keep=keep_session)
        return prepared
    except (SessionFormatUnsupportedError, SessionCorruptionError):
        raise
    except (DshError, ValueError, TypeError, KeyError, AttributeError) as err:
        raise SessionCorruptionError(f'stored session "{sid}" failed validation: {err}') from None


def _construct(header: dict[str, Any], events: list[dict[str, Any]], *, lenient: bool,
               packed_runs: list[tuple[int, int]] | None = None, clock: Any = None, keep: bool = True) -> Any:
    """The validated Session of ``events``; with ``keep=False`` only the validation (None)."""
    from dsh_tui.session.log import Session, check_seed

    if not keep:
        return check_seed(header, events, lenient=lenient, packed_runs=packed_runs)
    return Session(header, events, lenient=lenient, packed_runs=packed_runs, clock=clock)


def repair_file(path: Path, *, lenient: bool = False) -> tuple[StoredPrefix, Prepared]:
    """Crash recovery of one file in place (§3.8): cut a torn tail, append recovered events +
    closers as one batch (zstd: one frame). A healthy file is not touched. Returns what was found
    *before* the repair."""
    buf, revision = read_stable(path)
    prefix = scan_buffer(buf, None, lenient=lenient, projected=None if lenient else False)
    prefix.path = Path(path)
    prefix.revision = revision
    if prefix.projected:
        raise StoreError(f"{path}: a projected fixture (no seq/time) cannot be repaired in place")
    prepared = prepare(prefix, lenient=lenient)
    commit_repair(Path(path), prefix, prepared)
    return prefix, prepared


def commit_repair(path: Path, prefix: StoredPrefix, prepared: Prepared) -> bool:
    tail = (prefix.torn.recovered_events if prefix.torn else []) + prepared.closers
    if prefix.torn is None and not tail:
        return False
    if prefix.torn is not None:
        truncate_file(path, prefix.torn.truncate_to)
    if tail:
        append_bytes(path, encode_batch(tail, prefix.compression))
    return True


# ---------------------------------------------------------------------------------------------- store


def _is_file(path: Path) -> bool:
    try:
        return stat_mod.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return False
    except NotADirectoryError:
        return False
    except PermissionError:  # in a directory this process cannot search: nothing it could open anyway
        return False


_REFUSAL_CANDIDATES = frozenset(("request/header-delta", "mode/set", "request/header"))


def _check_seqs(session_id: str, events: list[dict[str, Any]], cursor: int) -> None:
    for i, ev in enumerate(events):
        if ev.get("seq") != cursor + i or type(ev.get("seq")) is not int:
            raise SessionValidationError(
                f'append seq mismatch for "{session_id}": expected {cursor + i} at index {i}, '
                f"got {ev.get('seq')}", "SEQ_MISMATCH",
            )
        t = ev.get("time")
        if type(t) is not int or abs(t) > MAX_SAFE:
            raise SessionValidationError(f'append to "{session_id}": event {i} time must be a safe integer')


class JsonlStore:
    """dsh's JSONL backend over one root (one encoding per root)."""

    def __init__(self, root: Path | str, compression: str = "zstd", *, pack_chunks: bool = True) -> None:
        layout.suffix(compression)
        self.root = Path(root).expanduser().resolve()
        self.compression = compression
        self.pack_chunks = pack_chunks
        self._pending: dict[str, dict[str, Any]] = {}
        self._cursor: dict[str, tuple[dict[str, Any], int]] = {}
        self._encoding_checked = False
        if self.root.exists() and not self.root.is_dir():
            raise StoreError(f"session root {self.root} is not a directory")

    # -- discovery -----------------------------------------------------------------------------

    def _project_dirs(self) -> list[Path]:
        try:
            return sorted(p for p in self.root.iterdir() if p.is_dir())
        except FileNotFoundError:
            return []

    def _session_dirs(self, project: Path) -> list[Path]:
        out = []
        try:
            entries = sorted(project.iterdir())
        except (PermissionError, NotADirectoryError):
            # One unreadable project directory holds no session this process can open; it must not
            # stop every other session of the root from being found (the catalog lists it as unreadable).
            return out
        for entry in entries:
            if entry.is_file() and (entry.name.endswith(".jsonl") or entry.name.endswith(".jsonl.zstd")):
                raise StoreError(
                    f'session artifact "{entry}" uses the unsupported flat-file layout; use a separate '
                    "root or move it into a project/session directory before loading"
                )
            if entry.is_dir():
                out.append(entry)
        return out

    def _mismatch(self, path: Path) -> StoreError:
        return StoreError(
            f'session artifact "{path}" uses {layout.suffix(layout.opposite(self.compression))}, but this '
            f'store is configured for compression "{self.compression}"; use a separate root or select '
            "the matching compression"
        )

    def _check_encoding(self) -> None:
        if self._encoding_checked:
            return
        other = layout.transcript_name(layout.opposite(self.compression))
        for project in self._project_dirs():
            for d in self._session_dirs(project):
                if _is_file(d / other):
                    raise self._mismatch(d / other)
        self._encoding_checked = True

    def locate(self, header: dict[str, Any]) -> Path:
        return layout.log_path(self.root, header.get("cwd"), header["id"], self.compression)

    def find(self, session_id: str) -> Path | None:
        """The stored log file of ``session_id`` in this root, or None when there is none (a session only
        created, not yet appended to, has no file). Raises StoreError for a duplicate id across project
        directories, the unsupported flat-file layout, or a log of the other compression."""
        return self._find(session_id)

    def _find(self, session_id: str) -> Path | None:
        self._check_encoding()
        seg = layout.encode_segment(session_id)
        name = layout.transcript_name(self.compression)
        other = layout.transcript_name(layout.opposite(self.compression))
        matches = []
        for project in self._project_dirs():
            for comp in layout.COMPRESSIONS:
                flat = project / (seg + layout.suffix(comp))
                if _is_file(flat):
                    raise StoreError(f'session artifact "{flat}" uses the unsupported flat-file layout')
            d = project / seg
            if _is_file(d / other):
                raise self._mismatch(d / other)
            if _is_file(d / name):
                matches.append(d / name)
        if len(matches) > 1:
            raise StoreError(f'duplicate JSONL session id "{session_id}" appears in multiple project directories')
        return matches[0] if matches else None

    def exists(self, session_id: str) -> bool:
        return self._find(session_id) is not None

    # -- write path ----------------------------------------------------------------------------

    def create(self, header: dict[str, Any]) -> None:
        from dsh_tui.session import headers

        headers.validate_header(header)
        sid = header["id"]
        if sid in self._pending or sid in self._cursor:
            raise StoreError(f'session "{sid}" already exists in this store')
        if self._find(sid) is not None:
            raise StoreError(f'session "{sid}" already has a persisted log on disk; load/resume it instead')
        if _is_file(layout.log_path(self.root, header.get("cwd"), sid, layout.opposite(self.compression))):
            raise self._mismatch(layout.log_path(self.root, header.get("cwd"), sid,
                                                 layout.opposite(self.compression)))
        self._pending[sid] = {k: header[k] for k in HEADER_ORDER if k in header}

    def append(self, session_id: str, events: list[dict[str, Any]], *, trusted: bool = False) -> None:
        """Durably append one batch. ``trusted=True`` (the writer, whose events ``Session.append``
        already validated) skips the lossless-JSON walk; seq contiguity is always checked."""
        from dsh_tui.session import jsonutil

        events = list(events)
        if not events:
            return
        for i, ev in enumerate(events):
            if type(ev) is not dict and not isinstance(ev, dict):
                raise SessionValidationError(f"append to {session_id!r}: event {i} is not an object")
            if not trusted:
                jsonutil.check_lossless(ev, where=f"events[{i}]")
            t = ev.get("type")
            if type(t) is str and t in _REFUSAL_CANDIDATES and (t != "request/header" or (
                    isinstance(ev.get("data"), dict) and ev["data"].get("reason") == "fallback")):
                raise SessionValidationError(f"append to {session_id!r}: unsupported legacy event {ev.get('type')}")
        if session_id in self._pending:
            header, cursor, materialized = self._pending[session_id], 0, False
        else:
            if session_id not in self._cursor:
                self.load(session_id)
            header, cursor = self._cursor[session_id]
            materialized = True
        seqs = [ev.get("seq") for ev in events]
        times = [ev.get("time") for ev in events]
        if (seqs != list(range(cursor, cursor + len(events))) or set(map(type, seqs)) != _INT_ONLY
                or set(map(type, times)) != _INT_ONLY or min(times) < -MAX_SAFE or max(times) > MAX_SAFE):
            _check_seqs(session_id, events, cursor)  # one pass that raises the precise error
        self._check_encoding()
        path = self.locate(header)
        if materialized:
            append_bytes(path, encode_batch(events, self.compression, self.pack_chunks))
        else:
            other = layout.log_path(self.root, header.get("cwd"), session_id, layout.opposite(self.compression))
            if _is_file(other):
                raise self._mismatch(other)
            write_new_file(path, encode_materialization(header, events, self.compression, self.pack_chunks))
            del self._pending[session_id]
        self._cursor[session_id] = (header, cursor + len(events))

    # -- read path -----------------------------------------------------------------------------

    def _read_prefix(self, session_id: str) -> StoredPrefix:
        path = self._find(session_id)
        if path is None:
            raise StoreError(f'session "{session_id}" not found in {self.root}')
        try:
            prefix = scan_file(path, self.compression)
        except DshError as err:
            raise type(err)(f"{path}: {err}") from None
        layout.check_identity(path, self.root, prefix.header, self.compression, expected_id=session_id)
        return prefix

    def _prepare(self, session_id: str, clock: Any = None, keep_session: bool = True
                 ) -> tuple[StoredPrefix, Prepared]:
        prefix = self._read_prefix(session_id)
        try:
            return prefix, prepare(prefix, session_id=session_id, clock=clock, keep_session=keep_session)
        except SessionCorruptionError as err:
            raise SessionCorruptionError(f"{prefix.path}: {err}") from None

    def inspect(self, session_id: str) -> LoadResult:
        """Read and validate without writing anything (a repair exists in memory only). No Session is kept
        (``result.session`` is None): a read-only open needs the events, not a second list of them."""
        prefix, prepared = self._prepare(session_id, keep_session=False)
        return self._result(prefix, prepared, committed=False)

    def load(self, session_id: str, *, clock: Any = None) -> LoadResult:
        """Load with crash repair committed (§3.8). ``result.session`` is the validated Session of
        ``result.events``, built with ``clock`` (its constructor appends ``session/end-seed`` at
        ``clock()``), so a resume can use it as is instead of validating the log a second time."""
        prefix, prepared = self._prepare(session_id, clock)
        committed = False
        truncated = 0
        recovered: list[dict[str, Any]] = []
        closers = prepared.closers
        if prefix.torn is not None or prepared.closers:
            assert prefix.path is not None
            if prefix.torn is not None:
                truncated = prefix.file_size - prefix.torn.truncate_to
                recovered = prefix.torn.recovered_events
            commit_repair(prefix.path, prefix, prepared)
            committed = True
            prefix, prepared = self._prepare(session_id, clock)  # the revision changed: re-read
            if prefix.torn is not None or prepared.closers:
                raise SessionCorruptionError(f"{prefix.path}: repair did not produce a balanced log")
        result = self._result(prefix, prepared, committed=committed)
        result.truncated_bytes = truncated
        result.recovered_events = recovered
        result.closers = closers
        self._cursor[session_id] = (prefix.header, len(prepared.stored))
        return result

    def _result(self, prefix: StoredPrefix, prepared: Prepared, *, committed: bool) -> LoadResult:
        return LoadResult(
            header=prefix.header,
            events=prepared.events,
            truncated_bytes=(prefix.file_size - prefix.torn.truncate_to) if prefix.torn else 0,
            recovered_events=prefix.torn.recovered_events if prefix.torn else [],
            closers=prepared.closers,
            path=prefix.path,
            revision=prefix.revision,
            committed=committed,
            session=prepared.session,
        )

    def read_from(self, session_id: str, seq: int) -> list[dict[str, Any]]:
        from dsh_tui.session import legacy

        if type(seq) is not int or seq < 0:
            raise StoreError(f"read_from seq must be a non-negative integer, got {seq!r}")
        prefix = self._read_prefix(session_id)
        to_import, to_refuse = _looks(prefix)
        events = legacy.import_legacy(prefix.events, session_id, to_import)
        legacy.check_refusals(events, str(prefix.path), to_refuse)
        return events[seq:]

    def read_raw(self, session_id: str) -> RawLog | None:
        path = self._find(session_id)
        if path is None:
            return None
        buf, _ = read_stable(path)
        text = decode_raw_text(buf, self.compression)
        end = text.find(b"\n")
        header = parse_header_record(text[: end + 1]) if end != -1 else None
        if header is None or header.get("id") != session_id:
            raise SessionCorruptionError(f'corrupt session log: invalid header line in "{path}"')
        return RawLog(header, "session.jsonl", text.decode("utf-8", errors="surrogateescape"))

    # -- listing -------------------------------------------------------------------------------

    def _artifacts(self) -> list[tuple[dict[str, Any], Path]]:
        self._check_encoding()
        name = layout.transcript_name(self.compression)
        seen: set[str] = set()
        out = []
        for project in self._project_dirs():
            for d in self._session_dirs(project):
                path = d / name
                if not _is_file(path):
                    continue
                header = read_header(path, self.compression)
                if header is None:
                    continue
                layout.check_identity(path, self.root, header, self.compression)
                if header["id"] in seen:
                    raise StoreError(f'duplicate JSONL session id "{header["id"]}" appears in multiple project directories')
                seen.add(header["id"])
                out.append((header, path))
        return out

    def list(self) -> list[dict[str, Any]]:
        return [h for h, _ in self._artifacts()]

    def list_snapshots(self) -> list[Snapshot]:
        out = []
        for header, path in self._artifacts():
            try:
                out.append(Snapshot(header, revision_of(os.stat(path)), path))
            except FileNotFoundError:
                continue
        return out


def read_header(path: Path, compression: str | None = None) -> dict[str, Any] | None:
    """Only the header: raw = first line in 8 KiB chunks; zstd = first frame only. None when the
    file is empty, half-written or its first record is not a valid header (list() skips those)."""
    chunks: list[bytes] = []
    with open(path, "rb") as f:
        if compression is None:
            compression = detect_compression(f.read(4))
            f.seek(0)
        while True:
            block = f.read(8192)
            if not block:
                return None
            if compression == "none":
                nl = block.find(b"\n")
                if nl != -1:
                    chunks.append(block[: nl + 1])
                    record = b"".join(chunks)
                    break
                chunks.append(block)
            else:
                chunks.append(block)
                content = b"".join(chunks)
                fs = zstdframes.scan_frames(content, max_frames=1)
                if not fs.frames:
                    continue
                s, e = fs.frames[0]
                record = zstdframes.decode_frame(content[s:e], s)
                if not record or record.find(b"\n") != len(record) - 1:
                    raise SessionCorruptionError(
                        f"{path}: corrupt Zstandard session log: first frame is not exactly one header line"
                    )
                break
    try:
        # like dsh's list(): a well-formed header of another format version is listed; load refuses it
        return parse_header_record(record, refuse_version=False)
    except SessionCorruptionError:
        return None


__all__ = [
    "JsonlStore", "LineScanner", "StoredPrefix", "TornMarker", "Prepared", "StoreError",
    "scan_buffer", "prepare", "repair_file", "commit_repair", "read_header", "read_stable",
    "encode_batch", "encode_lines", "encode_materialization", "header_line", "parse_header_record",
    "append_bytes", "write_new_file", "truncate_file", "revision_of", "decode_raw_text",
    "detect_compression",
]
