"""``dsh-tui fork ID|FILE [--at-turn N | --at-seq S] [--root DIR]``: fork a stored session, print the child id."""

from __future__ import annotations

HELP = "fork a session at a completed turn; prints the child id"


def add_arguments(parser) -> None:
    parser.description = (
        "Fork a stored session: the child starts with a copy of the parent's events up to the fork point "
        "(default: the end of the last completed turn). Prints the child session id."
    )
    parser.add_argument("session", metavar="ID|FILE", help="session id, or the path of a session.jsonl[.zstd] log")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--at-turn", type=int, metavar="N", help="fork after turn N (the child ends at its turn/end)")
    where.add_argument("--at-seq", type=int, metavar="S", help="fork at event seq S (inclusive; must not be inside a turn)")
    parser.add_argument("--root", metavar="DIR", help="session root (default $DSH_HOME/sessions)")
    parser.add_argument("--backend", choices=("jsonl", "sqlite"),
                        help="storage backend of the root (default: detected from the root, else settings)")


def _resolve(args):
    from pathlib import Path

    from dsh_tui.session.errors import DshError
    from dsh_tui.store.open import open_store

    target = Path(args.session)
    if target.is_file() and target.name in ("session.jsonl", "session.jsonl.zstd"):
        from dsh_tui.store.jsonl import read_header

        header = read_header(target)
        if header is None:
            raise DshError(f"{target}: first line is not a session header")
        root = target.resolve().parents[2]
        comp = "zstd" if target.name.endswith(".zstd") else "none"
        return open_store(root, backend="jsonl", compression=comp), header["id"]
    return open_store(args.root, backend=args.backend), args.session


def run(args) -> int:
    from dsh_tui.store.lifecycle import fork

    store, sid = _resolve(args)
    header = fork(store, sid, at_seq=args.at_seq, at_turn=args.at_turn)
    print(header["id"])
    return 0
