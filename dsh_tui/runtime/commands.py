"""Slash commands (dsh ``commands``; docs/extensions.md, "Slash commands").

A command is registered by a plugin (``ctx.commands.register(name, help, run)``) and run from the composer
when the text starts with ``/<name>`` at column 0 (name ``[a-z][a-z0-9_-]*``, then the end or a space,
TAB, CR or LF). Each run is logged as the log-only pair ``command/run`` / ``command/done``; its output is
UI text, never model input. A name that is not registered is not a command (the text is a prompt, where a
``/<skill>`` may invoke a skill; the chat refuses a ``/name`` that is neither and suggests the nearest).

This module is the core's half: the registry every agent has (``agent.commands``) and the types a plugin's
command uses (``CommandCall``, ``CommandResult``, ``CommandError``). The built-in plugin ``commands``
(``dsh_tui.extensions.commands``) registers ``/compact``, ``/model``, ``/permission``, ``/title``, ``/new``,
``/fork``, ``/export``, ``/skills``, ``/plugins``, ``/mcp``, ``/retry`` and ``/help``.
"""

from __future__ import annotations

import inspect
import re
import secrets
from collections.abc import Callable
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
