"""The composer's completion list: slash commands (``/`` at column 0) and ``@`` paths of the workspace.

It never takes the focus: the composer keeps it and hands Up, Down, Tab, Enter and Esc over while the list
is shown (``Composer.on_completion_key``).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option


@dataclass(frozen=True)
class Candidate:
    label: str  # what the list shows first ("/compact", "src/app.py")
    help: str  # shown dimmed after it
    insert: str  # the text that replaces the token
    row: int
    start: int  # the token's columns on ``row``
    end: int
    reopen: bool = False  # keep completing after it is inserted (a directory)


class CompletionList(OptionList, can_focus=False):
    DEFAULT_CSS = """
    CompletionList { height: auto; max-height: 10; border: none; padding: 0 1; background: $panel;
                     display: none; }
    CompletionList > .option-list--option-highlighted { background: $accent 40%; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.candidates: list[Candidate] = []
        self.kind = ""  # "command" | "path"

    def show(self, kind: str, candidates: list[Candidate]) -> None:
        self.kind = kind
        self.candidates = candidates
        self.clear_options()
        width = max((len(c.label) for c in candidates), default=0)
        for c in candidates:
            label = Text(c.label.ljust(width), style="bold")
            if c.help:
                label.append("  " + c.help, style="dim")
            self.add_option(Option(label))
        self.highlighted = 0 if candidates else None
        self.display = bool(candidates)

    def hide(self) -> None:
        if self.display:
            self.display = False
        self.candidates = []
        self.kind = ""

    @property
    def shown(self) -> bool:
        return bool(self.display and self.candidates)

    def move(self, delta: int) -> None:
        if not self.candidates:
            return
        current = self.highlighted if self.highlighted is not None else -delta
        self.highlighted = (current + delta) % len(self.candidates)

    @property
    def current(self) -> Candidate | None:
        if not self.candidates or self.highlighted is None:
            return None
        return self.candidates[self.highlighted]
