"""MCP beyond tools: a server's prompts as slash commands and its resources as ``@server:uri`` mentions.

- **Prompts** (``prompts/list``, re-listed on ``notifications/prompts/list_changed`` and every reconnect) are
  the commands ``/mcp__<server>__<prompt>`` (lower-cased; characters outside ``a-z 0-9 _ -`` become ``_``).
  The words after the command are the prompt's arguments in their listed order (quote one with spaces:
  ``"two words"``; the last one takes the rest of the line). ``prompts/get``'s messages are sent to the model
  as one user message (an assistant message's text marked ``[assistant]``); the command's output says so.
- **Resources**: ``@<server>:<uri>`` in a prompt (as Claude Code) makes the ``mcp`` plugin read that resource
  (``resources/read``) when the turn starts and add its text to the turn as a recorded user message (binary
  contents are named, not sent; a failed read is said in that message).
"""

from __future__ import annotations

import re
import shlex
from typing import Any

MENTION = re.compile(r"(?<![^\s(\[{\"'])@([A-Za-z0-9_-]+):([A-Za-z][A-Za-z0-9+.-]*:[^\s)\]}\"']+)")
MAX_RESOURCE_CHARS = 100_000


def command_name(server: str, prompt: str) -> str:
    return re.sub(r"[^a-z0-9_-]", "_", f"mcp__{server}__{prompt}".lower())


def prompt_usage(name: str, arguments: list[Any]) -> str:
    words = [f"<{a.name}>" if a.required else f"[{a.name}]" for a in arguments or []]
    return " ".join([f"/{name}", *words])


def prompt_arguments(args: str, arguments: list[Any], usage: str) -> dict[str, str]:
    """The command's words as the prompt's arguments, in order; the last takes the rest of the line."""
    from dsh_tui.runtime.commands import CommandError

    declared = list(arguments or [])
    try:
        words = shlex.split(args) if args.strip() else []
    except ValueError as err:
        raise CommandError(f"{err}. Usage: {usage}") from None
    if declared and len(words) > len(declared):
        words = [*words[:len(declared) - 1], " ".join(words[len(declared) - 1:])]
    elif not declared and words:
        raise CommandError(f"This prompt takes no arguments. Usage: {usage}")
    values = {a.name: w for a, w in zip(declared, words, strict=False)}
    missing = [a.name for a in declared if a.required and a.name not in values]
    if missing:
        raise CommandError(f"Missing {', '.join(missing)}. Usage: {usage}")
    return values


def _content_text(content: Any) -> str:
    kind = getattr(content, "type", None)
    if kind == "text":
        return content.text
    if kind == "resource":
        inner = content.resource
        text = getattr(inner, "text", None)
        return text if isinstance(text, str) else f"[binary resource {inner.uri}: {inner.mime_type or 'unknown type'}]"
    if kind == "resource_link":
        return f"Resource link: {content.name} ({content.uri})"
    return f"[{kind or 'unknown'} content: {getattr(content, 'mime_type', None) or 'unknown media type'}]"


def prompt_text(messages: list[Any]) -> str:
    parts = []
    for message in messages:
        text = _content_text(message.content)
        parts.append(f"[assistant] {text}" if message.role == "assistant" else text)
    return "\n\n".join(parts)


def make_prompt_command(server: Any, raw: str, description: str, arguments: list[Any]) -> tuple[str, str, Any, str]:
    """(name, help, run, usage) of the command of ``server``'s prompt ``raw``."""
    from dsh_tui.runtime.commands import CommandError, CommandResult

    name = command_name(server.name, raw)
    usage = prompt_usage(name, arguments)

    async def run(call: Any) -> CommandResult:
        values = prompt_arguments(call.args, arguments, usage)
        session = server.session
        if session is None:
            raise CommandError(f"MCP server {server.name} is not connected.")
        try:
            result = await session.get_prompt(raw, values or None)
        except Exception as err:  # noqa: BLE001 - the server's error, one line
            raise CommandError(f"MCP server {server.name}: prompt {raw} failed: {err}") from None
        text = prompt_text(list(getattr(result, "messages", []) or []))
        if not text.strip():
            raise CommandError(f"MCP server {server.name}: prompt {raw} returned no messages.")
        call.agent.followup(text)
        return CommandResult(f"Sent the prompt {raw} of MCP server {server.name}.")

    help_text = " ".join((description or f"MCP prompt {raw} ({server.name})").split())[:200]
    return name, help_text, run, usage


def mentions(text: str) -> list[tuple[str, str]]:
    """``(server, uri)`` of every ``@server:uri`` in ``text``, in order, without repeats."""
    seen: list[tuple[str, str]] = []
    for m in MENTION.finditer(text):
        pair = (m.group(1), m.group(2).rstrip(".,;:!?"))
        if pair not in seen:
            seen.append(pair)
    return seen


async def read_resource_text(server: Any, uri: str) -> str:
    """The model-visible text of resource ``uri`` of ``server`` (a failure is said, not raised)."""
    where = f"@{server.name}:{uri}"
    session = server.session
    if session is None:
        return f"[MCP resource {where} could not be read: the server is not connected ({server.state})]"
    try:
        result = await session.read_resource(uri)
    except Exception as err:  # noqa: BLE001 - the server's error, in the message
        return f"[MCP resource {where} could not be read: {' '.join(str(err).split()) or type(err).__name__}]"
    parts = []
    for item in getattr(result, "contents", []) or []:
        text = getattr(item, "text", None)
        if isinstance(text, str):
            if len(text) > MAX_RESOURCE_CHARS:
                text = text[:MAX_RESOURCE_CHARS] + f"\n[... cut at {MAX_RESOURCE_CHARS} characters]"
            parts.append(text)
        else:
            blob = getattr(item, "blob", "") or ""
            parts.append(f"[binary contents: {getattr(item, 'mime_type', None) or 'unknown type'}, "
                         f"{len(blob) * 3 // 4 - blob[-2:].count('=')} bytes, not shown]")
    body = "\n".join(parts) if parts else "(empty)"
    return f"Contents of the MCP resource {where}:\n{body}"
