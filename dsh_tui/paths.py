"""Where dsh-tui finds things on the user's machine (the only module besides config that knows).

The session root is dsh's own: ``$DSH_HOME/sessions`` with ``$DSH_HOME`` defaulting to ``~/.dsh``
(docs/storage.md), so sessions made by the dsh Web UI and by dsh-tui live side by side.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "dsh-tui"


def dsh_home() -> Path:
    """``$DSH_HOME`` if set and non-empty, else ``~/.dsh``."""
    value = os.environ.get("DSH_HOME")
    if value:
        return Path(value).expanduser()
    return Path.home() / ".dsh"


def default_sessions_root() -> Path:
    """The default JSONL session root: ``$DSH_HOME/sessions``."""
    return dsh_home() / "sessions"


def config_dir() -> Path:
    """Per-user settings directory (honours ``XDG_CONFIG_HOME``)."""
    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))


def cache_dir() -> Path:
    """Per-user cache directory (honours ``XDG_CACHE_HOME``); the catalog lives here."""
    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))


def data_dir() -> Path:
    """Per-user data directory (honours ``XDG_DATA_HOME``)."""
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
