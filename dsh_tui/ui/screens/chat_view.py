"""The chat's transcript view controls: paging and jumping (PageUp/PageDown wherever the focus is, a search hit,
Ctrl+End, Ctrl+Home), the "back to bottom" hint, Ctrl+F's search bar, and how items show (Ctrl+O cycles tool
cards, Ctrl+R shows reasoning). The transcript widget itself is ``dsh_tui/ui/widgets/transcript.py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh_tui.ui.widgets.item import ViewState

if TYPE_CHECKING:
    from dsh_tui.ui.screens.chat import ChatScreen

BOTTOM_HINT = "↓ back to bottom (Ctrl+End)"


class TranscriptNav:
    """Where the transcript is and how it shows, for one chat screen (see the module docstring)."""

    def __init__(self, chat: ChatScreen) -> None:
        self.chat = chat

    def page(self, direction: int) -> None:
        """PageUp/PageDown on the transcript, wherever the focus is; the last page down follows again.

        Pages count from where the previous key put the view (``scroll_target_y``): a scroll lands on the
        next refresh, and keys pressed quickly would otherwise all count from the same place."""
        transcript = self.chat.transcript
        page = transcript.scrollable_content_region.height
        at = transcript.scroll_target_y
        if direction < 0:
            transcript.scroll_to(y=max(0, at - page), animate=False, immediate=True)
            return
        # the last page follows the stream again; two rows of slack so that a layout change since the page
        # up (a row mounted or removed above the transcript) does not leave the view a row short of the end
        if transcript.max_scroll_y - at <= page + 2:
            transcript.back_to_bottom()
        else:
            transcript.scroll_to(y=at + page, animate=False, immediate=True)

    def scroll_to_seq(self, seq: int) -> bool:
        """Show the item built from event ``seq`` (or the last item before it), e.g. a search hit.

        Called before the session is attached, the jump happens right after it attaches."""
        chat = self.chat
        fold = chat.fold
        if not chat.attached or (chat.loading_head and (not fold.items or seq < fold.items[0].seq)):
            chat.pump.pending_seq = seq  # jump once the session (or its older part) is folded
            return True
        index = -1
        for i, item in enumerate(fold.items):
            if item.seq > seq:
                break
            index = i
        if index < 0:
            return False
        transcript = chat.transcript
        view = transcript.views.get(fold.items[index].key)
        if view is None:
            view = transcript.show_around(index)
        if view is None:
            return False
        transcript.anchor(False)

        def scroll() -> None:
            # the re-windowed views are laid out one refresh after they mount
            transcript.call_after_refresh(lambda: transcript.scroll_to_widget(view, animate=False, top=True))

        chat.call_after_refresh(scroll)
        return True

    def find(self) -> None:
        """Ctrl+F: the search bar over the whole session (widgets/searchbar.py, widgets/transcript.py)."""
        chat = self.chat
        if chat.search_bar.is_attached:
            chat.search_bar.open()
            return
        chat.ensure_mounted(chat.search_bar)
        chat.call_after_refresh(chat.search_bar.open)

    def search_closed(self) -> None:
        chat = self.chat
        if chat.composer.display:
            chat.set_focus(chat.composer)
        elif chat.built("approval") is not None and chat.approvals.shown():  # back to the approval's buttons
            chat.set_focus(next(iter(chat.approval.query("Button")), None))

    def update_bottom_hint(self) -> None:
        """"Back to bottom" on the composer's top border while the transcript does not follow (a line of
        its own would take a row from the transcript each time it comes and goes, moving the text)."""
        transcript, composer = self.chat.transcript, self.chat.composer
        show = transcript.detached or (not transcript.following and not transcript.at_bottom())
        title = BOTTOM_HINT if show else ""
        if composer.border_title != title:
            composer.border_title = title

    def cycle_cards(self) -> None:
        chat = self.chat
        modes = ViewState.CARD_MODES
        chat.state.card_mode = modes[(modes.index(chat.state.card_mode) + 1) % len(modes)]
        chat.state.toggled.clear()  # cards expanded or collapsed one by one (Enter) follow the new mode
        chat.transcript.refresh_all()
        mode = chat.state.card_mode
        chat.status.set_mode("cards", "" if mode == modes[0] else f"cards {mode}")

    def toggle_reasoning(self) -> None:
        chat = self.chat
        chat.state.reasoning = not chat.state.reasoning
        chat.transcript.refresh_all()
        chat.status.set_mode("reasoning", "thinking shown" if chat.state.reasoning else "")
