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
    import stat
    import sys
    from pathlib import Path

    from dsh_tui.cli import check_roots
    from dsh_tui.export import export_session

    check_roots(args.root)
    text = export_session(args.session, args.format, roots=args.root, reasoning=args.reasoning)
    if args.output:
        from dsh_tui.cli import describe_os_error
        from dsh_tui.session.errors import DshError
        from dsh_tui.store.fsio import write_atomic

        out = Path(args.output)
        data = text.encode("utf-8", errors="surrogatepass")
        try:
            if out.is_dir():
                raise IsADirectoryError
            if out.exists() and not out.is_file():  # a terminal, /dev/null or a pipe (/dev/stdout): in place
                _write_in_place(out, data, args.output)
            elif not out.parent.is_dir():
                raise FileNotFoundError(2, "No such file or directory")
            else:  # whole or not at all: a failed write (a full disk, a file size limit) leaves no part
                # private by default (it is session content); a file replaced keeps the mode its owner gave it
                mode = stat.S_IMODE(out.stat().st_mode) if out.is_file() else 0o600
                write_atomic(out, data, mode=mode, fsync=False)
        except IsADirectoryError:
            raise DshError(f"cannot write {args.output}: it is a directory (give a file name)") from None
        except OSError as err:
            why = describe_os_error(err) if err.filename is None else (err.strerror or type(err).__name__)
            raise DshError(f"cannot write {args.output}: {why}") from None
        # one line on stderr (stdout stays for the export itself when there is no -o)
        print(f"Exported session {args.session} ({args.format}) to {out.resolve()}", file=sys.stderr)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return 0


def _write_in_place(out, data: bytes, shown: str) -> None:
    """Write to a character device (a terminal, ``/dev/null``) or a pipe with a reader. A pipe nobody reads
    is refused at once (it would block forever); a block device or a socket is no place for an export."""
    import errno
    import os
    import stat

    from dsh_tui.session.errors import DshError

    mode = os.stat(out).st_mode
    if not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
        kind = "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a file"
        raise DshError(f"cannot write {shown}: it is {kind} (give a file name)")
    try:
        fd = os.open(out, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        if err.errno == errno.ENXIO:
            raise DshError(f"cannot write {shown}: it is a pipe that no process is reading") from None
        raise
    try:
        os.set_blocking(fd, True)  # a reader is there: wait for it as any writer of a pipe does
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
