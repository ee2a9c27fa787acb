"""``dsh-tui serve [--host 127.0.0.1] [--port 8765] [--root DIR]... [--token-file PATH] [-- COMMAND ARGS]``.

Serves the app to a browser (``dsh_tui.ui.serve``): the session browser by default, or what ``-- run``,
``-- resume ID`` or ``-- demo`` would open. Prints a URL to open, which carries a one-time ticket: it
opens one tab, and a fresh URL is printed for the next. A token of the user's own (reusable:
``/?token=...``) comes from ``--token-file PATH`` or ``$DSH_TUI_SERVE_TOKEN``, never from the command line
(where ``ps`` shows it to every user). Loopback only unless ``--host`` names another address (then a
warning says what that exposes). Needs the ``web`` extra (``pip install 'dsh-tui[web]'``: textual-serve
and aiohttp, imported by this command only).
"""

from __future__ import annotations

import argparse
import sys

HELP = "serve the app to a browser (private: loopback and one-time URLs)"
TOKEN_ENV = "DSH_TUI_SERVE_TOKEN"
MIN_TOKEN = 16
SERVABLE = ("run", "resume", "demo")  # commands that open the app (besides the browser: no command)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default=None,
                        help="address to listen on (default 127.0.0.1; any other exposes the app, see the warning)")
    parser.add_argument("--port", type=_port, default=8765, help="port (default 8765; 0 picks a free one)")
    parser.add_argument("--root", dest="roots", action="append", default=[], metavar="DIR",
                        help="the browser also lists the sessions under DIR (repeatable)")
    parser.add_argument("--token-file", metavar="PATH",
                        help=f"a file holding a reusable token (or ${TOKEN_ENV}); /?token=... then opens a tab")
    parser.add_argument("--token", help=argparse.SUPPRESS)  # refused: visible to every user in `ps`
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND ARGS",
                        help="serve `dsh-tui COMMAND ARGS` instead of the browser: run, resume ID, demo")


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port out of range 0-65535: {value}")
    return value


def app_command(args: argparse.Namespace) -> list[str]:
    """The ``dsh-tui`` arguments of each served app process (checked here, once, not in every tab)."""
    from dsh_tui.cli import check_roots, parse_args
    from dsh_tui.session.errors import UsageError

    command = list(args.command or [])
    if command[:1] == ["--"]:
        command = command[1:]
    if command and args.roots:
        raise UsageError("--root before -- is for the browser; give the command its own: "
                         f"dsh-tui serve -- {command[0]} ... --root DIR")
    check_roots(args.roots)
    if not command:
        return [arg for root in args.roots for arg in ("--root", root)]
    parsed = parse_args(command)  # a usage error is reported now, as the command itself would (exit 2)
    if parsed.command not in (None, *SERVABLE):
        raise UsageError(f"cannot serve `dsh-tui {parsed.command}`: it does not open the app "
                         f"(serve the browser, or one of: {', '.join(SERVABLE)})")
    if getattr(parsed, "headless", False):
        raise UsageError("cannot serve --headless: it prints an answer instead of opening the app")
    check_roots(getattr(parsed, "app_roots", None) or [])
    return command


def run(args: argparse.Namespace) -> int:
    import importlib.util

    from dsh_tui.session.errors import DshError, UsageError

    if args.token is not None:
        raise UsageError(f"--token on the command line is visible to every user (ps): use --token-file PATH "
                         f"or ${TOKEN_ENV}")
    if importlib.util.find_spec("textual_serve") is None:
        raise DshError("serve needs textual-serve: pip install 'dsh-tui[web]'")
    command = app_command(args)
    token = _token(args.token_file)
    host = (args.host or "127.0.0.1").strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]

    from dsh_tui.ui.serve import ServeOptions, check_serve_version, is_loopback, serve, url_host

    check_serve_version()

    if not is_loopback(host):
        import getpass

        _say(f"warning: listening on {host}, not on loopback: anyone who can reach this port and gets the URL "
             f"(one of its one-time tickets) can run shell commands on this machine as {getpass.getuser()}. The connection is "
             "plain HTTP: the token and everything shown travel unencrypted; use it only on a network you trust.")
    argv = app_argv(command)
    what = "dsh-tui " + " ".join(command) if command else "dsh-tui (the session browser)"
    options = ServeOptions(argv=argv, host=host, port=args.port, token=token, title="dsh-tui")

    shown_first: list[bool] = []

    def ready(port: int, ticket: str) -> None:
        from urllib.parse import quote

        shown = host
        if host in ("0.0.0.0", "::", ""):
            import socket

            shown = socket.gethostname()
        urls = [f"http://{url_host(shown)}:{port}/?ticket={quote(ticket)}"]
        if shown != host:
            urls.append(f"http://127.0.0.1:{port}/?ticket={quote(ticket)}")
        if not shown_first:
            shown_first.append(True)
            _say(f"serving {what}; open this URL in a browser (it opens one tab, and a fresh URL is printed "
                 "for the next; each tab runs its own app, closing it quits that app; Ctrl+C stops the server):")
        else:
            _say("the URL for the next tab:")
        for url in urls:
            print(url, flush=True)

    try:
        serve(options, ready)
    except OSError as err:
        raise DshError(f"cannot listen on {url_host(host)}:{args.port}: {err.strerror or err}") from None
    return 0


def app_argv(command: list[str]) -> list[str]:
    """Each tab's app process: this Python in isolated-path mode (``-P``: the server's cwd, a cloned
    repository, is not put on ``sys.path``, so its ``textual.py`` or ``dsh_tui/`` is never imported)."""
    return [sys.executable, "-P", "-m", "dsh_tui", *command]


def _token(path: str | None) -> str:
    """The user's own reusable token (``--token-file`` or ``$DSH_TUI_SERVE_TOKEN``), or "" for none."""
    import os

    from dsh_tui.session.errors import UsageError

    if path is not None:
        try:
            with open(os.path.expanduser(path), encoding="utf-8") as handle:
                token = handle.read(4096).strip()
        except (OSError, UnicodeDecodeError) as err:
            raise UsageError(f"cannot read --token-file {path}: {getattr(err, 'strerror', None) or err}") from None
        where = f"--token-file {path}"
    else:
        token = os.environ.get(TOKEN_ENV, "").strip()
        where = f"${TOKEN_ENV}"
        if not token:
            return ""
    if len(token) < MIN_TOKEN or any(c.isspace() or not c.isprintable() for c in token):
        raise UsageError(f"the token in {where} must be at least {MIN_TOKEN} printable characters without "
                         "spaces (it keeps the app private)")
    return token


def _say(msg: str) -> None:
    print(f"dsh-tui: {msg}", file=sys.stderr, flush=True)
