"""dsh's hunk diffs of a write or an edit (jsdiff ``structuredPatch``, 3 context lines) and their line counts."""

from __future__ import annotations

import difflib
import os
import stat as stat_mod
from typing import Any

from dsh_tui.tools.common import normalize_newlines

DIFF_BASIS_MAX_BYTES = 16 * 1024 * 1024
DIFF_CONTEXT = 3


def compute_hunk_diffs(path: str, before: str, after: str) -> list[dict[str, Any]]:
    """One ``{path, oldText, newText}`` per changed hunk with 3 context lines (jsdiff structuredPatch)."""
    a, b = _split_lf(before), _split_lf(after)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    diffs: list[dict[str, Any]] = []
    for group in matcher.get_grouped_opcodes(DIFF_CONTEXT):
        old_lines: list[str] = []
        new_lines: list[str] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for line in a[i1:i2]:
                    old_lines.append(_strip_nl(line))
                    new_lines.append(_strip_nl(line))
                continue
            if tag in ("replace", "delete"):
                old_lines.extend(_strip_nl(line) for line in a[i1:i2])
            if tag in ("replace", "insert"):
                new_lines.extend(_strip_nl(line) for line in b[j1:j2])
        diffs.append(
            {
                "path": path,
                "oldText": "\n".join(old_lines) if old_lines else None,
                "newText": "\n".join(new_lines),
            }
        )
    return diffs


def _split_lf(text: str) -> list[str]:
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def _strip_nl(line: str) -> str:
    return line[:-1] if line.endswith("\n") else line


def diff_counts(diffs: list[dict[str, Any]]) -> tuple[int, int]:
    """(+added, -removed) line counts over dsh diff hunks (for tool cards)."""
    added = removed = 0
    for hunk in diffs:
        old = str(hunk["oldText"]).split("\n") if hunk.get("oldText") else []
        new = str(hunk["newText"]).split("\n") if hunk.get("newText") else []
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag in ("replace", "delete"):
                removed += i2 - i1
            if tag in ("replace", "insert"):
                added += j2 - j1
    return added, removed


def _read_text_for_diff(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat_mod.S_ISREG(st.st_mode) or st.st_size >= DIFF_BASIS_MAX_BYTES:
                return None
            data = fh.read(DIFF_BASIS_MAX_BYTES)
    except OSError:
        return None
    if b"\x00" in data:
        return None
    try:
        return normalize_newlines(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        return None
