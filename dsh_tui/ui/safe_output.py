"""No control sequence from content reaches the terminal.

Model text, tool output and file names are drawn by many widgets; all of them go through the app's line
filters (``App.get_line_filters``, public Textual API), so one filter here covers them all: an OSC 52 or
OSC 0 in an answer does not write the clipboard or retitle the window, an ``ESC[2J`` does not clear the
screen. Textual's own cursor movement travels in control segments, which are kept. A lone UTF-16
surrogate (legal in a dsh log) is drawn as U+FFFD and a split pair as its character. The log keeps the
text as it came (``dsh_tui.session.terminal``).
"""

from __future__ import annotations

from typing import Any

from rich.segment import Segment
from textual.filter import LineFilter

from dsh_tui.session.terminal import for_terminal, needs_cleaning


class ContentControlFilter(LineFilter):
    """Removes terminal control characters from the text of every (non-control) segment of a line."""

    def apply(self, segments: list[Segment], background: Any) -> list[Segment]:
        if not needs_cleaning("".join([seg.text for seg in segments])):  # one scan: the common case
            return segments
        return [seg if seg.control or not needs_cleaning(seg.text) else Segment(for_terminal(seg.text), seg.style)
                for seg in segments]


CONTENT_FILTER = ContentControlFilter()  # one instance: Textual caches filtered strips per filter
