"""Search highlights painted over rendered lines (after rendering: no item is rendered again for them).

A match is highlighted where it lies within one rendered line (a match that wraps across lines is not
marked; the search still counts and reaches it).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

# explicit RGB (named ANSI colours follow the theme: its "yellow" can be orange) that stay apart in 256 colours
MATCH = Style(color="#000000", bgcolor="#ffd75f")
CURRENT = Style(color="#000000", bgcolor="#ff8700", bold=True)


def _spans(text: str, query: str) -> list[tuple[int, int]]:
    low = text.lower()
    if len(low) != len(text):  # a character whose lower case is longer: offsets would not line up
        return []
    out = []
    at = low.find(query)
    while at >= 0:
        out.append((at, at + len(query)))
        at = low.find(query, at + len(query))
    return out


def count_in_line(segments: list[Segment], query: str) -> int:
    text = "".join(segment.text for segment in segments if not segment.control)
    return len(_spans(text, query)) if query and query in text.lower() else 0


def line_of(lines: list[list[str]], query: str, nth: int) -> int | None:
    """The line (each a list of segment texts) holding occurrence ``nth`` (0-based) of ``query``, or
    the last line with one when there are fewer; None when no line holds one."""
    seen, last = 0, None
    for y, parts in enumerate(lines):
        n = len(_spans("".join(parts), query)) if query else 0
        if n:
            last = y
            if nth < seen + n:
                return y
            seen += n
    return last


def highlight_segments(segments: list[Segment], query: str, style: Style, current: int = -1,
                       current_style: Style | None = None) -> list[Segment]:
    """``segments`` (one line) with every occurrence of ``query`` (lower case) restyled with ``style``,
    occurrence number ``current`` of this line (0-based) with ``current_style``."""
    if not query:
        return segments
    text = "".join(segment.text for segment in segments if not segment.control)
    if query not in text.lower():
        return segments
    spans = _spans(text, query)
    if not spans:
        return segments
    out: list[Segment] = []
    pos = 0  # offset of the current segment's first character in the line
    span = 0
    for segment in segments:
        if segment.control:
            out.append(segment)
            continue
        seg_text, seg_style = segment.text, segment.style
        end = pos + len(seg_text)
        cut = pos
        while span < len(spans) and spans[span][0] < end:
            start, stop = spans[span]
            if start > cut:
                out.append(Segment(seg_text[cut - pos:start - pos], seg_style))
                cut = start
            mark_end = min(stop, end)
            if mark_end > cut:
                mark = current_style if span == current and current_style is not None else style
                out.append(Segment(seg_text[cut - pos:mark_end - pos], (seg_style or Style()) + mark))
                cut = mark_end
            if stop <= end:
                span += 1
            else:
                break
        if cut < end:
            out.append(Segment(seg_text[cut - pos:], seg_style))
        pos = end
    return out


def highlight_strip(strip: Strip, query: str, style: Style) -> Strip:
    if not query:
        return strip
    segments = list(strip)
    marked = highlight_segments(segments, query, style)
    return strip if marked is segments else Strip(marked, strip.cell_length)


class Highlighted:
    """A ``CachedLines`` (render.py) with the matches of ``query`` marked, occurrence ``nth`` (counted
    over the whole item, -1: none) as the current one; the lines underneath stay cached."""

    __slots__ = ("inner", "query", "style", "nth", "current_style")

    def __init__(self, inner: Any, query: str, style: Style, nth: int = -1, current_style: Style | None = None) -> None:
        self.inner = inner
        self.query = query
        self.style = style
        self.nth = nth
        self.current_style = current_style

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        new_line = Segment.line()
        lines = self.inner.lines(console, options)
        nth, query = self.nth, self.query
        if nth >= 0:  # fewer occurrences drawn than found (a clipped card): mark the last one drawn
            total = sum(count_in_line(line, query) for line in lines)
            nth = min(nth, total - 1)
        seen = 0
        for line in lines:
            current = nth - seen if nth >= 0 else -1
            n = count_in_line(line, query) if nth >= 0 else 0
            yield from highlight_segments(line, query, self.style, current, self.current_style)
            seen += n
            yield new_line

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return self.inner.__rich_measure__(console, options)
