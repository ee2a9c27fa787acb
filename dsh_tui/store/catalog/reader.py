"""Reading a session log for the catalog: complete records only, from a byte offset (raw lines or
zstd frames), and the header record."""

from __future__ import annotations

import os
from collections.abc import Iterator

import orjson

_CHUNK = 1 << 16


# ---------------------------------------------------------------------------------------------
# Reading a log: complete records only, from a byte offset


_TURN_END = b'"turn/end"'
_ZSTD_OUT = 4 << 20  # plaintext bytes decoded at a time: a zstd bomb is never held whole


def _iter_raw(f, offset: int, watch=None) -> Iterator[tuple[bytes, int]]:
    """Yield (line, end offset) for every complete line at or after ``offset``, in linear time and with
    one line held at most :data:`~dsh_tui.store.fsio.MAX_LINE_BYTES` long (a longer one comes out as
    ``LineSplitter.OVERLONG``, which the fold calls a problem).

    With ``watch`` (returning the :class:`~dsh_tui.store.catalog.fold._Fold` fed, or None): once it has found a
    problem, the rest is
    only searched for a complete line holding a ``turn/end`` (its mark of corruption), a chunk at a time,
    not line by line (a log of a billion blank lines is read at the speed of the disk)."""
    from dsh_tui.store.fsio import LineSplitter

    f.seek(offset)
    split = LineSplitter(pos=offset)
    while True:
        chunk = f.read(_CHUNK * 16)
        if not chunk:
            return
        lines = split.feed(chunk)
        pos = split.first_end
        for i, line in enumerate(lines):
            yield line, pos
            pos += len(lines[i + 1]) + 1 if i + 1 < len(lines) else 0
            fold = watch() if watch is not None else None
            if fold is not None and fold.s["problem"] is not None:
                _rest_has_turn_end(f, lines[i + 1:], fold)
                return


def _rest_has_turn_end(f, lines: list[bytes], fold) -> None:
    """Past the first problem of a raw log: a later complete line holding ``"turn/end"`` makes it corrupt."""
    if fold.s["corrupt"] is not None:
        return
    if any(_TURN_END in line for line in lines):
        fold.s["corrupt"] = fold.s["problem"]
        return
    carry = b""
    armed = False  # a match seen, its line's newline not yet
    while True:
        chunk = f.read(_CHUNK * 16)
        if not chunk:
            return
        data = carry + chunk
        at = data.find(_TURN_END)
        if armed and data.find(b"\n", len(carry)) >= 0 or at >= 0 and data.find(b"\n", at) >= 0:
            fold.s["corrupt"] = fold.s["problem"]
            return
        armed = armed or at >= 0
        carry = data[-len(_TURN_END):]


def _iter_zstd(f, offset: int) -> Iterator[tuple[bytes, int]]:
    """Yield (line, end-of-frame offset) for lines of every complete frame at or after ``offset``.

    A line's offset is the end of its frame only for the frame's last line, else the frame start,
    so stopping after any yielded line never skips part of a frame. Frames are located structurally and
    decoded :data:`_ZSTD_OUT` bytes at a time, lines split in linear time with one line held at most
    :data:`~dsh_tui.store.fsio.MAX_LINE_BYTES` long: a zstd bomb (a few KB holding a GB of zeros or of
    blank lines) costs bounded memory; the caller stops at the first bad line (a complete frame holding
    one is corrupt)."""
    import zstandard  # indexing only: kept off the browser's first paint

    from dsh_tui.store.fsio import LineSplitter
    from dsh_tui.store.zstdframes import scan_frames

    dctx = zstandard.ZstdDecompressor()
    f.seek(offset)
    window = b""
    base = offset  # file offset of window[0]
    want = _CHUNK * 16
    while True:
        data = f.read(want)
        if not data:
            return  # EOF inside a frame (torn) or clean EOF: nothing more complete
        window = window + data if window else data
        try:
            fs = scan_frames(window, base=base)
        except Exception as err:  # noqa: BLE001 - SessionCorruptionError: bad magic, reserved bits
            raise _Unreadable(str(err)) from None
        with memoryview(window) as view:
            for s, e in fs.frames:
                yield from _frame_lines(dctx, view[s:e], base + s, base + e, LineSplitter)
        done = fs.frames[-1][1] if fs.frames else 0
        window = window[done:]
        base += done
        want = max(_CHUNK * 16, len(window))  # a frame larger than a read: read as much again (linear)


def _frame_lines(dctx, frame, start: int, end: int, splitter) -> Iterator[tuple[bytes, int]]:
    import zstandard

    split = splitter()
    held = None
    try:
        reader = dctx.stream_reader(frame, read_size=_CHUNK, read_across_frames=False)
        while True:
            plain = reader.read(_ZSTD_OUT)
            if not plain:
                break
            for line in split.feed(plain):
                if held is not None:
                    yield held, start
                held = line
    except zstandard.ZstdError as err:
        raise _Unreadable(f"zstd frame at byte {start} does not decode: {err}") from None
    if split.pending:
        raise _Unreadable(f"zstd frame at byte {start} ends inside a record")
    if held is not None:
        yield held, end


class _Unreadable(Exception):  # control flow (a row the listing skips), never shown: not a DshError
    pass


def read_log_header(path: str) -> dict:
    """Only the header record (first line; zstd: first frame), for a listing: raises ``_Unreadable`` with
    the reason the browser shows. (:func:`dsh_tui.store.jsonl.read_header` is the store's, dsh's
    ``list()`` rule: None for a header it skips.)"""
    from dsh_tui.store.fsio import open_regular

    with open_regular(path) as f:
        it = _iter_zstd(f, 0) if path.endswith(".zstd") else _iter_raw(f, 0)
        for line, _ in it:
            return _parse_header(line)
    raise _Unreadable("no complete header line")


def _loads(raw: bytes):
    """orjson, else the session reader's own parser: a lone surrogate escape (``"\\udcff"``) is valid
    in a dsh log (JavaScript writes one) though orjson refuses it; the catalog (a display cache)
    keeps such characters as U+FFFD so every value it stores is valid UTF-8."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    from dsh_tui.session import jsonutil

    return _no_surrogates(jsonutil.loads(raw))


def _no_surrogates(value):
    if isinstance(value, str):
        return value if _utf8_name(value) else "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in value)
    if isinstance(value, list):
        return [_no_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_no_surrogates(k): _no_surrogates(v) for k, v in value.items()}
    return value


def _parse_header(line: bytes) -> dict:
    try:
        h = _loads(line)
    except (ValueError, RecursionError):
        raise _Unreadable("first line is not JSON") from None
    if not isinstance(h, dict) or h.get("type") != "session":
        raise _Unreadable("first line is not a session header")
    v = h.get("version", 0)
    if isinstance(v, int) and v > 4:
        raise _Unreadable(f"written by a newer harness (format version {v}); upgrade dsh-tui")
    if v in (1, 2, 3):
        raise _Unreadable(f"format version {v} (an intermediate dsh generation; dsh-tui reads 0 and 4)")
    if isinstance(v, int) and v < 0:
        raise _Unreadable(f"format version {v} has no upgrade path")
    if not isinstance(h.get("id"), str) or not h["id"]:
        raise _Unreadable("header has no id")
    return h


def _known_types() -> frozenset[str] | None:
    try:
        from dsh_tui.session.events import KNOWN_EVENT_TYPES
    except ImportError:
        return None
    return frozenset(KNOWN_EVENT_TYPES)


def _expand(obj: dict) -> list[dict]:
    """Expand a packed chunk row into its ``assistant/chunk`` members (a plain event -> [event])."""
    if "seq0" not in obj:
        return [obj]
    from dsh_tui.session.rows import expand_line  # indexing only: kept off the browser's first paint

    return expand_line(obj)


def _utf8_name(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shown(path: str) -> str:
    """A path for a message: undecodable bytes escaped (``\\xff``), never a lone surrogate."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")
