"""The streaming read window equals a whole-text reference for any chunking (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_tui.tools.fs import _Window


def reference(text, offset, limit, max_line, max_bytes):
    parts = text.split("\n")
    if parts and parts[-1] == "":
        parts.pop()
    lines, out, capped = [], 0, False
    for number, raw in enumerate(parts, start=1):
        raw = raw[: max_line + 1]  # dsh buffers one char past the cap, then strips a final CR
        raw = raw[:-1] if raw.endswith("\r") else raw
        if capped or number < offset or len(lines) >= limit:
            continue
        text_ = raw if len(raw) <= max_line else raw[:max_line] + f"... (line truncated to {max_line} chars)"
        size = len(text_.encode()) + (1 if lines else 0)
        if out + size > max_bytes:
            capped = True
            continue
        out += size
        lines.append({"number": number, "text": text_})
    return lines, len(parts), capped


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet="ab\r\né ", max_size=300),
    cuts=st.lists(st.integers(min_value=0, max_value=300), max_size=6),
    offset=st.integers(min_value=1, max_value=12),
    limit=st.integers(min_value=1, max_value=8),
    max_line=st.integers(min_value=1, max_value=12),
    max_bytes=st.integers(min_value=1, max_value=80),
)
def test_window_matches_reference(text, cuts, offset, limit, max_line, max_bytes):
    window = _Window(offset, limit, max_line, max_bytes)
    bounds = sorted({0, len(text), *[c for c in cuts if c <= len(text)]})
    for a, b in zip(bounds, bounds[1:]):
        window.feed(text[a:b])
    want_lines, want_total, want_capped = reference(text, offset, limit, max_line, max_bytes)
    try:
        window.finish("p")
    except Exception:
        assert not want_capped and offset > want_total and not (want_total == 0 and offset == 1)
        return
    assert window.lines == want_lines
    assert window.total == want_total
    assert window.capped == want_capped


def _grep_reference(text, regex):
    lines = text.split("\n") if text else []
    if text.endswith("\n"):
        lines.pop()
    out = []
    for number, line in enumerate(lines, start=1):
        if regex.search(line):
            out.append((number, line[:-1] if line.endswith("\r") else line))
    return out


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet="ab \r\n", max_size=120),
    pattern=st.sampled_from(["a", "^a", "a$", r"a\s+b", "b*", "^", "$", r"\s", "ab|ba", r"^\s*$", "(?s)a.b"]),
)
def test_grep_line_scan_matches_per_line_reference(tmp_path_factory, text, pattern):
    import re

    from dsh_tui.tools.search import _Budget, _grep_file

    path = tmp_path_factory.getbasetemp() / "grep-property.txt"
    path.write_bytes(text.encode())
    regex = re.compile(pattern, re.MULTILINE)
    assert _grep_file(str(path), regex, _Budget("grep"), 0) == _grep_reference(text, regex)
