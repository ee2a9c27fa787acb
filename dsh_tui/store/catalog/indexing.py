"""Indexing: reading logs into the catalog's index (:meth:`Catalog.index`, :meth:`Catalog.index_one`).

A log is read from where the index stopped (the byte offset of its last complete line or frame, checked
by the bytes before it) and folded (``fold``), and its row, fold state and searchable text are written
(``db``), many logs per transaction. A SQLite root's session is read past its indexed seq while its
incarnation holds. The functions take the :class:`~.index.Catalog` (its connection, write lock and
known event types); it calls them, importing this module when it first indexes — the first-paint listing
never needs it.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from dsh_tui.store.fsio import open_regular

from .db import _COLUMNS, _rollback, write_row
from .discover import _is_sqlite_path, _revision, _sqlite_store
from .fold import FoldState, _Fold, finish_row
from .reader import _iter_raw, _iter_zstd, _parse_header, _Unreadable, _utf8_name
from .rows import BAD_NAME as _BAD_NAME
from .rows import UNREADABLE, SessionRow

if TYPE_CHECKING:
    from .index import Catalog

_BATCH_SECONDS = 0.1


def index_rows(self: Catalog, rows: Iterable[SessionRow], *,
               progress: Callable[[int, int, SessionRow], None] | None = None, cancel: threading.Event | None = None) -> list[SessionRow]:
    """Index every row with ``indexed=False`` (in place) and return them."""
    todo = [r for r in rows if not r.indexed]
    i = 0
    while i < len(todo):
        if cancel is not None and cancel.is_set():
            break
        conn = self._conn()
        start = i
        deadline = time.monotonic() + _BATCH_SECONDS
        # Many logs per transaction: one commit per ~0.1 s of work instead of one per log.
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            self._local.batch = True
            try:
                while i < len(todo) and (i == start or time.monotonic() < deadline):
                    self.index_one(todo[i], conn=conn)
                    i += 1
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise
            finally:
                self._local.batch = False
        if progress is not None:
            for k in range(start, i):
                progress(k + 1, len(todo), todo[k])
    return todo


def index_one(self: Catalog, row: SessionRow, *, conn: sqlite3.Connection | None = None) -> SessionRow:
    if not _utf8_name(row.path):  # the index holds text: such a path cannot be a key in it
        row.state, row.reason, row.indexed = UNREADABLE, _BAD_NAME, True
        return row
    conn = conn if conn is not None else self._conn()
    if _is_sqlite_path(row.path):
        return index_sqlite(self, row, conn)
    rec = conn.execute(
        "SELECT sid, fold, header, offset, ident, revision FROM sessions WHERE path=?", (row.path,)
    ).fetchone()
    try:
        st = os.stat(row.path)
    except OSError as err:
        row.state, row.reason, row.indexed = UNREADABLE, f"cannot stat: {err.strerror}", True
        return row
    ident = f"{st.st_dev}:{st.st_ino}"
    fold_state = header = None
    offset = 0
    if rec is not None and rec[4] == ident and rec[3] is not None and rec[3] <= st.st_size and rec[1]:
        fold_state, header, offset = orjson.loads(rec[1]), orjson.loads(rec[2]), rec[3]
        if fold_state.get("problem") is not None or fold_state.get("sig") != _tail_sig(row.path, offset):
            fold_state = header = None
            offset = 0
    grown = offset > 0
    texts: list[tuple[int, str, str]] = []
    row.revision, row.size = _revision(st), st.st_size
    try:
        with open_regular(row.path) as f:
            zstd = row.path.endswith(".zstd")
            fold = None
            it = _iter_zstd(f, offset) if zstd else _iter_raw(f, offset, lambda: fold)
            if header is None:
                line, offset = next(it, (None, 0))
                if line is None:
                    raise _Unreadable("no complete header line")
                header = _parse_header(line)
            fold = _Fold(fold_state, header, self._known)
            for line, end in it:
                fold.line(line)
                if fold.s["problem"] is None:
                    offset = end
                elif zstd:  # a bad line in a complete frame: the log is corrupt (as the store says)
                    fold.s["corrupt"] = fold.s["corrupt"] or fold.s["problem"]
                    break
            texts = fold.texts
    except _Unreadable as err:
        store_unreadable(self, conn, row, rec, str(err), ident)
        return row
    except OSError as err:
        store_unreadable(self, conn, row, rec, f"cannot read: {err.strerror or err}", ident)
        return row
    fold.s["sig"] = _tail_sig(row.path, offset)
    finish_row(row, header, fold)
    store_row(self, conn, row, rec[0] if rec else None, fold.s, header, offset, ident, texts, keep_content=grown)
    return row


def index_sqlite(self: Catalog, row: SessionRow, conn: sqlite3.Connection) -> SessionRow:
    """Index a session of a SQLite root: events past the indexed seq while its incarnation holds."""
    root = Path(row.root)
    sid = row.path.rsplit("#", 1)[1]
    rec = conn.execute("SELECT sid, fold, header, offset, ident FROM sessions WHERE path=?", (row.path,)).fetchone()
    ident = row.revision.rsplit(":revision:", 1)[0]  # store + incarnation: same history, maybe grown
    fold_state = header = None
    start = 0
    if rec is not None and rec[4] == ident and rec[1]:
        fold_state, header, start = orjson.loads(rec[1]), orjson.loads(rec[2]), rec[3] or 0
    try:
        store = _sqlite_store(root)
        if header is None:
            header = next(s.header for s in store.list_snapshots() if s.header.get("id") == sid)
            start = 0
        events = store.read_from(sid, start)
    except Exception as err:  # noqa: BLE001 - an unreadable session is a row with its reason
        store_unreadable(self, conn, row, rec, str(err) or type(err).__name__, ident)
        return row
    fold = _Fold(fold_state, header, self._known)
    for ev in events:
        if ev.get("seq") != fold.s["next_seq"]:
            fold.s["problem"] = fold.s["corrupt"] = f"seq gap at seq {ev.get('seq')} (expected {fold.s['next_seq']})"
            break
        fold.s["next_seq"] += 1
        fold.event(ev)
    finish_row(row, header, fold)
    store_row(self, conn, row, rec[0] if rec else None, fold.s, header, fold.s["next_seq"], ident, fold.texts,
                keep_content=start > 0)
    return row


def store_unreadable(self: Catalog, conn, row: SessionRow, rec, reason: str, ident: str) -> None:
    row.state, row.reason, row.indexed = UNREADABLE, reason, True
    store_row(self, conn, row, rec[0] if rec else None, None, None, None, ident, [], keep_content=False)


def store_row(self: Catalog, conn, row: SessionRow, sid: int | None, fold: FoldState | None, header: dict | None,
           offset: int | None, ident: str, texts: list[tuple[int, str, str]], *, keep_content: bool) -> None:
    self._dirty = True
    values = [getattr(row, c) for c in _COLUMNS]
    extra = [orjson.dumps(fold).decode() if fold is not None else None,
             orjson.dumps(header).decode() if header is not None else None, offset, ident]
    if getattr(self._local, "batch", False):
        write_row(conn, row, sid, values, extra, texts, keep_content)
        return
    with self._write_lock:
        conn.execute("BEGIN IMMEDIATE")
        try:
            write_row(conn, row, sid, values, extra, texts, keep_content)
            conn.execute("COMMIT")
        except BaseException:
            _rollback(conn)
            raise


def _tail_sig(path: str, offset: int) -> str:
    """The 64 bytes before ``offset``: a cheap check that the indexed prefix was not rewritten."""
    try:
        with open_regular(path, sparse_ok=True) as f:
            f.seek(max(0, offset - 64))
            return f.read(min(64, offset)).hex()
    except OSError:
        return ""
