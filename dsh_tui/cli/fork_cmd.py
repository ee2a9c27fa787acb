"""``dsh-tui fork ID|FILE [--at-turn N | --at-seq S] [--root DIR]``: fork a stored session, print the child id."""

from __future__ import annotations

HELP = "fork a session at a completed turn; prints the child id"


def add_arguments(parser) -> None:
    parser.description = (
        "Fork a stored session: the child starts with a copy of the parent's events up to the fork point "
        "(default: the end of the last completed turn). Prints the child session id."
    )
    parser.add_argument("session", metavar="ID|FILE", help="session id, a unique prefix of one, or the path of its session[.v4].jsonl[.zstd] log")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--at-turn", type=int, metavar="N", help="fork after turn N (the child ends at its turn/end)")
    where.add_argument("--at-seq", type=int, metavar="S", help="fork at event seq S (inclusive; must not be inside a turn)")
    parser.add_argument("--root", metavar="DIR", help="session root (default $DSH_HOME/sessions)")
    parser.add_argument("--backend", choices=("jsonl", "sqlite"),
                        help="storage backend of the root (default: detected from the root, else settings)")


def _resolve(args):
    """(store, session id) of the parent: an id, a unique id prefix, a session log file or its directory
    (the same resolution as resume and export)."""
    from dsh_tui.cli import check_roots
    from dsh_tui.store.ids import find_row, store_for

    check_roots([args.root] if args.root else [])
    row = find_row(args.session, [args.root] if args.root else [], include_default=not args.root)
    if args.backend and args.backend != ("sqlite" if "#" in row.path else "jsonl"):
        from dsh_tui.session.errors import UsageError

        raise UsageError(f"session {row.id} is stored in a {'SQLite' if '#' in row.path else 'JSONL'} root, "
                         f"not --backend {args.backend}")
    return store_for(row), row.id


def run(args) -> int:
    from dsh_tui.store import lock as locks
    from dsh_tui.store.lifecycle import fork

    store, sid = _resolve(args)
    # The parent is read, never written; holding its lock means no live writer is mid-turn in it (and
    # none can start) while the seed is copied: a session open elsewhere is refused, as run refuses it.
    with locks.acquire(store, sid):
        header = fork(store, sid, at_seq=args.at_seq, at_turn=args.at_turn)
    print(header["id"])
    return 0
