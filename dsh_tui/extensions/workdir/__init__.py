"""The ``working-directory`` built-in plugin: dsh 0.2's ``working_directory`` tool (``tool-working-directory``
over ``dsh-working-directory``).

The model reads its working directory, or changes it with ``cd`` (an existing directory; a relative path
resolves against the current one). A change is logged as dsh 0.2's ``working-directory/change {cwd}`` event
and announced to the model with dsh's notice (a user message of source ``{kind: "working-directory"}``:
``The working directory changed from "<old>" to "<new>".``); later tools resolve relative paths against the
new directory (``bash`` runs there by default, ``read``/``write``/``edit``/``glob``/``grep`` resolve relative
paths there) and the runtime context names it. The workspace (what the permission preset lets tools write)
does not move: "existing shells and running processes keep their own directories", and so do permissions.
A resumed session starts in the last directory its log recorded, if it still exists (else the original one,
with dsh's "is unavailable" notice).

In a v0 (dsh 0.1) log the event is written ``ignorable: true``: dsh 0.1 does not know it and may then skip it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsh_tui.session.rows import events_of
from dsh_tui.tools.base import ToolDefinition, ToolError

if TYPE_CHECKING:
    from dsh_tui.runtime.plugin_context import BuiltinContext

name = "working-directory"
EVENT = "working-directory/change"
_EVENTS = frozenset({EVENT})
SOURCE = {"kind": "working-directory"}
DESCRIPTION = ("Read the current working directory, or change it with cd. Relative paths use the current directory. "
               "Existing shells and running processes keep their own directories.")
PARAMETERS: dict[str, Any] = {"type": "object", "properties": {"cd": {
    "type": "string", "description": "Existing directory to enter. Omit to read the current directory."}}}


def _q(path: str) -> str:
    return json.dumps(path, ensure_ascii=False)  # JavaScript's JSON.stringify of a string


def changed_text(previous: str, directory: str) -> str:
    return f"The working directory changed from {_q(previous)} to {_q(directory)}."


def unavailable_text(previous: str, directory: str) -> str:
    return f"The working directory {_q(previous)} is unavailable. The working directory is now {_q(directory)}."


def recorded_directory(events: Any) -> str | None:
    """The directory the last ``working-directory/change`` of a log names (None: never changed)."""
    found = None
    for event in events_of(events, _EVENTS):  # in order, the last one kept: a loaded v4 log decodes only these
        if event.get("type") == EVENT and isinstance(event.get("data"), dict):
            cwd = event["data"].get("cwd")
            if isinstance(cwd, str) and cwd:
                found = cwd
    return found


class WorkingDirectory:
    """One agent's working directory (``agent.config.cwd``, which the tools and the runtime context read)."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent

    @property
    def current(self) -> str:
        return str(self.agent.config.cwd)

    def _commit(self, directory: str, recovered: bool) -> None:
        previous = self.current
        if previous == directory:
            return
        session = self.agent.session
        ignorable = int(session.header.get("version", 0) or 0) < 4  # dsh 0.1 does not know the event
        session.append(EVENT, {"cwd": directory}, ignorable=ignorable)
        self.agent.config.cwd = directory
        text = unavailable_text(previous, directory) if recovered else changed_text(previous, directory)
        self.agent.inject({"role": "user", "content": [{"type": "text", "text": text}], "source": dict(SOURCE)})

    def change(self, path: str) -> str:
        if path == "":
            raise ToolError("working-directory: cd must not be empty")
        target = Path(os.path.expanduser(path))
        if not target.is_absolute():
            target = Path(self.current) / target
        if not target.is_dir():
            raise ToolError(f"working-directory: directory does not exist: {_q(path)}")
        directory = str(target.resolve())
        self._commit(directory, False)
        return directory

    def ensure(self) -> str:
        """The current directory, or the session's original one (announced) when it disappeared."""
        current = self.current
        if Path(current).is_dir():
            return current
        original = str(self.agent.session.header.get("cwd") or self.agent.config.workspace or current)
        if not Path(original).is_dir():
            raise ToolError(f"working-directory: directory does not exist: {_q(original)}")
        self._commit(original, True)
        return original


def tool(wd: WorkingDirectory) -> ToolDefinition:
    async def execute(args: Any, ctx: Any) -> Any:
        cd = args.get("cd")
        if cd is not None and not isinstance(cd, str):
            raise ToolError("invalid cd: expected a string")
        return {"cwd": wd.ensure() if cd is None else wd.change(cd)}

    def render(_args: Any, value: Any) -> list[dict[str, Any]]:
        return [{"type": "text", "text": value["cwd"]}]

    return ToolDefinition(name="working_directory", description=DESCRIPTION, parameters=PARAMETERS,
                          execute=execute, render=render, is_concurrency_safe=lambda args: "cd" not in args)


def apply(ctx: BuiltinContext, config: Any = None) -> None:
    options = ctx.options  # this built-in owns the agent's working directory
    if options.workspace is None:  # the permission boundary stays where the session started
        options.workspace = options.cwd
    recorded = recorded_directory(ctx.live_session.events)
    if recorded is not None and recorded != str(options.cwd) and Path(recorded).is_dir():
        options.cwd = recorded  # a resumed session continues where the model left it
    ctx.tools.register(tool(WorkingDirectory(ctx.driver)))
