"""Fitting text into a transcript row: a long text's head and tail, one line, a duration (pure, no Rich)."""

from __future__ import annotations

HEAD_LINES = 6
TAIL_LINES = 6

def clip(text: str, head: int = HEAD_LINES, tail: int = TAIL_LINES) -> str:
    """``text`` with its middle lines left out (``… N more lines …``) when it has more than head + tail + 1."""
    lines = text.splitlines()
    if len(lines) <= head + tail + 1:
        return "\n".join(lines)
    hidden = len(lines) - head - tail
    return "\n".join([*lines[:head], f"… {hidden} more lines …", *lines[-tail:]])


def one_line(text: str, width: int = 80) -> str:
    """``text`` on one line (its whitespace runs one space), cut to ``width`` with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def duration(ms: int | None) -> str:
    """``850 ms``, ``1.2 s``, ``3 m 5 s``; ``–`` for none."""
    if ms is None:
        return "–"
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    return f"{ms // 60_000} m {ms % 60_000 // 1000} s"
