"""``dsh-tui serve [--host 127.0.0.1] [--port 8765] [--root DIR]... [--token TOKEN] [-- COMMAND ARGS]``.

Serves the app to a browser (``dsh_tui.ui.serve``): the session browser by default, or what ``-- run``,
``-- resume ID`` or ``-- demo`` would open. Prints the URL to open, which carries the token. Loopback
only unless ``--host`` names another address (then a warning says what that exposes). Needs the ``web``
extra (``pip install 'dsh-tui[web]'``: textual-serve and aiohttp, imported by this command only).
"""

from __future__ import annotations

import argparse
import sys

HELP = "serve the app to a browser (private: loopback and a token)"
SERVABLE = ("run", "resume", "demo")  # commands that open the app (besides the browser: no command)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default=None,
                        help="address to listen on (default 127.0.0.1; any other exposes the app, see the warning)")
    parser.add_argument("--port", type=_port, default=8765, help="port (default 8765; 0 picks a free one)")
    parser.add_argument("--root", dest="roots", action="append", default=[], metavar="DIR",
                        help="the browser also lists the sessions under DIR (repeatable)")
    parser.add_argument("--token", help="the token every URL must carry (default: a new random one)")
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
    import secrets

    from dsh_tui.cli import require_text
    from dsh_tui.session.errors import DshError, UsageError

    if importlib.util.find_spec("textual_serve") is None:
        raise DshError("serve needs textual-serve: pip install 'dsh-tui[web]'")
    command = app_command(args)
    token = args.token if args.token is not None else secrets.token_urlsafe(24)
    require_text(token, "--token")
    if not token.strip() or any(c.isspace() or not c.isprintable() for c in token):
        raise UsageError("--token must be non-empty printable text without spaces (it keeps the app private)")
    host = args.host or "127.0.0.1"

    from dsh_tui.ui.serve import ServeOptions, is_loopback, serve, url_host

    if not is_loopback(host):
        import getpass

        _say(f"warning: listening on {host}, not on loopback: anyone who can reach this port and gets the URL "
             f"(its token) can run shell commands on this machine as {getpass.getuser()}. The connection is "
             "plain HTTP: the token and everything shown travel unencrypted; use it only on a network you trust.")
    argv = [sys.executable, "-m", "dsh_tui", *command]
    what = "dsh-tui " + " ".join(command) if command else "dsh-tui (the session browser)"
    options = ServeOptions(argv=argv, host=host, port=args.port, token=token, title="dsh-tui")

    def ready(port: int) -> None:
        from urllib.parse import quote

        shown = host
        if host in ("0.0.0.0", "::", ""):
            import socket

            shown = socket.gethostname()
        urls = [f"http://{url_host(shown)}:{port}/?token={quote(token)}"]
        if shown != host:
            urls.append(f"http://127.0.0.1:{port}/?token={quote(token)}")
        _say(f"serving {what}; open this URL in a browser (each tab runs its own app, closing it quits "
             "that app; Ctrl+C stops the server):")
        for url in urls:
            print(url, flush=True)

    try:
        serve(options, ready)
    except OSError as err:
        raise DshError(f"cannot listen on {url_host(host)}:{args.port}: {err.strerror or err}") from None
    return 0


def _say(msg: str) -> None:
    print(f"dsh-tui: {msg}", file=sys.stderr, flush=True)
