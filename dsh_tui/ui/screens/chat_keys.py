"""The chat's key routing and focus.

The composer owns typing. A key that reaches the screen from a hidden widget (or from none), or a character
typed where nothing takes it (the transcript, the queue: all but its own keys), goes to the composer; a typed
burst goes whole, in order, then the focus follows it. The approval and question panels take keys only while
they have the focus (Tab from a composer being typed in moves there); a key they got within their grace
period comes back to the composer (``yield_to_composer``). A paste while a panel holds the focus goes into
the composer's draft. When what had the focus is gone (the queue emptied, a panel closed) the composer gets it back. The bindings themselves are
``ChatScreen.BINDINGS`` (ids in ``dsh_tui/config/binding_ids.py``); ``docs/ui.md`` maps them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import events

from dsh_tui.ui.textual_compat import key_is_bound

if TYPE_CHECKING:
    from textual.widget import Widget

    from dsh_tui.ui.screens.chat import ChatScreen


class KeyRouter:
    """Key routing and focus for one chat screen (see the module docstring)."""

    def __init__(self, chat: ChatScreen) -> None:
        self.chat = chat
        self.redirecting = False  # keys typed elsewhere are going to the composer (on_key)

    def shown(self, widget: Widget | None) -> bool:
        """``widget`` is mounted on this screen and neither it nor a container of it is hidden."""
        node: Any = widget
        chat = self.chat
        while node is not None and node is not chat:
            if not node.is_attached or not node.display:
                return False
            node = node.parent
        return node is chat

    def restore_focus(self) -> None:
        """Give the focus back to the composer when what had it is gone (queue emptied, panel closed)."""
        chat = self.chat
        if not self.shown(chat.focused) and chat.composer.display:
            chat.set_focus(chat.composer)

    def on_key(self, event: events.Key) -> None:
        """See the module docstring. (The bindings run after this, at the app: a key the focused widget
        binds is left to it.) The terminal delivers a typed burst at once, all of it to the widget focused
        then: the whole burst is inserted from here, in order, and the focus moves to the composer after it."""
        chat = self.chat
        composer = chat.composer
        if event.key == "tab" and chat.focused is composer and chat.approvals.waiting():
            event.stop()
            event.prevent_default()
            chat.approval.focus_buttons()  # deliberate: the panel's keys act at once
            return
        if event.key == "tab" and chat.focused is composer and chat.questions.waiting():
            event.stop()
            event.prevent_default()
            chat.question.focus_panel()
            return
        if getattr(event, "via_composer", False) or not composer.display:
            return
        focused = chat.focused
        if focused is not None and chat.approvals.waiting() and focused in chat.approval.query("*") \
                and key_is_bound(chat.approval, event.key):
            return  # the panel's own key (a, s, r, e), the focus moved there deliberately
        printable = event.is_printable and bool(event.character)
        if not self.redirecting:
            if focused is composer or (self.shown(focused) and not (
                    printable and not key_is_bound(focused, event.key))):
                return
            self.redirecting = True
            chat.call_after_refresh(self._end_redirect)
        if not printable:
            return
        event.stop()
        event.prevent_default()
        result = composer.replace(event.character or "", *composer.selection, maintain_selection_offset=False)
        composer.move_cursor(result.end_location)

    def _end_redirect(self) -> None:
        self.redirecting = False
        chat = self.chat
        if chat.composer.display:
            chat.set_focus(chat.composer)

    def yield_to_composer(self, key: str, character: str | None) -> None:
        """A key a panel (approval, question) got within its grace period: the composer comes back with the
        focus and the key."""
        chat = self.chat
        composer = chat.composer
        composer.display = True
        chat.set_focus(composer)
        if character:
            result = composer.replace(character, *composer.selection, maintain_selection_offset=False)
            composer.move_cursor(result.end_location)
        elif key in ("enter", "backspace", "ctrl+j"):
            composer.post_message(events.Key(key, None))

    def on_paste(self, event: events.Paste) -> None:
        """A paste while the approval panel holds the focus (the composer is hidden then) goes into the
        composer's draft, shown again once the approval is decided: a paste is never dropped."""
        chat = self.chat
        if chat.composer.display or not event.text or getattr(event, "via_composer", False):
            return  # the composer took it itself (the reason line, an Input, stops the paste it takes)
        event.stop()
        if chat.questions.waiting() and chat.question.has_focus_within:
            chat.question.paste(event.text)  # a question's typed answer
            return
        chat.composer.insert(event.text)
        chat.notify("The pasted text is in the composer: it shows again after the approval.",
                    title="Pasted", timeout=4, markup=False)
