"""The browser's keys line (:class:`KeysFooter`) and which keys it shows where (:func:`browser_keys`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input

if TYPE_CHECKING:
    from .screen import BrowserScreen


class KeysFooter(Widget):
    """The screen's keys on one line, drawn like Textual's ``Footer`` (key, description, the command
    palette's key docked right behind a thin rule) by one widget.

    Textual's footer is a container of one widget per key: styling, laying out and rendering those was
    ~28 ms of the browser's first frame here (~85 M instructions), and it recomposed them whenever the
    bindings were refreshed. This one reads the screen's active bindings when it renders, so its keys are
    on the first frame and a change of keys is a repaint. A click on a key presses it (a disabled one
    rings the bell); the key under the mouse is highlighted. Binding groups are drawn key by key."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"keys-footer--key", "keys-footer--description", "keys-footer--hover",
                         "keys-footer--rule"}
    DEFAULT_CSS = """
    KeysFooter {
        dock: bottom; height: 1; color: $footer-foreground; background: $footer-background;
        & > .keys-footer--key { color: $footer-key-foreground; background: $footer-key-background;
            text-style: bold; }
        & > .keys-footer--description { color: $footer-description-foreground;
            background: $footer-description-background; }
        & > .keys-footer--hover { color: $footer-key-foreground; background: $block-hover-background; }
        & > .keys-footer--rule { color: $foreground 20%; }
    }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._shown: tuple = ()
        self._spans: list[tuple[int, int, Binding, bool]] = []  # (start, end, binding, enabled) per key
        self._hover: int | None = None

    def keys(self) -> tuple[list[tuple[Binding, bool, str, int]], tuple[Binding, bool, str] | None]:
        """(the shown keys in order, each (binding, enabled, description, priority); the command
        palette's binding or None).

        A screen with ``footer_items()`` names its keys there, as (action, description, priority) for
        where the focus is now; each is shown with the key it is bound to (a remapped key shows as
        remapped) and only when an active binding runs it. Otherwise the bindings marked ``show``."""
        active = self.screen.active_bindings
        shown: list[tuple[Binding, bool, str, int]] = []
        items = getattr(self.screen, "footer_items", None)
        if items is not None:
            by_action: dict[str, tuple[Binding, bool]] = {}
            for _node, binding, enabled, _tooltip in active.values():
                by_action.setdefault(binding.action.rpartition(".")[2], (binding, enabled))
            for action, description, priority in items():
                found = by_action.get(action)
                if found is not None:
                    shown.append((found[0], found[1], description, priority))
        else:
            seen: set[str] = set()
            for _node, binding, enabled, _tooltip in active.values():
                if binding.show and binding.action not in seen:
                    seen.add(binding.action)
                    shown.append((binding, enabled, binding.description, 0))
        palette = None
        if self.app.ENABLE_COMMAND_PALETTE:
            bound = active.get(self.app.COMMAND_PALETTE_BINDING)
            if bound is not None:
                palette = (bound.binding, bound.enabled, bound.tooltip)
        return shown, palette

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen) -> None:
        if self.is_attached and screen is self.screen and self.keys() != self._shown:
            self.refresh()

    def render(self) -> Text:
        from rich.style import Style

        shown, palette = self._shown = self.keys()
        key_style = self.get_component_rich_style("keys-footer--key")
        description_style = self.get_component_rich_style("keys-footer--description")
        hover = Style(bgcolor=self.get_component_rich_style("keys-footer--hover").bgcolor)
        base = self.rich_style
        spans: list[tuple[int, int, Binding, bool]] = []

        def item(text: Text, binding: Binding, enabled: bool, offset: int = 0, palette: bool = False,
                 description: str = "") -> None:
            start = text.cell_len
            display = self.app.get_key_display(binding)
            if palette:  # as Textual draws it: "^p palette" and one cell of padding
                key = Text.assemble((display, key_style), (f" {binding.description}", description_style), " ")
            else:
                key = Text.assemble((f" {display} ", key_style), (f"{description} ", description_style))
            if not enabled:
                key.stylize("dim")
            if self._hover == len(spans):
                key.stylize(hover)
            key.stylize_before(base)
            text.append_text(key)
            spans.append((offset + start, offset + text.cell_len, binding, enabled))

        room = self.size.width
        if palette is not None:
            binding, enabled, _tooltip = palette
            room = max(0, room - (cell_len(f"{self.app.get_key_display(binding)} {binding.description} ") + 1))
        # Too many keys for the width: leave out the least important (the highest priority number; of
        # equals, the last) until the rest fit whole.
        widths = [cell_len(f" {self.app.get_key_display(b)} {d} ") for b, _e, d, _p in shown]
        kept = list(range(len(shown)))
        while kept and sum(widths[i] for i in kept) > room:
            kept.remove(max(kept, key=lambda i: (shown[i][3], i)))
        shown = [shown[i] for i in kept]
        left = Text(no_wrap=True, overflow="crop")
        for binding, enabled, description, _priority in shown:
            item(left, binding, enabled, description=description)
        right = Text(no_wrap=True, overflow="crop")
        if palette is not None:
            binding, enabled, _tooltip = palette
            right.append("▏", self.get_component_rich_style("keys-footer--rule"))
            item(right, binding, enabled, room, palette=True)
        left.truncate(room, overflow="crop", pad=True)
        # the left keys are cut at the palette's rule; the palette's key keeps its place at the right
        self._spans = [span if i >= len(shown) else (span[0], min(span[1], room), span[2], span[3])
                       for i, span in enumerate(spans)]
        return Text.assemble(left, right, no_wrap=True, overflow="crop")

    def _span_at(self, x: int) -> int | None:
        for i, (start, end, _binding, _enabled) in enumerate(self._spans):
            if start <= x < end:
                return i
        return None

    def on_mouse_move(self, event: events.MouseMove) -> None:
        hover = self._span_at(event.x)
        if hover != self._hover:
            self._hover = hover
            self.refresh()

    def on_leave(self, _event: events.Leave) -> None:
        if self._hover is not None:
            self._hover = None
            self.refresh()

    def on_mouse_down(self, event: events.MouseDown) -> None:
        i = self._span_at(event.x)
        if i is None:
            return
        _start, _end, binding, enabled = self._spans[i]
        if enabled:
            self.app.simulate_key(binding.key)
        else:
            self.app.bell()


def browser_keys(screen: BrowserScreen) -> list[tuple[str, str, int]]:
    """The keys the footer shows for where the focus is: (action, description, priority: 0 is
    kept longest when the width is short). Only keys that act here."""
    in_list = screen.focused is screen.list
    text = screen.query_one("#filter", Input).value
    back = screen.chat_below() is not None
    if screen.trash_mode:
        restore, leave = ("Unarchive", "Leave archive") if screen.actions.in_archive() else ("Restore", "Leave trash")
        items = [("select", restore, 1), ("escape", leave, 1)] if in_list else [
            ("focus_list", "List", 1), ("escape", leave, 1)]
        if in_list:
            items += [("timeline", "Timeline", 3), ("export", "Export", 4)]
        return items + [("help", "Help", 0), ("quit", "Quit", 7)]
    if text:
        escape = ("escape", "Clear", 2)
    elif screen.search_mode:
        escape = ("escape", "Filter", 3)
    elif back:
        escape = ("escape", "Back", 1)
    else:
        escape = None
    scope = "This workspace" if screen.scope_all else "All workspaces"
    if in_list:
        current = screen.list.current
        items = [("select", "Open", 1), ("resume", "Resume", 1), ("fork", "Fork", 2), ("new_session", "New", 2),
                 ("rename", "Rename", 3), ("delete", "Delete", 3), ("export", "Export", 4),
                 ("timeline", "Timeline", 4), ("focus_filter", "Filter", 3)]
        if current is not None and current.row.id and any(
                r.is_subagent and r.parent == current.row.id for r in screen.rows):
            items.append(("children", "Subagents", 5))
        items += [("toggle_scope", scope, 6), ("trash", "Trash", 6)]
    else:
        items = [("focus_list", "List", 1), ("toggle_scope", scope, 3),
                 ("toggle_search", "Filter" if screen.search_mode else "Search content", 2),
                 ("new_session", "New session", 2), ("trash", "Trash", 6)]
    if escape is not None:
        items.append(escape)
    return items + [("help", "Help", 0), ("quit", "Quit", 7)]
