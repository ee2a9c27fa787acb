"""Keys of a focused transcript item: copy it, copy one of its code blocks, expand it, open it whole.

Item views (``item.py``, ``answer.py``, ``thinking.py``) are focusable: Shift+Tab from the composer
focuses the latest item, Up/Down move between items (loading earlier ones at the top), Esc goes back to
the composer. A mouse click does not select an item (typing after a click still goes to the composer). Copies go through ``dsh_tui/ui/clipboard.py`` (OSC 52, or a file when too big).
"""

from __future__ import annotations

from typing import Any

from textual.binding import Binding, BindingType

from dsh_tui.session.search import copy_body, item_text
from dsh_tui.session.transcript import Item

ITEM_BINDINGS: list[BindingType] = [
    Binding("c,y", "copy_item", "Copy", id="item.copy"),
    Binding("b", "copy_block", "Copy code block", id="item.block"),
    *[Binding(str(n), f"copy_block({n})", f"Copy code block {n}", show=False) for n in range(1, 10)],
    Binding("enter", "toggle_item", "Expand", id="item.toggle"),
    Binding("v,o", "view_item", "View whole", id="item.view"),
    Binding("up,k", "move_item(-1)", "Previous item", show=False, id="item.up"),
    Binding("down,j", "move_item(1)", "Next item", show=False, id="item.down"),
    Binding("escape", "leave_items", "Back to composer", show=False, id="item.leave"),
]

TOGGLES = ("tool", "thinking", "context", "compaction")


def search_mark(item: Item, state: Any) -> tuple[str, int] | None:
    """(query, current occurrence or -1) when the transcript search's query occurs in ``item``."""
    query = state.search
    if not query:
        return None
    index = state.search_index
    if query not in (index.lowered(item) if index is not None else item_text(item).lower()):
        return None
    return query, (state.search_nth if item.key == state.search_key else -1)


def code_blocks(text: str) -> list[tuple[str, str]]:
    """(language, code) of every fenced or indented code block of a Markdown text, in order."""
    if "```" not in text and "~~~" not in text and "    " not in text:
        return []
    from dsh_tui.ui.widgets.mdrender import _markdown_parser

    out = []
    for token in _markdown_parser().parse(text):
        if token.type in ("fence", "code_block"):
            out.append(((token.info or "").split()[0] if token.info else "", token.content))
    return out


class Selectable:
    """Actions shared by the focusable item views (mixed into Widget subclasses; ``ITEM_BINDINGS``)."""

    item: Item
    state: Any
    _block = -1  # the code block the last "b" copied

    def _say(self, text: str, severity: str = "information") -> None:
        self.app.notify(text, severity=severity, timeout=5)  # type: ignore[attr-defined]

    def action_copy_item(self) -> None:
        from dsh_tui.ui.clipboard import copy_text

        text, name = copy_body(self.item)
        if not text:
            self._say(f"Nothing to copy: the {name} is empty", "warning")
            return
        self._say(copy_text(self.app, text, name=name))  # type: ignore[attr-defined]

    def action_copy_block(self, number: int = 0) -> None:
        """Copy code block ``number`` (1-based); 0: the next one after the last copied (cycling)."""
        from dsh_tui.ui.clipboard import copy_text

        text, _name = copy_body(self.item)
        blocks = code_blocks(text) if self.item.kind in ("assistant", "user") else []
        if not blocks:
            self._say("No code block in this item (c copies the whole item)", "warning")
            return
        if number:
            if number > len(blocks):
                self._say(f"This item has {len(blocks)} code block{'s' if len(blocks) > 1 else ''}", "warning")
                return
            index = number - 1
        else:
            index = (self._block + 1) % len(blocks)
        self._block = index
        lang, code = blocks[index]
        name = f"code block {index + 1} of {len(blocks)}" + (f" ({lang})" if lang else "")
        self._say(copy_text(self.app, code, name=name))  # type: ignore[attr-defined]

    def action_toggle_item(self) -> None:
        """Expand or collapse this card (or reasoning row) alone; Enter on any other item opens it whole."""
        if self.item.kind not in TOGGLES:
            self.action_view_item()
            return
        toggled = self.state.toggled
        key = self.item.key
        toggled.symmetric_difference_update({key})
        self.refresh_item()  # type: ignore[attr-defined]

    def action_view_item(self) -> None:
        from dsh_tui.ui.screens.output import OutputScreen

        self.app.push_screen(OutputScreen(self.item))  # type: ignore[attr-defined]

    def action_move_item(self, direction: int) -> None:
        parent = self.parent  # type: ignore[attr-defined]
        siblings = [w for w in parent.children if w.can_focus and w.display]
        try:
            at = siblings.index(self)
        except ValueError:
            return
        target = at + direction
        if target < 0 and hasattr(parent, "load_earlier") and parent.load_earlier(keep_following=False):
            self.call_after_refresh(self.action_move_item, -1)  # type: ignore[attr-defined]  # once mounted
            return
        if 0 <= target < len(siblings):
            # at once (Widget.focus defers it): the next key of a burst (a held Up) goes to the new item
            self.screen.set_focus(siblings[target])  # type: ignore[attr-defined]
        elif target >= len(siblings):
            self.action_leave_items()

    def on_mouse_up(self, _event: Any) -> None:
        """A click leaves the focus on the transcript, as before items were focusable: text typed next still
        goes to the composer (ChatScreen.on_key) instead of running an item's keys. Items are selected
        with the keyboard."""
        parent = self.parent  # type: ignore[attr-defined]
        if self.has_focus and parent is not None and parent.can_focus:  # type: ignore[attr-defined]
            parent.focus()

    def action_leave_items(self) -> None:
        screen = self.screen  # type: ignore[attr-defined]
        composer = getattr(screen, "composer", None)
        if composer is not None and composer.display:
            composer.focus()
        else:
            screen.set_focus(None)
