"""The session catalog: a derived SQLite index (WAL, FTS5) over every session log in the roots.

The catalog never decides what is visible. :meth:`Catalog.scan` walks the roots on disk and returns
one :class:`SessionRow` per log file it finds; rows whose file revision is unchanged come from the
index, the others are built from the header alone and flagged ``indexed=False`` until
:meth:`Catalog.index` reads them. An unreadable log is a row with its reason. Deleting the database
loses nothing: the next scan rebuilds it from the files.

Indexing is incremental: the byte offset of the last complete line (raw) or frame (zstd) and a
small fold state are kept per file, so a grown log is read from where the index stopped and an
unchanged revision (``dev:ino:size:mtimeNs:ctimeNs``) is not read at all.

Threads: a :class:`Catalog` opens one SQLite connection per thread, so a UI thread can scan while a
worker indexes.

:class:`Catalog` owns the per-thread connections, the first-paint listing and the scan; what it does not
own lives beside it: reading logs into the index (``indexing``, imported when it first indexes), the
schema and table writes (``db``), the listing snapshot (``snapshot``), search (``search``), the per-log
fold (``fold``), rows, discovery, readers.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from dsh_tui.store.fsio import private_dir, private_file

from .db import (
    _file_ident,
    _rollback,
    drop_content,
    ensure_schema,
    index_rows,
)
from .discover import (
    LOCK_PROBE_WINDOW,
    RAW_NAME,
    SQLITE_DB,
    ZSTD_NAME,
    _default_lock_probe,
    _has_sqlite,
    _revision,
    _revision_mtime,
    _session_dirs,
    _sqlite_store,
    default_db_path,
    default_roots,
    discover,
)
from .reader import (
    _known_types,
    _shown,
    _Unreadable,
    _utf8_name,
    read_log_header,
)
from .rows import (
    BAD_NAME,
    INDEXING,
    INTERRUPTED,
    OPEN_ELSEWHERE,
    UNREADABLE,
    CatalogError,
    SearchHit,
    SessionRow,
    _apply_header,
)
from .search import search_content
from .snapshot import _load_snapshot, dump_snapshot, snapshot_entries

_LISTING_HEADERS = 256  # new session dirs whose header the first-paint listing reads itself


# ---------------------------------------------------------------------------------------------
# The catalog


class Catalog:
    """The derived index. ``roots`` are session roots (dsh layout); ``db_path`` the SQLite file."""

    def __init__(self, roots: Iterable[str | os.PathLike] | None = None, db_path: str | os.PathLike | None = None,
                 *, lock_probe: Callable[[str], bool] | None = None) -> None:
        self.roots = [Path(r) for r in (roots if roots is not None else default_roots())]
        self.db_path = Path(db_path) if db_path is not None else default_db_path()
        self._local = threading.local()
        self._known = _known_types()
        self._lock_probe = lock_probe if lock_probe is not None else _default_lock_probe()
        self._write_lock = threading.Lock()
        self._dirty = False  # the index changed since the listing snapshot was written

    # -- connection ---------------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        """This thread's connection; reopened (and the schema recreated) if the file was deleted."""
        loc = self._local
        conn = getattr(loc, "conn", None)
        ident = _file_ident(self.db_path)
        if conn is not None and ident == getattr(loc, "ident", None) and ident is not None:
            return conn
        if conn is not None and getattr(loc, "memory", False):
            return conn  # the on-disk catalog could not be used: this run goes on in memory
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        try:
            _private(self.db_path)
            try:
                conn = self._open()
            except sqlite3.DatabaseError:
                # A damaged catalog is only a cache: start a new one (the logs are the truth).
                for suffix in ("", "-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(str(self.db_path) + suffix)
                _private(self.db_path)
                conn = self._open()
        except (OSError, sqlite3.Error) as err:
            return self._use_memory(err)
        loc.conn = conn
        loc.ident = _file_ident(self.db_path)
        return conn

    def _use_memory(self, err: BaseException | None = None) -> sqlite3.Connection:
        """The catalog is a cache: when its file cannot be created, opened or written (a read-only or
        full disk, a file-size limit, ``XDG_CACHE_HOME`` naming a file ...) this thread goes on with an
        empty index in memory, rebuilt from the logs. ``self.cache_problem`` says why."""
        loc = self._local
        old = getattr(loc, "conn", None)
        if old is not None:
            with contextlib.suppress(sqlite3.Error):
                old.close()
        self.cache_problem = f"{self.db_path}: {getattr(err, 'strerror', None) or err}" if err else "in memory"
        conn = self._open(":memory:")
        loc.conn, loc.ident, loc.memory = conn, None, True
        return conn

    @property
    def in_memory(self) -> bool:
        return bool(getattr(self._local, "memory", False))

    def _open(self, where: str | os.PathLike | None = None) -> sqlite3.Connection:
        conn = sqlite3.connect(self.db_path if where is None else where, timeout=10, check_same_thread=False, isolation_level=None)
        try:
            # Plain sqlite3 on every open: importing sqlite_utils takes ~90 ms (its Database() with
            # plugins loads setuptools entry points on top), which alone would blow the warm-open
            # budget; it is imported only when the schema is made (db.ensure_schema).
            with contextlib.suppress(sqlite3.OperationalError):
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            ensure_schema(conn, self._write_lock)
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- listing ------------------------------------------------------------------------------

    def listing(self) -> list[SessionRow]:
        """First-paint rows, cheap: the session directories on disk now (one ``scandir`` per project,
        no stat of a log, which proves what exists) joined with the index's listing snapshot (the
        facts the list shows; the rest stays zero and ``revision`` empty until :meth:`scan`).

        A directory the snapshot does not know is still listed: from its header when there are few
        such (``indexed=False``), else as a placeholder in state :data:`INDEXING`. Facts may be stale
        (a grown log, a log file deleted inside a kept directory) until :meth:`scan` revalidates the
        revisions; a deleted directory is never listed."""
        # ~20k objects allocated in a burst: collector passes over the whole (UI) heap on the way
        # cost more than the listing itself, and nothing here makes a reference cycle.
        gc_on = gc.isenabled()
        gc.disable()
        try:
            return self._listing()
        finally:
            if gc_on:
                gc.enable()

    def _listing(self) -> list[SessionRow]:
        try:
            conn = self._conn()
            snaps = dict(conn.execute("SELECT root, data FROM snapshot").fetchall())
        except sqlite3.Error:
            conn, snaps = None, {}
        rows: list[SessionRow] = []
        seen: set[str] = set()
        new: list[tuple[str, str]] = []  # (session dir, root) not in the snapshot
        recent_ns = (time.time() - LOCK_PROBE_WINDOW) * 1e9
        probe = self._lock_probe
        for root in self.roots:
            rroot = str(root)
            if _has_sqlite(root) and conn is not None:  # and any JSONL logs beside it (nothing is hidden)
                self._scan_sqlite(Path(root), index_rows(conn), rows, seen)
            snap = _load_snapshot(snaps.get(rroot))
            if not snap and snaps.get(rroot):
                self._dirty = True  # unusable (another format, damaged): the next save replaces it
            try:
                projects = list(os.scandir(root))
            except OSError:
                continue
            append = rows.append
            for pname, sess in _session_dirs(projects):
                rec = snap.get(pname + "/" + sess.name)
                if rec is None:
                    new.append((sess.path, rroot))
                    continue
                row = SessionRow(sess.path + os.sep + rec[0], rroot, *rec[1:-1])  # (depth, preset, size: 0)
                row.indexed = True
                append(row)
                if probe is not None and (rec[-1] >= recent_ns or row.state == INTERRUPTED) and row.id \
                        and row.state != UNREADABLE:
                    with contextlib.suppress(OSError):
                        if probe(row.path):
                            row.state = OPEN_ELSEWHERE
        if len(new) <= _LISTING_HEADERS:
            for sess_dir, rroot in new:
                for name in (RAW_NAME, ZSTD_NAME):
                    path = sess_dir + os.sep + name
                    try:
                        st = os.stat(path)
                    except OSError:
                        continue
                    row = self._header_row(path, rroot, _revision(st), st.st_size, None)
                    rows.append(row)
                    self.post_process([row])  # its lock (and an empty children list)
                    break
        else:
            rows += [SessionRow(path=d + os.sep + RAW_NAME, root=r, revision="", state=INDEXING) for d, r in new]
        # lineage (the rows are new: their children lists are empty)
        children = [r for r in rows if r.parent]
        if children:
            by_id = {r.id: r for r in rows if r.id}
            for r in children:
                if r.parent in by_id and r.id:  # (a row with a parent has a header, so an id)
                    by_id[r.parent].children.append(r.id)
        return rows

    def save_snapshot(self, *, force: bool = False) -> None:
        """Write the listing snapshot (per root: ``project/session`` -> the facts the list shows)
        when the index changed since the last one, or when a root has none."""
        conn = self._conn()
        have = {r[0] for r in conn.execute("SELECT root FROM snapshot")}
        roots = [str(r) for r in self.roots]  # a SQLite root's snapshot holds the JSONL logs beside it
        if not (force or self._dirty or any(r not in have for r in roots)):
            return
        self._dirty = False
        per_root = snapshot_entries(conn, roots)
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for r, snap in per_root.items():
                    conn.execute("INSERT OR REPLACE INTO snapshot (root, data) VALUES (?, ?)",
                                 (r, dump_snapshot(snap)))
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise

    def scan(self) -> list[SessionRow]:
        """Rows for every log on disk now. Indexed facts where the revision is unchanged; header-only
        rows (``indexed=False``) for new or changed logs; rows of logs gone from disk are dropped."""
        try:
            return self._scan()
        except sqlite3.Error as err:
            if self.in_memory:
                raise
            self._use_memory(err)
            return self._scan()

    def _scan(self) -> list[SessionRow]:
        conn = self._conn()
        known = index_rows(conn)
        rows: list[SessionRow] = []
        seen: set[str] = set()
        for root in self.roots:
            rroot = str(root)
            if _has_sqlite(root):  # then the JSONL logs beside it too: nothing on disk is hidden
                self._scan_sqlite(Path(root), known, rows, seen)
            denied: list[tuple[str, OSError]] = []
            for path, st in discover(root, denied):
                if path in seen:
                    continue
                seen.add(path)
                rev = _revision(st)
                if not _utf8_name(path):
                    rows.append(_bad_name_row(path, rroot, rev, st.st_size))
                    continue
                rec = known.get(path)
                if rec is not None and rec[2] == rev:
                    row = SessionRow(*rec)  # _COLUMNS is the dataclass's field order
                    row.indexed = True
                    row.root = rroot
                else:
                    row = self._header_row(path, rroot, rev, st.st_size, rec)
                rows.append(row)
            for path, err in denied:
                if path not in seen:
                    seen.add(path)
                    rows.append(SessionRow(path=path, root=rroot, revision="", state=UNREADABLE, indexed=True,
                                           reason=f"cannot read {_shown(path)}: {err.strerror or err}"))
        gone = [p for p in known if p not in seen and self._under_roots(p)]
        if gone:
            self._forget(conn, gone)
        self.post_process(rows)
        return rows

    def _scan_sqlite(self, root: Path, known: dict, rows: list[SessionRow], seen: set[str]) -> None:
        """A root holding dsh's SQLite store: one row per stored session (``<db>#<id>`` as its path)."""
        try:
            snapshots = _sqlite_store(root).list_snapshots()
        except Exception as err:  # noqa: BLE001 - the whole store is unreadable: one row says why
            path = str(root / SQLITE_DB)
            seen.add(path)
            rows.append(SessionRow(path=path, root=str(root), revision="", state=UNREADABLE,
                                   reason=f"SQLite store: {err}", indexed=True))
            return
        for snap in snapshots:
            sid = snap.header.get("id")
            path = f"{root / SQLITE_DB}#{sid}"
            seen.add(path)
            rec = known.get(path)
            if rec is not None and rec[2] == snap.revision:
                row = SessionRow(*rec)
                row.indexed = True
            else:
                row = SessionRow(*rec) if rec is not None else SessionRow(path=path, root=str(root),
                                                                                 revision=snap.revision)
                row.revision = snap.revision
                if rec is None:
                    _apply_header(row, snap.header)
                    row.updated_at = row.created_at
            row.root = str(root)
            rows.append(row)

    def _under_roots(self, path: str) -> bool:
        return any(path.startswith(str(r) + os.sep) for r in self.roots)

    def _header_row(self, path: str, root: str, rev: str, size: int, rec) -> SessionRow:
        if rec is not None:
            # Known but changed: keep the old facts on display until re-indexed.
            row = SessionRow(*rec)  # not indexed
            row.revision, row.size, row.root = rev, size, root
            return row
        row = SessionRow(path=path, root=root, revision=rev, size=size)
        try:
            h = read_log_header(path)
        except _Unreadable as err:
            row.state, row.reason = UNREADABLE, str(err)
            return row
        except OSError as err:  # the same words as the index gives (``index_one``)
            row.state, row.reason = UNREADABLE, f"cannot read: {err.strerror or err}"
            return row
        _apply_header(row, h)
        row.updated_at = row.created_at
        return row

    def post_process(self, rows: list[SessionRow]) -> None:
        by_id = {r.id: r for r in rows if r.id}
        for r in rows:
            r.children = []
        # A live writer elsewhere is probed only where one is plausible (an open turn, or a log written
        # in the last LOCK_PROBE_WINDOW): one stat per session would dominate a warm scan of 10k logs.
        # Resume, rename and delete always check the lock themselves.
        recent_ns = (time.time() - LOCK_PROBE_WINDOW) * 1e9
        for r in rows:
            if r.parent and r.parent in by_id and r.id:  # (a row with a parent has a header, so an id)
                by_id[r.parent].children.append(r.id)
            if r.state == UNREADABLE or self._lock_probe is None or not r.id:
                continue
            if r.state != INTERRUPTED and _revision_mtime(r.revision) < recent_ns:
                continue
            try:
                if self._lock_probe(r.path):
                    r.state = OPEN_ELSEWHERE
            except OSError:
                pass

    def _forget(self, conn: sqlite3.Connection, paths: list[str]) -> None:
        self._dirty = True
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for p in paths:
                    r = conn.execute("SELECT sid FROM sessions WHERE path=?", (p,)).fetchone()
                    if r:
                        drop_content(conn, r[0])
                        conn.execute("DELETE FROM sessions WHERE sid=?", (r[0],))
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise

    # -- indexing -----------------------------------------------------------------------------

    def index(self, rows: Iterable[SessionRow], *, progress: Callable[[int, int, SessionRow], None] | None = None,
              cancel: threading.Event | None = None) -> list[SessionRow]:
        """Index every row with ``indexed=False`` (in place) and return them (``indexing.index_rows``)."""
        from .indexing import index_rows

        return index_rows(self, rows, progress=progress, cancel=cancel)

    def refresh(self) -> list[SessionRow]:
        """Scan and index everything that changed; the rows are complete on return. When the catalog
        file cannot be written (full disk, I/O error, read-only), everything is indexed in memory."""
        try:
            rows = self.scan()
            self.index(rows)
        except sqlite3.Error as err:
            if self.in_memory:
                raise
            self._use_memory(err)
            rows = self.scan()
            self.index(rows)
        self.post_process(rows)
        return rows

    def index_one(self, row: SessionRow, *, conn: sqlite3.Connection | None = None) -> SessionRow:
        """Index one log: read from where the index stopped, fold, store (``indexing.index_one``)."""
        from .indexing import index_one

        return index_one(self, row, conn=conn)


    # -- search and lookup --------------------------------------------------------------------

    def search(self, text: str, *, limit: int = 200, paths: Iterable[str] | None = None) -> list[SearchHit]:
        """Full-text search over messages and tool output; each hit names the event seq it came from."""
        return search_content(self._conn(), text, limit=limit, paths=paths)

    def find(self, rows: list[SessionRow], ident: str) -> SessionRow:
        """A row by exact id, else by unique id prefix."""
        exact = [r for r in rows if r.id == ident]
        if exact:
            return exact[0]
        pref = [r for r in rows if r.id and r.id.startswith(ident)]
        if len(pref) == 1:
            return pref[0]
        if len(pref) > 1:
            shown = [f"{r.id} ({r.display_title})" if r.display_title else str(r.id)
                     for r in sorted(pref, key=lambda r: -(r.updated_at or r.created_at or 0))[:8]]
            more = f", and {len(pref) - 8} more" if len(pref) > 8 else ""
            raise CatalogError(f"session id {ident!r} is ambiguous ({len(pref)} sessions start with it): "
                               f"{', '.join(shown)}{more}")
        # an unreadable log has no id from its header: the name of its session directory is the id it was
        # stored under, so asking for it by id says why it cannot be read (as asking by path does)
        named = [r for r in rows if r.id is None and r.state == UNREADABLE and _dir_id(r.path) == ident]
        if named:
            return named[0]
        raise CatalogError(f"no session {ident!r} in {', '.join(str(r) for r in self.roots)}")


def _bad_name_row(path: str, root: str, rev: str, size: int) -> SessionRow:
    row = SessionRow(path=path, root=root, revision=rev, size=size, state=UNREADABLE, reason=BAD_NAME,
                     indexed=True)
    with contextlib.suppress(_Unreadable, OSError):
        _apply_header(row, read_log_header(path))
    return row


def _private(db_path: Path) -> None:
    """The catalog holds the full text of the logs (messages, tool output): its directory is made 0700 and
    the database with its WAL and shared-memory files 0600 (SQLite gives those the database's mode), and
    existing ones are fixed, before SQLite opens it."""
    private_dir(db_path.parent)
    private_file(db_path)
    for suffix in ("-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            if os.path.lexists(str(db_path) + suffix):
                private_file(str(db_path) + suffix)


def _dir_id(path: str) -> str | None:
    """The session id a log's (or session directory's) path names: its directory's decoded name."""
    from dsh_tui.store.layout import decode_segment

    d = os.path.dirname(path) if os.path.basename(path) in (RAW_NAME, ZSTD_NAME) else path
    try:
        return decode_segment(os.path.basename(d))
    except Exception:  # noqa: BLE001 - not a name the layout makes
        return None
