"""The storage seam every session backend implements (JSONL here, SQLite elsewhere).

Events and headers are the plain dicts of ``dsh_tui.session`` (dsh's exact JSON shapes).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from dsh_tui.session.errors import DshError


class StoreError(DshError):
    """A store operation that cannot proceed (missing session, duplicate id, wrong seq...)."""


@dataclass
class LoadResult:
    """What ``load``/``inspect`` return: the header and the balanced logical events.

    ``events`` are the stored events after the legacy import, followed by the crash ``closers``
    (docs/format.md, "Legacy import" and "Crash closers"). ``recovered_events`` are complete records decoded
    from a torn last zstd frame (already part of ``events``); ``truncated_bytes`` is how many file bytes the
    torn tail held. For ``load`` the repair is already durable (the file was re-read after the commit); for
    ``inspect`` it exists in memory only.
    """

    header: dict[str, Any]
    events: list[dict[str, Any]]
    truncated_bytes: int = 0
    recovered_events: list[dict[str, Any]] = field(default_factory=list)
    closers: list[dict[str, Any]] = field(default_factory=list)
    path: Path | None = None
    revision: str | None = None
    committed: bool = False  # load(): a repair was written to disk and the file re-read
    # The validated Session built from ``events`` (its in-memory log ends with the session/end-seed
    # the constructor appends unless the seed already ends with one), when the backend built one:
    # the JSONL store's ``load`` does; its ``inspect`` validates the same way but keeps none.
    session: Any = None

    @property
    def repaired(self) -> bool:
        """True when the stored log needed a repair (torn tail and/or closers)."""
        return bool(self.truncated_bytes or self.recovered_events or self.closers)


@dataclass(frozen=True)
class Snapshot:
    """One ``list_snapshots`` row: header, opaque revision (compare for equality only), path."""

    header: dict[str, Any]
    revision: str
    path: Path | None


@dataclass(frozen=True)
class RawLog:
    """``read_raw``: the decoded text of complete frames verbatim (packed rows kept)."""

    header: dict[str, Any]
    filename: str
    content: str


@runtime_checkable
class SessionStore(Protocol):
    """A durable, append-only store of session logs in dsh's format."""

    def create(self, header: dict[str, Any]) -> None:
        """Record intent only (lazy); nothing is written until the first non-empty append.
        Fails if the id already has an artifact or a pending create."""

    def append(self, session_id: str, events: list[dict[str, Any]], *, trusted: bool = False) -> None:
        """Durably (fsync) append a batch; the first seq must equal the stored length,
        seqs contiguous, data lossless JSON (``trusted=True``: already validated by ``Session.append``,
        the lossless walk may be skipped). A failed append leaves the store unchanged."""

    def load(self, session_id: str) -> LoadResult:
        """Read, validate and repair (torn tail cut, closers appended) durably, then re-read."""

    def inspect(self, session_id: str) -> LoadResult:
        """Like ``load`` but never writes: closers exist in memory only."""

    def list(self) -> list[dict[str, Any]]:
        """Headers of every stored (materialized) session; reads only the header of each log."""

    def list_snapshots(self) -> builtins.list[Snapshot]:  # (``list`` is the method above here)
        """``list`` plus a revision per log that changes whenever the log changes."""

    def read_raw(self, session_id: str) -> RawLog | None:
        """The stored JSONL text verbatim (torn last frame omitted), or None if absent."""

    def read_from(self, session_id: str, seq: int) -> builtins.list[dict[str, Any]]:
        """Stored events with ``seq >= seq`` (no repair, no closers)."""

    def locate(self, header: dict[str, Any]) -> Path:
        """Where the session's log lives (or will live), without touching the filesystem."""

    def exists(self, session_id: str) -> bool:
        """True if the id has a stored artifact (a pending, unmaterialized create does not count)."""

