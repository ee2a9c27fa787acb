"""The history search's line above the composer: the query and where the search is
(``dsh_tui/ui/history.py``). It never takes the focus: the composer keeps it and hands the search its keys."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class HistorySearchBar(Static, can_focus=False):
    DEFAULT_CSS = """
    HistorySearchBar { height: 1; padding: 0 1; background: $panel; display: none; }
    """

    def show(self, query: str, info: str, *, failed: bool = False) -> None:
        line = Text("history search: ", style="bold")
        line.append(query, style="bold red" if failed else "bold")
        line.append("▏")
        line.append(f"   {info}", style="dim")
        self.update(line)
        self.display = True

    def hide(self) -> None:
        self.display = False
