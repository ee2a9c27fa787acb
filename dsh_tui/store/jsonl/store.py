"""JSONL session persistence in dsh's exact on-disk format (docs/format.md, "JSONL storage").

Layers of this module, bottom up:

* :class:`LineScanner` — incremental scanner over decoded plaintext (split on ``\\n``) that expands
  packed rows, checks seq contiguity and tells a torn tail from corruption.
* :func:`scan_buffer` — a whole file (raw or zstd frames) → :class:`StoredPrefix` (header, committed
  events, torn-tail marker). Zstd is decoded frame by frame; raw text is fed in bounded slices, so the
  whole plaintext and its line array are never held at once.
* file primitives — lazy materialisation (temp file + ``os.link`` + directory fsync, 0700/0600),
  fsynced append with rollback to the previous length, truncation.
* :func:`prepare` — legacy import, refusals, crash closers and seed validation.
* :class:`JsonlStore` — the :class:`~dsh_tui.store.base.SessionStore` over a root directory.
"""

from __future__ import annotations

import builtins
import os
import stat as stat_mod
from pathlib import Path
from typing import Any

from dsh_tui.session.errors import (
    DshError,
    SessionCorruptionError,
    SessionValidationError,
)
from dsh_tui.store import layout, zstdframes
from dsh_tui.store.base import LoadResult, RawLog, Snapshot, StoreError
from dsh_tui.store.fsio import append_bytes, open_regular, read_stable, revision_of, write_new_file

from .codec import HEADER_ORDER, MAX_SAFE, encode_batch, encode_materialization, parse_header_record
from .decode import StoredPrefix, decode_raw_text, detect_compression, scan_file
from .prepare import Prepared, _looks, commit_repair, prepare
from .scanner import _INT_ONLY


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
        out: list[Path] = []
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
        others = [layout.transcript_name(layout.opposite(self.compression), v) for v in layout.GENERATIONS]
        for project in self._project_dirs():
            for d in self._session_dirs(project):
                for other in others:
                    if _is_file(d / other):
                        raise self._mismatch(d / other)
        self._encoding_checked = True

    def _current(self, d: Path) -> Path | None:
        """The session directory's log: its newest generation present (dsh 0.2 writes ``session.v4.*`` beside
        a migrated v0 log, and reads the newest)."""
        for v in layout.GENERATIONS:
            path = d / layout.transcript_name(self.compression, v)
            if _is_file(path):
                return path
        return None

    def locate(self, header: dict[str, Any]) -> Path:
        v: int = header["version"] if header.get("version") in layout.GENERATIONS else 0
        return layout.log_path(self.root, header.get("cwd"), header["id"], self.compression, v)

    def find(self, session_id: str) -> Path | None:
        """The stored log file of ``session_id`` in this root, or None when there is none (a session only
        created, not yet appended to, has no file). Raises StoreError for a duplicate id across project
        directories, the unsupported flat-file layout, or a log of the other compression."""
        return self._find(session_id)

    def _find(self, session_id: str) -> Path | None:
        self._check_encoding()
        seg = layout.encode_segment(session_id)
        others = [layout.transcript_name(layout.opposite(self.compression), v) for v in layout.GENERATIONS]
        matches = []
        for project in self._project_dirs():
            for comp in layout.COMPRESSIONS:
                flat = project / (seg + layout.suffix(comp))
                if _is_file(flat):
                    raise StoreError(f'session artifact "{flat}" uses the unsupported flat-file layout')
            d = project / seg
            for other in others:
                if _is_file(d / other):
                    raise self._mismatch(d / other)
            current = self._current(d)
            if current is not None:
                matches.append(current)
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
        seqs: list[Any] = [ev.get("seq") for ev in events]
        times: list[Any] = [ev.get("time") for ev in events]
        if (seqs != list(range(cursor, cursor + len(events))) or set(map(type, seqs)) != _INT_ONLY
                or set(map(type, times)) != _INT_ONLY or min(times) < -MAX_SAFE or max(times) > MAX_SAFE):
            _check_seqs(session_id, events, cursor)  # one pass that raises the precise error
        self._check_encoding()
        path = self.locate(header)
        pack = self.pack_chunks and header.get("version") != 4  # format v4 has no packed chunk rows
        if materialized:
            append_bytes(path, encode_batch(events, self.compression, pack))
        else:
            other = layout.log_path(self.root, header.get("cwd"), session_id, layout.opposite(self.compression))
            if _is_file(other):
                raise self._mismatch(other)
            write_new_file(path, encode_materialization(header, events, self.compression, pack))
            del self._pending[session_id]
        self._cursor[session_id] = (header, cursor + len(events))

    # -- read path -----------------------------------------------------------------------------

    def _read_prefix(self, session_id: str) -> StoredPrefix:
        path = self._find(session_id)
        if path is None:
            raise StoreError(f'session "{session_id}" not found in {self.root}')
        try:
            prefix = scan_file(path, self.compression)
        except OSError:
            raise  # (NotRegularFileError is a DshError too: it keeps its errno and file name)
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
        """Load with crash repair committed. ``result.session`` is the validated Session of
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
        name = "session.v4.jsonl" if header.get("version") == 4 else "session.jsonl"
        return RawLog(header, name, text.decode("utf-8", errors="surrogateescape"))

    # -- listing -------------------------------------------------------------------------------

    def _artifacts(self) -> list[tuple[dict[str, Any], Path]]:
        self._check_encoding()
        seen: set[str] = set()
        out = []
        for project in self._project_dirs():
            for d in self._session_dirs(project):
                path = self._current(d)
                if path is None:
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

    def list_snapshots(self) -> builtins.list[Snapshot]:  # (``list`` here is the method above)
        out = []
        for header, path in self._artifacts():
            try:
                out.append(Snapshot(header, revision_of(os.stat(path)), path))
            except FileNotFoundError:
                continue
        return out


def read_header(path: Path, compression: str | None = None) -> dict[str, Any] | None:
    """Only the header: raw = first line; zstd = first frame only (read in growing pieces, decoded a piece
    at a time, at most :data:`~dsh_tui.store.fsio.MAX_LINE_BYTES` held). None when the file is empty,
    half-written or its first record is not a valid header (list() skips those)."""
    from dsh_tui.store.fsio import LineSplitter

    with open_regular(path) as f:
        if compression is None:
            compression = detect_compression(f.read(4))
            f.seek(0)
        if compression == "none":
            split = LineSplitter()
            while True:
                block = f.read(8192 if split.pos < 65536 else split.pos)
                if not block:
                    return None
                lines = split.feed(block)
                if lines:
                    if lines[0] in (LineSplitter.JUNK, LineSplitter.OVERLONG):
                        return None
                    record = lines[0] + b"\n"
                    break
        else:
            content = b""
            while True:
                block = f.read(max(8192, len(content)))  # twice as much each time: linear in the frame
                if not block:
                    return None
                content += block
                fs = zstdframes.scan_frames(content, max_frames=1)
                if not fs.frames:
                    continue
                s, e = fs.frames[0]
                try:
                    record = zstdframes.decode_header_frame(memoryview(content)[s:e], s)
                except SessionCorruptionError as err:
                    raise SessionCorruptionError(f"{path}: {err}") from None
                break
    try:
        # like dsh's list(): a well-formed header of another format version is listed; load refuses it
        return parse_header_record(record, refuse_version=False)
    except SessionCorruptionError:
        return None
