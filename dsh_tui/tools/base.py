"""The tool contract between built-in tools (``dsh_tui.tools``) and the tool service (``dsh_tui.runtime``).

A tool body is an ``async`` function ``execute(args, ctx) -> value`` returning a canonical JSON value;
``render(args, value)`` turns that value into model-visible content blocks. The tool service owns
argument validation, the pipeline, approvals, timeouts and scheduling; a tool owns
only its behaviour and its exact model-visible texts
(docs/runtime.md, "Tool pipeline, result format and spill").

A body reports an expected failure by raising ``ToolError(message, code)``; the service renders it as
``Error: <message>`` with ``isError: true``. A body must never block the event loop: subprocesses and
file work go through ``asyncio`` subprocesses or ``asyncio.to_thread``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from dsh_tui.session.errors import DshError

JSON = Any
ContentBlock = dict[str, Any]


class ToolSchema(TypedDict):
    """A tool as the model sees it (a request's ``tools`` entry): its name, description and JSON-Schema
    parameters."""

    name: str
    description: str
    parameters: dict[str, Any]


class ToolError(DshError):
    """An expected tool failure; ``code`` becomes ``error.code`` when set (harness-coded errors)."""

    def __init__(self, message: str, code: str | None = None, name: str = "ToolError") -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.name = name


@dataclass
class ToolContext:
    """What a running tool body may use. One per call."""

    call_id: str
    name: str
    cwd: Path
    # Workspace root: file paths are confined to it unless ``allow_outside`` (full-access preset).
    workspace: Path
    allow_outside: bool = False
    # Set when the call is cancelled; bodies check it and stop promptly.
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    # Directory for spill files of truncated output (created on demand).
    spill_dir: Path | None = None
    # Per-session shared state (e.g. which files were read, for edit/write preconditions).
    state: dict[str, Any] = field(default_factory=dict)
    # Append a todo list etc.: tools that own session events call this (type, data).
    emit_event: Callable[[str, dict[str, Any]], None] | None = None
    # The call's sandbox mode in dsh's words (``read-only`` | ``workspace-write`` | ``danger-full-access``):
    # the preset's, or the wider one an approved escalation granted; None: no sandbox policy (a bare tool call).
    sandbox_mode: str | None = None


def default_render(_args: Any, value: JSON) -> list[ContentBlock]:
    """A tool without ``render``: its value as one text block (a string as is, else compact JSON)."""
    import json

    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return [{"type": "text", "text": text}]


@dataclass
class ToolDefinition:
    name: str
    description: str
    parameters: dict[str, Any]
    execute: Callable[[Any, ToolContext], Awaitable[JSON]]
    # the model-facing content of a result value; None: ``default_render`` (a string as it is, anything
    # else as compact JSON)
    render: Callable[[Any, JSON], list[ContentBlock]] | None = None
    # Tool-private presentation data stored as ``tool/result.meta`` (top-level calls only).
    presentation_meta: Callable[[Any, JSON], JSON] | None = None
    timeout_ms: int | None = None
    # Only an exact ``True`` makes a call parallel-safe; anything else is exclusive (fail closed).
    is_concurrency_safe: Callable[[Any], bool] | None = None
    # "read" tools never ask for approval; "write" tools ask outside the workspace under
    # workspace-write; "exec" tools ask under workspace-write (docs/runtime.md, "Approvals and presets");
    # "mcp" tools (an MCP server's) ask under read-only and workspace-write; "mcp-allowed" ones (allowed by
    # the server's settings, or trusted read-only) never ask.
    access: str = "read"
    # An "exec" tool whose commands run in the OS sandbox (``dsh_tui.tools.sandbox``): under read-only and
    # workspace-write it runs without asking; only an escalation (``sandbox_permissions``) asks.
    sandboxed: bool = False

    def content(self, args: Any, value: JSON) -> list[ContentBlock]:
        return (self.render or default_render)(args, value)

    def schema(self) -> ToolSchema:
        """The model-facing projection: only name, description and parameters go on the wire."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}
