"""JSONL session persistence (see :mod:`dsh_tui.store.jsonl.store`); this package re-exports its names."""

from __future__ import annotations

from dsh_tui.store import zstdframes  # noqa: F401

from .store import *  # noqa: F403
from .store import FREEZE_AFTER, RAW_SLICE, ROW_TAGS, _expand_row, bulk_load, scan_file  # noqa: F401
