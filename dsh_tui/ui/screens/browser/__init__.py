"""The session browser (see :mod:`dsh_tui.ui.screens.browser.screen`); this package re-exports its names."""

from __future__ import annotations

from .screen import BrowserCommands, BrowserScreen, ChoiceModal, ConfirmModal, KeysFooter, TextModal  # noqa: F401
