"""Virtualised lists on Textual's Line API: ``LineList`` (generic) and ``SessionList`` (browser rows).

A ``LineList`` holds only a row count and a formatter; ``render_line`` formats the visible rows on
demand, so populating 200k rows is O(1) and a paint costs the same whatever the row count
(design/textual-perf.md §4: a minimal Line-API view paints 200k rows in 12 ms where a DataTable
needs 20 s). Formatted rows are cached per (row, width) until the data changes.
"""

from __future__ import annotations

import datetime as _dt
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.events import Click
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from dsh_tui.session.stats import format_tokens
from dsh_tui.store.catalog import SessionRow

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
            self._scroll_update(new_size)
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


# -------------------------------------------------------------------------------------------------
# The browser's session rows


UNREADABLE_STATE = "unreadable"
OPEN_HERE = "open here"  # the session this app has open (its lock is this process's)
STATE_WIDTH = 11
# the catalog's states, as the state column shows them (each fits STATE_WIDTH)
STATE_LABEL = {"open elsewhere": "elsewhere"}
STATE_STYLE = {
    "completed": "green",
    "interrupted": "yellow",
    "failed": "red",
    "cancelled": "yellow",
    "blocked": "yellow",
    "max tokens": "yellow",
    "open elsewhere": "cyan",
    OPEN_HERE: "bold cyan",
    "unreadable": "red",
    "blank": "dim",
    "in trash": "dim",
    "archived": "dim",
    "indexing…": "dim italic",
}
INDEXING_STATE = "indexing…"  # a session directory listed before its header was read


def ago(ms: int, now_ms: int) -> str:
    """A short relative time ("5m", "3h", "2d") or the date for older activity."""
    if not ms:
        return "-"
    delta = max(0, now_ms - ms) // 1000
    if delta < 60:
        return "now"
    if delta < 3600:
        return f"{delta // 60}m"
    if delta < 86400:
        return f"{delta // 3600}h"
    if delta < 86400 * 30:
        return f"{delta // 86400}d"
    return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC).strftime("%Y-%m-%d")


@dataclass
class ListEntry:
    """One visible browser line: a session, with its lineage depth, or a content-search hit under it."""

    row: SessionRow
    depth: int = 0
    hit_seq: int | None = None
    hit_text: str = ""
    hit_marks: tuple[tuple[int, int], ...] = ()  # (start, end) of the matched words in ``hit_text``
    fork_point: int | None = None  # seq where a fork child leaves its parent
    fork_turn: int | None = None  # the parent's turn the fork child was made after


class PlainEntries(Sequence):
    """Top-level entries over a list of rows, made on access (a 10k-row filter result costs no objects)."""

    __slots__ = ("rows",)

    def __init__(self, rows: list[SessionRow]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index):  # noqa: ANN001 - Sequence protocol (int or slice)
        if isinstance(index, slice):
            return [ListEntry(r) for r in self.rows[index]]
        return ListEntry(self.rows[index])


class SessionList(LineList):
    """The browser's list: title, workspace, last activity, turns, tokens, state (one line each)."""

    def __init__(self, *, now_ms: Callable[[], int], show_workspace: bool = True, **kwargs) -> None:
        super().__init__(self._format, empty_text="No sessions", **kwargs)
        self.entries: Sequence[ListEntry] = []
        self.now_ms = now_ms
        self.show_workspace = show_workspace
        self.live_id: str | None = None  # the session this app has open ("open here")

    def set_entries(self, entries: Sequence[ListEntry], *, keep_cursor: bool = False) -> None:
        self.entries = entries
        self.set_rows(len(entries), keep_cursor=keep_cursor)

    @property
    def current(self) -> ListEntry | None:
        if 0 <= self.cursor < len(self.entries):
            return self.entries[self.cursor]
        return None

    def _format(self, index: int, width: int) -> Spans:
        e = self.entries[index]
        r = e.row
        indent = "  " * e.depth
        if e.hit_seq is not None:
            hit: Spans = [(f"{indent}    #{e.hit_seq} ", "dim")]
            at = 0
            for a, b in e.hit_marks:  # the matched words highlighted, the rest as it is
                hit += [(e.hit_text[at:a], "italic"), (e.hit_text[a:b], "bold reverse")]
                at = b
            hit.append((e.hit_text[at:], "italic"))
            return [(text.replace("\n", " "), style) for text, style in hit if text]
        state = r.state
        if r.id is not None and r.id == self.live_id and state == "open elsewhere":
            state = OPEN_HERE
        right = f" {ago(r.updated_at, self.now_ms()):>5} {r.turns:>4}t {format_tokens(r.tokens, m_digits=1):>6} "
        label = STATE_LABEL.get(state, state)
        state_col = f"{label[:STATE_WIDTH]:<{STATE_WIDTH}} "
        room = max(1, width - len(right) - len(state_col))
        left: Spans = [(indent, "")]
        if e.depth:
            lineage = "↳ sub " if r.is_subagent else "↳ fork "
            if not r.is_subagent and e.fork_turn is not None:
                lineage += f"after turn {e.fork_turn} "
            left.append((lineage, "dim"))
        if state == INDEXING_STATE:
            left.append((os.path.relpath(os.path.dirname(r.path), r.root), "dim"))
        elif state == UNREADABLE_STATE:
            left.append((r.title or r.id or os.path.relpath(r.path, r.root), "red"))
            left.append((f"  unreadable: {r.reason}", "red italic"))
        else:
            left.append((r.display_title or "(untitled)", "bold" if state != "blank" else "dim"))
            if not r.indexed:
                left.append((" …", "dim"))
        if self.show_workspace and r.cwd:
            left.append((f"  {r.cwd}", "dim"))
        if r.children and e.depth == 0:
            left.append((f"  [{len(r.children)}↳]", "dim"))
        out: Spans = []
        used = 0
        for text, style in left:
            n = cell_len(text)
            if used + n > room:
                text = set_cell_size(text, max(0, room - used - 1)) + "…"
                out.append((text, style))
                used = room
                break
            out.append((text, style))
            used += n
        out.append((" " * (room - used), ""))
        out.append((right, "dim"))
        out.append((state_col, STATE_STYLE.get(state, "")))
        return out
