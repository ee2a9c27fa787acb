"""``textual_compat.fast_wrap`` (what lets a 10,000-line paste land in the composer quickly) gives the
same wrapping as Textual's own code for any line: offsets, tab widths and the wrapped height."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from textual._wrap import compute_wrap_offsets as textual_wrap_offsets
from textual.document import _wrapped_document as wrapped
from textual.document._document import Document
from textual.expand_tabs import get_tab_widths as textual_tab_widths

import dsh_tui.ui.widgets.composer  # noqa: F401  (installs fast_wrap, as the app does)

_TEXT = st.text(alphabet=st.sampled_from(list("ab c  -.,\t") + ["世", "é", "\u200b", "\u0301", "😀", "\r"]),
                max_size=60)


def test_the_composer_installs_it():
    assert getattr(wrapped.compute_wrap_offsets, "fits_fast", False)


@given(line=_TEXT, width=st.integers(min_value=0, max_value=40), tab=st.integers(min_value=1, max_value=8))
def test_same_offsets_and_tab_widths_as_textual(line, width, tab):
    assert wrapped.get_tab_widths(line, tab) == textual_tab_widths(line, tab)
    sections = textual_tab_widths(line, tab)
    expected = textual_wrap_offsets(line, width, tab, precomputed_tab_sections=sections) if width else []
    got = wrapped.compute_wrap_offsets(line, width, tab, precomputed_tab_sections=sections) if width else []
    assert got == expected


@given(lines=st.lists(_TEXT.filter(lambda t: "\r" not in t), min_size=1, max_size=20),
       width=st.integers(min_value=1, max_value=30), insert=_TEXT.filter(lambda t: "\r" not in t))
def test_height_is_the_number_of_wrapped_rows_after_edits(lines, width, insert):
    document = Document("\n".join(lines))
    wrapped_document = wrapped.WrappedDocument(document, width=width)
    assert wrapped_document.height == sum(len(o) + 1 for o in wrapped_document._wrap_offsets)
    end = (min(1, document.line_count - 1), 0)
    result = document.replace_range((0, 0), end, insert + "\n" + insert)
    wrapped_document.wrap_range((0, 0), end, result.end_location)
    assert wrapped_document.height == sum(len(o) + 1 for o in wrapped_document._wrap_offsets)
