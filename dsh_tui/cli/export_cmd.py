"""``dsh-tui export ID --format md|html|jsonl [-o FILE] [--reasoning] [--root DIR]...``"""

from __future__ import annotations

HELP = "export a session as md, html or jsonl"


def add_arguments(parser) -> None:
    parser.add_argument("session", metavar="ID", help="session id (or a unique prefix of one)")
    parser.add_argument("--format", "-f", choices=("md", "html", "jsonl"), default="md", help="output format")
    parser.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")
    parser.add_argument("--reasoning", action="store_true", help="include the model's reasoning (md, html)")
    parser.add_argument("--root", action="append", default=[], metavar="DIR",
                        help="also read sessions under DIR (repeatable; the default root is always read)")


def run(args) -> int:
    import sys
    from pathlib import Path

    from dsh_tui.export import export_session

    text = export_session(args.session, args.format, roots=args.root, reasoning=args.reasoning)
    if args.output:
        out = Path(args.output)
        out.write_text(text, encoding="utf-8")
        # one line on stderr (stdout stays for the export itself when there is no -o)
        print(f"Exported session {args.session} ({args.format}) to {out.resolve()}", file=sys.stderr)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return 0
