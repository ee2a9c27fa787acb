"""A finished transcript item: one cached Static per item (Textual caches its lines per width)."""

from __future__ import annotations

from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import Static

from dsh_tui.session.transcript import Item
from dsh_tui.ui.widgets.render import CachedLines, render_item


class ViewState:
    """Display switches shared by every item view of one chat screen."""

    CARD_MODES = ("collapsed", "expanded", "hidden")

    def __init__(self) -> None:
        self.card_mode = "collapsed"
        self.reasoning = False
        self.show_time = True
        self.subagents: dict[str, dict] = {}  # tool call id -> the live snapshot of the subagent it started


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


class ItemView(CachedStatic):
    """One finished (or non-Markdown) transcript item."""

    DEFAULT_CSS = """
    ItemView { height: auto; padding: 0 1; }
    ItemView.-user { background: $boost; border-left: thick $primary; margin-top: 1; }
    ItemView.-footer { margin-bottom: 1; }
    ItemView.-tool { padding-left: 2; }
    ItemView.-divider { margin: 1 0; }
    """

    def __init__(self, item: Item, state: ViewState) -> None:
        self.item = item
        self.state = state
        self._rendered: tuple[int, bool] | None = None
        super().__init__(classes=f"-{item.kind}")
        self.refresh_item()

    def expanded(self) -> bool:
        kind = self.item.kind
        if kind == "tool":
            return self.state.card_mode == "expanded"
        if kind in ("thinking", "context", "compaction"):
            return self.state.reasoning
        return True

    def refresh_item(self) -> None:
        key = (self.item.version, self.expanded())
        if key == self._rendered:
            return
        self._rendered = key
        self.update(CachedLines(render_item(self.item, expanded=key[1], show_time=self.state.show_time)))
