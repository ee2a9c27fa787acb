"""The SQLite session store: one database file holds every session of a root (``<root>/sessions.sqlite``),
with the same interface as the JSONL store (:class:`SqliteSessionStore`)."""

from __future__ import annotations

import builtins
import contextlib
import sqlite3
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from dsh_tui.session.errors import (
    DshError,
    SessionCorruptionError,
    SessionFormatUnsupportedError,
    SessionValidationError,
)

from .codec import (
    _HEADER_COLUMNS,
    PACK_MAX_BYTES,
    PACK_MAX_MEMBERS,
    decode_row,
    encode_line,
    header_to_row,
    row_last_seq,
    row_to_header,
)
from .schema import DB_FILENAME, LOCK_DIRNAME, connect, verify_schema_quick

_REFUSED_AT_APPEND = frozenset({"request/header-delta", "mode/set"})


@dataclass
class _Scan:
    header: dict
    events: list[dict]
    torn_from: int | None = None  # seq of the first damaged row (torn tail), None = clean
    torn_rows: int = 0
    torn_bytes: int = 0  # stored data bytes of the torn rows
    incarnation: str = ""
    revision: int = 0
    problems: list[str] = field(default_factory=list)
    runs: list[tuple[int, int]] = field(default_factory=list)  # decoded packed-row spans of ``events``


class SqliteSessionStore:
    """The SQLite backend. Thread-safe: one connection guarded by a lock (the writer thread appends)."""

    backend = "sqlite"

    def __init__(self, root: str | Path, *, journal_mode: str = "wal", filename: str = DB_FILENAME) -> None:
        self.root = Path(root)
        self.path = self.root / filename
        self._lock = threading.RLock()
        self._conn = connect(self.path, journal_mode=journal_mode)
        self.store_id = self._conn.execute("SELECT store_id FROM persistence_state").fetchone()[0]
        self._intents: dict[str, dict] = {}

    # -- plumbing
    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def lock_path(self, session_id: str) -> Path:
        from dsh_tui.store.lock import lock_file_name

        return self.root / LOCK_DIRNAME / lock_file_name(session_id)

    def _header_row(self, session_id: str) -> tuple | None:
        return self._conn.execute(
            f"SELECT {_HEADER_COLUMNS}, incarnation, revision FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()

    # -- protocol
    def exists(self, session_id: str) -> bool:
        with self._lock:
            return self._header_row(session_id) is not None

    def locate(self, header) -> None:
        """SQLite sessions have no per-session artifact: always None."""
        return None

    def create(self, header: dict) -> None:
        from dsh_tui.session.headers import validate_header

        validate_header(header)
        sid = header["id"]
        with self._lock:
            if sid in self._intents or self._header_row(sid) is not None:
                raise DshError(f"session {sid} already exists")
            self._intents[sid] = dict(header)

    def append(self, session_id: str, events: list[dict], *, trusted: bool = False) -> None:
        """Durably append one batch (one ``BEGIN IMMEDIATE`` transaction, fsynced at commit).

        ``trusted=True`` (the writer, whose events were validated by ``Session.append``) skips the
        per-event lossless-JSON walk; the envelope, contiguity and legacy refusals are still checked."""
        if not events:
            return
        from dsh_tui.session import jsonutil, rows

        if trusted:  # Session.append already checked envelope and seqs; keep the cheap contiguity check
            first = events[0].get("seq")
            if events[-1].get("seq") != (first if isinstance(first, int) else -(1 << 60)) + len(events) - 1:
                _check_batch(events)
        else:
            _check_batch(events)
            for i, ev in enumerate(events):
                jsonutil.check_lossless(ev, where=f"events[{i}]")
        for ev in events:
            t = ev["type"]
            if t in _REFUSED_AT_APPEND or (
                t == "request/header" and isinstance(ev["data"], dict) and ev["data"].get("reason") == "fallback"
            ):
                raise SessionValidationError(f"append to {session_id!r}: unsupported legacy event {t}")
        lines = rows.pack_batch(events, max_members=PACK_MAX_MEMBERS, max_bytes=PACK_MAX_BYTES)
        encoded = [encode_line(line) for line in lines]
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as err:
                raise DshError(f"cannot append to session {session_id}: {err}") from err
            try:
                verify_schema_quick(conn)
                hrow = self._header_row(session_id)
                intent: dict | None = None  # the header to insert with the first batch (none stored yet)
                if hrow is None:
                    intent = self._intents.get(session_id)
                    if intent is None:
                        raise DshError(f"session {session_id} was not created")
                    next_seq = 0
                else:
                    next_seq = self._next_seq(session_id)
                if events[0]["seq"] != next_seq:
                    raise SessionValidationError(
                        f"append to {session_id} starts at seq {events[0]['seq']}, stored length is {next_seq}"
                        " (stale writer?)",
                        code="SEQ_MISMATCH",
                    )
                if intent is not None:
                    conn.execute(
                        f"INSERT INTO sessions ({_HEADER_COLUMNS}, incarnation, revision)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)",
                        (*header_to_row(intent), str(uuid.uuid4())),
                    )
                else:
                    conn.execute("UPDATE sessions SET revision = revision + 1 WHERE id = ?", (session_id,))
                conn.executemany(
                    "INSERT INTO events (session_id, seq, type, time, data, source_event_seqs, surface_op, ignorable)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [(session_id, *r) for r in encoded],
                )
                conn.execute("COMMIT")
            except BaseException as err:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                if isinstance(err, sqlite3.Error):
                    raise DshError(f"cannot append to session {session_id}: {err}") from err
                raise
            self._intents.pop(session_id, None)

    def _next_seq(self, session_id: str) -> int:
        row = self._conn.execute(
            "SELECT seq, type, time, data, source_event_seqs, surface_op, ignorable FROM events"
            " WHERE session_id = ? ORDER BY seq DESC LIMIT 1",
            (session_id,),
        ).fetchone()
        if row is None:
            return 0
        try:
            last = row_last_seq(row)
        except Exception as err:
            raise SessionCorruptionError(f"session {session_id}: undecodable last row at seq {row[0]}: {err}") from err
        return last + 1

    # -- reads
    def _snapshot(self, fn):
        """Run ``fn()`` inside one read transaction: header row and event rows from the same commit."""
        with self._lock:
            try:
                self._conn.execute("BEGIN")
            except sqlite3.Error as err:
                raise DshError(f"cannot read the session database: {err}") from err
            try:
                return fn()
            finally:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("COMMIT")

    def _scan(self, session_id: str) -> _Scan:
        def read():
            hrow = self._header_row(session_id)
            if hrow is None:
                return None, []
            return hrow, self._conn.execute(
                "SELECT seq, type, time, data, source_event_seqs, surface_op, ignorable FROM events"
                " WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()

        hrow, rows_ = self._snapshot(read)
        if hrow is None:
            if session_id in self._intents:
                raise DshError(f"session {session_id} has no events yet")
            raise DshError(f"session {session_id} not found")
        header = row_to_header(hrow)
        if header["version"] != 0:
            raise SessionFormatUnsupportedError(
                f"session {session_id} has format version {header['version']}"
                + (": written by a newer harness — upgrade" if header["version"] > 0 else ": no upgrade path")
            )
        scan = _Scan(header=header, events=[], incarnation=hrow[9], revision=hrow[10])
        expected = 0
        for i, row in enumerate(rows_):
            problem = None
            try:
                evs = decode_row(row)
                if evs[0]["seq"] != expected:
                    problem = f"seq gap at row seq {row[0]} (expected {expected})"
            except Exception as err:
                problem = f"undecodable row at seq {row[0]}: {err}"
            if problem is None:
                if row[6] == 0:  # a packed row, expanded (and validated) by the row decoder
                    scan.runs.append((len(scan.events), len(evs)))
                scan.events.extend(evs)
                expected = evs[-1]["seq"] + 1
                continue
            # damage: committed region if a later decodable row holds a turn/end
            for later in rows_[i + 1 :]:
                if later[1] == "turn/end" and later[6] != 0:
                    try:
                        decode_row(later)
                    except Exception:
                        continue
                    raise SessionCorruptionError(f"corrupt session {session_id}: {problem} in committed region")
            scan.torn_from = row[0]
            scan.torn_rows = len(rows_) - i
            scan.torn_bytes = sum(_row_bytes(r) for r in rows_[i:])
            scan.problems.append(problem)
            break
        return scan

    def _prepare(self, session_id: str, scan: _Scan) -> tuple[list[dict], list[dict]]:
        """Legacy import + refusal + validation; returns (events, closers)."""
        from dsh_tui.session import legacy, repair
        from dsh_tui.session.headers import validate_header

        try:
            validate_header(scan.header)
        except SessionFormatUnsupportedError:
            raise
        except DshError as err:
            raise SessionCorruptionError(f"corrupt session {session_id}: {err}") from err
        try:
            events = legacy.import_legacy(scan.events, session_id)
            closers = repair.interrupted_turn_closers(events)
        except (SessionFormatUnsupportedError, SessionCorruptionError):
            raise
        except (DshError, ValueError, TypeError, KeyError, AttributeError) as err:
            raise SessionCorruptionError(f'stored session "{session_id}" failed validation: {err}') from err
        # legacy import keeps every index, so the scan's packed-row spans still address the decoded members
        _validate_events(scan.header, events + closers, session_id, packed_runs=scan.runs)
        return events, closers

    def inspect(self, session_id: str):
        scan = self._scan(session_id)
        events, closers = self._prepare(session_id, scan)
        return self._result(scan, events + closers, closers, committed=False)

    def load(self, session_id: str):
        scan = self._scan(session_id)
        events, closers = self._prepare(session_id, scan)
        if scan.torn_from is None and not closers:
            return self._result(scan, events, [], committed=False)
        self._commit_repair(session_id, scan, closers)
        again = self._scan(session_id)
        events2, closers2 = self._prepare(session_id, again)
        if again.torn_from is not None or closers2:
            raise SessionCorruptionError(f"session {session_id}: repair did not converge")
        res = self._result(again, events2, closers, committed=True)
        res.truncated_bytes = scan.torn_bytes
        return res

    def _result(self, scan: _Scan, events: list[dict], closers: list[dict], *, committed: bool):
        from dsh_tui.store import base

        return base.LoadResult(
            header=scan.header,
            events=events,
            truncated_bytes=scan.torn_bytes,
            closers=closers,
            path=None,
            revision=f"{self.store_id}:incarnation:{scan.incarnation}:revision:{scan.revision}",
            committed=committed,
        )

    def _commit_repair(self, session_id: str, scan: _Scan, closers: list[dict]) -> None:
        from dsh_tui.session import rows

        lines = rows.pack_batch(closers, max_members=PACK_MAX_MEMBERS, max_bytes=PACK_MAX_BYTES) if closers else []
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as err:
                raise DshError(f"cannot repair session {session_id}: {err}") from err
            try:
                rev = conn.execute("SELECT incarnation, revision FROM sessions WHERE id = ?", (session_id,)).fetchone()
                if rev is None or (rev[0], rev[1]) != (scan.incarnation, scan.revision):
                    raise DshError(f"session {session_id} changed while it was being repaired; retry")
                if scan.torn_from is not None:
                    conn.execute("DELETE FROM events WHERE session_id = ? AND seq >= ?", (session_id, scan.torn_from))
                conn.executemany(
                    "INSERT INTO events (session_id, seq, type, time, data, source_event_seqs, surface_op, ignorable)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [(session_id, *encode_line(line)) for line in lines],
                )
                conn.execute("UPDATE sessions SET revision = revision + 1 WHERE id = ?", (session_id,))
                conn.execute("COMMIT")
            except BaseException as err:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                if isinstance(err, sqlite3.Error):
                    raise DshError(f"cannot repair session {session_id}: {err}") from err
                raise

    def read_from(self, session_id: str, from_seq: int) -> list[dict]:
        """Stored events with ``seq >= from_seq``: no repair, no closers."""
        def read():
            if self._header_row(session_id) is None:
                raise DshError(f"session {session_id} not found")
            start = self._conn.execute(
                "SELECT max(seq) FROM events WHERE session_id = ? AND seq <= ?", (session_id, from_seq)
            ).fetchone()[0]
            return self._conn.execute(
                "SELECT seq, type, time, data, source_event_seqs, surface_op, ignorable FROM events"
                " WHERE session_id = ? AND seq >= ? ORDER BY seq",
                (session_id, start if start is not None else 0),
            ).fetchall()

        if isinstance(from_seq, bool) or not isinstance(from_seq, int) or from_seq < 0:
            raise DshError(f"read_from seq must be a non-negative integer, got {from_seq!r}")
        rows_ = self._snapshot(read)
        out: list[dict] = []
        for row in rows_:
            try:
                evs = decode_row(row)
            except Exception as err:
                raise SessionCorruptionError(f"session {session_id}: undecodable row at seq {row[0]}: {err}") from err
            out.extend(e for e in evs if e["seq"] >= from_seq)
        return out

    def read_raw(self, session_id: str) -> None:
        """No raw artifact exists for SQLite sessions."""
        return None

    def list(self) -> list[dict]:
        with self._lock:
            rows_ = self._conn.execute(f"SELECT {_HEADER_COLUMNS} FROM sessions ORDER BY rowid").fetchall()
        return [row_to_header(r) for r in rows_]

    def list_snapshots(self) -> builtins.list:  # (``list`` is the method above here)
        from dsh_tui.store import base

        with self._lock:
            rows_ = self._conn.execute(
                f"SELECT {_HEADER_COLUMNS}, incarnation, revision FROM sessions ORDER BY rowid"
            ).fetchall()
        return [
            base.Snapshot(
                header=row_to_header(r),
                revision=f"{self.store_id}:incarnation:{r[9]}:revision:{r[10]}",
                path=None,
            )
            for r in rows_
        ]

    def revision(self, session_id: str) -> str | None:
        with self._lock:
            r = self._conn.execute("SELECT incarnation, revision FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return None if r is None else f"{self.store_id}:incarnation:{r[0]}:revision:{r[1]}"

    # -- measurement helpers (bench / tests)
    def physical_rows(self, session_id: str) -> builtins.list[tuple]:
        with self._lock:
            return self._conn.execute(
                "SELECT seq, type, time, data, source_event_seqs, surface_op, ignorable FROM events"
                " WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()


def _row_bytes(row: tuple) -> int:
    d = row[3]
    n = len(d) if isinstance(d, bytes) else len(str(d).encode("utf-8", "surrogatepass"))
    return max(n, 1)


def _check_batch(events: list[dict]) -> None:
    allowed = {"type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable"}
    prev = None
    for ev in events:
        if not isinstance(ev, dict) or not set(ev) <= allowed or "data" not in ev:
            raise SessionValidationError("append: invalid event envelope")
        if type(ev.get("type")) is not str:
            raise SessionValidationError(f"append: event type must be a string, got {ev.get('type')!r}")
        seq = ev.get("seq")
        if not isinstance(seq, int) or isinstance(seq, bool) or not isinstance(ev.get("time"), int):
            raise SessionValidationError("append: seq and time must be integers")
        if prev is not None and seq != prev + 1:
            raise SessionValidationError(f"append: seq gap inside batch ({prev} then {seq})", code="SEQ_MISMATCH")
        prev = seq


def _validate_events(header: dict, events: list[dict], session_id: str,
                     packed_runs: list[tuple[int, int]] | None = None) -> None:
    """Legacy refusals and seed validation, delegated to the session core."""
    from dsh_tui.session import legacy
    from dsh_tui.session.log import Session

    try:
        legacy.check_refusals(events, where=f"session {session_id}")
        Session(header, events, packed_runs=packed_runs)
    except (SessionFormatUnsupportedError, SessionCorruptionError):
        raise
    except (DshError, ValueError, TypeError, KeyError, AttributeError) as err:
        raise SessionCorruptionError(f'stored session "{session_id}" failed validation: {err}') from err
