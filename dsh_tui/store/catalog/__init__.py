"""The session catalog (see :mod:`dsh_tui.store.catalog.index`); this package re-exports its public names."""

from __future__ import annotations

from .index import *  # noqa: F403
from .index import _iter_raw, _iter_zstd, _store_for  # noqa: F401
