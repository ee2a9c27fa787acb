"""Which sessions the browser lists, as ``ListEntry`` rows: its rows scoped to this workspace (or all),
filtered by the typed words, or grouped under the content-search hits; forks under their parent
(:mod:`.lineage`). No widgets: ``BrowserScreen.rebuild`` shows what this returns. The caches keep a
keystroke over 10,000 rows cheap: a scope, a sort and the lower-cased haystacks are computed once per row set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dsh_tui.store import catalog as cat
from dsh_tui.store.catalog import SearchHit, SessionRow
from dsh_tui.ui.widgets.sessionlist import ListEntry

from .lineage import lineage

_NO_WORKSPACE_STATES = (cat.UNREADABLE, cat.INDEXING)  # listed in every scope (workspace unknown yet)


class Listing:
    """The browser's rows as they are listed for ``cwd`` ("this workspace")."""

    def __init__(self, cwd: str) -> None:
        self.cwd = cwd
        self.cwds = cat.workspace_names(cwd)
        self.ids: set[str] = set()  # the session ids listed (a subagent under a listed parent is nested)
        self.has_lineage = False
        self.version = 0
        self._scope_cache: dict[tuple, list[SessionRow]] = {}
        self._sort_cache: tuple[Any, list[SessionRow]] = (None, [])
        self._hay_cache: tuple[Any, list[tuple[SessionRow, str]]] = (None, [])

    def rows_changed(self, rows: list[SessionRow]) -> None:
        self.version += 1
        self._scope_cache.clear()  # its lists hold the previous rows (the listing's, before revalidation)
        self.ids = {r.id for r in rows if r.id}
        self.has_lineage = any(r.parent for r in rows)

    def scoped(self, rows: list[SessionRow], all_scope: bool) -> list[SessionRow]:
        """``rows`` in this workspace (``all_scope``: in every one), subagents under a listed parent left out."""
        key = (id(rows), len(rows), all_scope, self.version)
        cached = self._scope_cache.get(key)
        if cached is not None:
            return cached
        out = [r for r in rows if not r.is_subagent or r.parent not in self.ids]
        if not all_scope:
            here = {id(r) for r in cat.workspace_rows(out, self.cwd)}
            out = [r for r in out if id(r) in here or (r.cwd is None and r.state in _NO_WORKSPACE_STATES)]
        if len(self._scope_cache) > 8:
            self._scope_cache.clear()
        self._scope_cache[key] = out
        return out

    def filtered(self, rows: list[SessionRow], all_scope: bool, text: str,
                 expanded: set[str]) -> Sequence[ListEntry]:
        """The scoped rows whose haystack holds every typed word, newest first, forks under their parent."""
        scoped = self.scoped(rows, all_scope)
        words = text.lower().split()
        if not words:
            found = self.sorted(scoped)
        else:
            # same rule as catalog.filter_rows, over lower-cased haystacks cached per row set
            hays = self.hays(scoped)
            if len(words) == 1:
                (w,) = words
                found = [r for r, hay in hays if w in hay]
            else:
                found = [r for r, hay in hays if all(w in hay for w in words)]
        return lineage(found, rows, expanded, self.ids, has_lineage=self.has_lineage)

    def sorted(self, rows: list[SessionRow]) -> list[SessionRow]:
        key = (id(rows), self.version)
        if self._sort_cache[0] != key:
            self._sort_cache = (key, cat.sort_rows(rows))
        return self._sort_cache[1]

    def hays(self, rows: list[SessionRow]) -> list[tuple[SessionRow, str]]:
        key = (id(rows), self.version)
        if self._hay_cache[0] != key:
            self._hay_cache = (key, [(r, cat.haystack(r)) for r in self.sorted(rows)])
        return self._hay_cache[1]

    def search_entries(self, rows: list[SessionRow], all_scope: bool, hits: list[SearchHit]) -> list[ListEntry]:
        """Content-search hits under their session (20 at most each), in the scope (subagents too)."""
        scoped = {r.path: r for r in self.scoped(rows, all_scope)}
        scoped.update({r.path: r for r in rows if r.is_subagent and (all_scope or r.cwd in self.cwds)})
        out: list[ListEntry] = []
        by_path: dict[str, list[SearchHit]] = {}
        for h in hits:
            if h.path in scoped:
                by_path.setdefault(h.path, []).append(h)
        for path, found in by_path.items():
            out.append(ListEntry(scoped[path]))
            for h in found[:20]:
                prefix = f"{h.kind}: "
                out.append(ListEntry(scoped[path], hit_seq=h.seq, hit_text=prefix + (h.text or h.snippet),
                                     hit_marks=tuple((a + len(prefix), b + len(prefix)) for a, b in h.marks)))
        return out
