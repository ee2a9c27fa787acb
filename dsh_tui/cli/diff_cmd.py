"""``dsh-tui diff ID [--turn N] [--numbered]``: what a session's turns changed in the workspace, as a diff."""

from __future__ import annotations

import sys

HELP = "show the file changes of a session (or of one turn) as a diff"


def add_arguments(parser) -> None:
    parser.description = ("Print what a session's turns changed (turns undone since are left out), or with "
                          "--turn N what turn N changed, as a unified diff (--numbered: with line numbers).")
    parser.add_argument("session", metavar="ID|FILE", help="session id, a unique prefix of one, or its log file")
    parser.add_argument("--turn", type=int, metavar="N", help="only turn N")
    parser.add_argument("--numbered", action="store_true", help="each line with its old and new line numbers")
    parser.add_argument("--root", metavar="DIR", help="session root (default $DSH_HOME/sessions)")
    parser.add_argument("--backend", choices=("jsonl", "sqlite"), help="storage backend of the root")


def run(args) -> int:
    from dsh_tui.cli.fork_cmd import _resolve
    from dsh_tui.extensions.undo import ops

    store, sid = _resolve(args)
    text = ops.diff(store.inspect(sid).events, args.turn, numbered=args.numbered)
    if not text:
        print("no file changes recorded", file=sys.stderr)
        return 0
    sys.stdout.write(text)
    return 0
