"""A finished transcript item: one cached Static per item (Textual caches its lines per width).

Item views are focusable (Tab / Shift+Tab into the transcript): ``selectable.py`` gives them their keys
(copy, code blocks, expand, the full-output viewer); search matches are painted over the cached lines
(``highlight.py``) without rendering the item again.
"""

from __future__ import annotations

from typing import Any

from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import Static

from dsh_tui.session.transcript import Item
from dsh_tui.ui.widgets.highlight import CURRENT, MATCH, Highlighted
from dsh_tui.ui.widgets.render import CachedLines, render_item
from dsh_tui.ui.widgets.selectable import ITEM_BINDINGS, Selectable, search_mark


class ViewState:
    """Display switches shared by every item view of one chat screen."""

    CARD_MODES = ("collapsed", "expanded", "hidden")

    def __init__(self) -> None:
        self.card_mode = "collapsed"
        self.reasoning = False
        self.show_time = True
        self.subagents: dict[str, dict] = {}  # tool call id -> the live snapshot of the subagent it started
        self.toggled: set[str] = set()  # item keys expanded/collapsed by hand (Enter), against the mode above
        self.search = ""  # the transcript search's query, lower case ("" when no search is shown)
        self.search_key: str | None = None  # the item holding the current match (shown expanded)
        self.search_nth = 0  # which occurrence of the query in that item is the current match
        self.search_index: Any = None  # the TranscriptSearch in use (its lower-cased texts are reused)

    def flipped(self, key: str, expanded: bool) -> bool:
        """``expanded`` as the global switch says, flipped for an item toggled by hand; the item holding
        the current search match is always shown expanded."""
        if key == self.search_key and self.search:
            return True
        return (not expanded) if key in self.toggled else expanded


class CachedStatic(Static):
    """A Static whose content height is measured once per (content, width).

    Textual measures every widget's height on every reflow by rendering its content again; a
    streamed line therefore re-rendered the whole mounted transcript. Content only changes through
    ``update``, so the height for a width stays valid until then.
    """

    # Textual sets virtual_size (a layout reactive) when a layout gives the widget a new size, which asks
    # for a SECOND screen-wide reflow right after; a non-scrolling widget's virtual size lays out nothing
    virtual_size = Reactive(Size(0, 0), layout=False, repaint=False)

    _height_key: tuple[int, int] | None = None
    _height = 0
    _generation = 0

    def update(self, content="", *, layout: bool = True) -> None:  # noqa: ANN001
        self._generation += 1
        super().update(content, layout=layout)

    def get_content_height(self, container, viewport, width: int) -> int:  # noqa: ANN001
        key = (self._generation, width)
        if key != self._height_key:
            self._height = super().get_content_height(container, viewport, width)
            self._height_key = key
        return self._height


class ItemView(Selectable, CachedStatic, can_focus=True):
    """One finished (or non-Markdown) transcript item."""

    BINDINGS = ITEM_BINDINGS

    DEFAULT_CSS = """
    ItemView { height: auto; padding: 0 1; }
    ItemView.-user { background: $boost; border-left: thick $primary; margin-top: 1; }
    ItemView.-footer { margin-bottom: 1; }
    ItemView.-tool { padding-left: 2; }
    ItemView.-divider { margin: 1 0; }
    ItemView:focus { background: $accent 25%; }
    """

    def __init__(self, item: Item, state: ViewState) -> None:
        self.item = item
        self.state = state
        self._rendered: tuple[int, bool] | None = None
        self._lines: CachedLines | None = None
        self._marked: tuple[str, int] | None = None
        super().__init__(classes=f"-{item.kind}")
        self.refresh_item()

    def expanded(self) -> bool:
        kind = self.item.kind
        if kind == "tool":
            return self.state.flipped(self.item.key, self.state.card_mode == "expanded")
        if kind in ("thinking", "context", "compaction"):
            return self.state.flipped(self.item.key, self.state.reasoning)
        return True

    def refresh_item(self) -> None:
        key = (self.item.version, self.expanded())
        changed = key != self._rendered or self._lines is None
        if changed:
            self._rendered = key
            self._lines = CachedLines(render_item(self.item, expanded=key[1], show_time=self.state.show_time))
        mark = search_mark(self.item, self.state)
        if not changed and mark == self._marked:
            return
        self._marked = mark
        content: object = self._lines
        if mark is not None:
            query, nth = mark
            content = Highlighted(self._lines, query, MATCH, nth, CURRENT)
        self.update(content, layout=changed)

    def match_line(self) -> int | None:
        """The rendered line of the current match in this item (None: not on a line of its own)."""
        lines = self._lines
        if self._marked is None or lines is None or lines._width < 0:
            return None
        from dsh_tui.ui.widgets.highlight import line_of

        return line_of([[s.text for s in line] for line in lines._lines], *self._marked)
