"""The prompts of a workspace's past sessions, newest first, from the catalog's index (the composer's
history: ``dsh_tui/ui/history.py``).

The catalog already keeps every human prompt as searchable text (``fold.py``: kind ``user``, one row per
``user/message`` whose source is the user), so this reads no log: it scans the roots (a ``stat`` per log),
indexes the logs of this workspace that are new or grown since the index last saw them, and reads their
``user`` rows, one session's rowid range at a time. Call it off the UI thread.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from .db import _SID_SHIFT
from .discover import _revision_mtime
from .filters import workspace_rows
from .fold import _MAX_TEXT
from .index import Catalog

MAX_SESSIONS = 200  # the newest sessions of the workspace read
MAX_PROMPTS = 2_000


def workspace_prompts(catalog: Catalog, cwd: str, *, exclude: Iterable[str] = (), sessions: int = MAX_SESSIONS,
                      limit: int = MAX_PROMPTS) -> list[str]:
    """The prompts typed in the sessions of workspace ``cwd`` (except the session ids in ``exclude``),
    newest first (sessions by their last update, prompts by their place in the log), each once.

    A prompt the index keeps cut (longer than the index keeps of one event) is left out: recalled, it
    would not be what was sent."""
    skip = set(exclude)
    rows = [r for r in workspace_rows(catalog.scan(), cwd) if r.id is not None and r.id not in skip]
    # the newest sessions: by the last prompt's time where indexed, else by the log's mtime (a log the
    # index has not read yet was written since), then in prompt order once indexed
    rows.sort(key=lambda r: r.updated_at if r.indexed else _revision_mtime(r.revision) // 1_000_000, reverse=True)
    rows = rows[:sessions]
    catalog.index([r for r in rows if not r.indexed])
    rows.sort(key=lambda r: (r.updated_at, r.created_at), reverse=True)
    conn = catalog._conn()
    out: list[str] = []
    seen: set[str] = set()
    for row in rows:
        try:
            rec = conn.execute("SELECT sid FROM sessions WHERE path=?", (row.path,)).fetchone()
            if rec is None:
                continue
            lo = rec[0] << _SID_SHIFT
            texts = conn.execute("SELECT text FROM content WHERE rowid >= ? AND rowid < ? AND kind = 'user'"
                                 " ORDER BY rowid DESC", (lo, lo + (1 << _SID_SHIFT))).fetchall()
        except sqlite3.Error:
            continue  # a catalog being rebuilt by another process: the next session may still read
        for (raw,) in texts:
            text = raw.strip()
            if not text or len(raw) >= _MAX_TEXT or text in seen:
                continue
            seen.add(text)
            out.append(text)
            if len(out) >= limit:
                return out
    return out
