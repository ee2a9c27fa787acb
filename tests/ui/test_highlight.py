"""Search highlights painted over rendered segments."""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style

from dsh_tui.ui.widgets.highlight import CURRENT, MATCH, highlight_segments, line_of


def test_a_match_across_segments_keeps_their_styles_and_adds_the_mark():
    bold = Style(bold=True)
    out = highlight_segments([Segment("say HEL", bold), Segment("lo there, hello")], "hello", MATCH, 1, CURRENT)
    assert "".join(s.text for s in out) == "say HELlo there, hello"
    marked = [(s.text, s.style.bgcolor, bool(s.style.bold)) for s in out if s.style and s.style.bgcolor]
    assert marked == [("HEL", MATCH.bgcolor, True), ("lo", MATCH.bgcolor, False), ("hello", CURRENT.bgcolor, True)]


def test_no_match_returns_the_line_untouched_and_line_of_finds_the_nth():
    line = [Segment("nothing here")]
    assert highlight_segments(line, "zzz", MATCH) is line
    assert line_of([["a x"], ["b"], ["x x"]], "x", 2) == 2 and line_of([["a"]], "x", 0) is None
