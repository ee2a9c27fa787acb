"""A whole log file (raw, or zstd frames) -> :class:`StoredPrefix`: header, committed events, torn
tail. Zstd is decoded frame by frame; raw text is fed in bounded slices, so the whole plaintext and its
line array are never held at once."""

from __future__ import annotations

import contextlib
import gc
import io
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from dsh_tui.session.errors import (
    SessionCorruptionError,
)
from dsh_tui.session.rows import EventList
from dsh_tui.store import zstdframes
from dsh_tui.store.fsio import MAX_LINE_BYTES, LineSplitter, open_regular, revision_of

from .scanner import LineScanner

RAW_SLICE = 1 << 20  # files are read in 1 MiB slices (raw: scanned; zstd: frames located, then decoded)




@dataclass
class TornMarker:
    truncate_to: int  # file offset to cut at
    recovered_events: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class StoredPrefix:
    header: dict[str, Any]
    # the scanner's EventList (compact rows stay compact; a read-only sequence the session layer takes as its list)
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
    floats_checked: Sequence[int] | None = None  # see LineScanner.floats_checked


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
        with open_regular(path) as f:
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
    split = LineSplitter()  # the header line: joined once, at most MAX_LINE_BYTES held
    while True:
        block = f.read(RAW_SLICE)
        if not block:
            raise SessionCorruptionError("empty or header-less session log")
        lines = split.feed(block)
        if lines:
            break
    if lines[0] == LineSplitter.OVERLONG:
        raise SessionCorruptionError(f"corrupt session log: the header line is longer than {MAX_LINE_BYTES:,} bytes")
    record = lines[0] + b"\n"
    scanner = LineScanner(record, lenient=lenient, projected=projected)
    total = split.pos
    scanner.write(block[split.first_end - (split.pos - len(block)):])
    del lines, block
    while True:
        block = f.read(RAW_SLICE)
        if not block:
            break
        total += len(block)
        scanner.write(block)
    scanner.finish()
    torn = TornMarker(scanner.committed_bytes) if scanner.committed_bytes < total else None
    events: Any = scanner.event_list()
    return StoredPrefix(scanner.header, events, "none", torn, total, record,
                        bool(scanner.projected), runs=scanner.runs, looks=scanner.looks,
                        floats_checked=scanner.floats_checked)


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
                record = zstdframes.decode_header_frame(view[s:e], base + s)
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
        if fs.torn_start == 0 and (more := f.read(len(window))):
            total += len(more)  # a frame larger than a slice: read as much again (linear, not a slice a time)
            window += more
    if scanner is None:
        raise SessionCorruptionError("empty or header-less Zstandard session log")
    if scanner.committed_bytes != scanner.input_bytes:
        raise SessionCorruptionError("corrupt Zstandard session log: complete frame contains a torn JSONL record")
    torn = None
    if fs.torn_start is not None:
        complete = len(scanner.events)
        for plain in zstdframes.decode_prefix_pieces(window[fs.torn_start :]):
            scanner.write(plain)
        scanner.finish()
        torn = TornMarker(base + fs.torn_start, EventList(scanner.events)[complete:])
    events: Any = scanner.event_list()
    return StoredPrefix(scanner.header, events, "zstd", torn, total, record,
                        bool(scanner.projected), runs=scanner.runs, looks=scanner.looks,
                        floats_checked=scanner.floats_checked)


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
