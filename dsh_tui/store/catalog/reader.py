"""Reading a session log for the catalog: complete records only, from a byte offset (raw lines or
zstd frames), and the header record."""

from __future__ import annotations

import os
from collections.abc import Iterator

import orjson

_CHUNK = 1 << 16


# ---------------------------------------------------------------------------------------------
# Reading a log: complete records only, from a byte offset


def _iter_raw(f, offset: int) -> Iterator[tuple[bytes, int]]:
    """Yield (line, end offset) for every complete line at or after ``offset``."""
    f.seek(offset)
    pos = offset
    buf = b""
    while True:
        chunk = f.read(_CHUNK * 16)
        if not chunk:
            return
        buf += chunk
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            pos += nl + 1 - start
            yield buf[start:nl], pos
            start = nl + 1
        buf = buf[start:]


def _iter_zstd(f, offset: int) -> Iterator[tuple[bytes, int]]:
    """Yield (line, end-of-frame offset) for lines of every complete frame at or after ``offset``.

    A line's offset is the end of its frame only for the frame's last line, else the frame start,
    so stopping after any yielded line never skips part of a frame."""
    import zstandard  # indexing only: kept off the browser's first paint

    dctx = zstandard.ZstdDecompressor()
    f.seek(offset)
    frame_start = offset
    pending = b""
    while True:
        dobj = dctx.decompressobj()
        out = []
        fed = 0
        data = pending
        pending = b""
        while True:
            if not data:
                data = f.read(_CHUNK)
                if not data:
                    return  # EOF inside a frame (torn) or clean EOF: nothing more complete
            fed += len(data)
            try:
                out.append(dobj.decompress(data))
            except zstandard.ZstdError as err:
                raise _Unreadable(f"zstd frame at byte {frame_start} does not decode: {err}") from None
            data = b""
            if dobj.eof:
                pending = dobj.unused_data
                break
        frame_end = frame_start + fed - len(pending)
        text = b"".join(out)
        lines = text.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        elif lines:
            raise _Unreadable(f"zstd frame at byte {frame_start} ends inside a record")
        for i, line in enumerate(lines):
            yield line, (frame_end if i == len(lines) - 1 else frame_start)
        frame_start = frame_end


class _Unreadable(Exception):
    pass


def read_log_header(path: str) -> dict:
    """Only the header record (first line; zstd: first frame), for a listing: raises ``_Unreadable`` with
    the reason the browser shows. (:func:`dsh_tui.store.jsonl.read_header` is the store's, dsh's
    ``list()`` rule: None for a header it skips.)"""
    with open(path, "rb") as f:
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
    if isinstance(v, int) and v > 0:
        raise _Unreadable(f"written by a newer harness (format version {v}); upgrade dsh-tui")
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
