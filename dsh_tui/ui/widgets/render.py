"""Rich renderables for transcript items (no widgets here: pure item -> renderable).

Finished items render once per (key, version, width, mode) and are cached by the widget (``CachedLines``);
Markdown is used only for assistant text (``mdrender.py``), tool calls are cards (``toolcard.py``),
everything else is plain ``Text``.
"""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import Text

from dsh_tui.session.stats import format_tokens
from dsh_tui.session.transcript import (
    CompactionItem,
    ContextItem,
    DividerItem,
    FooterItem,
    Item,
    RetryItem,
    StreamItem,
    ToolItem,
    UserItem,
)
from dsh_tui.ui.widgets.mdrender import markdown, render_assistant, settled_blocks  # noqa: F401 - re-exported
from dsh_tui.ui.widgets.textfit import clip, duration, one_line
from dsh_tui.ui.widgets.toolcard import render_tool

#: A prompt longer than this many lines shows its head and tail (the whole text: select it and press ``v``).
USER_HEAD_LINES, USER_TAIL_LINES = 40, 5


def render_user(item: UserItem) -> RenderableType:
    # a pasted log of 10,000 lines laid out whole held the UI thread for seconds on every reflow
    return Text(clip(item.text, USER_HEAD_LINES, USER_TAIL_LINES), style="bold")


def render_context(item: ContextItem, expanded: bool) -> RenderableType:
    head = Text(f"{'▾' if expanded else '▸'} Context · {item.producer}", style="dim")
    if not expanded:
        return head
    return Group(head, Text(clip(item.text, 20, 5), style="dim"))


def render_thinking(item: StreamItem, expanded: bool) -> RenderableType:
    live = " …" if item.state == "streaming" else ""
    if not expanded:
        return Text(f"▸ Thinking{live} · {one_line(item.summary(), 100)}", style="dim italic")
    return Group(Text(f"▾ Thinking{live}", style="dim italic"), Text(item.text, style="dim italic"))


class CachedLines:
    """Wraps a renderable and caches its rendered lines per width.

    Textual re-renders a Rich renderable whenever it lays out (to measure its height), so a
    transcript of Markdown items would re-parse every message on every reflow. Finished items are
    wrapped once and cost a list copy afterwards.
    """

    __slots__ = ("inner", "_width", "_lines")

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner
        self._width = -1
        self._lines: list[list[Segment]] = []

    def lines(self, console: Console, options: ConsoleOptions) -> list[list[Segment]]:
        width = options.max_width
        if width != self._width:
            self._lines = console.render_lines(self.inner, options.update(height=None), pad=False)
            self._width = width
        return self._lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        new_line = Segment.line()
        for line in self.lines(console, options):
            yield from line
            yield new_line

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.inner)


def render_footer(item: FooterItem, show_time: bool = True) -> RenderableType:
    bits = []
    if show_time:
        bits.append(duration(item.duration_ms))
        if item.ttft_ms is not None:
            bits.append(f"first token {duration(item.ttft_ms)}")
        if item.tokens_per_s:
            bits.append(f"{item.tokens_per_s:.0f} tok/s")
    bits.append(f"↑{format_tokens(item.input_tokens)} ↓{format_tokens(item.output_tokens)}")
    text = Text("── " + " · ".join(bits), style="dim")
    if item.reason_text:
        text.append("  ")
        style = "bold red" if item.reason == "error" else "yellow"
        text.append(item.reason_text, style=style)
    if item.files:
        text.append("\n   ")
        text.append(files_line(item.files, item.files_total), style="dim strike" if item.undone else "dim")
        if item.undone:
            text.append("  undone", style="yellow")
    return text


def files_line(files: list, total: int = 0, limit: int = 4) -> str:
    """``changed a.txt +1 −1, c.txt (new)``: the files a turn changed (its footer, the timeline)."""
    parts = []
    for f in files[:limit]:
        path = str(f.get("path", ""))
        if f.get("before") is None:
            parts.append(f"{path} (new)")
        elif f.get("after") is None:
            parts.append(f"{path} (deleted)")
        elif f.get("binary"):
            parts.append(f"{path} (binary)")
        else:
            parts.append(f"{path} +{f.get('added', 0)} −{f.get('deleted', 0)}")
    more = max(total, len(files)) - len(parts)
    if more > 0:
        parts.append(f"+{more} more")
    return "changed " + ", ".join(parts)


def render_item(item: Item, *, expanded: bool, show_time: bool = True) -> RenderableType:
    """The renderable for any non-streaming item."""
    if isinstance(item, UserItem):
        return render_user(item)
    if isinstance(item, ContextItem):
        return render_context(item, expanded)
    if isinstance(item, StreamItem):
        if item.kind == "thinking":
            return render_thinking(item, expanded)
        return render_assistant(item.text, item.state == "interrupted")
    if isinstance(item, ToolItem):
        return render_tool(item, expanded)
    if isinstance(item, FooterItem):
        return render_footer(item, show_time)
    if isinstance(item, RetryItem):
        return Text(item.describe(), style="dim")
    if isinstance(item, CompactionItem):
        head = Text(("▾ " if expanded else "▸ ") + item.describe(), style="dim")
        if expanded and item.summary:
            return Group(head, Text(item.summary, style="dim"))
        return head
    if isinstance(item, DividerItem):
        return Text(f"──── {item.text} ────", style="dim", justify="center")
    return Text(repr(item))
