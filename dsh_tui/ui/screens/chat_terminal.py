"""The chat's terminal card: shown while the agent has a live terminal (the terminals plugin), its screen
redrawn 4 times a second; F6 focuses it, Enter there attaches to the terminal
(``dsh_tui/ui/widgets/terminal.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dsh_tui.ui.screens.chat import ChatScreen


class TerminalSlot:
    """The terminal card's place above the composer (built when the agent first has a terminal)."""

    def __init__(self, chat: ChatScreen) -> None:
        self.chat = chat
        self.card: Any = None

    def poll(self) -> None:
        chat = self.chat
        harness = chat.bridge.harness
        service = harness.terminals() if harness is not None else None
        card = self.card
        if card is None:
            if service is None or not service.sessions:
                return
            from dsh_tui.ui.widgets.terminal import TerminalCard

            self.card = card = TerminalCard(service, id="terminal-card")
        card.service = service
        shown = card.poll()
        if shown:
            chat.ensure_mounted(card)
        if card.is_attached and card.display != shown:
            card.display = shown
            if not shown:
                chat.keys.restore_focus()

    def focus(self) -> None:
        """F6: the terminal card (Enter attaches to the terminal)."""
        self.poll()
        card = self.card
        if card is not None and card.is_attached and card.display:
            card.focus()
