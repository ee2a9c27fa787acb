"""``dsh-tui sessions [--all] [--search TEXT] [--json] [--root DIR]...``: list sessions.

Rows come from the files on disk; the catalog index fills in counts and titles (logs that are new or
changed are indexed before printing). Default scope: sessions of the current directory; ``--all``
lists every workspace. A session without a title shows its first prompt. Subagent children are
listed with ``--subagents``; without it, as in the browser, only those whose parent is not listed
anywhere (orphans), so no session is hidden.
"""

from __future__ import annotations

HELP = "list sessions (--all, --search TEXT, --json)"


def add_arguments(parser) -> None:
    parser.add_argument("--all", action="store_true", help="every workspace, not only the current directory")
    parser.add_argument("--search", metavar="TEXT", help="full-text search of messages and tool output")
    parser.add_argument("--json", action="store_true", help="print a JSON array of rows")
    parser.add_argument("--subagents", action="store_true",
                        help="include every subagent child (without it: only those whose parent is gone)")
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


def run(args) -> int:
    import json
    import os
    import sys

    from dsh_tui.cli import check_roots
    from dsh_tui.store.catalog import Catalog, resolve_roots, sort_rows, workspace_rows

    check_roots(args.root)
    cat = Catalog(resolve_roots(args.root))
    try:
        rows = cat.refresh()
        cwd = os.getcwd()
        ids = {r.id for r in rows if r.id}
        if not args.subagents:  # as the browser: a child under its parent, an orphan on its own
            rows = [r for r in rows if not r.is_subagent or r.parent not in ids]
        if not args.all:
            here = {id(r) for r in workspace_rows(rows, cwd)}
            rows = [r for r in rows if id(r) in here or r.state == "unreadable" and r.cwd is None]
        rows = sort_rows(rows)
        hits_by_path = None
        if args.search:
            hits = cat.search(args.search, paths=[r.path for r in rows], limit=1000)
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
        print(f"no sessions in {scope}" + (f" matching {args.search!r}" if args.search else ""), file=sys.stderr)
        return 0
    for r in rows:
        title = r.display_title or "(untitled)"
        state = r.state if not r.reason or r.state != "unreadable" else f"unreadable: {r.reason}"
        line = f"{(r.id or '?'):<38} {_when(r.updated_at):<16} {r.turns:>4} turns  {state:<14} {title}"
        if args.all:
            line += f"  [{r.cwd or '-'}]"
        if r.parent and not r.is_subagent:
            after = f" after turn {r.fork_turn}" if r.fork_turn is not None else ""
            line += f"  (fork of {r.parent[:8]}{after})"
        elif r.parent:
            line += f"  (subagent of {r.parent[:8]})"
        out.write(line + "\n")
        if hits_by_path is not None:
            for h in hits_by_path.get(r.path, [])[:3]:
                out.write(f"    #{h.seq} {h.kind}: {h.snippet}\n")
    return 0
