"""Workspace trust: which workspace folders the user has trusted to run the code they carry.

A workspace can carry code that runs with the user's permissions as soon as dsh-tui opens it: project plugins
(``.dsh-tui/plugins/``; later project hooks). Such things run only in a trusted workspace. The user trusts a
workspace once (the app's question, or ``--trust``); trusting a folder trusts everything below it.

The API (kept small: other features that need trust reuse it):

- ``is_trusted(root) -> bool``: ``root`` or one of its ancestors was trusted.
- ``trust(root) -> Path``: remember ``root`` as trusted (returns the folder as stored).
- ``untrust(root) -> bool``: forget it (True if it was stored).
- ``trusted_roots() -> list[Path]``: what is stored.
- ``needs_trust(root) -> list[str]``: what in ``root`` would run only once it is trusted, one line each
  (empty: nothing to ask about). A feature that adds something needing trust adds its check to ``NEEDS``.

The list is ``<data dir>/trusted-workspaces.json`` (``$XDG_DATA_HOME/dsh-tui`` on Linux), private: the file
0600, its folder 0700. Folders are stored resolved (symlinks followed), so a link to a trusted folder is
trusted and a trusted folder's name cannot be borrowed by a link elsewhere.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import platformdirs

from dsh_tui.config.files import APP_NAME

TRUST_FILE = "trusted-workspaces.json"
PROJECT_PLUGIN_DIR = Path(".dsh-tui") / "plugins"


def trust_path() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)) / TRUST_FILE


def _resolved(root: str | os.PathLike[str]) -> Path:
    return Path(root).expanduser().resolve()


def _read() -> list[dict]:
    try:
        data = json.loads(trust_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    rows = data.get("workspaces") if isinstance(data, dict) else None
    return [r for r in rows or [] if isinstance(r, dict) and isinstance(r.get("root"), str)]


def _write(rows: list[dict]) -> None:
    from dsh_tui.store.fsio import write_atomic

    path = trust_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    data = json.dumps({"version": 1, "workspaces": rows}, ensure_ascii=False, indent=1) + "\n"
    write_atomic(path, data.encode("utf-8"), mode=0o600)


def trusted_roots() -> list[Path]:
    return [Path(r["root"]) for r in _read()]


def is_trusted(root: str | os.PathLike[str]) -> bool:
    """``root`` (resolved) or one of its ancestors is a trusted workspace."""
    here = _resolved(root)
    return any(here == t or t in here.parents for t in trusted_roots())


def trust(root: str | os.PathLike[str]) -> Path:
    """Remember ``root`` as trusted (idempotent); ``OSError`` if the list cannot be written."""
    here = _resolved(root)
    rows = _read()
    if not any(r["root"] == str(here) for r in rows):
        _write([*rows, {"root": str(here), "time": int(time.time() * 1000)}])
    return here


def untrust(root: str | os.PathLike[str]) -> bool:
    here = str(_resolved(root))
    rows = _read()
    kept = [r for r in rows if r["root"] != here]
    if len(kept) != len(rows):
        _write(kept)
    return len(kept) != len(rows)


def project_plugin_paths(root: str | os.PathLike[str]) -> list[Path]:
    """The project plugins of workspace ``root``: each ``.dsh-tui/plugins/<name>.py`` module and each
    ``.dsh-tui/plugins/<name>/`` package (with ``__init__.py``), by name; names starting with ``_`` or ``.``
    are not plugins. Nothing is imported."""
    folder = Path(root) / PROJECT_PLUGIN_DIR
    try:
        entries = sorted(folder.iterdir(), key=lambda p: p.name)
    except OSError:
        return []
    found = []
    for entry in entries:
        if entry.name.startswith(("_", ".")):
            continue
        if (entry.suffix == ".py" and entry.is_file()) or (entry.is_dir() and (entry / "__init__.py").is_file()):
            found.append(entry)
    return found


def _project_plugins(root: Path) -> list[str]:
    paths = project_plugin_paths(root)
    if not paths:
        return []
    names = ", ".join(p.stem for p in paths)
    return [f"project plugins ({PROJECT_PLUGIN_DIR.as_posix()}/): {names}"]


def project_hook_files(root: str | os.PathLike[str], dialect: str | None = None) -> list[Path]:
    """The workspace's own Claude Code (``.claude/settings.json`` and ``settings.local.json`` with hooks in
    them) and Codex (``.codex/hooks.json``) hook files that exist (dsh_tui/extensions/hooks/ runs them only once
    the workspace is trusted); ``dialect`` "claude-code" or "codex" for one of them."""
    names = []
    if dialect in (None, "claude-code"):
        names += [Path(".claude") / "settings.json", Path(".claude") / "settings.local.json"]
    if dialect in (None, "codex"):
        names.append(Path(".codex") / "hooks.json")
    out = []
    for name in names:
        path = Path(root) / name
        try:
            if not path.is_file():
                continue
            if name.name.startswith("settings"):  # a Claude Code settings file counts only with hooks in it
                data = json.loads(path.read_text(encoding="utf-8"))
                if not isinstance(data, dict) or not data.get("hooks"):
                    continue
        except (OSError, ValueError):
            continue
        out.append(path)
    return out


def _project_hooks(root: Path) -> list[str]:
    paths = project_hook_files(root)
    if not paths:
        return []
    return ["project hooks (run as commands): " + ", ".join(p.relative_to(root).as_posix() for p in paths)]


# What in a workspace runs only once it is trusted: each check returns one line per thing found.
NEEDS: list[Callable[[Path], list[str]]] = [_project_plugins, _project_hooks]


def needs_trust(root: str | os.PathLike[str]) -> list[str]:
    """What in ``root`` waits for trust, one line each; [] when there is nothing to ask about."""
    here = Path(root)
    return [line for check in NEEDS for line in check(here)]
