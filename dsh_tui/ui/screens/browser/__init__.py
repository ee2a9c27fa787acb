"""The session browser: :mod:`.screen` (:class:`BrowserScreen`), :mod:`.footer` (the keys line),
:mod:`.lineage` (forks under their parent). This package re-exports the names other modules import."""

from __future__ import annotations

from dsh_tui.ui.screens.modals import ChoiceModal, ConfirmModal, TextModal

from .footer import KeysFooter
from .screen import BrowserCommands, BrowserScreen

__all__ = ["BrowserScreen", "BrowserCommands", "KeysFooter", "ChoiceModal", "ConfirmModal", "TextModal"]
