"""The streaming reasoning row: one Line-API widget over completed plain lines plus a live tail."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text
from textual.geometry import Size
from textual.reactive import Reactive
from textual.strip import Strip
from textual.visual import Visual, visualize
from textual.widget import Widget

from dsh_tui.session.transcript import StreamItem
from dsh_tui.ui.widgets.highlight import MATCH, highlight_strip
from dsh_tui.ui.widgets.item import ViewState
from dsh_tui.ui.widgets.render import render_thinking
from dsh_tui.ui.widgets.selectable import ITEM_BINDINGS, Selectable, search_mark


class ThinkingView(Selectable, Widget, can_focus=True):
    """A streaming reasoning row, drawn line by line like ``AnswerView``.

    Collapsed it is ``render_thinking``'s one line (its summary follows the latest line). Expanded, the
    reasoning grows on every flush: as an ``ItemView`` it was rendered whole each time (a long
    reasoning: tens of ms per flush); here the lines completed since the last flush are rendered and
    appended, the partial last line re-rendered. The lines are those of the finished row
    (``render_thinking``), so the row looks the same while it streams, when it ends and reopened."""

    DEFAULT_CSS = """
    ThinkingView { height: auto; padding: 0 1; }
    ThinkingView:focus { background: $accent 25%; }
    """

    BINDINGS = ITEM_BINDINGS
    item: StreamItem  # (``Selectable.item``: this view's kind)

    virtual_size = Reactive(Size(0, 0), layout=False, repaint=False)  # see CachedStatic

    STYLE = "dim italic"

    def __init__(self, item: StreamItem, state: ViewState) -> None:
        super().__init__(classes="-thinking")
        self.item = item
        self.state = state
        self._rendered: tuple[int, str, bool] | None = None
        self._strips: tuple[Any, list[Strip]] | None = None  # ((width, style, rendered key), lines)
        self._body: tuple[int, Any, str, list[Strip]] | None = None  # (width, style, complete text, strips)
        self.refresh_item()

    _mark: tuple[str, int] | None = None

    def expanded(self) -> bool:
        return self.state.flipped(self.item.key, self.state.reasoning)

    def refresh_item(self) -> None:
        mark = search_mark(self.item, self.state)
        if mark != self._mark:
            self._mark = mark
            self.refresh()
        key = (self.item.version, self.item.state, self.expanded())
        if key == self._rendered:
            return
        old = self._strips
        self._rendered = key
        self._strips = None
        if old is not None and self.is_mounted and old[0][0] == self.size.width:
            width = self.size.width
            if len(self._lines(width)) == len(old[1]):
                self.refresh()  # same height: a repaint, no screen-wide reflow
                return
        self.refresh(layout=True)

    def _to_strips(self, renderable: Any, width: int, style: Any) -> list[Strip]:
        return Visual.to_strips(self, visualize(self, Group(renderable)), width, None, style)

    def _lines(self, width: int) -> list[Strip]:
        style = self.visual_style
        key = (width, style, self._rendered)
        if self._strips is not None and self._strips[0] == key:
            return self._strips[1]
        item = self.item
        if not self.expanded():
            lines = self._to_strips(render_thinking(item, False), width, style)
        else:
            live = " …" if item.state == "streaming" else ""
            lines = self._to_strips(Text(f"▾ Thinking{live}", style=self.STYLE), width, style)
            lines = lines + self._body_lines(item.text, width, style)
        self._strips = (key, lines)
        return lines

    def _body_lines(self, text: str, width: int, style: Any) -> list[Strip]:
        cut = text.rfind("\n") + 1
        complete, partial = text[:cut], text[cut:]
        cached = self._body
        if cached is None or cached[0] != width or cached[1] != style or not complete.startswith(cached[2]):
            cached = (width, style, "", [])
        if len(complete) > len(cached[2]):
            added = self._to_strips(Text(complete[len(cached[2]):-1], style=self.STYLE), width, style)
            cached = (width, style, complete, cached[3] + added)
        self._body = cached
        return cached[3] + self._to_strips(Text(partial, style=self.STYLE), width, style)

    def rendered_lines(self, width: int) -> list[Strip]:
        return self._lines(width)

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return container.width

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._lines(width)) if width > 0 else 0

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        lines = self._lines(width)
        if y >= len(lines):
            return Strip.blank(width, self.visual_style.rich_style)
        return highlight_strip(lines[y], self._mark[0], MATCH) if self._mark else lines[y]
