"""``dsh-tui resume ID | --last [--headless PROMPT] [--model M] [--preset NAME] [--root DIR]...``: continue a
session (``--preset`` as for ``run``: the permission preset from now on, default workspace-write).

Without ``--headless`` the chat screen opens on the resumed session (store lifecycle ``resume``: lock,
repair of a torn tail / open turn, ``session/end-seed``). With ``--headless "PROMPT"`` one turn runs
without the UI and its final answer is printed (exit 0 when the turn completed). ``--last`` picks the
most recently active session of the current directory.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

HELP = "continue a session by id or --last"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session", nargs="?", metavar="ID|FILE",
                        help="session id, a unique prefix of one, or the path of its session[.v4].jsonl[.zstd] log")
    parser.add_argument("--last", action="store_true", help="the most recently active session here")
    parser.add_argument("--headless", metavar="PROMPT", nargs="?", const="",
                        help="run one turn without the UI and print the answer (no PROMPT: with "
                             "--input-format stream-json, the prompts come from stdin)")
    parser.add_argument("--model", help="model for the next requests")
    from dsh_tui.cli.run_cmd import PRESETS

    parser.add_argument("--preset", choices=PRESETS, default="workspace-write",
                        help="permission preset (default workspace-write)")
    parser.add_argument("--root", action="append", default=[], metavar="DIR",
                        help="also read sessions under DIR (repeatable; the default root is always read)")
    from dsh_tui.cli import add_plugin_arguments, output

    output.add_arguments(parser)
    add_plugin_arguments(parser)


def find_session(session: str | None, last: bool, roots: list[str], cwd: str):
    """The catalog row to resume (id / prefix, or the latest here with ``last``)."""
    from dsh_tui.session.errors import DshError, UsageError
    from dsh_tui.store.catalog import UNREADABLE, Catalog, resolve_roots, sort_rows, workspace_rows

    if not session and not last:
        raise UsageError("give a session id or --last")
    if session and last:
        raise UsageError("give either a session id or --last, not both")
    if session:
        from dsh_tui.store.ids import find_row

        return find_row(session, roots, readable=True)
    cat = Catalog(resolve_roots(roots))
    try:
        rows = cat.refresh()
    finally:
        cat.close()
    here = [r for r in workspace_rows(sort_rows(rows), cwd) if r.state != UNREADABLE and not r.is_subagent]
    if not here:
        raise DshError(f"no session to resume in {cwd}")
    row = here[0]
    if row.state == UNREADABLE:
        raise DshError(f"session {row.id or row.path} is unreadable: {row.reason}")
    return row


def _store(row):
    """The store the row lives in: JSONL (its log's encoding) or SQLite."""
    from dsh_tui.store.ids import store_for

    return store_for(row)


async def resume_headless(store: Any, session_id: str, provider: Any, model: str, prompt: str,
                          *, cwd: str | None = None, keep_model: bool = True, out: Any = None,
                          more: Any = None, signals: list[int] | None = None,
                          preset: str = "workspace-write") -> tuple[str, str]:
    """Resume ``session_id``, run one turn with ``prompt``; returns (final answer text, turn end reason).
    ``out`` and ``more``: as ``run_cmd.run_headless`` (each turn's result printed; further prompts), and
    SIGINT/SIGTERM/SIGHUP end it as there (their numbers go to ``signals``); ``preset``: the permission
    preset from now on."""
    from dsh_tui.cli.run_cmd import drive
    from dsh_tui.runtime.host import HostSpec

    spec = HostSpec(root=None, store=store, cwd=Path(cwd) if cwd else None, provider=provider, model=model,
                    resume_id=session_id, keep_model=keep_model, preset=preset)
    result = await drive(spec, prompt, out=out, more=more, signals=signals)
    return result.answer, result.reason.get("kind", "?")


def resume_app(args: argparse.Namespace, row: Any) -> Any:
    """The chat app on the resumed session ``row``. Without a usable key this raises (nothing opens);
    otherwise the model route (provider, httpx) is resolved after the first paint, in a thread, and the
    harness then resumes the session (as ``dsh-tui run`` does)."""
    import os

    from dsh_tui.cli.app_cmd import _startup_settings, checked, credential_hint, model_route
    from dsh_tui.session.errors import DshError
    from dsh_tui.ui.app import DshApp

    settings, backend = _startup_settings()
    if backend is None or credential_hint(backend):  # no usable key (or no readable settings): say why
        provider, _model, hint = model_route(args.model)
        if provider is None:
            raise DshError(hint or "no model provider configured")
    root, cwd, model_arg = Path(row.root), Path(row.cwd or os.getcwd()), args.model
    preset = getattr(args, "preset", None) or "workspace-write"

    def resolve() -> tuple[Any, str]:
        from dsh_tui.ui.harness import HarnessSpec, open_harness

        provider, model, hint = model_route(model_arg)
        if provider is None:
            return None, hint
        spec = HarnessSpec(root=root, cwd=cwd, provider=provider, model=model, resume_id=row.id,
                           keep_model=not model_arg, preset=preset)
        return (lambda bridge: open_harness(bridge, spec)), ""

    return checked(DshApp(None, settings=settings, resolve=resolve, session_roots=[root, *args.root]))


def run(args: argparse.Namespace) -> int:
    import asyncio
    import os
    import sys

    from dsh_tui.cli import check_roots, output, require_text
    from dsh_tui.session.errors import DshError, UsageError

    prompts = output.prompts_from(sys.stdin) if args.input_format == "stream-json" else iter(())
    if args.headless is not None:
        if not args.headless and args.input_format == "text":
            raise UsageError('resume --headless needs a PROMPT, e.g. dsh-tui resume --last --headless "go on"')
        require_text(args.headless, "the prompt")
    check_roots(args.root)
    row = find_session(args.session, args.last, args.root, os.getcwd())
    if row.state == "open elsewhere":  # the message run, fork and log repair give for a held lock
        from dsh_tui.store.lock import SessionInUseError, in_use_by

        pid = in_use_by(_store(row), row.id)
        raise SessionInUseError(row.id, pid if pid and pid > 0 else None)
    if args.headless is None:
        from dsh_tui.cli.app_cmd import run_and_hint

        return run_and_hint(resume_app(args, row))
    from dsh_tui.cli.app_cmd import model_route

    provider, model, hint = model_route(args.model)
    if provider is None:
        raise DshError(hint or "no model provider configured")
    first = args.headless or next(prompts, None)
    if not first:
        raise UsageError("--input-format stream-json: stdin held no prompt")
    out = output.HeadlessOutput(args.output_format)
    asyncio.run(resume_headless(_store(row), row.id, provider, model, first, keep_model=not args.model, out=out,
                                more=prompts, preset=args.preset))
    return out.finish()
