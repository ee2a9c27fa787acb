"""dsh's SQLite schema 17 (docs/format.md, "SQLite storage"): the exact schema text, pragmas, application id
and user version; opening a database, creating it, or verifying that its whitespace-normalised
``sqlite_schema`` SQL matches the reference (any difference is refused: no migrations)."""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import uuid
from pathlib import Path
from typing import Any

from dsh_tui.session.errors import (
    DshError,
)

APPLICATION_ID = 1146308688  # 0x44534850 "DSHP"
USER_VERSION = 17
DB_FILENAME = "sessions.sqlite"
LOCK_DIRNAME = "sessions.locks"


BUSY_TIMEOUT_MS = 5000


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
    """Open with dsh's settings, each read back and verified, then create or verify schema 17."""
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


def verify_schema_quick(conn: sqlite3.Connection) -> None:
    """Re-validation at the start of every append transaction (cheap: version pragmas + schema text)."""
    verify_schema(conn)
