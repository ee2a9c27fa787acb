"""``LineList``: a virtualised list on Textual's Line API.

It holds only a row count and a formatter; ``render_line`` formats the visible rows on demand, so
populating 200k rows is O(1) and a paint costs the same whatever the row count (a DataTable needs
seconds for as many rows: docs/performance.md). Formatted rows are cached per (row, width) until the data
changes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.events import Click
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from dsh_tui.ui.textual_compat import scroll_update

Spans = list[tuple[str, str]]  # (text, rich style string) pieces of one line


Formatter = Callable[[int, int], Spans]  # (row, width) -> one line


class LineList(ScrollView, can_focus=True):
    """A cursor list of ``count`` one-line rows, each formatted lazily by ``formatter(row, width)``."""

    DEFAULT_CSS = """
    LineList { height: 1fr; background: $surface; overflow-x: hidden; }
    LineList > .linelist--cursor { background: $accent 40%; }
    LineList:focus > .linelist--cursor { background: $accent 70%; text-style: bold; }
    LineList > .linelist--empty { color: $text-muted; text-style: italic; }
    """
    COMPONENT_CLASSES = {"linelist--cursor", "linelist--empty"}

    BINDINGS = [
        Binding("up", "cursor_up", "Up", show=False, id="list.up"),
        Binding("down", "cursor_down", "Down", show=False, id="list.down"),
        Binding("pageup", "page_up", "Page up", show=False, id="list.pageup"),
        Binding("pagedown", "page_down", "Page down", show=False, id="list.pagedown"),
        Binding("home", "first", "First", show=False, id="list.home"),
        Binding("end", "last", "Last", show=False, id="list.end"),
        Binding("enter", "select", "Open", show=False, id="list.select"),
    ]

    cursor: reactive[int] = reactive(0, always_update=True, repaint=False)

    @dataclass
    class Highlighted(Message):
        list: LineList
        row: int

    @dataclass
    class Selected(Message):
        list: LineList
        row: int

    def __init__(self, formatter: Formatter | None = None, count: int = 0, *, empty_text: str = "Nothing here",
                 name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.formatter: Formatter = formatter or (lambda row, width: [(str(row), "")])
        self._styles: dict[tuple[Style, str], Style] = {}
        self.count = count
        self.empty_text = empty_text
        self._cache: dict[int, tuple[int, Strip]] = {}
        self.user_moved = False  # the cursor was moved by a key or a click (or put on a chosen row)
        self.paints = 0  # render_line calls (tests/benches read it)
        self.first_paint_at: float | None = None  # perf_counter() of the first row painted
        self.last_paint_at = 0.0

    # -- data ---------------------------------------------------------------------------------
    def set_rows(self, count: int, formatter: Formatter | None = None, *, keep_cursor: bool = False) -> None:
        """Replace the data: ``count`` rows, optionally a new formatter. O(1)."""
        if formatter is not None:
            self.formatter = formatter
        old = self.count
        self.count = count
        self._cache.clear()
        new_size = Size(self.size.width or 1, count)
        h = self.size.height
        if self.is_mounted and h and (old > h) == (count > h):
            # Same scrollbar need: skip the screen-wide reflow a virtual_size change would trigger
            # (the list's own size never depends on its rows).
            self.set_reactive(ScrollView.virtual_size, new_size)
            scroll_update(self, new_size)
        else:
            self.virtual_size = new_size
        new = min(self.cursor, max(0, count - 1)) if keep_cursor else 0
        self.set_reactive(LineList.cursor, new)
        if not keep_cursor:
            self.scroll_to(y=0, animate=False, immediate=True)
        self.refresh()
        if count:
            self.post_message(self.Highlighted(self, new))

    def invalidate(self) -> None:
        """The formatter's output changed (same rows): repaint."""
        self._cache.clear()
        self.refresh()

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, self.count)
        self._cache.clear()
        self.call_after_refresh(self._scroll_to_cursor)  # a cursor set before the first layout

    # -- painting -----------------------------------------------------------------------------
    _base: Style | None = None  # the widget's style while render_lines runs (one computation per paint)

    def render_lines(self, crop: Region) -> list[Strip]:
        # ``rich_style`` walks the ancestors' styles: once per paint, not once per line
        self._base = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._base = None

    def render_line(self, y: int) -> Strip:
        self.paints += 1
        now = time.perf_counter()
        self.last_paint_at = now
        if self.first_paint_at is None and self.count:
            self.first_paint_at = now
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        width = self.size.width
        base = self._base if self._base is not None else self.rich_style
        if self.count == 0:
            if y == 0:
                style = self.get_component_rich_style("linelist--empty")
                return Strip([Segment(self.empty_text, style)]).crop_extend(0, width, base)
            return Strip.blank(width, base)
        if row >= self.count:
            return Strip.blank(width, base)
        cached = self._cache.get(row)
        if cached is not None and cached[0] == width:
            strip = cached[1]
        else:
            segments = [Segment(text, self._style(base, style)) for text, style in self.formatter(row, width)]
            used = sum(cell_len(seg.text) for seg in segments)
            if used < width:
                segments.append(Segment(" " * (width - used), base))
                strip = Strip(segments, width)  # one Strip per row: each costs a few caches
            elif used == width:
                strip = Strip(segments, width)
            else:
                strip = Strip(segments, used).crop(0, width)
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[row] = (width, strip)
        if scroll_x:
            strip = strip.crop(scroll_x, scroll_x + width)
        if row == self.cursor:
            cursor_style = self.get_component_rich_style("linelist--cursor")
            strip = strip.apply_style(cursor_style)
        return strip

    def _style(self, base: Style, style: str) -> Style:
        key = (base, style)
        cached = self._styles.get(key)
        if cached is None:
            cached = self._styles[key] = base + Style.parse(style) if style else base
        return cached

    # -- cursor -------------------------------------------------------------------------------
    def watch_cursor(self, old: int, new: int) -> None:
        self._refresh_row(old)
        self._refresh_row(new)
        self._scroll_to_cursor()
        if self.count:
            self.post_message(self.Highlighted(self, new))

    def _refresh_row(self, row: int) -> None:
        y = row - self.scroll_offset.y
        if 0 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def _scroll_to_cursor(self) -> None:
        top = self.scroll_offset.y
        h = max(1, self.scrollable_content_region.height)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + h:
            self.scroll_to(y=self.cursor - h + 1, animate=False, immediate=True)

    def move_to(self, row: int) -> None:
        if self.count:
            self.cursor = max(0, min(self.count - 1, row))

    def user_move(self, row: int) -> None:
        self.user_moved = True
        self.move_to(row)

    def action_cursor_up(self) -> None:
        self.user_move(self.cursor - 1)

    def action_cursor_down(self) -> None:
        self.user_move(self.cursor + 1)

    def action_page_up(self) -> None:
        self.user_move(self.cursor - max(1, self.scrollable_content_region.height - 1))

    def action_page_down(self) -> None:
        self.user_move(self.cursor + max(1, self.scrollable_content_region.height - 1))

    def action_first(self) -> None:
        self.user_move(0)

    def action_last(self) -> None:
        self.user_move(self.count - 1)

    def action_select(self) -> None:
        if self.count:
            self.post_message(self.Selected(self, self.cursor))

    def on_click(self, event: Click) -> None:
        row = self.scroll_offset.y + event.y
        if 0 <= row < self.count:
            self.user_move(row)
            if event.chain >= 2:
                self.action_select()
