"""The full-output viewer: one transcript item's whole text (a tool's result unclipped), scrollable and
searchable with the chat's search bar; Esc goes back to the chat where it was.

The text is drawn with the Line API (``OutputView``): it is wrapped once per width and only the visible
rows are drawn, so a megabyte of output opens and scrolls at once.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from rich.cells import cell_len, chop_cells
from rich.segment import Segment
from textual.app import ComposeResult
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static

from dsh_tui.session.search import copy_body, find_all
from dsh_tui.session.transcript import Item, ToolItem
from dsh_tui.ui.widgets.highlight import CURRENT, MATCH, highlight_segments
from dsh_tui.ui.widgets.searchbar import SearchBar
from dsh_tui.ui.widgets.toolcard import describe_args, tool_title


def viewer_text(item: Item) -> tuple[str, str]:
    """(title, whole text) the viewer shows for ``item``."""
    if isinstance(item, ToolItem):
        call = describe_args(item.arguments) if item.arguments else ""
        result = item.result or ("(no output yet)" if item.state in ("requested", "running") else "(no output)")
        return f"{tool_title(item)} · {item.state}", f"{call}\n\n{result}" if call else result
    text, name = copy_body(item)
    return name[:1].upper() + name[1:], text


class OutputView(ScrollView, can_focus=True):
    """Wrapped lines of a text, drawn lazily; the target of a ``SearchBar``."""

    DEFAULT_CSS = """
    OutputView { height: 1fr; background: $surface; padding: 0 1; }
    """

    BINDINGS = [
        Binding("up,k", "scroll_up", "Up", show=False),
        Binding("down,j", "scroll_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown,space", "page_down", "Page down", show=False),
        Binding("home,g", "scroll_home", "Top", show=False),
        Binding("end,G", "scroll_end", "Bottom", show=False),
    ]

    def __init__(self, text: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lines = text.split("\n")
        self._rows: list[tuple[int, int, str]] = []  # (line, column of its first character, text)
        self._keys: list[tuple[int, int]] = []  # (line, column) of each row, for a bisect
        self._width = -1
        self.search_query = ""
        self.matches: list[tuple[int, int]] = []  # (line, column), in order
        self.current = -1
        self.search_listener: Any = None

    # -- wrapping --------------------------------------------------------------------------------
    def _wrap(self, width: int) -> None:
        if width == self._width:
            return
        self._width = width
        rows: list[tuple[int, int, str]] = []
        for n, line in enumerate(self.lines):
            line = line.expandtabs(4)
            if width <= 0 or cell_len(line) <= width:
                rows.append((n, 0, line))
                continue
            column = 0
            for piece in chop_cells(line, width):
                rows.append((n, column, piece))
                column += len(piece)
        self._rows = rows
        self._keys = [(n, c) for n, c, _t in rows]
        self.virtual_size = Size(width, len(rows))

    def on_resize(self) -> None:
        self._wrap(self.scrollable_content_region.width)

    def on_mount(self) -> None:
        self._wrap(self.scrollable_content_region.width)

    @property
    def row_count(self) -> int:
        return len(self._rows)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        self._wrap(width)
        row = y + self.scroll_offset.y
        style = self.rich_style
        if row >= len(self._rows):
            return Strip.blank(width, style)
        line, column, text = self._rows[row]
        segments = [Segment(text, style)]
        if self.search_query:
            current = -1
            if 0 <= self.current < len(self.matches):
                m_line, m_col = self.matches[self.current]
                if m_line == line and column <= m_col < column + len(text):
                    current = len(find_all(text[:m_col - column], self.search_query))
            segments = highlight_segments(segments, self.search_query, MATCH, current, CURRENT)
        return Strip(segments).adjust_cell_length(width, style)

    def _row_of(self, line: int, col: int) -> int:
        return max(0, bisect_right(self._keys, (line, col)) - 1)

    # -- the search bar's target -------------------------------------------------------------------
    def search_for(self, query: str) -> tuple[int, int]:
        query = query.lower()
        near = self.matches[self.current] if 0 <= self.current < len(self.matches) else None
        self.search_query = query
        self.matches = [(n, col) for n, line in enumerate(self.lines) for col in find_all(line, query)] \
            if query else []
        if not self.matches:
            self.current = -1
        elif near is not None:  # refining: stay at the match at or after the old one
            self.current = next((i for i, m in enumerate(self.matches) if m >= near), 0)
        else:  # the first match from the top of the view down
            top = self._rows[self.scroll_offset.y][:2] if self.scroll_offset.y < len(self._rows) else (0, 0)
            self.current = next((i for i, m in enumerate(self.matches) if m >= top), 0)
        return self._show()

    def search_step(self, direction: int) -> tuple[int, int]:
        if self.matches:
            self.current = (self.current + (1 if direction > 0 else -1)) % len(self.matches)
        return self._show()

    def search_clear(self) -> None:
        self.search_query, self.matches, self.current = "", [], -1
        self.refresh()

    def _show(self) -> tuple[int, int]:
        self.refresh()
        if self.current < 0:
            return 0, len(self.matches)
        line, col = self.matches[self.current]
        self._wrap(self.scrollable_content_region.width)
        row = self._row_of(line, col)
        self.scroll_to_region(Region(0, row, 1, 1), animate=False, center=True, immediate=True)
        return self.current + 1, len(self.matches)


class OutputScreen(Screen):
    """See the module docstring."""

    DEFAULT_CSS = """
    OutputScreen { layout: vertical; }
    OutputScreen > #output-title { height: 1; padding: 0 1; background: $panel; text-style: bold; }
    OutputScreen > #output-keys { height: 1; padding: 0 1; color: $text-muted; }
    """

    BINDINGS = [
        Binding("escape,q", "back", "Back to the chat", id="output.back"),
        Binding("ctrl+f,slash", "find", "Find", id="output.find"),
        Binding("c,y", "copy", "Copy", id="output.copy"),
    ]

    HELP = """
## Output viewer

- The whole text of one transcript item (a tool's output unclipped). **Up/Down**, **PageUp/PageDown**,
  **Home/End** scroll; **Ctrl+F** or **/** finds (Enter older, Shift+Enter newer); **c** copies it all;
  **Esc** goes back to the chat.
"""

    def __init__(self, item: Item) -> None:
        super().__init__()
        self.item = item
        self.title_text, self.text = viewer_text(item)

    def compose(self) -> ComposeResult:
        yield Static(self.title_text, id="output-title", markup=False)
        self.view = OutputView(self.text, id="output-view")
        yield self.view
        self.bar = SearchBar(self.view, id="output-search")
        yield self.bar
        lines = self.text.count("\n") + 1
        yield Static(f"{lines:,} lines · Ctrl+F find · c copy · Esc back to the chat", id="output-keys")

    def on_mount(self) -> None:
        self.view.focus()

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_find(self) -> None:
        self.bar.open()

    def action_copy(self) -> None:
        from dsh_tui.ui.clipboard import copy_text

        text, name = copy_body(self.item)
        self.app.notify(copy_text(self.app, text or self.text, name=name), timeout=5)

    def on_search_bar_closed(self, _message: SearchBar.Closed) -> None:
        self.view.focus()

