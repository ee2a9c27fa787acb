"""Choose the session backend for a root.

Order: an explicit ``backend`` argument; else ``$DSH_TUI_BACKEND``; else a ``sessions.sqlite`` file present in
the root means SQLite; else ``default_backend`` (the ``storage.backend`` setting, which the caller reads:
``dsh_tui.runtime.host.open_session_store``); else JSONL. JSONL compression: explicit argument, else
``$DSH_TUI_COMPRESSION``, else the encoding already used by the root's logs (one root = one encoding), else
``default_compression`` (the ``storage.compression`` setting), else dsh's default, zstd. The store reads no
settings file itself.
"""

from __future__ import annotations

import os
from pathlib import Path

from dsh_tui.session.errors import DshError

BACKENDS = ("jsonl", "sqlite")


def backend_for(root: str | Path, backend: str | None = None, default_backend: str | None = None) -> str:
    choice = backend or os.environ.get("DSH_TUI_BACKEND") or None
    if choice is None:
        from dsh_tui.store.sqlite import DB_FILENAME

        if (Path(root) / DB_FILENAME).is_file():
            choice = "sqlite"
        else:
            choice = default_backend or "jsonl"
    choice = choice.lower()
    if choice not in BACKENDS:
        raise DshError(f"unknown session backend {choice!r} (expected jsonl or sqlite)")
    return choice


def _detect_compression(root: Path) -> str | None:
    try:
        projects = [p for p in root.iterdir() if p.is_dir()]
    except OSError:
        return None
    for project in projects:
        try:
            for d in project.iterdir():
                if (d / "session.jsonl.zstd").is_file():
                    return "zstd"
                if (d / "session.jsonl").is_file():
                    return "none"
        except OSError:
            continue
    return None


def open_store(root: str | Path | None = None, *, backend: str | None = None, compression: str | None = None,
               default_backend: str | None = None, default_compression: str | None = None):
    """A SessionStore for ``root`` (default ``$DSH_HOME/sessions``). ``backend`` / ``compression`` are
    explicit choices; ``default_backend`` / ``default_compression`` the configured ones (lowest priority)."""
    if root is None:
        from dsh_tui.paths import default_sessions_root

        root = default_sessions_root()
    root = Path(root).expanduser()
    kind = backend_for(root, backend, default_backend)
    if kind == "sqlite":
        import sqlite3

        from dsh_tui.store.sqlite import DB_FILENAME, SqliteSessionStore

        try:
            return SqliteSessionStore(root)
        except sqlite3.Error as err:  # garbage, a newer schema, a full or read-only disk ...
            raise DshError(f"{Path(root) / DB_FILENAME}: cannot open the SQLite session store: {err}") from None
    from dsh_tui.store.jsonl import JsonlStore

    comp = (compression or os.environ.get("DSH_TUI_COMPRESSION") or _detect_compression(root)
            or default_compression or "zstd")
    if comp not in ("zstd", "none"):
        raise DshError(f"unknown compression {comp!r} (expected zstd or none)")
    return JsonlStore(root, comp)
