"""The ``glob`` and ``grep`` tools (see :mod:`dsh_tui.tools.search.grep`); this package re-exports their names."""

from __future__ import annotations

from .grep import *  # noqa: F403
from .grep import SEARCH_TIMEOUT_MS, _Budget, _grep_file  # noqa: F401
