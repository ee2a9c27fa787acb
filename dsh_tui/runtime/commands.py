"""Slash commands (dsh ``commands``; docs/extensions.md, "Slash commands").

A command is registered by a plugin (``ctx.commands.register(name, help, run)``) and run from the composer
when the text starts with ``/<name>`` at column 0 (name ``[a-z][a-z0-9_-]*``, then the end or a space,
TAB, CR or LF). Each run is logged as the log-only pair ``command/run`` / ``command/done``; its output is
UI text, never model input. A name that is not registered is not a command (the text is a prompt, where a
``/<skill>`` may invoke a skill; the chat refuses a ``/name`` that is neither and suggests the nearest).

The built-in plugin ``commands`` registers ``/compact``, ``/model``, ``/permission``, ``/title``, ``/new``,
``/fork``, ``/export``, ``/skills``, ``/plugins``, ``/mcp``, ``/retry`` and ``/help``. ``/new``, ``/fork``,
``/export`` and ``/mcp`` (the MCP servers panel) ask the UI to act (``CommandResult.action``).
"""

from __future__ import annotations

import inspect
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from dsh_tui.session.errors import DshError

COMMAND = re.compile(r"^/([a-z][a-z0-9_-]*)(?=$|[ \t\r\n])")


class CommandError(DshError):
    """A command's expected failure: its message is the ``command/done`` text (``kind: "error"``)."""


@dataclass
class CommandResult:
    text: str = ""
    kind: str = "success"  # "success" | "error"
    source_event_seq: int | None = None
    action: dict[str, Any] | None = None  # for the UI: {"kind": "new"|"fork"|"export"|"model", ...}


@dataclass
class CommandCall:
    """What a command's ``run`` gets: its name, the raw input after the name (separator included) and the
    agent (the same object plugins hold)."""

    name: str
    raw: str
    agent: Any

    @property
    def args(self) -> str:
        return self.raw.strip()


@dataclass
class Command:
    name: str
    help: str  # one line, shown in the completion list and by /help
    run: Callable[[CommandCall], Any]  # returns str | CommandResult | None, or an awaitable of one
    usage: str = ""  # "/fork [turn]"
    record_input: bool = True  # False: ``command/run`` omits ``args``
    plugin: str = ""


def parse(text: str) -> tuple[str, str] | None:
    """(name, raw input) of a command line, or None."""
    m = COMMAND.match(text)
    return (m.group(1), text[m.end():]) if m else None


class CommandRegistry:
    def __init__(self) -> None:
        self.commands: dict[str, Command] = {}
        self._token = secrets.token_hex(4)
        self._n = 0

    def register(self, command: Command) -> Callable[[], None]:
        if not COMMAND.match("/" + command.name) or parse("/" + command.name) != (command.name, ""):
            raise DshError(f"invalid command name {command.name!r} (expected [a-z][a-z0-9_-]*)")
        self.commands[command.name] = command

        def off() -> None:
            if self.commands.get(command.name) is command:
                del self.commands[command.name]

        return off

    def get(self, name: str) -> Command | None:
        return self.commands.get(name)

    def sorted(self) -> list[Command]:
        return [self.commands[n] for n in sorted(self.commands)]

    def match(self, text: str) -> tuple[Command, str] | None:
        parsed = parse(text)
        if parsed is None:
            return None
        command = self.commands.get(parsed[0])
        return (command, parsed[1]) if command is not None else None

    async def run(self, agent: Any, text: str) -> CommandResult | None:
        """Run ``text`` if it names a registered command (logged as ``command/run`` / ``command/done``);
        None when it is not a command."""
        found = self.match(text)
        if found is None:
            return None
        command, raw = found
        self._n += 1
        cid = f"cmd-{self._token}-{self._n}"
        run: dict[str, Any] = {"commandId": cid, "name": command.name}
        if command.record_input:
            run["args"] = raw
        run["source"] = {"kind": "user"}
        session = agent.session
        session.append("command/run", run)
        try:
            out = command.run(CommandCall(command.name, raw, agent))
            if inspect.isawaitable(out):
                out = await out
            result = out if isinstance(out, CommandResult) else CommandResult(str(out) if out else "")
        except CommandError as err:
            result = CommandResult(str(err), "error")
        except Exception as err:  # noqa: BLE001 - a failing command is its own error, not the app's
            result = CommandResult(f"/{command.name} failed: {err or type(err).__name__}", "error")
        done: dict[str, Any] = {"commandId": cid, "kind": result.kind}
        if result.text:
            done["text"] = result.text
        if result.source_event_seq is not None:
            done["sourceEventSeq"] = result.source_event_seq
        session.append("command/done", done)
        return result


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
    from dsh_tui.runtime.mcp import reconnect, servers

    words = call.args.split()
    if words and (words[0] != "reconnect" or len(words) != 2):
        raise CommandError(MCP_USAGE)
    if words:
        if not reconnect(call.agent, words[1]):
            names = ", ".join(r.name for r in servers(call.agent)) or "none configured"
            raise CommandError(f"No MCP server named {words[1]} ({names}).")
        return CommandResult(f"Reconnecting MCP server {words[1]}.", action={"kind": "mcp"})
    return CommandResult(mcp_listing(servers(call.agent)), action={"kind": "mcp"})


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
