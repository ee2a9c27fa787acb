"""A cheap read of the last turns of a JSONL session log, for painting a long session before it is loaded.

``read_tail(path, min_events)`` returns the header and the logical events from the last ``turn/start``
at or before ``min_events`` from the end, parsing only those lines:

- raw logs are read backwards from EOF in blocks, split at line starts;
- zstd logs have their frame boundaries located (``zstdframes.scan_frames``), then frames are decoded
  from the last one backwards until enough lines are collected.

Seqs come from each line (``seq`` of an event, ``seq0`` of a packed row, expanded by
``rows.expand_line``) and must be contiguous. This is NOT a validated load: no envelope, turn or
surface checks, no legacy import, no crash repair, a torn last line/frame is ignored. The full
``store.inspect``/``load`` stays the authority; the caller shows this tail first and confirms (or
replaces) it with the full result. Anything unexpected returns None: "just do the full load".
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh_tui.session.jsonutil import loads
from dsh_tui.session.rows import expand_line

BLOCK = 1 << 16  # raw logs: bytes read per step backwards (64 KiB: parse little more than needed)
TAIL_LINE = 8 << 20  # a line longer than this is not previewed (joining it backwards would be quadratic)
FRAME_TEXT = 64 << 20  # nor a zstd frame whose text is longer
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


@dataclass
class Tail:
    """The header and the last events of a log, ``events[0]["seq"] == first_seq``."""

    header: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    first_seq: int = 0
    complete: bool = False  # the whole log was read (a short log): ``first_seq == 0``
    size: int = 0  # file bytes the tail was read from (a file that grows later has more)


def read_tail(path: Path | str, min_events: int) -> Tail | None:
    """The events from the last ``turn/start`` at or before ``len - min_events``; None when unsure."""
    path = Path(path)
    try:
        from dsh_tui.store.fsio import open_regular

        with open_regular(path) as f:
            size = os.fstat(f.fileno()).st_size
            if f.read(4) == ZSTD_MAGIC:
                f.seek(0)
                return _zstd_tail(f.read(size), min_events, size)
            f.seek(0)
            header = loads(f.readline())
            if not _is_header(header):
                return None
            return _collect(header, _raw_chunks(f, size), min_events, size)
    except Exception:  # noqa: BLE001 - unreadable, corrupt or odd: the full load will say what it is
        return None


def _raw_chunks(f: Any, size: int) -> Iterator[tuple[bytes, bool]]:
    """(bytes, reached_start) blocks from EOF backwards."""
    end = size
    while end > 0:
        start = max(0, end - BLOCK)
        f.seek(start)
        yield f.read(end - start), start == 0
        end = start


def _zstd_tail(data: bytes, min_events: int, size: int) -> Tail | None:
    from dsh_tui.store.zstdframes import scan_frames

    view = memoryview(data)
    frames = scan_frames(view).frames  # a torn last frame is not listed: the full load repairs it
    if not frames:
        return None
    first = decode_frame(view[frames[0][0]:frames[0][1]], frames[0][0])
    header = loads(first.split(b"\n", 1)[0])
    if not _is_header(header):
        return None

    def chunks() -> Iterator[tuple[bytes, bool]]:
        for i in range(len(frames) - 1, -1, -1):
            start, end = frames[i]
            yield (first if i == 0 else decode_frame(view[start:end], start)), i == 0

    return _collect(header, chunks(), min_events, size)


def decode_frame(frame: memoryview, at: int) -> bytes:
    """One frame's text, decoded a piece at a time and given up past :data:`FRAME_TEXT` bytes (a frame that
    large, a bomb maybe, is left to the full load, which bounds its memory)."""
    from dsh_tui.store.zstdframes import decode_pieces

    parts, size = [], 0
    for piece in decode_pieces(frame, at):
        size += len(piece)
        if size > FRAME_TEXT:
            raise ValueError("a frame too large to preview")
        parts.append(piece)
    return b"".join(parts)


def _collect(header: dict[str, Any], chunks: Iterator[tuple[bytes, bool]], min_events: int,
             size: int) -> Tail | None:
    events: list[dict[str, Any]] = []  # newest first while collecting: lines are read backwards
    carry = b""  # the bytes before the first newline seen so far (maybe a partial line)
    first = True
    for block, at_start in chunks:
        if len(carry) > TAIL_LINE:
            return None  # a very long line: the full load reads it (in linear time), the preview does not
        lines = (block + carry).split(b"\n")
        if first:
            first = False
            lines.pop()  # after the last newline: b"" or a torn line (the full load decides about it)
        carry = lines[0]  # a partial line, or (at the file start) the header line
        for line in reversed(lines[1:]):
            if line.strip():
                events.extend(reversed(expand_line(loads(line))))
        if not at_start:
            cut = _cut(events, min_events)
            if cut is not None:
                del events[cut + 1:]
                break
    events.reverse()
    first_seq = events[0]["seq"] if events else 0
    for i, event in enumerate(events):
        if event.get("seq") != first_seq + i or not isinstance(event.get("type"), str):
            return None
    return Tail(header, events, first_seq, first_seq == 0, size)


def _cut(newest_first: list[dict[str, Any]], min_events: int) -> int | None:
    """Index (in the newest-first list) of the ``turn/start`` the tail starts at, once there is one."""
    for i in range(min_events - 1, len(newest_first)):
        if newest_first[i].get("type") == "turn/start":
            return i
    return None


def _is_header(header: Any) -> bool:
    return (type(header) is dict and header.get("type") == "session" and header.get("version") == 0
            and isinstance(header.get("id"), str))
