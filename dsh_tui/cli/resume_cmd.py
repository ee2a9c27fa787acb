"""``dsh-tui resume ID | --last [--headless PROMPT] [--model M] [--root DIR]...``: continue a session.

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
    parser.add_argument("session", nargs="?", metavar="ID", help="session id (or a unique prefix of one)")
    parser.add_argument("--last", action="store_true", help="the most recently active session here")
    parser.add_argument("--headless", metavar="PROMPT", help="run one turn without the UI and print the answer")
    parser.add_argument("--model", help="model for the next requests")
    parser.add_argument("--root", action="append", default=[], metavar="DIR",
                        help="also read sessions under DIR (repeatable; the default root is always read)")


def find_session(session: str | None, last: bool, roots: list[str], cwd: str):
    """The catalog row to resume (id / prefix, or the latest here with ``last``)."""
    from dsh_tui.session.errors import DshError
    from dsh_tui.store.catalog import UNREADABLE, Catalog, resolve_roots, sort_rows, workspace_rows

    if not session and not last:
        raise DshError("give a session id or --last")
    if session and last:
        raise DshError("give either a session id or --last, not both")
    cat = Catalog(resolve_roots(roots))
    try:
        rows = cat.scan() if session else cat.refresh()
    finally:
        cat.close()
    if session:
        row = cat.find(rows, session)
    else:
        here = [r for r in workspace_rows(sort_rows(rows), cwd) if r.state != UNREADABLE and not r.is_subagent]
        if not here:
            raise DshError(f"no session to resume in {cwd}")
        row = here[0]
    if row.state == UNREADABLE:
        raise DshError(f"session {row.id or row.path} is unreadable: {row.reason}")
    return row


def _store(row):
    from dsh_tui.store.open import open_store

    return open_store(Path(row.root), backend="jsonl",
                      compression="zstd" if row.path.endswith(".zstd") else "none")


async def resume_headless(store: Any, session_id: str, provider: Any, model: str, prompt: str,
                          *, cwd: str | None = None) -> tuple[str, str]:
    """Resume ``session_id``, run one turn with ``prompt``; returns (final answer text, turn end reason)."""
    import asyncio

    from dsh_tui.runtime.agent import Agent, AgentConfig
    from dsh_tui.store import lifecycle
    from dsh_tui.tools import builtin_tools

    session, writer = await asyncio.to_thread(lifecycle.resume, store, session_id)
    try:
        start = len(session.events)
        config = AgentConfig(provider=getattr(provider, "name", "") or "", model=model,
                             cwd=cwd or session.header.get("cwd") or ".")
        agent = Agent(session, provider, builtin_tools(), config=config, checkpoint=writer.checkpoint)
        agent.followup(prompt)
        await asyncio.sleep(0)
        await agent.wait_idle()
        await agent.dispose()
    finally:
        await asyncio.to_thread(writer.close)
    answer, reason = "", "none"
    for e in session.events[start:]:
        if e["type"] == "assistant/message":
            texts = [b.get("text", "") for b in e["data"]["message"].get("content", []) if b.get("type") == "text"]
            if texts:
                answer = "".join(texts)
        elif e["type"] == "turn/end":
            reason = (e["data"].get("reason") or {}).get("kind", "?")
    return answer, reason


def resume_app(args: argparse.Namespace, row: Any) -> Any:
    """The chat app on the resumed session ``row``. Without a usable key this raises (nothing opens);
    otherwise the model route (provider, httpx) is resolved after the first paint, in a thread, and the
    harness then resumes the session (as ``dsh-tui run`` does)."""
    import os

    from dsh_tui.cli.app_cmd import _startup_settings, credential_hint, model_route
    from dsh_tui.session.errors import DshError
    from dsh_tui.ui.app import DshApp

    settings, backend = _startup_settings()
    if backend is None or credential_hint(backend):  # no usable key (or no readable settings): say why
        provider, _model, hint = model_route(args.model)
        if provider is None:
            raise DshError(hint or "no model provider configured")
    root, cwd, model_arg = Path(row.root), Path(row.cwd or os.getcwd()), args.model

    def resolve() -> tuple[Any, str]:
        from dsh_tui.ui.harness import HarnessSpec, open_harness

        provider, model, hint = model_route(model_arg)
        if provider is None:
            return None, hint
        spec = HarnessSpec(root=root, cwd=cwd, provider=provider, model=model, resume_id=row.id)
        return (lambda bridge: open_harness(bridge, spec)), ""

    return DshApp(None, settings=settings, resolve=resolve, session_roots=[root, *args.root])


def run(args: argparse.Namespace) -> int:
    import asyncio
    import os
    import sys

    from dsh_tui.session.errors import DshError

    row = find_session(args.session, args.last, args.root, os.getcwd())
    if row.state == "open elsewhere":
        raise DshError(f"session {row.id} is open in another process")
    if args.headless is None:
        from dsh_tui.cli import gc_paused

        with gc_paused():
            resume_app(args, row).run_app()
        return 0
    from dsh_tui.cli.app_cmd import model_route

    provider, model, hint = model_route(args.model)
    if provider is None:
        raise DshError(hint or "no model provider configured")
    answer, reason = asyncio.run(resume_headless(_store(row), row.id, provider, model, args.headless))
    if answer:
        print(answer)
    if reason != "completed":
        print(f"dsh-tui: turn ended: {reason}", file=sys.stderr)
        return 1
    return 0
