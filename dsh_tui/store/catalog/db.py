"""The catalog's SQLite database: the schema (a ``sessions`` table, an FTS5 ``content`` table, the
listing ``snapshot``), the reads of whole tables and the writes of one indexed row with its text."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from pathlib import Path

import orjson

from .rows import SessionRow

# 5: + first prompt, fork turn, end-reason states (older indexes are rebuilt). The tables as sqlite-utils
# declares them (a named unique index on path) behave as version 5's hand-written ones: no rebuild.
# 6: a fork's turn from its own end-seed (version 5 took the first end-seed, a resumed parent's).
# 7: format v4 logs (dsh 0.2) are read, not listed as unreadable.
SCHEMA_VERSION = 7
_SID_SHIFT = 32  # FTS rowid = sid << 32 | n, so one session's text is a rowid range.


_COLUMNS = [
    "path", "root", "revision", "id", "cwd", "title", "title_source", "prompt", "fork_turn", "created_at",
    "updated_at",
    "last_time", "turns", "steps", "events", "tokens_in", "tokens_out", "tokens_cache",
    "tokens_reasoning", "state", "reason", "parent", "seed_length", "origin", "delegation_depth",
    "agent_preset", "size",
]

_INT_COLS = {"created_at", "updated_at", "last_time", "turns", "steps", "events", "tokens_in", "tokens_out",
             "tokens_cache", "tokens_reasoning", "seed_length", "delegation_depth", "size", "fork_turn"}


def ensure_schema(conn: sqlite3.Connection, write_lock: threading.Lock) -> None:
    """Create the tables unless ``PRAGMA user_version`` says they are this version's (a catalog of
    another version is dropped and rebuilt from the logs)."""
    (ver,) = conn.execute("PRAGMA user_version").fetchone()
    if ver == SCHEMA_VERSION:
        return  # the warm path: one pragma read
    with write_lock:
        conn.execute("BEGIN IMMEDIATE")
        try:
            (ver,) = conn.execute("PRAGMA user_version").fetchone()
            if ver != SCHEMA_VERSION:
                _create_tables(conn)
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            _rollback(conn)
            raise


def _create_tables(conn: sqlite3.Connection) -> None:
    """The schema, inside the caller's transaction. The plain tables are declared through sqlite-utils
    (imported here, when a catalog is made: importing it takes ~90 ms, more than a warm open may);
    plugins and connection pragmas of sqlite-utils are off, so the connection stays as opened."""
    import sqlite_utils

    db = sqlite_utils.Database(conn, recursive_triggers=False, execute_plugins=False)
    for name in ("sessions", "content", "snapshot"):
        db.table(name).drop(ignore=True)
    db.table("snapshot").create({"root": str, "data": bytes}, pk="root")
    sessions = db.table("sessions")
    sessions.create(
        {"sid": int, **{c: int if c in _INT_COLS else str for c in _COLUMNS},
         "fold": str, "header": str, "offset": int, "ident": str},
        pk="sid", not_null={"path"},
    )  # sid is INTEGER PRIMARY KEY: the rowid, so an insert's lastrowid is the new row's sid
    sessions.create_index(["path"], index_name="sessions_path", unique=True)
    sessions.create_index(["id"], index_name="sessions_id")
    # The FTS5 table in raw SQL: sqlite-utils' enable_fts() makes an external-content index of a
    # plain table kept in step by triggers; this one is standalone (it holds the text), with unindexed
    # seq/kind columns and rowids ``sid << _SID_SHIFT | n`` so one session's text is a rowid range.
    conn.execute(
        "CREATE VIRTUAL TABLE content USING fts5(text, seq UNINDEXED, kind UNINDEXED,"
        " tokenize='unicode61 remove_diacritics 2')"
    )


def index_rows(conn: sqlite3.Connection) -> dict[str, list]:
    # One JSON value for the whole table: sqlite3 releases the GIL on every row step, and 10k
    # hand-offs with a busy UI thread cost more than building and parsing one string.
    (blob,) = conn.execute(f"SELECT json_group_array(json_array({', '.join(_COLUMNS)})) FROM sessions").fetchone()
    return {r[0]: r for r in orjson.loads(blob)}


def drop_content(conn: sqlite3.Connection, sid: int) -> None:
    lo = sid << _SID_SHIFT
    conn.execute("DELETE FROM content WHERE rowid >= ? AND rowid < ?", (lo, lo + (1 << _SID_SHIFT)))


def write_row(conn, row: SessionRow, sid: int | None, values: list, extra: list,
              texts: list[tuple[int, str, str]], keep_content: bool) -> None:
    if sid is None:
        # A concurrent indexer may have inserted it meanwhile.
        r = conn.execute("SELECT sid FROM sessions WHERE path=?", (row.path,)).fetchone()
        sid = r[0] if r else None
    if sid is None:
        cols = _COLUMNS + ["fold", "header", "offset", "ident"]
        cur = conn.execute(
            f"INSERT INTO sessions ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
            values + extra,
        )
        sid = cur.lastrowid
        base = 0
    else:
        sets = ", ".join(f"{c}=?" for c in _COLUMNS + ["fold", "header", "offset", "ident"])
        conn.execute(f"UPDATE sessions SET {sets} WHERE sid=?", values + extra + [sid])
        if not keep_content:
            drop_content(conn, sid)
            base = 0
        else:
            lo = sid << _SID_SHIFT
            (mx,) = conn.execute(
                "SELECT max(rowid) FROM content WHERE rowid >= ? AND rowid < ?",
                (lo, lo + (1 << _SID_SHIFT)),
            ).fetchone()
            base = (mx - lo + 1) if mx is not None else 0
    lo = sid << _SID_SHIFT
    conn.executemany(
        "INSERT INTO content (rowid, text, seq, kind) VALUES (?, ?, ?, ?)",
        [(lo + base + i, text, seq, kind) for i, (seq, kind, text) in enumerate(texts)],
    )


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back if a transaction is still open: SQLite has already rolled back after some I/O errors
    (``disk I/O error``, a full disk), and a second ROLLBACK would hide the real error."""
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def _file_ident(p: Path) -> str | None:
    try:
        st = os.stat(p)
    except OSError:
        return None
    return f"{st.st_dev}:{st.st_ino}"
