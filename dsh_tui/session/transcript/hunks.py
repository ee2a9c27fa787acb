"""Diff hunk positions: where a recorded edit's hunks start in the file lines the session has seen."""

from __future__ import annotations

from typing import Any


def _hunk_lines(text: Any) -> list[str]:
    return text.split("\n") if isinstance(text, str) and text else []


def _hunk_starts(known: dict[int, str], diffs: list) -> list[int | None]:
    """Where each hunk's old lines (context included) start in ``known`` (line number -> text), in order."""
    starts: list[int | None] = []
    after = 1
    for hunk in diffs:
        old = _hunk_lines(hunk.get("oldText")) if isinstance(hunk, dict) else []
        found = None
        if old:
            for n in sorted(k for k, t in known.items() if k >= after and t == old[0]):
                if all(known.get(n + i) == line for i, line in enumerate(old)):
                    found = n
                    break
        elif not known:
            found = 1  # an empty file
        starts.append(found)
        if found is not None:
            after = found + len(old)
    return starts
