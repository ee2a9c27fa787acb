"""Small modal dialogs: a list of choices, a yes/cancel question, one line of text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

if TYPE_CHECKING:
    from rich.text import Text


class ChoiceModal(ModalScreen[Any]):
    """A titled list of choices; dismisses with the chosen value (None on Esc)."""

    DEFAULT_CSS = """
    ChoiceModal { align: center middle; }
    ChoiceModal > Vertical { width: 80; max-width: 90%; height: auto; max-height: 80%;
        border: thick $primary; background: $panel; padding: 0 1; }
    ChoiceModal #title { text-style: bold; padding: 0 0 1 0; }
    ChoiceModal OptionList { height: auto; max-height: 20; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="modal.cancel")]

    def __init__(self, title: str, choices: Sequence[tuple[str | Text, Any]]) -> None:
        super().__init__()
        self.title_text = title
        self.choices = choices

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.title_text, id="title")
            yield OptionList(*[Option(label, id=str(i)) for i, (label, _) in enumerate(self.choices)], id="choices")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.choices[int(event.option.id or 0)][1])

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmModal(ChoiceModal):
    def __init__(self, question: str, yes: str = "Yes") -> None:
        super().__init__(question, [(yes, True), ("Cancel", False)])


class TextModal(ModalScreen[str | None]):
    """One line of text (rename)."""

    DEFAULT_CSS = """
    TextModal { align: center middle; }
    TextModal > Vertical { width: 80; max-width: 90%; height: auto; border: thick $primary;
        background: $panel; padding: 0 1; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="modal.cancel")]

    def __init__(self, title: str, value: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.title_text)
            yield Input(self.value, id="text")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def _submit(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
