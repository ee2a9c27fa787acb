"""The SQLite session backend (see :mod:`dsh_tui.store.sqlite.store`); this package re-exports its names."""

from __future__ import annotations

from .store import *  # noqa: F403
