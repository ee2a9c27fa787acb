"""Packed chunk rows (see :mod:`dsh_tui.session.rows.codec`); this package re-exports their names."""

from __future__ import annotations

from .codec import *  # noqa: F403
from .codec import _build_row, _continues  # noqa: F401
