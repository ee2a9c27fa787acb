"""Row filters used by the browser and the CLI: ordering, the instant filter, workspaces, and the
FTS5 query of a content search."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable

from .rows import SessionRow

_WORD = re.compile(r"\w+", re.UNICODE)


def fts_query(text: str) -> str:
    """User text -> an FTS5 query: every word must occur, the last one as a prefix."""
    words = _WORD.findall(text)
    if not words:
        return ""
    parts = [f'"{w}"' for w in words[:-1]] + [f'"{words[-1]}"*']
    return " ".join(parts)


# ---------------------------------------------------------------------------------------------
# Helpers used by the browser and the CLI


def sort_rows(rows: list[SessionRow]) -> list[SessionRow]:
    """Most recent activity first (dsh's ``updatedAt`` rule), ties by id."""
    return sorted(rows, key=lambda r: (-(r.updated_at or 0), r.id or r.path))


def filter_rows(rows: list[SessionRow], text: str) -> list[SessionRow]:
    """Rows whose title, workspace or id contain every word of ``text`` (case-insensitive)."""
    words = text.lower().split()
    if not words:
        return rows
    return [r for r in rows if all(w in haystack(r) for w in words)]


def haystack(row: SessionRow) -> str:
    """What the instant filter matches: title, first prompt, workspace, id and path, lower-cased."""
    return f"{row.title or ''}\n{row.prompt or ''}\n{row.cwd or ''}\n{row.id or ''}\n{row.path}".lower()


def workspace_names(cwd: str) -> frozenset[str]:
    """The spellings of a workspace a header's cwd may use: as given and with symlinks resolved."""
    names = {cwd}
    with contextlib.suppress(OSError):
        names.add(os.path.realpath(cwd))
    return frozenset(names)


def workspace_rows(rows: Iterable[SessionRow], cwd: str) -> list[SessionRow]:
    """The rows of workspace ``cwd``; a header cwd spelled through a symlink counts too (one
    realpath per distinct cwd, not per row)."""
    names = workspace_names(cwd)
    resolved: dict[str, bool] = {}
    out = []
    for r in rows:
        c = r.cwd
        if c is None:
            continue
        hit = resolved.get(c)
        if hit is None:
            hit = c in names
            if not hit:
                with contextlib.suppress(OSError):
                    hit = os.path.realpath(c) in names
            resolved[c] = hit
        if hit:
            out.append(r)
    return out
