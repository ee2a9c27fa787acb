"""``dsh-tui sessions [--all] [--search TEXT] [--json] [--root DIR]...``: list sessions.

``--archived`` lists the archived sessions (``a`` in the browser archives one) instead; ``--unarchive ID``
(an id or a unique prefix) moves one back into the list.

Rows come from the files on disk; the catalog index fills in counts and titles (logs that are new or
changed are indexed before printing). Default scope: sessions of the current directory; ``--all``
lists every workspace. A session without a title shows its first prompt. Subagent children are
listed with ``--subagents``; without it, as in the browser, only those whose parent is not listed
anywhere (orphans), so no session is hidden.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dsh_tui.store.catalog import SearchHit

HELP = "list sessions (--all, --search TEXT, --json, --archived, --unarchive ID)"


def add_arguments(parser) -> None:
    parser.add_argument("--all", action="store_true", help="every workspace, not only the current directory")
    parser.add_argument("--search", metavar="TEXT", help="full-text search of messages and tool output")
    parser.add_argument("--json", action="store_true", help="print a JSON array of rows")
    parser.add_argument("--subagents", action="store_true",
                        help="include every subagent child (without it: only those whose parent is gone)")
    parser.add_argument("--archived", action="store_true", help="list the archived sessions instead")
    parser.add_argument("--unarchive", metavar="ID", help="move an archived session (id or unique prefix) back")
    parser.add_argument("--root", action="append", default=[], metavar="DIR",
                        help="also read sessions under DIR (repeatable; the default root is always read)")


def _row_json(row, hits=None) -> dict:
    d = {
        "id": row.id,
        "title": row.title,
        "first_prompt": row.prompt,
        "cwd": row.cwd,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        "turns": row.turns,
        "steps": row.steps,
        "events": row.events,
        "tokens": {"input": row.tokens_in, "output": row.tokens_out, "cache": row.tokens_cache,
                   "reasoning": row.tokens_reasoning},
        "state": row.state,
        "reason": row.reason,
        "parent": row.parent,
        "seed_length": row.seed_length,
        "fork_turn": row.fork_turn,
        "origin": row.origin,
        "path": _shown(row.path),
    }
    if hits is not None:
        d["hits"] = [{"seq": h.seq, "kind": h.kind, "snippet": h.snippet} for h in hits]
    return d


def _shown(path: str) -> str:
    """A path as text: bytes of a non-UTF-8 file name escaped (``\\xff``)."""
    import os

    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _when(ms: int) -> str:
    import datetime as dt

    if not ms:
        return "-"
    return dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M")


def _archived(roots) -> list:
    from dsh_tui.store.catalog import ARCHIVE_DIR, bucket_rows

    rows = []
    for root in roots:
        rows += bucket_rows(root, ARCHIVE_DIR)
    return rows


def _unarchive(roots, prefix: str) -> int:
    import sys

    from dsh_tui.store.catalog import restore

    rows = [r for r in _archived(roots) if r.id and r.id.startswith(prefix)]
    exact = [r for r in rows if r.id == prefix]
    rows = exact or rows
    if not rows:
        print(f"no archived session {prefix!r} (dsh-tui sessions --archived lists them)", file=sys.stderr)
        return 1
    if len(rows) > 1:
        print(f"{prefix!r} matches {len(rows)} archived sessions: "
              + ", ".join(sorted(r.id for r in rows if r.id)), file=sys.stderr)
        return 1
    try:
        dest = restore(rows[0])
    except Exception as err:  # noqa: BLE001 - one line, no traceback
        print(f"cannot unarchive {rows[0].id}: {err}", file=sys.stderr)
        return 1
    print(f"unarchived {rows[0].id} to {_shown(str(dest))}")
    return 0


def parent_label(parent: str, by_id: dict) -> str:
    """How a row names its parent: a short id that tells ids apart (a dsh ``session-…`` id keeps its
    distinctive part, not the common prefix), and the parent's title when it is listed and has one."""
    row = by_id.get(parent)
    title = getattr(row, "title", None) if row is not None else None  # a real title, not the first prompt
    short = parent.removeprefix("session-")[:8] if parent.startswith("session-") else parent[:8]
    return f"{short} “{title}”" if title else short


def run(args) -> int:
    import json
    import os
    import sys

    from dsh_tui.cli import check_roots
    from dsh_tui.store.catalog import Catalog, resolve_roots, sort_rows, workspace_rows

    check_roots(args.root)
    if args.unarchive:
        return _unarchive(resolve_roots(args.root), args.unarchive)
    cat = Catalog(resolve_roots(args.root))
    try:
        rows = cat.refresh() if not args.archived else _archived(cat.roots)
        cwd = os.getcwd()
        ids = {r.id for r in rows if r.id}
        if not args.subagents:  # as the browser: a child under its parent, an orphan on its own
            rows = [r for r in rows if not r.is_subagent or r.parent not in ids]
        by_id = {r.id: r for r in rows if r.id}
        if not args.all:
            here = {id(r) for r in workspace_rows(rows, cwd)}
            rows = [r for r in rows if id(r) in here or r.state == "unreadable" and r.cwd is None]
        rows = sort_rows(rows)
        hits_by_path: dict[str, list[SearchHit]] | None = None  # None: no search
        if args.search:
            hits = cat.search(args.search, paths=[r.path for r in rows], limit=1000) if not args.archived else []
            hits_by_path = {}
            for h in hits:
                hits_by_path.setdefault(h.path, []).append(h)
            rows = [r for r in rows if r.path in hits_by_path]
    finally:
        cat.close()
    out = sys.stdout
    if args.json:
        data = [_row_json(r, hits_by_path.get(r.path) if hits_by_path is not None else None) for r in rows]
        out.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
        return 0
    if not rows:
        scope = "any workspace" if args.all else cwd
        what = "archived sessions" if args.archived else "sessions"
        print(f"no {what} in {scope}" + (f" matching {args.search!r}" if args.search else ""), file=sys.stderr)
        return 0
    width = max(38, *(len(r.id or "?") for r in rows))  # a long ``session-…`` id does not shift the columns
    for r in rows:
        title = r.display_title or "(untitled)"
        state = r.state if not r.reason or r.state != "unreadable" else f"unreadable: {r.reason}"
        turns = f"{r.turns:>4} turn{'s' if r.turns != 1 else ' '}"
        line = f"{(r.id or '?'):<{width}} {_when(r.updated_at):<16} {turns}  {state:<14} {title}"
        if args.all:
            line += f"  [{r.cwd or '-'}]"
        if r.parent and not r.is_subagent:
            after = f" after turn {r.fork_turn}" if r.fork_turn is not None else ""
            line += f"  (fork of {parent_label(r.parent, by_id)}{after})"
        elif r.parent:
            line += f"  (subagent of {parent_label(r.parent, by_id)})"
        out.write(line + "\n")
        if hits_by_path is not None:
            for h in hits_by_path.get(r.path, [])[:3]:
                out.write(f"    #{h.seq} {h.kind}: {h.snippet}\n")
    return 0
