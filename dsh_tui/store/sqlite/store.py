"""SQLite session backend: dsh schema 17 (spec §4), byte-compatible rows, same interface as the JSONL store.

One database file holds every session of a root (``<root>/sessions.sqlite``). The schema text, pragmas,
application id and user version are exactly dsh's; on open the whitespace-normalised ``sqlite_schema`` SQL
is compared with the reference and any difference is refused (no migrations).

Row codec (§4.3): ``data`` is the compact JSON text of the event data (or of a packed row's data), stored as
TEXT below 4 KiB, else zstd level 3 as a BLOB only if that is smaller; ``surface_op`` is JSON text;
``source_event_seqs`` a varint/zigzag BLOB; packed chunk rows carry ``ignorable = 0``.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import stat
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zstandard

from dsh_tui.session.errors import (
    DshError,
    SessionCorruptionError,
    SessionFormatUnsupportedError,
    SessionValidationError,
)

APPLICATION_ID = 1146308688  # 0x44534850 "DSHP"
USER_VERSION = 17
DB_FILENAME = "sessions.sqlite"
LOCK_DIRNAME = "sessions.locks"
TEXT_LIMIT = 4096
ZSTD_LEVEL = 3
PACK_MAX_MEMBERS = 1024
PACK_MAX_BYTES = 1 << 20
BUSY_TIMEOUT_MS = 5000
PACKED_TAGS = ("text-chunks", "reasoning-chunks", "tool-call-chunks")
_REFUSED_AT_APPEND = frozenset({"request/header-delta", "mode/set"})

SCHEMA_STATEMENTS = (
    """CREATE TABLE persistence_state (
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
  store_id  TEXT NOT NULL
) STRICT""",
    """CREATE TABLE sessions (
  id               TEXT PRIMARY KEY,
  version          INTEGER NOT NULL,
  created_at       INTEGER NOT NULL,
  cwd              TEXT,
  parent_session   TEXT,
  seed_length      INTEGER,
  origin           TEXT,
  delegation_depth INTEGER,
  agent_preset     TEXT,
  incarnation      TEXT NOT NULL,
  revision         INTEGER NOT NULL
) STRICT""",
    """CREATE TABLE events (
  session_id        TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  seq               INTEGER NOT NULL,
  type              TEXT NOT NULL,
  time              INTEGER NOT NULL,
  data              ANY NOT NULL,
  source_event_seqs ANY,
  surface_op        TEXT,
  ignorable         INTEGER CHECK (ignorable IS NULL OR ignorable IN (0, 1)),
  PRIMARY KEY (session_id, seq)
) STRICT""",
)
SCHEMA_SQL = ";\n\n".join(SCHEMA_STATEMENTS) + ";\n"


def normalize_sql(sql: str) -> str:
    """dsh's comparison form: every whitespace run collapsed to one space, trimmed."""
    return re.sub(r"\s+", " ", sql).strip()


REFERENCE_SCHEMA = {
    ("table", name): normalize_sql(stmt)
    for name, stmt in zip(("persistence_state", "sessions", "events"), SCHEMA_STATEMENTS)
}


class SqliteStoreError(DshError):
    """The database cannot be used as a dsh session store (schema, settings or permissions)."""


# --------------------------------------------------------------------------------------------- codec


def encode_varint(n: int) -> bytes:
    if n < 0:
        raise ValueError("varint must be non-negative")
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _zigzag(d: int) -> int:
    return d * 2 if d >= 0 else -d * 2 - 1


def _unzigzag(z: int) -> int:
    return z >> 1 if not z & 1 else -((z + 1) >> 1)


def encode_seqs(seqs: list[int]) -> bytes:
    """First seq as unsigned LEB128, then zigzag deltas: ``[19, 20, 4]`` -> ``13 02 1f``."""
    out = bytearray()
    it = iter(seqs)
    for s in it:
        out += encode_varint(s)
        prev = s
        break
    push = out.append
    for s in it:
        d = s - prev
        prev = s
        z = d * 2 if d >= 0 else -d * 2 - 1
        if 0 <= z < 0x80:  # one byte: the common case (consecutive cited seqs give 0x02)
            push(z)
        else:
            out += encode_varint(z)
    return bytes(out)


def decode_seqs(blob: bytes) -> list[int]:
    out: list[int] = []
    i = 0
    n = len(blob)
    if n == 0:
        raise ValueError("empty source_event_seqs blob")
    while i < n:
        value = 0
        shift = 0
        start = i
        while True:
            if i >= n:
                raise ValueError("truncated varint")
            b = blob[i]
            i += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
            if i - start >= 9:
                raise ValueError("varint longer than 9 bytes")
        if i - start > 1 and blob[i - 1] == 0:
            raise ValueError("non-canonical varint")
        out.append(value if not out else out[-1] + _unzigzag(value))
    return out


_CCTX = threading.local()


def _compressor() -> zstandard.ZstdCompressor:
    c = getattr(_CCTX, "c", None)
    if c is None:
        c = _CCTX.c = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    return c


def encode_data(text: str) -> str | bytes:
    """JSON text as TEXT below 4 KiB, else a zstd level-3 BLOB when that is smaller."""
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) < TEXT_LIMIT:
        return text
    packed = _compressor().compress(raw)
    return packed if len(packed) < len(raw) else text


def decode_data(value: Any) -> Any:
    from dsh_tui.session import jsonutil

    if isinstance(value, bytes):
        raw = zstandard.ZstdDecompressor().decompressobj().decompress(value)
        text = raw.decode("utf-8", "surrogatepass")
    elif isinstance(value, str):
        text = value
    else:
        raise ValueError(f"data column has type {type(value).__name__}")
    return jsonutil.loads(text)


def encode_line(line: dict) -> tuple:
    """One logical line (verbatim event or packed row) -> (seq, type, time, data, seqs, surface_op, ignorable)."""
    from dsh_tui.session import jsonutil, rows

    if rows.is_packed_row(line):
        return (line["seq0"], line["type"], line["time0"], encode_data(jsonutil.dumps(line["data"])), None, None, 0)
    seqs = line.get("sourceEventSeqs")
    op = line.get("surfaceOp")
    return (
        line["seq"],
        line["type"],
        line["time"],
        encode_data(jsonutil.dumps(line["data"])),
        encode_seqs(seqs) if seqs is not None else None,
        jsonutil.dumps(op) if op is not None else None,
        1 if line.get("ignorable") is True else None,
    )


def decode_row(row: tuple) -> list[dict]:
    """(seq, type, time, data, seqs, surface_op, ignorable) -> logical events. Raises ValueError on damage."""
    from dsh_tui.session import jsonutil, rows

    seq, typ, time, data, seqs, op, ignorable = row
    if not isinstance(seq, int) or not isinstance(time, int) or not isinstance(typ, str):
        raise ValueError("bad scalar columns")
    payload = decode_data(data)
    if ignorable == 0:
        if typ not in PACKED_TAGS or seqs is not None or op is not None:
            raise ValueError(f"bad packed row at seq {seq}")
        return rows.expand_line({"type": typ, "seq0": seq, "time0": time, "data": payload})
    event: dict = {"type": typ, "seq": seq, "time": time, "data": payload}
    if seqs is not None:
        if not isinstance(seqs, bytes):
            raise ValueError("source_event_seqs is not a BLOB")
        event["sourceEventSeqs"] = decode_seqs(seqs)
    if op is not None:
        event["surfaceOp"] = jsonutil.loads(op)
    if ignorable == 1:
        event["ignorable"] = True
    elif ignorable is not None:
        raise ValueError("bad ignorable column")
    return [event]


def row_last_seq(row: tuple) -> int:
    """Seq of the last logical event in a row, with exactly :func:`decode_row`'s validation (a packed row's
    members are validated but not expanded into event dicts). Raises ValueError (or the decoder's error)."""
    from dsh_tui.session import rows

    seq, typ, time, data, seqs, op, ignorable = row
    if ignorable == 0 and isinstance(seq, int) and isinstance(time, int) and isinstance(typ, str) \
            and typ in PACKED_TAGS and seqs is None and op is None:
        payload = decode_data(data)  # what expand_line would expand: validate, count
        return seq + len(rows.validate_row({"type": typ, "seq0": seq, "time0": time, "data": payload})) - 1
    return decode_row(row)[-1]["seq"]


# -------------------------------------------------------------------------------------------- headers

_HEADER_COLUMNS = "id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset"


def header_to_row(h: dict) -> tuple:
    return (
        h["id"],
        h["version"],
        h["createdAt"],
        h.get("cwd"),
        h.get("parentSession"),
        h.get("seedLength"),
        h.get("origin"),
        h.get("delegationDepth", 0),
        h.get("agentPreset"),
    )


def row_to_header(r: tuple) -> dict:
    sid, version, created_at, cwd, parent, seed_length, origin, depth, preset = r[:9]
    h: dict = {"type": "session", "version": version, "id": sid, "createdAt": created_at}
    if cwd is not None:
        h["cwd"] = cwd
    if parent is not None:
        h["parentSession"] = parent
    if seed_length is not None:
        h["seedLength"] = seed_length
    if origin is not None:
        h["origin"] = origin
    h["delegationDepth"] = depth if depth is not None else 0
    if preset is not None:
        h["agentPreset"] = preset
    return h


# ----------------------------------------------------------------------------------------- connection


def _check_path_security(path: Path) -> None:
    if os.name != "posix":
        return
    parent = path.parent
    st = os.lstat(parent)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise SqliteStoreError(f"database directory {parent} is not a real directory")
    if st.st_uid != os.getuid():
        raise SqliteStoreError(f"database directory {parent} is not owned by the current user")
    if st.st_mode & 0o022:
        raise SqliteStoreError(f"database directory {parent} is group- or world-writable")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise SqliteStoreError(f"database {path} is a symlink")
    if not stat.S_ISREG(st.st_mode):
        raise SqliteStoreError(f"database {path} is not a regular file")
    if st.st_uid != os.getuid():
        raise SqliteStoreError(f"database {path} is not owned by the current user")
    if st.st_mode & 0o077:
        raise SqliteStoreError(f"database {path} is readable or writable by group or others")


def connect(path: str | Path, *, journal_mode: str = "wal") -> sqlite3.Connection:
    """Open with dsh's settings (§4.2), each read back and verified, then create or verify schema 17."""
    memory = str(path) == ":memory:"
    if not memory:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _check_path_security(path)
        if not path.exists():
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
                os.close(fd)
            except FileExistsError:
                pass
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        _configure(conn, journal_mode, memory)
        _init_or_verify(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _pragma(conn: sqlite3.Connection, stmt: str) -> Any:
    row = conn.execute(f"PRAGMA {stmt}").fetchone()
    return row[0] if row else None


def _configure(conn: sqlite3.Connection, journal_mode: str, memory: bool) -> None:
    journal_mode = journal_mode.lower()
    if journal_mode not in ("wal", "delete", "truncate", "persist"):
        raise SqliteStoreError(f"unsupported journal mode {journal_mode!r}")
    conn.execute("PRAGMA trusted_schema = OFF")
    if _pragma(conn, "trusted_schema") != 0:
        raise SqliteStoreError("could not disable trusted_schema")
    conn.execute("PRAGMA mmap_size = 0")
    if _pragma(conn, "mmap_size") != 0:
        raise SqliteStoreError("could not set mmap_size = 0")
    conn.execute("PRAGMA foreign_keys = ON")
    if _pragma(conn, "foreign_keys") != 1:
        raise SqliteStoreError("could not enable foreign_keys")
    got = _pragma(conn, f"journal_mode = {journal_mode}")
    want = "memory" if memory else journal_mode
    if str(got).lower() != want:
        raise SqliteStoreError(f"journal_mode is {got}, expected {want}")
    conn.execute("PRAGMA synchronous = FULL")
    if _pragma(conn, "synchronous") != 2:
        raise SqliteStoreError("could not set synchronous = FULL")
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def _objects(conn: sqlite3.Connection) -> dict:
    rows = conn.execute(
        "SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
    ).fetchall()
    return {(t, n): normalize_sql(s or "") for t, n, s in rows}


def verify_schema(conn: sqlite3.Connection) -> None:
    app = _pragma(conn, "application_id")
    ver = _pragma(conn, "user_version")
    if app != APPLICATION_ID:
        raise SqliteStoreError(f"database has application_id {app}, not a dsh session store")
    if ver != USER_VERSION:
        side = "newer" if ver > USER_VERSION else "older"
        raise SqliteStoreError(f"database schema version {ver} is {side} than 17; no migration path")
    objs = _objects(conn)
    if objs != REFERENCE_SCHEMA:
        extra = sorted(set(objs) - set(REFERENCE_SCHEMA))
        missing = sorted(set(REFERENCE_SCHEMA) - set(objs))
        changed = sorted(k for k in objs if k in REFERENCE_SCHEMA and objs[k] != REFERENCE_SCHEMA[k])
        raise SqliteStoreError(
            f"database schema differs from dsh schema 17 (extra {extra}, missing {missing}, changed {changed})"
        )
    n = conn.execute("SELECT count(*) FROM persistence_state").fetchone()[0]
    if n != 1:
        raise SqliteStoreError("database persistence_state must hold exactly one row")


def _init_or_verify(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        app = _pragma(conn, "application_id")
        ver = _pragma(conn, "user_version")
        if app == 0 and ver == 0:
            if _objects(conn):
                raise SqliteStoreError("database is not a dsh session store (unversioned, has objects)")
            for stmt in SCHEMA_STATEMENTS:
                conn.execute(stmt)
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {USER_VERSION}")
            conn.execute("INSERT INTO persistence_state (singleton, store_id) VALUES (1, ?)", (str(uuid.uuid4()),))
        verify_schema(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


# ---------------------------------------------------------------------------------------------- store


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
        """SQLite sessions have no per-session artifact (§4.3): always None."""
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
                if hrow is None:
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
        """No raw artifact exists for SQLite sessions (§4.3)."""
        return None

    def list(self) -> list[dict]:
        with self._lock:
            rows_ = self._conn.execute(f"SELECT {_HEADER_COLUMNS} FROM sessions ORDER BY rowid").fetchall()
        return [row_to_header(r) for r in rows_]

    def list_snapshots(self) -> list:
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
    def physical_rows(self, session_id: str) -> list[tuple]:
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


def verify_schema_quick(conn: sqlite3.Connection) -> None:
    """Re-validation at the start of every append transaction (cheap: version pragmas + schema text)."""
    verify_schema(conn)


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
    """§3.6 refusals + §3.7 seed validation, delegated to the session core."""
    from dsh_tui.session import legacy
    from dsh_tui.session.log import Session

    try:
        legacy.check_refusals(events, where=f"session {session_id}")
        Session(header, events, packed_runs=packed_runs)
    except (SessionFormatUnsupportedError, SessionCorruptionError):
        raise
    except (DshError, ValueError, TypeError, KeyError, AttributeError) as err:
        raise SessionCorruptionError(f'stored session "{session_id}" failed validation: {err}') from err


def open_sqlite_store(root: str | Path, **kw) -> SqliteSessionStore:
    return SqliteSessionStore(root, **kw)


def iter_chunks(it: Iterable, n: int):
    buf = []
    for x in it:
        buf.append(x)
        if len(buf) == n:
            yield buf
            buf = []
    if buf:
        yield buf
