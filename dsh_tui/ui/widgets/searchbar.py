"""The incremental search bar (Ctrl+F): a one-line input, "3 of 17", next/previous, Esc closes.

The bar searches a *target*: any object with ``search_for(query) -> (number, count)``,
``search_step(direction) -> (number, count)`` and ``search_clear()`` (the chat's ``TranscriptView``,
the full-output viewer's ``OutputView``). The target may call the bar's ``show_counts`` when live changes
move the counts. Matches are numbered oldest first; Enter / F3 / Up go to the previous (older) match,
Shift+Enter / Shift+F3 / Down to the next (newer), both wrapping around.
"""

from __future__ import annotations

from typing import Any

from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Static

from dsh_tui.ui.widgets.input import LightInput


class SearchInput(LightInput):
    """The bar's input (its own bindings come before the screen's)."""

    BINDINGS = [
        Binding("enter,f3,up", "step(-1)", "Previous match", show=False, id="search.previous"),
        Binding("shift+enter,shift+f3,down", "step(1)", "Next match", show=False, id="search.next"),
        Binding("escape", "close", "Close search", show=False, id="search.close"),
    ]

    def action_step(self, direction: int) -> None:
        bar = self.parent
        if isinstance(bar, SearchBar):
            bar.step(direction)

    def action_close(self) -> None:
        bar = self.parent
        if isinstance(bar, SearchBar):
            bar.close()


class SearchBar(Horizontal):
    """See the module docstring."""

    DEFAULT_CSS = """
    SearchBar { height: 1; display: none; background: $panel; }
    SearchBar.-open { display: block; }
    SearchBar > #search-label { width: auto; padding: 0 1; color: $accent; text-style: bold; }
    SearchBar > SearchInput, SearchBar > SearchInput:focus { width: 1fr; height: 1; border: none; padding: 0;
                                                             background: $panel; }
    SearchBar > #search-count { width: auto; min-width: 12; padding: 0 1; color: $text-muted; }
    SearchBar > #search-count.-none { color: $error; }
    SearchBar > #search-keys { width: auto; padding: 0 1; color: $text-muted; }
    """

    class Closed(Message):
        """The bar closed (Esc): the screen gives the focus back."""

        def __init__(self, bar: SearchBar) -> None:
            super().__init__()
            self.bar = bar

    def __init__(self, target: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target = target
        self.input = SearchInput(placeholder="search", id="search-input")
        self.counter = Static("", id="search-count", markup=False)
        self.counts = (0, 0)

    def compose(self):  # noqa: ANN201 - textual compose
        yield Static("Find", id="search-label")
        yield self.input
        yield self.counter
        yield Static("Enter older · Shift+Enter newer · Esc close", id="search-keys")

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def open(self) -> None:
        """Show the bar and focus it; an open bar's text is selected for typing over (Ctrl+F again steps)."""
        if self.is_open:
            if self.input.has_focus:
                self.step(-1)
            else:
                self.input.focus()
            return
        self.add_class("-open")
        target = self.target
        if hasattr(target, "search_listener"):
            target.search_listener = self.show_counts
        self.input.focus()
        if self.input.value:
            self.input.select_all()
            self.show_counts(*target.search_for(self.input.value))

    def close(self) -> None:
        if not self.is_open:
            return
        self.remove_class("-open")
        if hasattr(self.target, "search_listener"):
            self.target.search_listener = None
        self.target.search_clear()
        self.post_message(self.Closed(self))

    def step(self, direction: int) -> None:
        if self.input.value:
            self.show_counts(*self.target.search_step(direction))

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self.is_open:
            self.show_counts(*self.target.search_for(event.value))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()  # Enter is bound to "older" above; a submit must not reach the screen

    def show_counts(self, number: int, count: int) -> None:
        self.counts = (number, count)
        if not self.input.value:
            text = ""
        elif not count:
            text = "no matches"
        else:
            text = f"{number} of {count:,}"
        self.counter.set_class(bool(self.input.value) and not count, "-none")
        self.counter.update(text)
