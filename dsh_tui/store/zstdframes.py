"""Zstandard frame container of a ``session.jsonl.zstd`` log (docs/format.md, "Zstandard frames").

The file is a concatenation of independent, checksummed frames: frame 1 holds exactly the header
line, every later frame one durable batch. :func:`scan_frames` finds frame boundaries
*structurally* (no decompression) so a torn last frame can be cut at its start; every complete
frame is then decoded (and its checksum verified) by :func:`decode_frame`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import zstandard

from dsh_tui.session.errors import SessionCorruptionError

ZSTD_MAGIC = 0xFD2FB528
_MAGIC_BYTES = ZSTD_MAGIC.to_bytes(4, "little")
LEVEL = 3  # zstd's default level, as node:zlib uses

# zstd contexts must not be used by two threads at once (the app decodes headers on one thread while the
# harness worker loads or appends on another): each thread gets its own pair
_CONTEXTS = threading.local()


def _compressor() -> zstandard.ZstdCompressor:
    try:
        return _CONTEXTS.compressor
    except AttributeError:
        _CONTEXTS.compressor = zstandard.ZstdCompressor(level=LEVEL, write_checksum=True, write_content_size=True)
        return _CONTEXTS.compressor


def _decompressor() -> zstandard.ZstdDecompressor:
    try:
        return _CONTEXTS.decompressor
    except AttributeError:
        _CONTEXTS.decompressor = zstandard.ZstdDecompressor()
        return _CONTEXTS.decompressor


class FrameScan:
    """Complete frame ranges plus the start offset of a structurally incomplete last frame."""

    __slots__ = ("frames", "torn_start")

    def __init__(self, frames: list[tuple[int, int]], torn_start: int | None) -> None:
        self.frames = frames
        self.torn_start = torn_start

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"FrameScan(frames={self.frames!r}, torn_start={self.torn_start!r})"


def scan_frames(buf: bytes | memoryview, max_frames: int | None = None, base: int = 0) -> FrameScan:
    """Locate complete frames; EOF inside a frame makes it torn. Bad structure is corruption. ``base``: the file
    offset of ``buf[0]`` when ``buf`` is a slice of the file (error messages name file offsets)."""
    frames: list[tuple[int, int]] = []
    n = len(buf)
    offset = 0
    while offset < n:
        start = offset
        if n - offset < 4:
            return FrameScan(frames, start)
        if buf[offset : offset + 4] != _MAGIC_BYTES:
            raise SessionCorruptionError(f"corrupt Zstandard session log: invalid frame magic at byte {base + offset}")
        offset += 4
        if offset == n:
            return FrameScan(frames, start)
        descriptor = buf[offset]
        offset += 1
        if descriptor & 0x18:
            raise SessionCorruptionError(
                f"corrupt Zstandard session log: reserved frame-header bit at byte {base + offset - 1}"
            )
        fcs_flag = descriptor >> 6
        single_segment = bool(descriptor & 0x20)
        checksum = bool(descriptor & 0x04)
        dict_flag = descriptor & 0x03
        dict_bytes = 4 if dict_flag == 3 else dict_flag
        fcs_bytes = (1 if single_segment else 0) if fcs_flag == 0 else 1 << fcs_flag
        remaining = (0 if single_segment else 1) + dict_bytes + fcs_bytes
        if n - offset < remaining:
            return FrameScan(frames, start)
        offset += remaining
        while True:
            if n - offset < 3:
                return FrameScan(frames, start)
            block = buf[offset] | (buf[offset + 1] << 8) | (buf[offset + 2] << 16)
            offset += 3
            last = block & 1
            block_type = (block >> 1) & 3
            size = block >> 3
            if block_type == 3:
                raise SessionCorruptionError(
                    f"corrupt Zstandard session log: reserved block type at byte {base + offset - 3}"
                )
            payload = 1 if block_type == 1 else size
            if n - offset < payload:
                return FrameScan(frames, start)
            offset += payload
            if last:
                break
        if checksum:
            if n - offset < 4:
                return FrameScan(frames, start)
            offset += 4
        frames.append((start, offset))
        if max_frames is not None and len(frames) >= max_frames:
            return FrameScan(frames, None)
    return FrameScan(frames, None)


def compress_frame(data: bytes) -> bytes:
    """One independent frame, default level, content checksum on."""
    return _compressor().compress(data)


def decode_frame(frame: bytes | memoryview, at: int = 0) -> bytes:
    """Decode one structurally complete frame, verifying its checksum; failure is corruption."""
    return _decode_one(frame, at, _decompressor())


def _decode_one(frame: bytes | memoryview, at: int, dctx: zstandard.ZstdDecompressor) -> bytes:
    try:
        dobj = dctx.decompressobj()
        out = dobj.decompress(frame)
        if not dobj.eof:
            raise zstandard.ZstdError("frame did not end")
        if dobj.unused_data:
            raise zstandard.ZstdError("trailing bytes after frame")
    except zstandard.ZstdError as err:
        raise SessionCorruptionError(
            f"corrupt Zstandard session log: frame at byte {at} failed validation ({err})"
        ) from None
    return out


BATCH_BYTES = 256 << 10  # compressed bytes per decode batch (about 1 MiB of plaintext)


PLAIN_PIECE = 4 << 20  # a frame whose content size is unknown or larger is decoded this many bytes at a time


def decode_frames(view: memoryview, frames: list[tuple[int, int]], base: int = 0) -> Iterator[bytes]:
    """The plaintexts of ``frames`` (complete, structurally located: ``(start, end)`` in ``view``, which starts at
    file offset ``base``), joined in
    batches of about :data:`BATCH_BYTES` compressed. Each batch is decoded by one call of zstd's batch decoder,
    which releases the GIL: while the caller works on one batch, a helper thread decodes the next.
    Checksums are verified; a batch the batch decoder refuses (a damaged frame, or one without its content
    size) is decoded frame by frame, which names the damaged frame exactly.

    A frame that does not declare its content size, or declares more than :data:`PLAIN_PIECE`, is decoded
    a piece of at most :data:`PLAIN_PIECE` bytes at a time (a piece may end inside a line): a zstd bomb
    (a few KB holding gigabytes) is never held whole."""
    batches: list[list[tuple[int, int]] | tuple[int, int]] = []  # a tuple: one frame decoded in pieces
    size = 0
    for s, e in frames:
        try:
            declared = zstandard.frame_content_size(view[s:e])
        except zstandard.ZstdError:
            declared = -1  # decoded alone, which names the damage
        if declared < 0 or declared > PLAIN_PIECE:
            batches.append((s, e))
            size = BATCH_BYTES
            continue
        if not batches or size >= BATCH_BYTES:
            batches.append([])
            size = 0
        batches[-1].append((s, e))  # type: ignore[union-attr]
        size += e - s
    if sum(isinstance(b, list) for b in batches) < 2:
        for batch in batches:
            if isinstance(batch, tuple):
                yield from decode_pieces(view[batch[0]:batch[1]], base + batch[0])
            else:
                yield _decode_batch(view, batch, _decompressor(), base)
        return
    from concurrent.futures import ThreadPoolExecutor

    helper = zstandard.ZstdDecompressor()  # the helper thread's context (used by that one thread only)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="zstd-decode") as pool:
        pending = None
        for batch in batches:
            if isinstance(batch, tuple):
                if pending is not None:
                    yield pending.result()
                    pending = None
                yield from decode_pieces(view[batch[0]:batch[1]], base + batch[0])
                continue
            nxt = pool.submit(_decode_batch, view, batch, helper, base)
            if pending is not None:
                yield pending.result()
            pending = nxt
        if pending is not None:
            yield pending.result()


def decode_pieces(frame: bytes | memoryview, at: int = 0, piece: int = PLAIN_PIECE) -> Iterator[bytes]:
    """One complete frame's plaintext, ``piece`` bytes at most at a time, its checksum verified at its end;
    failure is corruption."""
    try:
        reader = _decompressor().stream_reader(frame, read_size=1 << 16, read_across_frames=False)
        while True:
            out = reader.read(piece)
            if not out:
                return
            yield out
    except zstandard.ZstdError as err:
        raise SessionCorruptionError(
            f"corrupt Zstandard session log: frame at byte {at} failed validation ({err})"
        ) from None


def _decode_batch(view: memoryview, batch: list[tuple[int, int]], dctx: zstandard.ZstdDecompressor,
                  base: int) -> bytes:
    # python-zstandard's batch decoder corrupts the heap on a frame whose content size is 0 (an empty
    # append, e.g. a header-only zstd log written by encode_materialization): such batches go frame by frame
    if any(zstandard.frame_content_size(view[s:e]) == 0 for s, e in batch):
        return b"".join(_decode_one(view[s:e], base + s, dctx) for s, e in batch)
    try:
        out = dctx.multi_decompress_to_buffer([view[s:e] for s, e in batch], threads=1)
        # (a BufferSegment is a buffer; zstandard's stubs do not say so)
        return b"".join(out[i] for i in range(len(out)))  # type: ignore[misc]
    except (zstandard.ZstdError, ValueError):
        return b"".join(_decode_one(view[s:e], base + s, dctx) for s, e in batch)


def decode_header_frame(frame: bytes | memoryview, at: int = 0) -> bytes:
    """The first frame's plaintext, which must be exactly one line (the header record), decoded a piece at a
    time: a frame holding more (a bomb of zeros or of blank lines) is corruption as soon as that shows."""
    from dsh_tui.store.fsio import MAX_LINE_BYTES

    parts: list[bytes] = []
    size = 0
    bad = SessionCorruptionError("corrupt Zstandard session log: first frame is not exactly one header line")
    for piece in decode_pieces(frame, at):
        if not parts and piece[:1] != b"{" and not piece.endswith(b"\n"):
            raise bad  # not a header, and more than a piece long: not decoded further
        if piece.find(b"\n") not in (-1, len(piece) - 1):
            raise bad
        size += len(piece)
        if size > MAX_LINE_BYTES + 1:
            raise SessionCorruptionError(
                f"corrupt Zstandard session log: the header line is longer than {MAX_LINE_BYTES:,} bytes")
        if parts and parts[-1].endswith(b"\n"):
            raise bad
        parts.append(piece)
    record = b"".join(parts)
    if not record.endswith(b"\n"):
        raise bad
    return record


def decode_prefix_pieces(partial: bytes | memoryview, limit: int = PLAIN_PIECE * 64) -> Iterator[bytes]:
    """Whatever plaintext an incomplete final frame yields (flush semantics), a piece at a time, at most ``limit``
    bytes in all (a torn frame is recovered from as far as it decodes; a torn bomb is not decoded past ``limit``)."""
    try:
        dobj = _decompressor().decompressobj()
        view = memoryview(partial)
        done = 0
        for i in range(0, len(view), 1 << 12):  # 4 KiB in: at most ~128 MiB out (zstd's largest ratio)
            out = dobj.decompress(view[i:i + (1 << 12)])
            if out:
                out = out[:limit - done]
                done += len(out)
                yield out
                if done >= limit:
                    return
    except zstandard.ZstdError:
        return
