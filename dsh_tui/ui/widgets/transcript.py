"""The transcript: a bounded window of item widgets over the TranscriptFold's items.

Every reflow walks every mounted widget (figures in docs/performance.md), so only the latest
``MAX_MOUNTED`` items are mounted (older ones come back with "load earlier" / scrolling to the top);
finished items are a single ``Static`` each (``item.py``); a streaming answer (``answer.py``) and a
streaming reasoning row (``thinking.py``) are one Line-API widget each; the container uses
``layout: stream`` and is anchored to the bottom until the user scrolls away.
"""

from __future__ import annotations

from typing import Any

from textual.containers import VerticalScroll
from textual.geometry import Region, Size
from textual.reactive import Reactive
from textual.widget import Widget
from textual.widgets import Static

from dsh_tui.session.search import Match, TranscriptSearch
from dsh_tui.session.transcript import ADD, REMOVE, UPDATE, Item, StreamItem, TranscriptFold
from dsh_tui.ui.textual_compat import is_following
from dsh_tui.ui.widgets.answer import AnswerView
from dsh_tui.ui.widgets.item import ItemView, ViewState
from dsh_tui.ui.widgets.thinking import ThinkingView

MAX_MOUNTED = 100


FIRST_PAINT_ITEMS = 24  # mounted before the first paint; the rest of the window right after


PAGE = 40




class TranscriptView(VerticalScroll):
    """The scrolling transcript; see the module docstring."""

    DEFAULT_CSS = """
    TranscriptView { layout: stream; height: 1fr; scrollbar-size-vertical: 1; }
    TranscriptView > #earlier { color: $text-muted; padding: 0 1; }
    TranscriptView.-cards-hidden > .-tool { display: none; }
    """

    # A growing answer changes the transcript's virtual size in every layout; the stock reactive then
    # asks for a second screen-wide reflow. The layout that changed it already placed everything, and
    # a scrollbar that must appear or go asks for its own layout (show_vertical_scrollbar).
    virtual_size = Reactive(Size(0, 0), layout=False, repaint=False)

    def __init__(self, fold: TranscriptFold, state: ViewState, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fold = fold
        self.state = state
        self.views: dict[str, Widget] = {}
        self._earlier = Static("", id="earlier")
        self._first_key: str | None = None
        # True while the window shows older items without the tail (after a jump to an old event):
        # new items are then not mounted until "back to bottom" reloads the tail.
        self.detached = False
        self.searcher: TranscriptSearch | None = None  # while the search bar is open (search_for)
        self.search_listener: Any = None  # called with (number, count) when live changes move the counts

    def compose(self):  # noqa: ANN201 - textual compose
        yield self._earlier

    def on_mount(self) -> None:
        self.anchor()
        self.load_tail()

    # -- building views ------------------------------------------------------------------------
    def make_view(self, item: Item) -> Widget:
        # only a streaming answer needs segments; finished ones are one cached Static (one widget)
        if isinstance(item, StreamItem) and item.state == "streaming":
            return AnswerView(item, self.state) if item.kind == "assistant" else ThinkingView(item, self.state)
        if item.kind == "tool" and getattr(item, "name", "") in ("subagent", "subagent_fork"):
            from dsh_tui.ui.widgets.subagent import SubagentCard

            return SubagentCard(item, self.state)
        return ItemView(item, self.state)

    def clear_views(self) -> None:
        for view in self.views.values():
            view.remove()
        self.views.clear()
        self._first_key = None

    def show_around(self, index: int) -> Widget | None:
        """Re-window the transcript around item ``index`` (a jump far back); returns its view."""
        items = self.fold.items
        if not 0 <= index < len(items):
            return None
        self.clear_views()
        start = max(0, index - PAGE // 4)
        end = min(len(items), start + MAX_MOUNTED)
        window = items[start:end]
        views = [self.make_view(item) for item in window]
        for item, view in zip(window, views):
            self.views[item.key] = view
        self._first_key = window[0].key
        self.detached = end < len(items)
        self.anchor(False)  # stop following: the user jumped back in history
        self.mount_all(views)
        self._update_earlier()
        return self.views[items[index].key]

    def load_tail(self, count: int = MAX_MOUNTED) -> None:
        """Mount the latest ``count`` items only (tail-first loading of a long session)."""
        self.detached = False
        items = self.fold.items[-count:]
        views = [self.make_view(item) for item in items]
        for item, view in zip(items, views):
            self.views[item.key] = view
        self._first_key = items[0].key if items else None
        if views:
            self.mount_all(views)
        self._update_earlier()

    def hidden_before(self) -> int:
        if self._first_key is None:
            return 0
        first = self.fold.by_key.get(self._first_key)
        if first is None:
            return 0
        return self.fold.items.index(first)

    def _update_earlier(self) -> None:
        n = self.hidden_before()
        self._earlier.display = n > 0
        if n:
            self._earlier.update(f"▲ {n} earlier items (scroll to the top or press Home to load more)")

    def load_earlier(self, count: int = PAGE, *, keep_following: bool = False) -> int:
        """Mount up to ``count`` older items above the window; returns how many were mounted."""
        end = self.hidden_before()
        if end <= 0:
            return 0
        items = self.fold.items[max(0, end - count):end]
        views = [self.make_view(item) for item in items]
        for item, view in zip(items, views):
            self.views[item.key] = view
        first_view = self.views.get(self._first_key) if self._first_key else None
        self._first_key = items[0].key
        if not keep_following:
            self.release_anchor()
        self.mount_all(views, after=self._earlier) if first_view is None else self.mount_all(views, before=first_view)
        self._update_earlier()
        return len(views)

    # -- applying fold changes -----------------------------------------------------------------
    def apply_changes(self, changes: list[tuple[str, Any]]) -> None:
        """Apply one drain's worth of changes; each item is refreshed at most once."""
        dirty: dict[str, Item] = {}
        added: list[Widget] = []
        for op, item in changes:
            if op == ADD:
                if self.detached:
                    continue  # shown when the user goes back to the bottom
                view = self.make_view(item)
                self.views[item.key] = view
                added.append(view)
                if self._first_key is None:
                    self._first_key = item.key
            elif op == UPDATE:
                dirty[item.key] = item
            elif op == REMOVE:
                gone = self.views.pop(item.key, None)
                if gone is not None:
                    if gone in added:
                        added.remove(gone)
                    else:
                        gone.remove()
                if item.key == self._first_key:
                    self._first_key = next(iter(self.views), None)
        if added:
            self.mount_all(added)
        for key in dirty:
            shown = self.views.get(key)
            if shown is not None and shown not in added:
                shown.refresh_item()  # type: ignore[attr-defined]
        self._prune()
        if self.searcher is not None and self.state.search:
            self._requery()

    def _prune(self) -> None:
        """Keep at most MAX_MOUNTED item views (oldest go first) while following the bottom."""
        excess = len(self.views) - MAX_MOUNTED
        if excess <= 0 or not self.following:
            return
        keys = list(self.views)[:excess]
        for key in keys:
            self.views.pop(key).remove()
        self._first_key = next(iter(self.views), None)
        self._update_earlier()

    @property
    def following(self) -> bool:
        """Bottom-follow state: anchored and not released by a user scroll."""
        return is_following(self)

    def refresh_all(self) -> None:
        """Re-render mounted items after a display switch (card mode, reasoning)."""
        self.set_class(self.state.card_mode == "hidden", "-cards-hidden")
        for view in self.views.values():
            view.refresh_item()  # type: ignore[attr-defined]

    def at_bottom(self) -> bool:
        return self.scroll_y >= self.max_scroll_y - 1

    def back_to_bottom(self) -> None:
        if self.detached:
            self.clear_views()
            self.load_tail()
        self.scroll_end(animate=False)
        self.anchor()

    def on_scroll_up(self) -> None:  # mouse wheel at the top loads older items
        if self.scroll_y <= 0 and self.hidden_before():
            self.load_earlier()

    # -- search (the search bar's target; the domain search is dsh_tui/session/search.py) --------------
    def search_for(self, query: str) -> tuple[int, int]:
        """Incremental search over the whole session (every item of the fold, mounted or not): mark the
        matches in the mounted items, bring the current one into view; returns (number, count)."""
        searcher = self.searcher
        if searcher is None:
            self.searcher = searcher = TranscriptSearch()
            self.state.search_index = searcher
        searcher.sync(self.fold.items)
        return self._show(searcher.refine(query))

    def search_step(self, direction: int) -> tuple[int, int]:
        """The next older (-1) or newer (+1) match."""
        if self.searcher is None:
            return 0, 0
        self.searcher.sync(self.fold.items)
        return self._show(self.searcher.step(direction) if self.searcher.query else None)

    def search_clear(self) -> None:
        """The search bar closed: no marks, cards back as they were."""
        state = self.state
        state.search, state.search_key, state.search_nth, state.search_index = "", None, 0, None
        self.searcher = None
        for view in self.views.values():
            view.refresh_item()  # type: ignore[attr-defined]

    def _requery(self) -> None:
        searcher = self.searcher
        assert searcher is not None
        before = (searcher.count, searcher.current.number if searcher.current else 0)
        match = searcher.requery(self.fold.items)
        after = (searcher.count, match.number if match else 0)
        if after != before and self.search_listener is not None:
            self.search_listener(after[1], after[0])

    def _show(self, match: Match | None) -> tuple[int, int]:
        searcher = self.searcher
        assert searcher is not None
        state = self.state
        state.search = searcher.query
        state.search_key = match.item.key if match is not None else None
        state.search_nth = searcher.nth_in_item(match) if match is not None else 0
        for view in self.views.values():
            view.refresh_item()  # type: ignore[attr-defined]
        if match is not None:
            self.reveal(match.index)
        return (match.number if match is not None else 0), searcher.count

    def reveal(self, index: int) -> Widget | None:
        """Bring item ``index`` of the fold into view (mounting a window around it when it is not
        mounted), its current search match in the middle of the view."""
        item = self.fold.items[index]
        view = self.views.get(item.key)
        if view is None:
            view = self.show_around(index)
        if view is None:
            return None
        self.anchor(False)

        def scroll() -> None:
            if not view.is_attached:
                return
            line = getattr(view, "match_line", lambda: None)() or 0
            region = view.virtual_region
            self.scroll_to_region(Region(0, region.y + min(line, max(0, region.height - 1)), 1, 1),
                                  animate=False, center=True, immediate=True)

        # a window mounted (or a card expanded) is laid out one refresh later
        self.call_after_refresh(lambda: self.call_after_refresh(scroll))
        return view
