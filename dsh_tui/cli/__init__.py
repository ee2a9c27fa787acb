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
    "sessions": "dsh_tui.cli.sessions_cmd",
    "export": "dsh_tui.cli.export_cmd",
    "log": "dsh_tui.cli.log_cmd",
    "plugins": "dsh_tui.cli.plugins_cmd",
}

# One-line help, kept here so ``--help`` does not import every command module.
SUMMARIES: dict[str, str] = {
    "run": "start a new session in the current directory (--headless prints the answer)",
    "demo": "offline tour on a temporary root; needs no API key and no network",
    "resume": "continue a session by id or --last",
    "fork": "fork a session at a completed turn; prints the child id",
    "sessions": "list sessions (--all, --search TEXT, --json)",
    "export": "export a session as md, html or jsonl",
    "log": "low-level log tools: check, cat, messages, repair",
    "plugins": "list the plugins found, where from, loaded or failed (--json)",
}


def _available(only: Iterable[str] | None = None) -> dict[str, str]:
    out = {}
    for name, module in COMMANDS.items():
        if (only is None or name in only) and importlib.util.find_spec(module) is not None:
            out[name] = module
    return out


def build_parser(only: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The command line; ``only``: build just these commands' subparsers (see ``parse_args``)."""
    parser = argparse.ArgumentParser(
        prog="dsh-tui",
        description="A terminal home for DeepSeek Harness sessions. With no command, opens the app.",
    )
    parser.add_argument("--version", action="version", version=f"dsh-tui {__version__}")
    parser.add_argument(
        "--root", dest="app_roots", action="append", default=[], metavar="DIR",
        help="with no COMMAND: also browse the sessions under DIR (repeatable; the default root is always shown)",
    )
    add_plugin_arguments(parser, dest_prefix="app_")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in _available(only).items():
        p = sub.add_parser(name, help=SUMMARIES.get(name, ""), description=SUMMARIES.get(name, ""))
        mod = importlib.import_module(module)
        mod.add_arguments(p)
        p.set_defaults(_module=mod)
    return parser


def add_plugin_arguments(parser: argparse.ArgumentParser, dest_prefix: str = "") -> None:
    """``--plugin MODULE`` (repeatable), ``--strict-plugins`` and ``--check-requests`` (commands that open an
    agent: the app, ``run``, ``resume``, ``demo``)."""
    parser.add_argument("--plugin", dest=f"{dest_prefix}plugins", action="append", default=[], metavar="MODULE",
                        help="load the plugin MODULE (or MODULE:OBJECT) too (repeatable)")
    parser.add_argument("--strict-plugins", dest=f"{dest_prefix}strict_plugins", action="store_true",
                        help="a plugin that fails to load is fatal (default: reported, the rest still load)")
    parser.add_argument("--check-requests", dest=f"{dest_prefix}check_requests", action="store_true",
                        help="check every model request against the session log (the request invariant)")


def _apply_plugin_options(args: argparse.Namespace) -> None:
    modules = list(getattr(args, "app_plugins", None) or []) + list(getattr(args, "plugins", None) or [])
    strict = bool(getattr(args, "app_strict_plugins", False) or getattr(args, "strict_plugins", False))
    check = bool(getattr(args, "app_check_requests", False) or getattr(args, "check_requests", False))
    if modules or strict or check:  # else nothing to import (``dsh-tui log`` never loads the runtime)
        from dsh_tui.runtime.host import set_plugin_options

        set_plugin_options(tuple(modules), strict, check)


def parse_args(argv: list[str]) -> argparse.Namespace:
    """``build_parser().parse_args(argv)``, without building every command's parser when one is enough.

    Building all of them imports every command module and formats ~50 arguments (15-40 ms, on the
    way to the app's first frame). A command line that names a command (its first word that is one)
    or none is parsed by a parser holding only that command; help, --version and anything that parser
    rejects are parsed again by the full one, so the output and errors are exactly the full parser's."""
    if not argv:  # plain ``dsh-tui``: what the parser returns, without building one (argparse's gettext
        return argparse.Namespace(app_roots=[], app_plugins=[], app_strict_plugins=False,  # lookups alone
                                  app_check_requests=False, command=None)  # are ~5 ms)
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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    try:
        _apply_plugin_options(args)
        if args.command is None:
            app_mod = importlib.import_module("dsh_tui.cli.app_cmd")
            return app_mod.run(args)
        return int(args._module.run(args) or 0)
    except DshError as err:
        print(f"dsh-tui: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
