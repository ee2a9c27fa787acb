"""The transcript: a bounded window of item widgets over the TranscriptFold's items.

Performance design (design/textual-perf.md): every reflow walks every mounted widget, so only the
latest ``MAX_MOUNTED`` items are mounted (older ones come back with "load earlier" / scrolling to the
top); finished items are a single ``Static`` each (Textual caches their lines per width); a streaming
answer (``AnswerView``) and a streaming reasoning row (``ThinkingView``) are one Line-API widget each
over lines rendered once (frozen Markdown segments, completed plain lines) plus a live tail, so a
flush renders only the tail and adds no widgets; a streaming answer grows in steps (blank room below
it), so most flushes repaint a few lines instead of reflowing the screen; the container uses
``layout: stream`` and is anchored to the bottom until the user scrolls away.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text
from textual.containers import VerticalScroll
from textual.geometry import Region, Size
from textual.reactive import Reactive
from textual.strip import Strip
from textual.visual import Visual, visualize
from textual.widget import Widget
from textual.widgets import Static

from dsh_tui.session.transcript import ADD, REMOVE, UPDATE, Item, StreamItem, TranscriptFold
from dsh_tui.ui.widgets.render import CachedLines, markdown, render_item, render_thinking, settled_blocks

MAX_MOUNTED = 100
FIRST_PAINT_ITEMS = 24  # mounted before the first paint; the rest of the window right after
PAGE = 40
STREAM_ROOM = 6  # blank lines kept below a streaming answer (see AnswerView.get_content_height)


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


INTERRUPTED_TEXT = "⏹ interrupted: the answer above is partial"


class PlainTail:
    """A streaming tail shown as plain text (an open code fence), drawn incrementally by AnswerView."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class AnswerView(Widget):
    """Streamed assistant Markdown in ONE widget: frozen segments + a live tail, drawn line by line.

    The growing text is cut into segments at settled top-level Markdown blocks (``settled_blocks``):
    a frozen segment is parsed and rendered once per width; a flush re-renders only the tail (the
    last block). The widget paints with the Line API (``render_line`` returns cached strips), so a
    long answer adds no widgets to the screen's reflow and costs only its visible lines per frame.
    Each segment (and the tail) is rendered the way Rich continues after the previous block (the
    blank line between blocks: ``markdown(after_block=...)``), so the view shows the same lines as the
    finished answer rendered whole (``render_assistant``), live or reopened.
    """

    DEFAULT_CSS = """
    AnswerView { height: auto; padding: 0 1; }
    """

    virtual_size = Reactive(Size(0, 0), layout=False, repaint=False)  # see CachedStatic

    def __init__(self, item: StreamItem, state: ViewState) -> None:
        super().__init__(classes="-assistant")
        self.item = item
        self.state = state
        self._frozen_text = ""
        self._segments: list[Any] = []  # frozen Markdown renderables, in order
        self._after_block = False  # the frozen text's last block wants a blank line before the next
        self._tail: Any = None
        self._rendered: tuple[int, str] | None = None
        # strips for one (width, style): frozen segments converted so far, then the tail
        self._strip_key: tuple[int, Any] | None = None
        self._seg_strips: list[Strip] = []
        self._seg_done = 0
        self._tail_strips: list[Strip] | None = None
        self._reserve: tuple[int, int, int] | None = None  # (width, height laid out, lines at that time)
        self._plain: tuple[int, Any, str, list[Strip]] | None = None  # open fence: (width, style, text, strips)
        self.refresh_item()

    @property
    def segment_count(self) -> int:
        """Frozen Markdown segments so far (each parsed and rendered once)."""
        return len(self._segments)

    def refresh_item(self) -> None:
        key = (self.item.version, self.item.state)
        if key == self._rendered:
            return
        self._rendered = key
        # lines shown now (for a repaint without layout when the height stays)
        shown = None
        if self._tail_strips is not None and self._reserve is not None and self.is_mounted:
            shown = (self._reserve[0], len(self._seg_strips), self._reserve[1])
        text = self.item.text
        if not text.startswith(self._frozen_text):  # the final message differs from the stream: start over
            self._frozen_text = ""
            self._segments = []
            self._after_block = False
            self._strip_key = None
        frozen = len(self._frozen_text)
        settled = settled_blocks(text[frozen:])
        if settled is not None:
            length, new_line = settled
            self._segments.append(markdown(text[frozen:frozen + length], after_block=self._after_block))
            self._after_block = new_line
            frozen += length
            self._frozen_text = text[:frozen]
        tail = text[frozen:]
        if not tail:
            self._tail = None
        elif self.item.state == "streaming" and tail.count("```") % 2 == 1:
            # an open code fence: highlighting it on every flush is the costliest part of a stream;
            # show it plain until the fence closes and the block settles into Markdown
            self._tail = PlainTail("\n" + tail if self._after_block else tail)
        else:
            self._tail = markdown(tail, after_block=self._after_block)
        self._tail_strips = None
        if shown is not None and shown[0] == self.size.width:
            width, start, height = shown
            frozen_lines, tail_lines = self._lines(width)
            lines = len(frozen_lines) + len(tail_lines)
            if lines == height or (self.item.state == "streaming" and lines < height):
                # the text still fits the height laid out (with the room reserved below a stream): nothing
                # moves, so no screen-wide reflow; repaint only the old tail's lines and the room below
                # (a segment frozen meanwhile renders the same lines)
                self.refresh(Region(0, start, width, height - start))
                return
        self.refresh(layout=True)

    def _to_strips(self, renderable: Any, width: int, style: Any) -> list[Strip]:
        return Visual.to_strips(self, visualize(self, renderable), width, None, style)

    def _lines(self, width: int) -> tuple[list[Strip], list[Strip]]:
        style = self.visual_style
        if self._strip_key is None or self._strip_key[0] != width or self._strip_key[1] != style:
            self._strip_key = (width, style)
            self._seg_strips, self._seg_done, self._tail_strips = [], 0, None
        while self._seg_done < len(self._segments):
            self._seg_strips.extend(self._to_strips(self._segments[self._seg_done], width, style))
            self._seg_done += 1
        if self._tail_strips is None:
            tail = self._tail
            if isinstance(tail, PlainTail):
                self._tail_strips = self._plain_lines(tail.text, width, style)
                return self._seg_strips, self._tail_strips
            if self.item.state == "interrupted":  # the mark under the partial answer, as render_assistant
                tail = Group(tail if tail is not None else Text(""), Text(INTERRUPTED_TEXT, style="yellow"))
            self._tail_strips = [] if tail is None else self._to_strips(tail, width, style)
        return self._seg_strips, self._tail_strips

    def _plain_lines(self, text: str, width: int, style: Any) -> list[Strip]:
        """Lines of a plain tail (an open code fence), converting only the lines completed since the last
        flush: a long fence being written (a whole file) would otherwise be re-rendered on every flush."""
        cut = text.rfind("\n") + 1
        complete, partial = text[:cut], text[cut:]
        cached = self._plain
        if cached is None or cached[0] != width or cached[1] != style or not complete.startswith(cached[2]):
            cached = (width, style, "", [])
        if len(complete) > len(cached[2]):
            added = self._to_strips(Text(complete[len(cached[2]):-1]), width, style)
            cached = (width, style, complete, cached[3] + added)
        self._plain = cached
        return cached[3] + self._to_strips(Text(partial), width, style)  # (an empty last line is a line)

    def rendered_lines(self, width: int) -> list[Strip]:
        """Every line of the view at ``width`` (tests compare them with the finished rendering)."""
        frozen, tail = self._lines(width)
        return frozen + tail

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return container.width

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """The answer's lines; while it streams, plus blank room for the next ones.

        Every change of height reflows the whole screen and, with the view following the bottom,
        repaints the whole transcript. A streaming answer therefore grows in steps: when its text
        outgrows the height laid out, the new height leaves ``STREAM_ROOM`` blank lines (or as many as
        the last step grew, at a fast stream; at most a third of the screen) for the next flushes,
        which then repaint only their lines. The room goes when the answer ends."""
        if width <= 0:
            return 0
        frozen, tail = self._lines(width)
        lines = len(frozen) + len(tail)
        height = lines
        reserve = self._reserve
        if self.item.state == "streaming":
            if reserve is not None and reserve[0] == width and lines <= reserve[1]:
                height = reserve[1]
            else:
                grown = lines - reserve[2] if reserve is not None and reserve[0] == width else 0
                height = lines + min(max(STREAM_ROOM, grown), max(STREAM_ROOM, viewport.height // 3))
        if reserve is None or reserve[:2] != (width, height):
            self._reserve = (width, height, lines)
        return height

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        frozen, tail = self._lines(width)
        if y < len(frozen):
            return frozen[y]
        y -= len(frozen)
        if y < len(tail):
            return tail[y]
        return Strip.blank(width, self.visual_style.rich_style)


class ThinkingView(Widget):
    """A streaming reasoning row, drawn line by line like ``AnswerView``.

    Collapsed it is ``render_thinking``'s one line (its summary follows the latest line). Expanded, the
    reasoning grows on every flush: as an ``ItemView`` it was rendered whole each time (a long
    reasoning: tens of ms per flush); here the lines completed since the last flush are rendered and
    appended, the partial last line re-rendered. The lines are those of the finished row
    (``render_thinking``), so the row looks the same while it streams, when it ends and reopened."""

    DEFAULT_CSS = """
    ThinkingView { height: auto; padding: 0 1; }
    """

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

    def expanded(self) -> bool:
        return self.state.reasoning

    def refresh_item(self) -> None:
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
        return lines[y] if y < len(lines) else Strip.blank(width, self.visual_style.rich_style)


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
                view = self.views.pop(item.key, None)
                if view is not None:
                    if view in added:
                        added.remove(view)
                    else:
                        view.remove()
                if item.key == self._first_key:
                    self._first_key = next(iter(self.views), None)
        if added:
            self.mount_all(added)
        for key in dirty:
            view = self.views.get(key)
            if view is not None and view not in added:
                view.refresh_item()  # type: ignore[attr-defined]
        self._prune()

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
        return self._anchored and not self._anchor_released

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
