"""The streaming answer: one Line-API widget over frozen Markdown segments plus a live tail.

A flush renders only the tail and adds no widgets; the answer grows in steps (blank room below it), so most
flushes repaint a few lines instead of reflowing the screen.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text
from textual.geometry import Region, Size
from textual.reactive import Reactive
from textual.strip import Strip
from textual.visual import Visual, visualize
from textual.widget import Widget

from dsh_tui.session.transcript import StreamItem
from dsh_tui.ui.widgets.highlight import MATCH, highlight_strip
from dsh_tui.ui.widgets.item import ViewState
from dsh_tui.ui.widgets.render import markdown, settled_blocks
from dsh_tui.ui.widgets.selectable import ITEM_BINDINGS, Selectable, search_mark

STREAM_ROOM = 6  # blank lines kept below a streaming answer (see AnswerView.get_content_height)
INTERRUPTED_TEXT = "⏹ interrupted: the answer above is partial"


class PlainTail:
    """A streaming tail shown as plain text (an open code fence), drawn incrementally by AnswerView."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class AnswerView(Selectable, Widget, can_focus=True):
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
    AnswerView:focus { background: $accent 25%; }
    """

    BINDINGS = ITEM_BINDINGS
    item: StreamItem  # (``Selectable.item``: this view's kind)

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

    _mark: tuple[str, int] | None = None

    def _remark(self) -> bool:
        """Follow the transcript search's query; True when the highlights changed (and were repainted)."""
        mark = search_mark(self.item, self.state)
        if mark == self._mark:
            return False
        self._mark = mark
        self.refresh()
        return True

    def refresh_item(self) -> None:
        self._remark()
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
            strip = frozen[y]
        elif y - len(frozen) < len(tail):
            strip = tail[y - len(frozen)]
        else:
            return Strip.blank(width, self.visual_style.rich_style)
        return highlight_strip(strip, self._mark[0], MATCH) if self._mark else strip
