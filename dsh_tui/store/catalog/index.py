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

Over 500 lines for a reason: :class:`Catalog` is one object whose connection, listing snapshot, scan,
incremental index and search share the same SQLite schema and per-thread state; the helpers it does
not own live beside it (rows, discover, reader, fold, filters, actions).
"""

from __future__ import annotations

import contextlib
import gc
import marshal
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import orjson

from .discover import (
    LOCK_PROBE_WINDOW,
    RAW_NAME,
    SQLITE_DB,
    ZSTD_NAME,
    _default_lock_probe,
    _has_sqlite,
    _is_sqlite_path,
    _revision,
    _revision_mtime,
    _session_dirs,
    _sqlite_store,
    default_db_path,
    default_roots,
    discover,
)
from .filters import fts_query
from .fold import _Fold
from .reader import (
    _iter_raw,
    _iter_zstd,
    _known_types,
    _parse_header,
    _shown,
    _Unreadable,
    _utf8_name,
    read_log_header,
)
from .rows import (
    BLANK,
    INDEXING,
    INTERRUPTED,
    OPEN_ELSEWHERE,
    UNREADABLE,
    CatalogError,
    SearchHit,
    SessionRow,
    _apply_header,
    _marked,
    end_state,
)

SCHEMA_VERSION = 5  # 5: + first prompt, fork turn, end-reason states (older indexes are rebuilt)
_SID_SHIFT = 32  # FTS rowid = sid << 32 | n, so one session's text is a rowid range.
_BATCH_SECONDS = 0.1
_LISTING_HEADERS = 256  # new session dirs whose header the first-paint listing reads itself
_SNAPSHOT_FORMAT = 2


# ---------------------------------------------------------------------------------------------
# The catalog


_COLUMNS = [
    "path", "root", "revision", "id", "cwd", "title", "title_source", "prompt", "fork_turn", "created_at",
    "updated_at",
    "last_time", "turns", "steps", "events", "tokens_in", "tokens_out", "tokens_cache",
    "tokens_reasoning", "state", "reason", "parent", "seed_length", "origin", "delegation_depth",
    "agent_preset", "size",
]


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
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
            try:
                conn = self._open()
            except sqlite3.DatabaseError:
                # A damaged catalog is only a cache: start a new one (the logs are the truth).
                for suffix in ("", "-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(str(self.db_path) + suffix)
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
            # Plain sqlite3 pragmas: sqlite_utils.Database() loads setuptools entry points (~100 ms),
            # which alone would blow the warm-open budget.
            with contextlib.suppress(sqlite3.OperationalError):
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._ensure_schema(conn)
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def _ensure_schema(self, conn: sqlite3.Connection) -> None:
        (ver,) = conn.execute("PRAGMA user_version").fetchone()
        if ver == SCHEMA_VERSION:
            return
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                (ver,) = conn.execute("PRAGMA user_version").fetchone()
                if ver != SCHEMA_VERSION:
                    conn.execute("DROP TABLE IF EXISTS sessions")
                    conn.execute("DROP TABLE IF EXISTS content")
                    conn.execute("DROP TABLE IF EXISTS snapshot")
                    conn.execute("CREATE TABLE snapshot (root TEXT PRIMARY KEY, data BLOB)")
                    cols = ",\n".join(
                        f"{c} {'INTEGER' if c in _INT_COLS else 'TEXT'}" for c in _COLUMNS if c != "path"
                    )
                    conn.execute(
                        f"CREATE TABLE sessions (sid INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, {cols},"
                        " fold TEXT, header TEXT, offset INTEGER, ident TEXT)"
                    )
                    conn.execute("CREATE INDEX sessions_id ON sessions(id)")
                    conn.execute(
                        "CREATE VIRTUAL TABLE content USING fts5(text, seq UNINDEXED, kind UNINDEXED,"
                        " tokenize='unicode61 remove_diacritics 2')"
                    )
                    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise

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
            if _has_sqlite(root):
                if conn is not None:
                    self._scan_sqlite(Path(root), self._index_rows(conn), rows, seen)
                continue
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
                row = SessionRow(sess.path + os.sep + rec[0], rroot, *rec[1:-1], 0, None, 0, True)
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
                if r.parent in by_id:
                    by_id[r.parent].children.append(r.id)
        return rows

    def _index_rows(self, conn: sqlite3.Connection) -> dict[str, list]:
        # One JSON value for the whole table: sqlite3 releases the GIL on every row step, and 10k
        # hand-offs with a busy UI thread cost more than building and parsing one string.
        (blob,) = conn.execute(f"SELECT json_group_array(json_array({', '.join(_COLUMNS)})) FROM sessions").fetchone()
        return {r[0]: r for r in orjson.loads(blob)}

    def save_snapshot(self, *, force: bool = False) -> None:
        """Write the listing snapshot (per root: ``project/session`` -> the facts the list shows)
        when the index changed since the last one, or when a root has none."""
        conn = self._conn()
        have = {r[0] for r in conn.execute("SELECT root FROM snapshot")}
        roots = [str(r) for r in self.roots if not _has_sqlite(r)]
        if not (force or self._dirty or any(r not in have for r in roots)):
            return
        self._dirty = False
        cols = ", ".join(_SNAPSHOT_COLUMNS)
        (blob,) = conn.execute(f"SELECT json_group_array(json_array({cols})) FROM sessions").fetchone()
        strings: dict[str, str] = {}  # one object per repeated string (cwd, state, ...): marshal refs
        per_root: dict[str, dict[str, tuple]] = {r: {} for r in roots}
        for (path, revision, id_, cwd, title, prompt, fork_turn, updated, turns, tin, tout, tcache, state, reason,
             parent, seed_length, origin) in orjson.loads(blob):
            for r in roots:
                if path.startswith(r + os.sep):
                    parts = path[len(r) + 1:].split(os.sep)
                    if len(parts) == 3:
                        sv = strings.setdefault
                        # SessionRow's positional fields from ``revision`` on, then the log's mtime
                        per_root[r][parts[0] + "/" + parts[1]] = (
                            sv(parts[2], parts[2]), "", id_, sv(cwd, cwd) if cwd else cwd, title, None, prompt,
                            fork_turn, 0, updated,
                            0, turns, 0, 0, tin, tout, tcache, 0, sv(state, state), reason, parent, seed_length,
                            sv(origin, origin) if origin else origin, _revision_mtime(revision or ""))
                    break
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for r, snap in per_root.items():
                    conn.execute("INSERT OR REPLACE INTO snapshot (root, data) VALUES (?, ?)",
                                 (r, marshal.dumps((_SNAPSHOT_FORMAT, _SNAPSHOT_FIELDS, snap))))
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
        known = self._index_rows(conn)
        rows: list[SessionRow] = []
        seen: set[str] = set()
        for root in self.roots:
            rroot = str(root)
            if _has_sqlite(root):
                self._scan_sqlite(Path(root), known, rows, seen)
                continue
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
                    row = SessionRow(*rec, True)  # _COLUMNS is the dataclass's field order
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
                row = SessionRow(*rec, True)
            else:
                row = SessionRow(*rec, False) if rec is not None else SessionRow(path=path, root=str(root),
                                                                                 revision=snap.revision)
                row.revision = snap.revision
                if rec is None:
                    _apply_header(row, snap.header)
                    row.updated_at = row.created_at
            row.root = str(root)
            rows.append(row)

    def _index_sqlite(self, row: SessionRow, conn: sqlite3.Connection) -> SessionRow:
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
            self._store_unreadable(conn, row, rec, str(err) or type(err).__name__, ident)
            return row
        fold = _Fold(fold_state, header, self._known)
        for ev in events:
            if ev.get("seq") != fold.s["next_seq"]:
                fold.s["problem"] = fold.s["corrupt"] = f"seq gap at seq {ev.get('seq')} (expected {fold.s['next_seq']})"
                break
            fold.s["next_seq"] += 1
            fold.event(ev)
        self._finish_row(row, header, fold)
        self._store(conn, row, rec[0] if rec else None, fold.s, header, fold.s["next_seq"], ident, fold.texts,
                    keep_content=start > 0)
        return row

    def _under_roots(self, path: str) -> bool:
        return any(path.startswith(str(r) + os.sep) for r in self.roots)

    def _header_row(self, path: str, root: str, rev: str, size: int, rec) -> SessionRow:
        if rec is not None:
            # Known but changed: keep the old facts on display until re-indexed.
            row = SessionRow(*rec, False)
            row.revision, row.size, row.root = rev, size, root
            return row
        row = SessionRow(path=path, root=root, revision=rev, size=size)
        try:
            h = read_log_header(path)
        except (_Unreadable, OSError) as err:
            row.state, row.reason = UNREADABLE, str(err)
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
            if r.parent and r.parent in by_id:
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
                        self._drop_content(conn, r[0])
                        conn.execute("DELETE FROM sessions WHERE sid=?", (r[0],))
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise

    @staticmethod
    def _drop_content(conn: sqlite3.Connection, sid: int) -> None:
        lo = sid << _SID_SHIFT
        conn.execute("DELETE FROM content WHERE rowid >= ? AND rowid < ?", (lo, lo + (1 << _SID_SHIFT)))

    # -- indexing -----------------------------------------------------------------------------

    def index(self, rows: Iterable[SessionRow], *, progress: Callable[[int, int, SessionRow], None] | None = None,
              cancel: threading.Event | None = None) -> list[SessionRow]:
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
        if not _utf8_name(row.path):  # the index holds text: such a path cannot be a key in it
            row.state, row.reason, row.indexed = UNREADABLE, _BAD_NAME, True
            return row
        conn = conn if conn is not None else self._conn()
        if _is_sqlite_path(row.path):
            return self._index_sqlite(row, conn)
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
            with open(row.path, "rb") as f:
                it = _iter_zstd(f, offset) if row.path.endswith(".zstd") else _iter_raw(f, offset)
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
                texts = fold.texts
        except _Unreadable as err:
            self._store_unreadable(conn, row, rec, str(err), ident)
            return row
        except OSError as err:
            self._store_unreadable(conn, row, rec, f"cannot read: {err.strerror or err}", ident)
            return row
        fold.s["sig"] = _tail_sig(row.path, offset)
        self._finish_row(row, header, fold)
        self._store(conn, row, rec[0] if rec else None, fold.s, header, offset, ident, texts, keep_content=grown)
        return row

    def _finish_row(self, row: SessionRow, header: dict, fold: _Fold) -> None:
        _apply_header(row, header)
        s = fold.s
        row.title, row.title_source = s["title"], s["title_source"]
        row.prompt, row.fork_turn = s["prompt"], s["fork_turn"]
        row.updated_at, row.last_time = s["updated_at"], s["last_time"]
        row.turns, row.steps, row.events = s["turns"], s["steps"], s["next_seq"]
        row.tokens_in, row.tokens_out, row.tokens_cache, row.tokens_reasoning = (
            s["tin"], s["tout"], s["tcache"], s["treason"])
        if s["preset"]:
            row.agent_preset = s["preset"]
        if s["corrupt"]:
            row.state, row.reason = UNREADABLE, s["corrupt"]
        elif s["problem"]:
            row.state, row.reason = INTERRUPTED, f"torn tail: {s['problem']}"
        elif s["open_turn"] is not None:
            row.state, row.reason = INTERRUPTED, f"turn {s['open_turn']} is open"
        elif s["turns"] == 0:
            row.state, row.reason = BLANK, None
        else:
            row.state, row.reason = end_state(s["last_end"]), None
        row.indexed = True

    def _store_unreadable(self, conn, row: SessionRow, rec, reason: str, ident: str) -> None:
        row.state, row.reason, row.indexed = UNREADABLE, reason, True
        self._store(conn, row, rec[0] if rec else None, None, None, None, ident, [], keep_content=False)

    def _store(self, conn, row: SessionRow, sid: int | None, fold: dict | None, header: dict | None,
               offset: int | None, ident: str, texts: list[tuple[int, str, str]], *, keep_content: bool) -> None:
        self._dirty = True
        values = [getattr(row, c) for c in _COLUMNS]
        extra = [orjson.dumps(fold).decode() if fold is not None else None,
                 orjson.dumps(header).decode() if header is not None else None, offset, ident]
        if getattr(self._local, "batch", False):
            self._write(conn, row, sid, values, extra, texts, keep_content)
            return
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._write(conn, row, sid, values, extra, texts, keep_content)
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise

    def _write(self, conn, row: SessionRow, sid: int | None, values: list, extra: list,
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
                self._drop_content(conn, sid)
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

    # -- search and lookup --------------------------------------------------------------------

    def search(self, text: str, *, limit: int = 200, paths: Iterable[str] | None = None) -> list[SearchHit]:
        """Full-text search over messages and tool output; each hit names the event seq it came from."""
        query = fts_query(text)
        if not query:
            return []
        conn = self._conn()
        try:
            cur = conn.execute(
                "SELECT c.rowid >> 32, c.seq, c.kind, snippet(content, 0, char(2), char(3), '…', 10)"
                " FROM content c WHERE content MATCH ? ORDER BY rank LIMIT ?",
                (query, limit if paths is None else limit * 20),
            )
            hits = cur.fetchall()
        except sqlite3.OperationalError:
            return []
        sids = {h[0] for h in hits}
        info = {}
        if sids:
            q = f"SELECT sid, path, id FROM sessions WHERE sid IN ({', '.join('?' * len(sids))})"
            info = {r[0]: (r[1], r[2]) for r in conn.execute(q, list(sids))}
        allowed = set(paths) if paths is not None else None
        out = []
        for sid, seq, kind, snip in hits:
            if sid not in info:
                continue
            path, sid_id = info[sid]
            if allowed is not None and path not in allowed:
                continue
            text, marks = _marked(snip)
            bracketed, at = [], 0
            for a, b in marks:
                bracketed += [text[at:a], "[", text[a:b], "]"]
                at = b
            bracketed.append(text[at:])
            out.append(SearchHit(path=path, id=sid_id, seq=int(seq), kind=kind, snippet="".join(bracketed), text=text,
                                 marks=marks))
            if len(out) >= limit:
                break
        return out

    def find(self, rows: list[SessionRow], ident: str) -> SessionRow:
        """A row by exact id, else by unique id prefix."""
        exact = [r for r in rows if r.id == ident]
        if exact:
            return exact[0]
        pref = [r for r in rows if r.id and r.id.startswith(ident)]
        if len(pref) == 1:
            return pref[0]
        if len(pref) > 1:
            raise CatalogError(f"session id {ident!r} is ambiguous ({len(pref)} sessions start with it)")
        raise CatalogError(f"no session {ident!r} in {', '.join(str(r) for r in self.roots)}")


_SNAPSHOT_COLUMNS = ["path", "revision", "id", "cwd", "title", "prompt", "fork_turn", "updated_at", "turns", "tokens_in", "tokens_out",
                     "tokens_cache", "state", "reason", "parent", "seed_length", "origin"]
# The SessionRow fields a snapshot entry fills, in order (after the log's file name; then its mtime).
_SNAPSHOT_FIELDS = ("revision", "id", "cwd", "title", "title_source", "prompt", "fork_turn", "created_at", "updated_at", "last_time",
                    "turns", "steps", "events", "tokens_in", "tokens_out", "tokens_cache", "tokens_reasoning",
                    "state", "reason", "parent", "seed_length", "origin")


_BAD_NAME = "its file name is not valid UTF-8 (rename the directory to list and open it)"


def _bad_name_row(path: str, root: str, rev: str, size: int) -> SessionRow:
    row = SessionRow(path=path, root=root, revision=rev, size=size, state=UNREADABLE, reason=_BAD_NAME,
                     indexed=True)
    with contextlib.suppress(_Unreadable, OSError):
        _apply_header(row, read_log_header(path))
    return row


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back if a transaction is still open: SQLite has already rolled back after some I/O errors
    (``disk I/O error``, a full disk), and a second ROLLBACK would hide the real error."""
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def _load_snapshot(data: bytes | None) -> dict[str, tuple]:
    """``project/session`` -> (log file name, *SessionRow fields, mtime ns); empty when absent or of
    another format."""
    if not data:
        return {}
    try:
        fmt, cols, snap = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return {}
    if fmt != _SNAPSHOT_FORMAT or cols != _SNAPSHOT_FIELDS or not isinstance(snap, dict):
        return {}
    return snap


_INT_COLS = {"created_at", "updated_at", "last_time", "turns", "steps", "events", "tokens_in", "tokens_out",
             "tokens_cache", "tokens_reasoning", "seed_length", "delegation_depth", "size", "fork_turn"}


def _tail_sig(path: str, offset: int) -> str:
    """The 64 bytes before ``offset``: a cheap check that the indexed prefix was not rewritten."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, offset - 64))
            return f.read(min(64, offset)).hex()
    except OSError:
        return ""


def _file_ident(p: Path) -> str | None:
    try:
        st = os.stat(p)
    except OSError:
        return None
    return f"{st.st_dev}:{st.st_ino}"

