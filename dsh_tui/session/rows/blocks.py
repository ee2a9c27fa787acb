"""A loaded format-v4 log's events kept compact (:class:`RawBlock`): consecutive stored JSON lines, zstd-compressed
as one frame per block, each event parsed when read. An :class:`~.lazy.EventList` holds one slot per member
pointing at its block; ``rows.lazy`` re-exports these names.
"""

from __future__ import annotations

from typing import Any

from orjson import loads as _loads

#: events per :class:`RawBlock` (a block is compressed as one zstd frame)
BLOCK_EVENTS = 64

# the last decoded blocks' lines by block (a few: the app's threads read the log at once), oldest first
_block_cache: dict[Any, list[bytes]] = {}
_CACHED_BLOCKS = 8
_zc: Any = None
_zd: Any = None


class RawBlock:
    """Consecutive events of a loaded format-v4 log kept as their stored JSON lines, zstd-compressed as one
    frame once the block is full (:meth:`seal`). An event becomes a dict only when read (:meth:`event`), each
    time a fresh one parsed from its line, equal to what the scanner parsed. The last few decoded blocks' lines are
    kept, so a sequential read decompresses each block once. ``types`` holds each member's event type (shared
    strings), so a scan for one type needs no decoding.

    Like a :class:`PackedRun`, an :class:`EventList` has one slot per member pointing at the block (member
    ``k`` at index ``seq0 + k``); unlike one, its members are not chunks: they are plain events (any type)."""

    __slots__ = ("seq0", "n", "data", "types", "_lines")

    def __init__(self, seq0: int) -> None:
        self.seq0 = seq0
        self.n = 0
        self.data = b""
        self.types: list[str] = []
        self._lines: list[bytes] | None = []  # until sealed

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"RawBlock(seq0={self.seq0}, n={self.n})"

    def add(self, line: bytes, type_: str) -> None:
        assert self._lines is not None
        self._lines.append(line)
        self.types.append(type_)
        self.n += 1

    def seal(self) -> None:
        """Compress the lines (no more members are added)."""
        global _zc
        lines = self._lines
        if lines is None:
            return
        if _zc is None:
            import zstandard  # only a v4 load needs it

            _zc = zstandard.ZstdCompressor(level=1)
        # a copy: the compressor's result can sit in a buffer of the uncompressed size
        self.data = memoryview(_zc.compress(b"\n".join(lines))).tobytes()
        self._lines = None

    def lines(self) -> list[bytes]:
        global _zd
        lines = self._lines
        if lines is not None:
            return lines
        cache = _block_cache
        lines = cache.get(self)
        if lines is not None:
            return lines
        if _zd is None:
            import zstandard

            _zd = zstandard.ZstdDecompressor()
        lines = _zd.decompress(self.data).split(b"\n")
        cache[self] = lines
        if len(cache) > _CACHED_BLOCKS:
            try:
                del cache[next(iter(cache))]
            except (KeyError, StopIteration, RuntimeError):  # another thread got there first
                pass
        return lines

    def event(self, k: int) -> dict:
        """Member ``k`` (0-based) as a fresh dict."""
        lines = self._lines
        if lines is None:
            lines = _block_cache.get(self)
            if lines is None:
                lines = self.lines()
        return _loads(lines[k])

    def events(self, start: int = 0) -> list[dict]:
        """Member events ``start..`` as fresh dicts."""
        return list(map(_loads, self.lines()[start:]))
