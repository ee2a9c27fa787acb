"""Plain text of what the app shows, read from its SVG screenshot (for readable assertions)."""

from __future__ import annotations

import html
import re
from collections import defaultdict

_TEXT = re.compile(r'<text class="[^"]*" x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>', re.S)


def screen_text(app) -> str:
    """The screen as lines of text (colours dropped)."""
    svg = app.export_screenshot()
    rows: dict[float, list[tuple[float, str]]] = defaultdict(list)
    for x, y, body in _TEXT.findall(svg):
        rows[float(y)].append((float(x), html.unescape(re.sub(r"<[^>]+>", "", body))))
    lines = []
    for y in sorted(rows):
        lines.append("".join(text for _, text in sorted(rows[y])).replace("\xa0", " ").rstrip())
    return "\n".join(lines)
