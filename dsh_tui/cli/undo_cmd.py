"""``dsh-tui undo ID [--turn N] [--force] [--dry-run]``: put back the files a session's turns changed.

Without ``--turn``: the last turn that changed files (and was not undone yet); with ``--turn N``: every turn
from N on, so the workspace is as it was before turn N. A file changed since the turn (by you, or by a later
command) is not overwritten: the undo is refused, listing those files (exit 1), unless ``--force``. The
session log records the undo (``workspace-changes/undo``). See docs/undo.md.
"""

from __future__ import annotations

import sys

HELP = "put back the files a session's last turn (or turns from N on) changed"


def add_arguments(parser) -> None:
    parser.description = (
        "Undo a session's file changes: the last turn that changed files, or with --turn N every turn from N on "
        "(the workspace as it was before turn N). Files changed since the turn are never overwritten silently: "
        "the undo is refused, listing them, unless --force.")
    parser.add_argument("session", metavar="ID|FILE", help="session id, a unique prefix of one, or its log file")
    parser.add_argument("--turn", type=int, metavar="N", help="put the workspace back to before turn N")
    parser.add_argument("--force", action="store_true", help="overwrite files changed since the turn too")
    parser.add_argument("--dry-run", action="store_true", help="only list what would be put back")
    parser.add_argument("--root", metavar="DIR", help="session root (default $DSH_HOME/sessions)")
    parser.add_argument("--backend", choices=("jsonl", "sqlite"), help="storage backend of the root")


def run(args) -> int:
    from dsh_tui.cli.fork_cmd import _resolve
    from dsh_tui.extensions.undo import ops

    if args.turn is not None and args.turn < 1:
        from dsh_tui.session.errors import UsageError

        raise UsageError("--turn must be 1 or more")
    store, sid = _resolve(args)
    events = store.inspect(sid).events
    plan = ops.plan(events, args.turn)
    print(plan.describe(limit=10_000))
    if args.dry_run:
        return 0
    if plan.conflicts and not args.force:
        print("dsh-tui: undo refused: changed since the turn (--force overwrites them): "
              + ", ".join(plan.conflicts), file=sys.stderr)
        return 1
    plan, done = ops.undo_stored(store, sid, args.turn, force=args.force)
    print(f"undone: {len(done)} file{'s' if len(done) != 1 else ''}")
    return 0
