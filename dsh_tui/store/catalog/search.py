"""Full-text search of the catalog's FTS5 ``content`` table: hits with the event seq they came from."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

import orjson

from .filters import fts_query
from .rows import SearchHit, _marked


def search_content(conn: sqlite3.Connection, text: str, *, limit: int = 200, paths: Iterable[str] | None = None) -> list[SearchHit]:
    """Full-text search over messages and tool output; each hit names the event seq it came from."""
    query = fts_query(text)
    if not query:
        return []
    try:
        if paths is None:
            cur = conn.execute(
                "SELECT c.rowid >> 32, c.seq, c.kind, snippet(content, 0, char(2), char(3), '…', 10)"
                " FROM content c WHERE content MATCH ? ORDER BY rank LIMIT ?",
                (query, limit),
            )
        else:
            # the sessions asked about first, then the best hits among them: the shared catalog holds every
            # root ever listed, and its best hits overall may all be elsewhere
            cur = conn.execute(
                "SELECT c.rowid >> 32, c.seq, c.kind, snippet(content, 0, char(2), char(3), '…', 10)"
                " FROM content c WHERE content MATCH ? AND (c.rowid >> 32) IN"
                " (SELECT sid FROM sessions WHERE path IN (SELECT value FROM json_each(?)))"
                " ORDER BY rank LIMIT ?",
                (query, orjson.dumps([p for p in paths if _utf8(p)]).decode(), limit),
            )
        hits = cur.fetchall()
    except sqlite3.OperationalError:
        return []
    sids = {h[0] for h in hits}
    info = {}
    if sids:
        q = f"SELECT sid, path, id FROM sessions WHERE sid IN ({', '.join('?' * len(sids))})"
        info = {r[0]: (r[1], r[2]) for r in conn.execute(q, list(sids))}
    allowed = set(paths) if paths is not None else None
    out = []
    for sid, seq, kind, snip in hits:
        if sid not in info:
            continue
        path, sid_id = info[sid]
        if allowed is not None and path not in allowed:
            continue
        text, marks = _marked(snip)
        bracketed, at = [], 0
        for a, b in marks:
            bracketed += [text[at:a], "[", text[a:b], "]"]
            at = b
        bracketed.append(text[at:])
        out.append(SearchHit(path=path, id=sid_id, seq=int(seq), kind=kind, snippet="".join(bracketed), text=text,
                             marks=marks))
        if len(out) >= limit:
            break
    return out


def _utf8(path: str) -> bool:
    """Only a UTF-8 path is a key of the index (a non-UTF-8 name is listed, never indexed)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
