"""Plain text of what the app shows, read from its SVG screenshot (for readable assertions)."""

from __future__ import annotations

import html
import re
from collections import defaultdict

CHAR_WIDTH = 12.2  # rich's SVG export: 0.61 * font size 20
_TEXT = re.compile(r'<text class="[^"]*" x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>', re.S)


def screen_text(app) -> str:
    """The screen as lines of text (colours dropped)."""
    svg = app.export_screenshot()
    rows: dict[float, list[tuple[float, str]]] = defaultdict(list)
    for x, y, body in _TEXT.findall(svg):
        rows[float(y)].append((float(x), html.unescape(re.sub(r"<[^>]+>", "", body))))
    lines = []
    for y in sorted(rows):
        line = ""
        for x, text in sorted(rows[y]):
            col = round(x / CHAR_WIDTH)
            line = line.ljust(col) + text
        lines.append(line.replace("\xa0", " ").rstrip())
    return "\n".join(lines)
