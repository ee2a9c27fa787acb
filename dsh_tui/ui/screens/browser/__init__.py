"""The session browser: :mod:`.screen` (:class:`BrowserScreen`), :mod:`.actions` (the row actions, one
``SessionActions``), :mod:`.footer` (the keys line), :mod:`.texts` (the scope and progress lines),
:mod:`.commands` (its palette entries), :mod:`.lineage` (forks under their parent). This package re-exports
the names other modules import."""

from __future__ import annotations

from dsh_tui.ui.screens.modals import ChoiceModal, ConfirmModal, TextModal

from .commands import BrowserCommands
from .footer import KeysFooter
from .screen import BrowserScreen

__all__ = ["BrowserScreen", "BrowserCommands", "KeysFooter", "ChoiceModal", "ConfirmModal", "TextModal"]
