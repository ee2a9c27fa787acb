"""One way to name a stored session on the command line, shared by every command (resume, fork, export):
an exact id, a unique id prefix, or the path of a session log (``ROOT/PROJECT/SESSION/session.jsonl[.zstd]``)
or of its session directory. The rows come from the catalog's disk scan (JSONL and SQLite roots alike), and
:func:`store_for` opens the backend the row lives in.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from dsh_tui.session.errors import DshError
from dsh_tui.store.catalog import RAW_NAME, UNREADABLE, ZSTD_NAME, Catalog, SessionRow, resolve_roots
from dsh_tui.store.catalog.discover import V4_RAW_NAME, V4_ZSTD_NAME

# the newest generation first: a directory holding a v4 log beside a v0 one is the v4 session
LOG_NAMES = (V4_ZSTD_NAME, V4_RAW_NAME, ZSTD_NAME, RAW_NAME)


def _log_in(path: Path) -> Path | None:
    """``path`` as a session log: the file itself, or the log inside a session directory."""
    if path.is_dir():
        for name in LOG_NAMES:
            if (path / name).is_file():
                return path / name
        return None
    return path if path.is_file() else None


def looks_like_path(ident: str) -> bool:
    return os.sep in ident or ident.endswith((".jsonl", ".zstd"))


def scan(roots: Iterable[str | os.PathLike]) -> tuple[Catalog, list[SessionRow]]:
    cat = Catalog(list(roots))
    try:
        return cat, cat.scan()
    finally:
        cat.close()


def find_row(ident: str, roots: Iterable[str | os.PathLike] | None = None, *,
             include_default: bool = True, readable: bool = True) -> SessionRow:
    """The catalog row named by ``ident`` (id, unique id prefix, log file or session directory).

    ``roots``: extra roots (``--root``); the default root is searched too unless ``include_default`` is
    false. Refuses (``DshError``) an unknown or ambiguous name, a file that is not a session log in a
    session root, and (with ``readable``) a session whose log cannot be read."""
    if not ident:
        raise DshError("give a session id")
    if looks_like_path(ident):
        row = _row_of_file(Path(ident).expanduser())
    else:
        cat, rows = scan(resolve_roots(roots or [], include_default=include_default))
        row = cat.find(rows, ident)
    if readable and (row.state == UNREADABLE or row.id is None):
        raise DshError(f"session {row.id or row.path} is unreadable: {row.reason}")
    return row


def _row_of_file(path: Path) -> SessionRow:
    log = _log_in(path)
    if log is None:
        if not os.path.lexists(path):
            raise DshError(f"no such session log: {path}")
        raise DshError(f"{path}: not a session log (expected ROOT/PROJECT/SESSION/session[.v4].jsonl[.zstd] "
                       "or its SESSION directory)")
    if log.name not in LOG_NAMES:
        raise DshError(f"{path}: not a session log in a session root (its name must be session.jsonl[.zstd] "
                       "or session.v4.jsonl[.zstd], in ROOT/PROJECT/SESSION/); use dsh-tui log ... for a loose file")
    real = log.resolve()
    if len(real.parents) < 3:
        raise DshError(f"{path}: not inside a session root (ROOT/PROJECT/SESSION/{log.name})")
    root = real.parents[2]
    _, rows = scan([root])
    for row in rows:
        if os.path.realpath(row.path) == str(real):
            return row
    raise DshError(f"{path}: not inside a session root (ROOT/PROJECT/SESSION/{log.name})")


def store_for(row: SessionRow):
    """The store holding ``row`` (SQLite or JSONL, the encoding of its log)."""
    from dsh_tui.store.catalog import store_for

    return store_for(row)
