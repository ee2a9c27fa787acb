"""Session roots on disk: which roots, which session logs they hold (JSONL layout or dsh's SQLite
store), a file's revision, and whether a live writer holds a session's lock."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

RAW_NAME = "session.jsonl"
SQLITE_DB = "sessions.sqlite"  # dsh's SQLite backend (store/sqlite/) when present in a root
ZSTD_NAME = "session.jsonl.zstd"
# format v4 (dsh 0.2): the newest generation in a session directory is its log
V4_ZSTD_NAME = "session.v4.jsonl.zstd"
V4_RAW_NAME = "session.v4.jsonl"


LOCK_PROBE_WINDOW = 24 * 3600  # seconds


# ---------------------------------------------------------------------------------------------
# Roots and discovery


def default_roots() -> list[Path]:
    """dsh's session root: ``$DSH_HOME/sessions`` (``~/.dsh/sessions``)."""
    from dsh_tui.paths import default_sessions_root

    return [default_sessions_root()]


def resolve_roots(extra: Iterable[str | os.PathLike] | None = None, *, include_default: bool = True) -> list[Path]:
    roots = default_roots() if include_default else []
    for r in extra or ():
        p = Path(r).expanduser().absolute()
        if p not in roots:
            roots.append(p)
    return roots


def default_db_path() -> Path:
    from dsh_tui.paths import cache_dir

    return cache_dir() / "catalog.sqlite"


def _has_sqlite(root) -> bool:
    """The root holds dsh's SQLite store (False when the root cannot even be searched)."""
    try:
        return os.path.isfile(os.path.join(root, SQLITE_DB))
    except (OSError, ValueError):
        return False


def _is_sqlite_path(path: str) -> bool:
    return "#" in path and path.rsplit("#", 1)[0].endswith(os.sep + SQLITE_DB)


_SQLITE_STORES: dict[tuple[str, int], Any] = {}


def _sqlite_store(root: Path):
    """One SqliteSessionStore per (root, thread): its connection is guarded by its own lock."""
    from dsh_tui.store.sqlite import SqliteSessionStore

    key = (str(root), threading.get_ident())
    store = _SQLITE_STORES.get(key)
    if store is None:
        store = _SQLITE_STORES[key] = SqliteSessionStore(root)
    return store


def _revision_mtime(revision: str) -> int:
    try:
        return int(revision.split(":")[3])
    except (IndexError, ValueError):
        return 0


def _revision(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _session_dirs(projects: list[os.DirEntry], unreadable: list[tuple[str, OSError]] | None = None
                  ) -> Iterator[tuple[str, os.DirEntry]]:
    """``(project name, session dir entry)`` for every session directory under a JSONL root's listed
    entries (dot directories and ``_trash`` skipped; an unreadable project is skipped, and added to
    ``unreadable`` with its error when a list is given)."""
    for proj in projects:
        if not proj.is_dir(follow_symlinks=False) or proj.name.startswith(".") or proj.name == "_trash":
            continue
        try:
            sessions = list(os.scandir(proj.path))
        except OSError as err:
            if unreadable is not None:
                unreadable.append((proj.path, err))
            continue
        pname = proj.name
        for sess in sessions:
            if sess.is_dir(follow_symlinks=False):
                yield pname, sess


def discover(root: Path, unreadable: list[tuple[str, OSError]] | None = None
             ) -> Iterator[tuple[str, os.stat_result]]:
    """Every ``<root>/<project>/<session>/session.jsonl[.zstd]`` with its stat. A directory that cannot
    be read (a project, or a session directory whose log cannot be looked at) is added to
    ``unreadable`` with its error when a list is given: nothing on disk is hidden."""
    try:
        projects = list(os.scandir(root))
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as err:
        if unreadable is not None:
            unreadable.append((str(root), err))
        return
    names = (ZSTD_NAME, RAW_NAME)
    for _, sess in _session_dirs(projects, unreadable):
        denied = None
        for name in (V4_ZSTD_NAME, V4_RAW_NAME, *names):
            p = sess.path + os.sep + name
            try:
                st = os.stat(p)
            except FileNotFoundError:
                continue
            except OSError as err:
                denied = err
                continue
            if name != names[0] and name in names:
                names = (name, names[0])  # one root, one encoding: try the one just seen first
            yield p, st
            break
        else:
            if denied is not None and unreadable is not None:
                unreadable.append((sess.path, denied))


def jsonl_lock_held(log_path: str) -> bool:
    """A live writer holds ``<session dir>/session.lock`` (the durability engineer's lock); for a
    SQLite root, ``<root>/sessions.locks/<id>.lock``."""
    if _is_sqlite_path(log_path):
        from dsh_tui.store.lock import lock_file_name

        db, sid = log_path.rsplit("#", 1)
        lock_file = os.path.join(os.path.dirname(db), "sessions.locks", lock_file_name(sid))
    else:
        lock_file = os.path.join(os.path.dirname(log_path), "session.lock")
    if not os.path.exists(lock_file):
        return False
    from dsh_tui.store.lock import holder

    return holder(lock_file) is not None


def _default_lock_probe() -> Callable[[str], bool] | None:
    return jsonl_lock_held
