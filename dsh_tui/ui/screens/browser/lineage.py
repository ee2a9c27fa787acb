"""The browser's lineage: forks listed under their parent (with the fork point), subagent sessions only
under an expanded parent."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dsh_tui.store import catalog as cat
from dsh_tui.store.catalog import SessionRow
from dsh_tui.ui.widgets.sessionlist import ListEntry, PlainEntries


def lineage(rows: list[SessionRow], every: list[SessionRow], expanded: Iterable[str], ids: set[str], *,
            has_lineage: bool) -> Sequence[ListEntry]:
    """Forks under their parent (with the fork point); subagents only under an expanded parent.

    ``rows`` are the visible rows, ``every`` all the rows listed (subagents of an ``expanded`` parent come
    from there), ``ids`` the ids of ``every``; ``has_lineage``: some row has a parent. Linear in the rows
    (this runs on every filter keystroke over up to ~10k rows)."""
    present = {r.id for r in rows if r.id} if has_lineage else ()
    by_parent: dict[str, list[SessionRow]] = {}
    top: list[SessionRow] = []
    for r in rows:
        parent = r.parent
        if parent is None:
            top.append(r)
        elif r.origin != "subagent":
            if parent in present:
                by_parent.setdefault(parent, []).append(r)
            else:
                top.append(r)
        elif parent not in ids:
            top.append(r)  # an orphan subagent session stays visible
    for pid in expanded:
        subs = [r for r in every if r.parent == pid and r.origin == "subagent"]
        if subs:
            by_parent.setdefault(pid, []).extend(cat.sort_rows(subs))
    if not by_parent:
        return PlainEntries(top)  # no lineage to show: entries are made only when read
    out: list[ListEntry] = []

    def add(r: SessionRow, depth: int, seen: frozenset[str]) -> None:
        fork = bool(depth) and r.origin != "subagent"
        out.append(ListEntry(r, depth, fork_point=r.seed_length if fork else None,
                             fork_turn=r.fork_turn if fork else None))
        children = by_parent.get(r.id) if r.id else None
        if children and r.id:
            seen = seen | {r.id}
            for child in children:
                if child.id not in seen:
                    add(child, depth + 1, seen)

    for r in top:
        add(r, 0, frozenset())
    return out
