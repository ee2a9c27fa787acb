"""Command line entry point: ``dsh-tui [COMMAND] ...``.

Each command lives in its own module ``dsh_tui.cli.<name>_cmd`` exposing ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``; modules are imported lazily so that
``dsh-tui log ...`` never pays for textual's import. Expected failures raise ``DshError`` and are
printed as one line, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import io
import sys
from collections.abc import Iterable, Iterator

from dsh_tui import __version__
from dsh_tui.session.errors import DshError

# name -> module; order is the order of ``dsh-tui --help``.
COMMANDS: dict[str, str] = {
    "run": "dsh_tui.cli.run_cmd",
    "demo": "dsh_tui.cli.demo_cmd",
    "resume": "dsh_tui.cli.resume_cmd",
    "fork": "dsh_tui.cli.fork_cmd",
    "undo": "dsh_tui.cli.undo_cmd",
    "diff": "dsh_tui.cli.diff_cmd",
    "sessions": "dsh_tui.cli.sessions_cmd",
    "export": "dsh_tui.cli.export_cmd",
    "log": "dsh_tui.cli.log_cmd",
    "plugins": "dsh_tui.cli.plugins_cmd",
    "serve": "dsh_tui.cli.serve_cmd",
    "acp": "dsh_tui.cli.acp_cmd",
    "mcp": "dsh_tui.cli.mcp_cmd",
}

# One-line help, kept here so ``--help`` does not import every command module.
SUMMARIES: dict[str, str] = {
    "run": "start a new session in the current directory (--headless prints the answer)",
    "demo": "offline tour on a temporary root; needs no API key and no network",
    "resume": "continue a session by id or --last",
    "fork": "fork a session at a completed turn; prints the child id",
    "undo": "put back the files a session's last turn (or --turn N on) changed",
    "diff": "show the file changes of a session (or --turn N) as a diff",
    "sessions": "list sessions (--all, --search TEXT, --json)",
    "export": "export a session as md, html or jsonl",
    "log": "low-level log tools: check, cat, messages, repair",
    "plugins": "list the plugins found, where from, loaded or failed (--json)",
    "serve": "serve the app to a browser (loopback and a token; -- run / resume ID / demo)",
    "acp": "serve an Agent Client Protocol agent on stdin/stdout (editors, ACP front ends)",
    "mcp": "manage MCP servers in settings.toml: add, remove, get, list (with each server's tools), login, logout",
}


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (``dsh-tui: ...``) and exit 2, like every
    other refusal of the command line (``--help`` still prints the full usage)."""

    def error(self, message: str):  # type: ignore[override]
        where = self.prog.removeprefix("dsh-tui").strip()
        self.exit(2, f"dsh-tui: {where + ': ' if where else ''}{one_line(message)} (see {self.prog} --help)\n")


def _available(only: Iterable[str] | None = None) -> dict[str, str]:
    out = {}
    for name, module in COMMANDS.items():
        if (only is None or name in only) and importlib.util.find_spec(module) is not None:
            out[name] = module
    return out


def build_parser(only: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The command line; ``only``: build just these commands' subparsers (see ``parse_args``)."""
    parser = _Parser(
        prog="dsh-tui",
        description="A terminal home for DeepSeek Harness sessions. With no command, opens the app.",
    )
    parser.add_argument("--version", action="version", version=f"dsh-tui {__version__}")
    parser.add_argument(
        "--root", dest="app_roots", action="append", default=[], metavar="DIR",
        help="with no COMMAND: also browse the sessions under DIR (repeatable; the default root is always shown)",
    )
    add_plugin_arguments(parser, dest_prefix="app_")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, module in _available(only).items():
        p = sub.add_parser(name, help=SUMMARIES.get(name, ""), description=SUMMARIES.get(name, ""))
        mod = importlib.import_module(module)
        mod.add_arguments(p)
        p.set_defaults(_module=mod)
    return parser


def add_plugin_arguments(parser: argparse.ArgumentParser, dest_prefix: str = "") -> None:
    """``--plugin MODULE`` (repeatable), ``--strict-plugins``, ``--check-requests``, ``--mcp``, ``--sandbox`` and
    ``--allow-escalation`` (commands that open an agent: the app, ``run``, ``resume``, ``demo``)."""
    parser.add_argument("--plugin", dest=f"{dest_prefix}plugins", action="append", default=[], metavar="MODULE",
                        help="load the plugin MODULE (or MODULE:OBJECT) too (repeatable)")
    parser.add_argument("--strict-plugins", dest=f"{dest_prefix}strict_plugins", action="store_true",
                        help="a plugin that fails to load is fatal (default: reported, the rest still load)")
    parser.add_argument("--check-requests", dest=f"{dest_prefix}check_requests", action="store_true",
                        help="check every model request against the session log (the request invariant)")
    parser.add_argument("--mcp", dest=f"{dest_prefix}mcp", action="append", default=[], metavar="NAME=COMMAND",
                        type=_mcp_value,
                        help="also connect the MCP server NAME: a command line (stdio) or an http(s) URL "
                             "(repeatable; see [mcp.servers.<name>] in settings.toml)")
    parser.add_argument("--sandbox", dest=f"{dest_prefix}sandbox", choices=("auto", "bwrap", "off"), default=None,
                        help="run commands in the OS sandbox: auto (default: where the machine supports it), bwrap, "
                             "off (see [sandbox] in settings.toml, docs/sandbox.md)")
    parser.add_argument("--allow-escalation", dest=f"{dest_prefix}allow_escalation", action="store_true",
                        help="allow a command's escalation out of the sandbox without asking (headless: refused "
                             "otherwise)")
    parser.add_argument("--trust", dest=f"{dest_prefix}trust", action="store_true",
                        help="trust the workspace: its project plugins (.dsh-tui/plugins/) load; remembered, "
                             "as answering the app's question")


def _mcp_value(value: str) -> str:
    """``--mcp`` values are checked when parsed (a usage error, exit 2); the runtime parses them again."""
    from dsh_tui.extensions.mcp.config import McpConfigError, parse_cli

    try:
        parse_cli(value)
    except McpConfigError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix(f"--mcp {value!r}: ")) from None
    return value


def _apply_plugin_options(args: argparse.Namespace) -> None:
    modules = list(getattr(args, "app_plugins", None) or []) + list(getattr(args, "plugins", None) or [])
    strict = bool(getattr(args, "app_strict_plugins", False) or getattr(args, "strict_plugins", False))
    check = bool(getattr(args, "app_check_requests", False) or getattr(args, "check_requests", False))
    mcp = list(getattr(args, "app_mcp", None) or []) + list(getattr(args, "mcp", None) or [])
    sandbox = getattr(args, "sandbox", None) or getattr(args, "app_sandbox", None)
    escalate = bool(getattr(args, "app_allow_escalation", False) or getattr(args, "allow_escalation", False))
    if sandbox or escalate:
        from dsh_tui.runtime.sandboxing import set_sandbox_options

        set_sandbox_options(sandbox, escalate)
    trust = bool(getattr(args, "app_trust", False) or getattr(args, "trust", False))
    if modules or strict or check or mcp or trust:  # else nothing to import (``dsh-tui log`` loads no runtime)
        from dsh_tui.runtime.host import set_plugin_options

        set_plugin_options(tuple(modules), strict, check, tuple(mcp), trust)


def parse_args(argv: list[str]) -> argparse.Namespace:
    """``build_parser().parse_args(argv)``, without building every command's parser when one is enough.

    Building all of them imports every command module and formats ~50 arguments (15-40 ms, on the
    way to the app's first frame). A command line that names a command (its first word that is one)
    or none is parsed by a parser holding only that command; help, --version and anything that parser
    rejects are parsed again by the full one, so the output and errors are exactly the full parser's."""
    if not argv:  # plain ``dsh-tui``: what the parser returns, without building one (argparse's gettext
        return argparse.Namespace(app_roots=[], app_plugins=[], app_strict_plugins=False,  # lookups alone
                                  app_check_requests=False, app_mcp=[], app_sandbox=None,  # are ~5 ms)
                                  app_allow_escalation=False, app_trust=False, command=None)
    if not any(a in ("-h", "--help", "--version") for a in argv):
        named = [a for a in argv if a in COMMANDS][:1]
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                return build_parser(only=named).parse_args(argv)
        except SystemExit:
            pass
    return build_parser().parse_args(argv)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Around importing and running the app: no cyclic GC pass until its first frame (``DshApp.run_app``
    resumes it then; leaving the block resumes it in any case). Importing Textual and building the
    first screen allocate long-lived objects (modules, classes, styles) that trigger about 100
    young-generation passes (35-60 ms of the start-up here); at the first frame only ~1-2.5k objects
    of ~45k are unreachable (frozen with the rest: a fraction of a MB kept)."""
    import gc

    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def require_text(value: str, what: str) -> str:
    """Refuse (exit 2, before anything is written) text a session log cannot hold losslessly: a command
    line argument holding bytes that are not UTF-8 (Python keeps them as lone surrogates)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        from dsh_tui.session.errors import UsageError

        bad = value[err.start:err.end].encode("utf-8", "surrogateescape")
        raise UsageError(f"{what} is not valid UTF-8 (byte {bad[:1].hex()} at character {err.start}); "
                         "nothing was written") from None
    return value


def require_root(root) -> None:
    """Refuse (exit 2, before anything is written) a session root whose name is not UTF-8 (``--root`` or
    ``$DSH_HOME``): the catalog lists a log under it as unreadable, so resume, export and fork would refuse
    the session ``run`` had just written."""
    import os

    if not root:
        from dsh_tui.paths import default_sessions_root

        root = default_sessions_root()
    shown = os.fsencode(os.path.abspath(os.path.expanduser(root))).decode("utf-8", "backslashreplace")
    require_text(os.path.abspath(os.path.expanduser(root)), f"the session root {shown}")


def check_roots(roots) -> None:
    """``--root`` values must be directories when they exist (a missing root simply holds no session), as
    ``run`` and ``fork`` require; without them, so must the default root (``$DSH_HOME/sessions``)."""
    import os

    from dsh_tui.paths import default_sessions_root

    for r in roots or ():
        path = os.path.expanduser(r)
        if os.path.lexists(path) and not os.path.isdir(path):
            raise DshError(f"session root {_printable(path)} is not a directory")
    if roots:
        return  # the default root is read too, as far as it can be (a command given roots goes on)
    default = default_sessions_root()  # the only root: a $DSH_HOME that is a file listed "no sessions"
    for path in (default.parent, default):
        if os.path.lexists(path) and not os.path.isdir(path):
            raise DshError(f"{_printable(path)} is not a directory (the default session root is "
                           f"{_printable(default)}; see DSH_HOME)")


def one_line(text: str) -> str:
    """A message as one line (newlines and runs of blanks folded into one space)."""
    return " ".join(str(text).split())


def describe_os_error(err: OSError) -> str:
    """``<file>: <reason>`` (both files for a rename), without Python's ``[Errno N]`` noise."""
    reason = err.strerror or type(err).__name__
    names = [n for n in (err.filename, err.filename2) if n is not None]
    if names:
        return ": ".join([" -> ".join(_printable(os_name) for os_name in names), reason])
    return reason if err.strerror else one_line(str(err)) or reason


def _printable(name) -> str:
    """A file name for a message: bytes and undecodable names shown with their bytes escaped."""
    import os

    raw = os.fsencode(name) if not isinstance(name, int) else str(name).encode()
    return raw.decode("utf-8", "backslashreplace")


def _failure(err: BaseException) -> tuple[str, int]:
    """The one-line message and exit code of a failure no command turned into a ``DshError``."""
    if isinstance(err, OSError):
        return describe_os_error(err), 1
    if isinstance(err, RecursionError):
        return "input nested too deeply to process", 1
    if isinstance(err, UnicodeError):
        return f"text that is not valid UTF-8 cannot be used here ({one_line(str(err))})", 2
    sqlite3 = sys.modules.get("sqlite3")
    if sqlite3 is not None and isinstance(err, sqlite3.Error):
        return f"SQLite: {one_line(str(err)) or type(err).__name__}", 1
    return f"{type(err).__name__}: {one_line(str(err))}", 1


def _dsh_failure(err: DshError) -> tuple[str, int]:
    """The one-line message and exit code of a ``DshError``: ``str(err)``; one that is also an ``OSError``
    (``store.fsio.NotRegularFileError``) is named as any ``OSError`` is (file: reason)."""
    if isinstance(err, OSError):
        return _failure(err)
    return one_line(str(err)), int(getattr(err, "exit_code", 1))


def main(argv: list[str] | None = None) -> int:
    """The command line: never a traceback (an unforeseen error, an interrupt on the way in or out of a
    command: one line and an exit code); whatever the command started ends with it (``tools.procs``)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        return 130
    except SystemExit as exc:
        raise exc
    except BaseException as err:  # noqa: BLE001 - the last line of defence (see _main)
        if os_environ_debug():
            raise
        msg, code = _failure(err)
        _say(msg)
        return code


def _sweep_at_exit() -> None:
    """At exit, end every process the command started (``dsh_tui.tools.procs.sweep``; only loaded, and so
    only needed, once something that starts processes was imported)."""
    procs = sys.modules.get("dsh_tui.tools.procs")
    if procs is not None:
        procs.sweep()


def _main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and (argv[0] == "--profile" or argv[0].startswith("--profile=")):
        # dsh's launcher flags: ``--profile sdk`` is dsh's JSON-RPC protocol for its own Python SDK
        try:
            return importlib.import_module("dsh_tui.cli.sdk_cmd").run_profile(argv)
        except DshError as err:
            msg, code = _dsh_failure(err)
            _say(msg)
            return code
        except KeyboardInterrupt:
            return 130
    args = parse_args(argv)
    import atexit
    import os

    atexit.register(_sweep_at_exit)
    if args.command is None or (_is_app(args) and args.command != "serve"):
        _hold_type_ahead()
    server = os.environ.get("DSH_TUI_SERVER_PID", "")  # a served tab's app (dsh_tui.ui.served.SERVER_PID_ENV)
    if os.environ.get("DSH_TUI_SERVED") == "1" and server.isdigit():
        from dsh_tui.tools.procs import bind_to_parent

        bind_to_parent(int(server))  # SIGTERM (a clean quit) when the server dies, even by SIGKILL
    if args.command is not None:
        # A command's failure is the one line below; a library warning on the way (a background write
        # that failed, reported again as the command's error) must not add lines of its own.
        import logging

        logging.getLogger("dsh_tui").addHandler(logging.NullHandler())
        if not _is_app(args):  # (the app's start-up path stays free of it: its stderr is the screen)
            route_plugin_logs(to_stderr=True)
    try:
        _apply_plugin_options(args)
        if args.command is None:
            app_mod = importlib.import_module("dsh_tui.cli.app_cmd")
            return app_mod.run(args)
        return int(args._module.run(args) or 0)
    except DshError as err:
        msg, code = _dsh_failure(err)
        _say(msg)
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except (OSError, RecursionError, UnicodeError) as err:
        msg, code = _failure(err)
        _say(msg)
        return code
    except Exception as err:  # noqa: BLE001 - SQLite and anything unforeseen: one line, never a traceback
        if os_environ_debug():
            raise
        msg, code = _failure(err)
        _say(msg)
        return code


def _hold_type_ahead() -> None:
    """Keys typed while the app starts (``dsh-tui run`` ⏎, then the prompt at once) are kept as keys: the
    terminal leaves its line mode now, not when the first frame is drawn ~0.3-2 s later, so Enter stays Enter
    (line mode reads it as Ctrl+J, a newline in the composer) and nothing is echoed over the screen. The
    terminal's own mode is put back at exit."""
    import atexit
    import os
    import termios

    try:
        fd = sys.stdin.fileno()
        if not (os.isatty(fd) and os.isatty(sys.stdout.fileno())):
            return
        before = termios.tcgetattr(fd)
        mode = termios.tcgetattr(fd)
        mode[0] &= ~termios.ICRNL  # iflag: CR stays CR (Enter)
        mode[3] &= ~(termios.ICANON | termios.ECHO)  # lflag: no line editing, no echo
        termios.tcsetattr(fd, termios.TCSANOW, mode)
    except (OSError, ValueError, termios.error):
        return

    def restore() -> None:
        with contextlib.suppress(OSError, termios.error):
            termios.tcsetattr(fd, termios.TCSANOW, before)

    atexit.register(restore)


def _is_app(args: argparse.Namespace) -> bool:
    """Whether the command opens the full-screen app (stderr is the screen then)."""
    return args.command in ("run", "resume", "demo") and not getattr(args, "headless", None) \
        or args.command == "serve"


def route_plugin_logs(*, to_stderr: bool) -> None:
    """Where a plugin's ``ctx.log`` goes (docs/plugins.md): ``dsh_tui.runtime.pluginlog``."""
    from dsh_tui.runtime.pluginlog import route_plugin_logs as route

    route(to_stderr=to_stderr)


def _say(msg: str) -> None:
    """``dsh-tui: MSG`` on stderr; a file name's undecodable bytes shown escaped (``\\xff``)."""
    from dsh_tui.llm.redact import redact

    msg = redact(msg)  # every secret this process resolved (an API key a plugin's error echoed, say)
    text = f"dsh-tui: {msg}\n".encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def os_environ_debug() -> bool:
    """``DSH_TUI_DEBUG=1`` lets an unforeseen error through with its traceback (for bug reports)."""
    import os

    return os.environ.get("DSH_TUI_DEBUG") == "1"
