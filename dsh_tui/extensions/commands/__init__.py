"""The ``commands`` built-in plugin: the built-in slash commands (docs/extensions.md, "Slash commands").

It registers ``/compact``, ``/model``, ``/permission``, ``/title``, ``/new``, ``/fork``, ``/export``,
``/skills``, ``/plugins``, ``/mcp``, ``/retry`` and ``/help``. ``/new``, ``/fork``, ``/export`` and ``/mcp``
(the MCP servers panel) ask the UI to act (``CommandResult.action``). The registry and the command types are
the core's (``dsh_tui.runtime.commands``).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from dsh_tui.runtime.commands import Command, CommandCall, CommandError, CommandRegistry, CommandResult

# -------------------------------------------------------------------------------------------------
# Session titles set by the user (docs/extensions.md, "Titles": rename)


def write_user_title(session: Any, text: str) -> dict:
    """Append a ``session/title`` with ``source: {"kind": "user"}`` (dsh's rules: ``session/titles.py``)."""
    from dsh_tui.session.titles import user_title_data

    try:
        data = user_title_data(text)
    except ValueError as err:  # "session title must contain visible characters"
        raise CommandError(str(err)) from None
    return session.append("session/title", data)


# -------------------------------------------------------------------------------------------------
# The built-in commands


def _compact(call: CommandCall) -> Awaitable[CommandResult]:
    async def go() -> CommandResult:
        if call.args:
            raise CommandError("Usage: /compact (no arguments)")
        agent = call.agent
        if agent.compactor is None:
            raise CommandError("/compact needs the compaction plugin, which is turned off "
                               "([plugins.compaction] enabled = false).")
        if not agent.session.messages_view():
            return CommandResult("No compactable history yet.")
        start = len(agent.session.events)
        try:
            await agent.compact_now()
        except Exception as err:  # noqa: BLE001 - "nothing to compact" and a busy agent
            if "nothing to compact" in str(err):
                return CommandResult("No compactable history yet.")
            raise CommandError(f"Compaction failed: {err}") from err
        for e in agent.session.events[start:]:
            if e["type"] == "compaction/summary":
                d = e["data"]
                return CommandResult(f"Compacted {len(d.get('shadowedSeqs') or [])} history items "
                                     f"(~{d.get('shadowedTokenCount', 0)} tokens).", source_event_seq=e["seq"])
        return CommandResult("No compactable history yet.")

    return go()


def _model(call: CommandCall) -> CommandResult:
    cfg = call.agent.config
    if not call.args:
        effort = f", reasoning effort {cfg.reasoning_effort}" if cfg.reasoning_effort else ""
        return CommandResult(f"This session uses {cfg.model or '(no model)'}"
                             f"{f' ({cfg.provider})' if cfg.provider else ''}{effort}. /model <name> [effort] "
                             "switches this session from its next request; the default for new sessions is in "
                             "the command palette (Ctrl+P).")
    return _switch_model(call.agent, call.args.split())


# -- /model [name] [effort], /permission [mode], /retry (turn control; runtime/permissions.py, runtime/turns.py)
EFFORT_WORDS = ("off", "low", "medium", "high", "max", "default")


def _switch_model(agent: Any, words: list[str]) -> CommandResult:
    """``/model NAME [EFFORT]`` or ``/model EFFORT`` (an effort word alone keeps the model). The effort is
    checked against what the provider lists for the model; ``default`` goes back to the model's own."""
    cfg = agent.config
    if len(words) > 2:
        raise CommandError("Usage: /model [name] [effort]")
    name: str
    effort: str | None
    if len(words) == 1 and words[0] in EFFORT_WORDS and words[0] != cfg.model:
        name, effort = cfg.model, words[0]
    else:
        name, effort = words[0], (words[1] if len(words) == 2 else None)
    if effort is not None:
        efforts: tuple[str, ...] = ()
        resolve = getattr(agent.provider, "resolve_model", None)
        try:
            efforts = tuple(resolve(name).efforts) if resolve is not None else ()
        except Exception:  # noqa: BLE001 - an unknown model: the request reports it
            efforts = ()
        if effort != "default" and efforts and effort not in efforts:
            raise CommandError(f"{name} has no reasoning effort {effort!r} (it has: {', '.join(efforts)}).")
    cfg.model = name
    if effort is not None:
        cfg.reasoning_effort = None if effort == "default" else effort
    shown = f"{name} ({cfg.reasoning_effort})" if cfg.reasoning_effort else name
    return CommandResult(f"This session now uses {shown} from its next request.",
                         action={"kind": "model", "model": name, "effort": cfg.reasoning_effort})


def _permission(call: CommandCall) -> CommandResult:
    from dsh_tui.runtime import permissions
    from dsh_tui.runtime.approval import PRESETS

    cfg = call.agent.config
    if not call.args:
        return CommandResult(f"Permission preset: {cfg.preset}. Presets: {', '.join(PRESETS)} (F4 in the chat "
                             "cycles them).")
    try:
        preset = permissions.set_preset(call.agent, call.args)
    except ValueError as err:
        raise CommandError(f"Unknown preset {call.args!r}. Presets: {', '.join(PRESETS)}.") from err
    return CommandResult(f"Permission preset: {preset}.", action={"kind": "preset", "preset": preset})


def _retry(call: CommandCall) -> CommandResult:
    from dsh_tui.runtime.turns import failed_prompt

    if call.args:
        raise CommandError("Usage: /retry (no arguments)")
    agent = call.agent
    if agent.status == "running":
        raise CommandError("A turn is running: wait for it to end (Esc cancels it).")
    prompt = failed_prompt(agent.session.events)
    if prompt is None:
        raise CommandError("The last turn did not fail: nothing to retry.")
    agent.followup(prompt)
    return CommandResult("Retrying the failed turn with the same prompt.", action={"kind": "retry"})


def _title(call: CommandCall) -> CommandResult:
    if not call.args:
        raise CommandError("Usage: /title <text>")
    event = write_user_title(call.agent.session, call.args)
    return CommandResult(f"Title: {event['data']['title']}", source_event_seq=event["seq"],
                         action={"kind": "title", "title": event["data"]["title"]})


def _new(call: CommandCall) -> CommandResult:
    if call.args:
        raise CommandError("Usage: /new (no arguments)")
    return CommandResult("Starting a new session.", action={"kind": "new"})


def _fork(call: CommandCall) -> Awaitable[CommandResult]:
    async def go() -> CommandResult:
        import asyncio

        from dsh_tui.store.lifecycle import fork

        agent = call.agent
        turn: int | None = None
        if call.args:
            if not call.args.isdigit() or int(call.args) < 1:
                raise CommandError("Usage: /fork [turn] (a turn number, 1 or more)")
            turn = int(call.args)
            if turn > agent.session.last_turn:
                raise CommandError(f"This session has {agent.session.last_turn} turn(s).")
        store = getattr(agent, "store", None)
        if store is None:
            raise CommandError("This session is not stored: nothing to fork.")
        if agent.checkpoint is not None:
            await agent.checkpoint("fork")  # the fork copies what is committed on disk
        try:
            child = await asyncio.to_thread(fork, store, agent.session.id, at_turn=turn)
        except Exception as err:  # noqa: BLE001 - a fork error (open turn, no completed turn) is the reply
            raise CommandError(f"Fork failed: {err}") from err
        where = f"after turn {turn}" if turn else "after the last completed turn"
        return CommandResult(f"Forked {where}: {child['id']}", action={"kind": "fork", "child": child["id"]})

    return go()


def _export(call: CommandCall) -> CommandResult:
    fmt = call.args or "md"
    if fmt not in ("md", "html"):
        raise CommandError("Usage: /export [md|html]")
    return CommandResult(f"Exporting this session as {fmt}.", action={"kind": "export", "format": fmt})


def _skills(call: CommandCall) -> CommandResult:
    service = getattr(call.agent, "skills", None)
    if service is None:
        return CommandResult("Skills are off (the skills plugin is disabled).")
    skills = service.discover()
    if not skills:
        return CommandResult("No skills found (.dsh/skills or .agents/skills in the project, ~/.dsh/skills, "
                             "~/.agents/skills).")
    lines = [f"{len(skills)} skill(s) — type /<name> in a prompt to use one:"]
    for s in skills:
        flags = [] if s.model_invocable else ["user only"]
        if not s.user_invocable:
            flags.append("model only")
        extra = f" [{', '.join(flags)}]" if flags else ""
        lines.append(f"/{s.name} — {' '.join(s.description.split())}{extra}  ({s.source})")
    return CommandResult("\n".join(lines))


def _plugins(call: CommandCall) -> CommandResult:
    records = getattr(call.agent.plugins, "records", [])
    lines = []
    for r in records:
        why = f": {r.error}" if r.error else ""
        lines.append(f"{r.id} ({r.source}) {r.state}{why}")
    return CommandResult("\n".join(lines) or "No plugins.")


MCP_USAGE = "Usage: /mcp [reconnect NAME]"
MCP_NONE = "No MCP servers configured. Add [mcp.servers.<name>] to settings.toml or start with --mcp NAME=COMMAND."


def mcp_listing(rows: list[Any]) -> str:
    """The ``/mcp`` text: each server's ``name  state · detail``, its transport and target, and the names of
    its tools."""
    if not rows:
        return MCP_NONE
    lines = [f"{len(rows)} MCP server(s):"]
    for row in rows:
        lines.append(row.text)
        lines.append(f"  {row.transport}: {row.target}")
        if row.tools:
            lines.append(f"  tools: {', '.join(row.tools)}")
        if getattr(row, "prompts", None):
            lines.append(f"  prompts: {', '.join('/' + p for p in row.prompts)}")
        lines.extend(f"  note: {note}" for note in mcp_notes(row))
    return "\n".join(lines)


def mcp_notes(row: Any, limit: int = 5) -> list[str]:
    """What was left out of a server's tool list (at most ``limit`` lines, then how many more)."""
    notes = list(getattr(row, "notes", None) or [])
    if len(notes) > limit:
        notes = notes[:limit - 1] + [f"{len(notes) - limit + 1} more (see the MCP log)"]
    return notes


def _mcp(call: CommandCall) -> CommandResult:
    manager = getattr(call.agent, "mcp", None)  # the mcp built-in's McpManager (it provides ``agent.mcp``)

    def rows() -> list[Any]:
        return manager.status() if manager is not None else []

    words = call.args.split()
    if words and (words[0] != "reconnect" or len(words) != 2):
        raise CommandError(MCP_USAGE)
    if words:
        if manager is None or not manager.reconnect(words[1]):
            names = ", ".join(r.name for r in rows()) or "none configured"
            raise CommandError(f"No MCP server named {words[1]} ({names}).")
        return CommandResult(f"Reconnecting MCP server {words[1]}.", action={"kind": "mcp"})
    return CommandResult(mcp_listing(rows()), action={"kind": "mcp"})


def _help(call: CommandCall) -> CommandResult:
    registry: CommandRegistry = call.agent.commands
    lines = [f"{c.usage or '/' + c.name} — {c.help}" for c in registry.sorted()]
    return CommandResult("Commands (output is for you, never sent to the model):\n" + "\n".join(lines))


BUILTIN_COMMANDS: tuple[Command, ...] = (
    Command("compact", "Summarize the history so far to free context", _compact, "/compact"),
    Command("model", "Show or switch this session's model and reasoning effort", _model, "/model [name] [effort]"),
    Command("permission", "Show or set the permission mode", _permission, "/permission [mode]"),
    Command("retry", "Send the failed last turn's prompt again", _retry, "/retry"),
    Command("title", "Set this session's title", _title, "/title <text>"),
    Command("new", "Start a new session", _new, "/new"),
    Command("fork", "Fork this session (at a turn)", _fork, "/fork [turn]"),
    Command("export", "Export this session as Markdown or HTML", _export, "/export [md|html]"),
    Command("skills", "List the skills of this workspace", _skills, "/skills"),
    Command("plugins", "List the loaded plugins", _plugins, "/plugins"),
    Command("mcp", "Show the MCP servers (state, tools) or reconnect one", _mcp, "/mcp [reconnect NAME]"),
    Command("help", "List the commands", _help, "/help"),
)


def apply_commands(ctx: Any) -> None:
    for command in BUILTIN_COMMANDS:
        ctx.commands.register(command.name, command.help, command.run, usage=command.usage)
