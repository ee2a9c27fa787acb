"""``dsh-tui run [PROMPT] [--headless] [--cwd DIR] [--root DIR] [--replay FILE] [--preset NAME] [--model M]``.

With ``--headless`` one turn runs through the real driver and built-in tools in a new session persisted
under the root (store + write-behind writer with semantic checkpoints); the final answer is printed.
Exit 0 when the turn completed, 1 otherwise (the turn-end reason goes to stderr). Nobody can answer an
approval here, so a call the preset does not allow is refused and the model sees the refusal;
``--preset full-access`` allows everything. Commands run in the OS sandbox without asking (docs/sandbox.md);
an escalation out of it is refused unless ``--allow-escalation``. ``--replay FILE`` plays a recorded dsh log instead of
calling a model (offline); ``--replay DIR`` a recorded scenario directory, each subagent child its own
``session.N.jsonl``. The run waits until every subagent has settled. Without ``--headless`` the app opens (``dsh_tui.cli.app_cmd.run_chat``).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dsh_tui.llm.protocol import Provider
    from dsh_tui.llm.replay import ReplayProvider

HELP = "start a new session in the current directory (--headless prints the answer)"
PRESETS = ("read-only", "workspace-write", "full-access")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt", nargs="?", help="the first prompt")
    parser.add_argument("--headless", action="store_true", help="run one turn without the UI and print the answer")
    parser.add_argument("--cwd", help="working directory of the session (default: the current directory)")
    parser.add_argument("--root", help="session root (default $DSH_HOME/sessions)")
    parser.add_argument("--replay", metavar="FILE|DIR",
                        help="replay the model side of a recorded dsh log, or of a scenario directory (root "
                             "session.jsonl, children session.1.jsonl, ...; offline)")
    parser.add_argument("--preset", choices=PRESETS, default="workspace-write",
                        help="permission preset (default workspace-write)")
    parser.add_argument("--model", help="model id (default: from settings)")
    from dsh_tui.cli import add_plugin_arguments, output

    output.add_arguments(parser)
    add_plugin_arguments(parser)


def replay_provider(replay: str, cwd: Any, model: str | None) -> tuple[ReplayProvider, str]:
    """``dsh_tui.llm.replay.replay_provider`` (the app's route resolver imports it from there)."""
    from dsh_tui.llm.replay import replay_provider as provider_of

    return provider_of(replay, cwd, model)


def _provider(args: argparse.Namespace, cwd: Any) -> tuple[Provider, str]:
    from dsh_tui.session.errors import DshError

    if args.replay:
        return replay_provider(args.replay, cwd, args.model)
    from dsh_tui.config import load_settings
    from dsh_tui.llm import registry

    settings = load_settings()
    problem = registry.credential_problem(settings)
    if problem:
        raise DshError(problem.splitlines()[0])
    provider = registry.build_provider(settings)
    model = args.model or registry.default_route(settings)[1]
    return provider, model


def skipped_notes(events: Any) -> list[str]:
    """One line per workspace file the harness found but did not read (``agent-instructions/skipped``,
    ``skills/skipped``: a symlink out of the workspace, a file under /proc, a hostile skill)."""
    out = []
    for ev in events:
        if isinstance(ev, dict) and ev.get("type") in ("agent-instructions/skipped", "skills/skipped"):
            data = ev.get("data") or {}
            what = "instruction file" if ev["type"].startswith("agent") else "skill"
            out.append(f"dsh-tui: skipped {what} {data.get('path')}: {data.get('reason')}")
    return out


def mcp_problems(agent: Any) -> list[str]:
    """One line per MCP server that is not working at the end of the run (with the reason), and one per
    server whose tool list had something left out (``/mcp`` names each)."""
    from dsh_tui.extensions.mcp import servers

    out = []
    for row in servers(agent):
        if row.state == "needs-login":  # an OAuth server without (valid) tokens: its tools were absent
            out.append(f"dsh-tui: MCP server {row.name}: {row.text[len(row.name) + 2:]}")
        if row.state in ("failed", "reconnecting") and row.error:
            out.append(f"dsh-tui: MCP server {row.name}: {row.text[len(row.name) + 2:]}")
        if row.notes:
            n = len(row.notes)
            out.append(f"dsh-tui: MCP server {row.name}: {n} note{'s' if n != 1 else ''} on its tool list "
                       f"(first: {row.notes[0]}); /mcp lists them")
    return out


async def run_headless(store: Any, provider: Any, model: str, prompt: str, *, cwd: str,
                       preset: str, out: Any = None, more: Any = None,
                       notes: list[str] | None = None,
                       signals: list[int] | None = None) -> tuple[str, dict, str]:
    """One turn in a new persisted session: (final answer, turn-end reason, session id). ``out`` (a
    ``dsh_tui.cli.output.HeadlessOutput``) prints each turn's result; ``more`` yields further prompts
    (``--input-format stream-json``), each run in the same session after the previous turn. ``notes``
    receives the lines of :func:`skipped_notes` once the turns are over. SIGINT, SIGTERM and SIGHUP cancel
    the running turn (``turn/end`` aborted, cause ``user``), run no further prompt and close the session;
    the signal's number is appended to ``signals``."""
    from pathlib import Path

    from dsh_tui.runtime.host import HostSpec

    def before(host: Any) -> None:
        if hasattr(provider, "root_idle"):  # a recorded scenario directory: children settle as recorded
            provider.root_idle = host.agent.wait_idle

    def after(host: Any) -> None:
        if notes is not None:
            from dsh_tui.session.rows import plain_events

            notes.extend(skipped_notes(plain_events(host.agent.session.events)))
            notes.extend(mcp_problems(host.agent))

    spec = HostSpec(root=None, store=store, cwd=Path(cwd), provider=provider, model=model, preset=preset)
    result = await drive(spec, prompt, out=out, more=more, signals=signals, settle=True, before=before,
                         after=after)
    return result.answer, result.reason, result.session_id


async def drive(spec: Any, prompt: Any, *, out: Any = None, more: Any = None, signals: list[int] | None = None,
                settle: bool = False, before: Any = None, after: Any = None) -> Any:
    """Open the agent host of ``spec``, run ``prompt`` (and ``more``: ``run_turns``) under the exit signals,
    close it; ``before(host)`` runs once it is open, ``after(host)`` once the turns are over. The last
    turn's ``TurnResult``; a signal's number goes to ``signals`` and to ``out``."""
    from dsh_tui.runtime.host import AgentHost
    from dsh_tui.tools.procs import ExitSignals

    with ExitSignals() as stop:
        try:
            host = await AgentHost.open(spec)
            say_sandbox(host)
            if before is not None:
                before(host)
            if out is not None:
                out.attach(host)
            try:
                result = await run_turns(host, prompt, stop, out, more, settle=settle)
                if after is not None:
                    after(host)
            finally:
                await host.close()
        finally:
            if signals is not None:
                signals.extend(stop.got)
            if out is not None and stop.got:
                out.interrupted(stop.got[0])
    return result


def say_sandbox(host: Any) -> None:
    """Where no sandbox could be had: one line on stderr, once, saying so and what happens instead."""
    import sys

    from dsh_tui.runtime.sandboxing import say_once

    say_once(host.sandbox_note, lambda note: print(f"dsh-tui: {note}", file=sys.stderr, flush=True))


async def run_turns(host: Any, prompt: Any, stop: Any, out: Any, more: Any, *, settle: bool = False) -> Any:
    """``prompt``, then each of ``more`` (when ``out`` prints the results), until a signal of ``stop`` (an
    entered ``dsh_tui.tools.procs.ExitSignals``); the last turn's ``TurnResult``."""
    import asyncio

    result = await host.run_turn_until_signal(prompt, stop, settle=settle)
    if out is None:
        return result
    out.report(result)
    while not stop.got and more is not None:
        nxt = _next_in_daemon(more)  # not asyncio.to_thread: a read that never returns must not hold the exit
        stopping = asyncio.ensure_future(stop.event.wait())
        await asyncio.wait({nxt, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not nxt.done():
            nxt.cancel()
            break
        text = nxt.result()
        if text is None:
            break
        result = await host.run_turn_until_signal(text, stop, settle=settle)
        out.report(result)
    return result


def _next_in_daemon(prompts: Any) -> Any:
    """A future of ``next(prompts, None)``, read in a daemon thread (stdin may never answer)."""
    import asyncio
    import threading

    loop = asyncio.get_running_loop()
    fut = loop.create_future()

    def settle(value: Any, err: BaseException | None) -> None:
        if fut.done():
            return
        if err is not None:
            fut.set_exception(err)
        else:
            fut.set_result(value)

    def read() -> None:
        try:
            value, err = next(prompts, None), None
        except BaseException as exc:  # noqa: BLE001 - handed to the loop (a bad line is a UsageError)
            value, err = None, exc
        try:
            loop.call_soon_threadsafe(settle, value, err)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    threading.Thread(target=read, name="dsh-tui-prompts", daemon=True).start()
    return fut


def describe(reason: dict) -> str:
    kind = reason.get("kind", "?")
    if kind == "error":
        err = reason.get("error") or {}
        return f"error: {err.get('message', '')} ({err.get('code', 'UNKNOWN')})"
    if kind == "aborted":
        return f"aborted ({(reason.get('reason') or {}).get('kind', '?')})"
    return kind


def run(args: argparse.Namespace) -> int:
    if not args.headless:
        from dsh_tui.cli.app_cmd import run_chat

        return run_chat(args)
    import asyncio
    import os
    import sys
    from pathlib import Path

    from dsh_tui.cli import output, require_root, require_text
    from dsh_tui.runtime.host import open_session_store
    from dsh_tui.session.errors import DshError, UsageError

    prompts = output.prompts_from(sys.stdin) if args.input_format == "stream-json" else iter(())
    first = args.prompt or next(prompts, None)
    if not first:
        raise UsageError('run --headless needs a PROMPT, e.g. dsh-tui run --headless "what does this repo do?"'
                         if args.input_format == "text" else "--input-format stream-json: stdin held no prompt")
    require_text(first, "the prompt")
    cwd = Path(args.cwd or os.getcwd()).expanduser().resolve()
    require_text(str(cwd), f"the working directory {os.fsencode(cwd).decode('utf-8', 'backslashreplace')}")
    if not cwd.is_dir():
        raise DshError(f"not a directory: {cwd}")
    require_root(args.root)
    provider, model = _provider(args, cwd)
    store = open_session_store(args.root)
    out = output.HeadlessOutput(args.output_format, describe=describe)
    notes: list[str] = []
    asyncio.run(run_headless(store, provider, model, first, cwd=str(cwd), preset=args.preset, out=out,
                             more=prompts, notes=notes))
    for line in notes:
        print(line, file=sys.stderr)
    return out.finish()  # 128 + N after signal N
