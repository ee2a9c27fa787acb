"""What crosses ``dsh-tui acp``'s boundary (``cli/acp_cmd.py``): dsh-tui session events as ACP
``session/update`` notifications (message and thought chunks, tool calls with their kind, location and diff,
results, plans from todos), and an ACP prompt's blocks as prompt text."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acp.schema import PlanEntryStatus, ToolKind

KINDS: dict[str, ToolKind] = {"read": "read", "write": "edit", "edit": "edit", "bash": "execute", "grep": "search",
                              "glob": "search", "todo_write": "think", "web_fetch": "fetch"}
PLAN_STATUSES: dict[str, PlanEntryStatus] = {"pending": "pending", "in_progress": "in_progress",
                                             "completed": "completed"}


def _plan_status(value: Any) -> PlanEntryStatus:
    """A todo's status as an ACP plan entry's (anything else: pending)."""
    return PLAN_STATUSES.get(value, "pending") if isinstance(value, str) else "pending"


def _args(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


_DIFF_MAX_BYTES = 1 << 20  # an older file than this is not put in a diff


def _file_text(path: str) -> str | None:
    """A regular UTF-8 file's text (the old side of a write's diff), or None (absent, too big, not text)."""
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > _DIFF_MAX_BYTES:
            return None
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def _text(blocks: Any) -> str:
    return "".join(b.get("text", "") for b in blocks or [] if isinstance(b, dict) and b.get("type") == "text")


def prompt_text(prompt: list[Any]) -> str:
    parts: list[str] = []
    for block in prompt:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource":
            res = block.resource
            text = getattr(res, "text", None)
            if text is not None:
                parts.append(f'\n<file uri="{res.uri}">\n{text}\n</file>\n')
        elif kind == "resource_link":
            parts.append(f" @{block.uri} ")
        elif kind == "audio":
            parts.append(f"[{kind} omitted: this agent does not accept {kind} input]")
    return "".join(parts)


def title(name: str, args: dict[str, Any]) -> str:
    target = args.get("command") or args.get("file_path") or args.get("path") or args.get("pattern")
    return f"{name} {target}" if isinstance(target, str) and target else name


class SessionUpdates:
    """One connection's translation of session events into ACP updates: what it remembers between events
    (each tool call's name and arguments, which blocks streamed deltas, each session's working directory)."""

    def __init__(self, session_cwd: Callable[[str], str | None]) -> None:
        self._session_cwd = session_cwd  # a session's recorded cwd (its header's), when none was folded yet
        self.tools: dict[str, dict[str, Any]] = {}  # call id -> {name, args, raw}
        self._streamed: dict[tuple, bool] = {}  # (session, turn, step, block index) -> deltas were sent
        self._cwds: dict[str, str] = {}  # session -> its working directory as its events went (absolute paths)

    def restart(self, sid: str) -> None:
        """The session's history is folded again from its start (``session/load``)."""
        self._cwds.pop(sid, None)

    def absolute(self, sid: str, path: str) -> str:
        if os.path.isabs(path):
            return path
        cwd = self._cwds.get(sid)
        if cwd is None:
            cwd = self._session_cwd(sid) or os.getcwd()
            self._cwds[sid] = cwd
        return os.path.normpath(os.path.join(cwd, path))

    def of(self, event: dict[str, Any], *, replay: bool = False, sid: str = "") -> list[Any]:
        from acp import (
            plan_entry,
            start_tool_call,
            text_block,
            tool_content,
            tool_diff_content,
            update_agent_message_text,
            update_agent_thought_text,
            update_plan,
            update_tool_call,
            update_user_message_text,
        )
        from acp.schema import ToolCallLocation

        t = event.get("type")
        data = event.get("data") or {}
        if t == "assistant/chunk" and not replay:
            chunk = data.get("chunk") or {}
            kind = chunk.get("type")
            key = (sid, data.get("turn"), data.get("step"), chunk.get("index"))
            if kind == "block-start":
                self._streamed[key] = False
            elif kind in ("text-delta", "reasoning-delta") and chunk.get("text"):
                self._streamed[key] = True
                send = update_agent_message_text if kind == "text-delta" else update_agent_thought_text
                return [send(chunk["text"])]
            elif kind == "block-end":  # a block whose text came whole (no deltas) is sent whole
                block = chunk.get("block") or {}
                if not self._streamed.pop(key, False) and isinstance(block.get("text"), str) and block["text"]:
                    if block.get("type") == "text":
                        return [update_agent_message_text(block["text"])]
                    if block.get("type") == "reasoning":
                        return [update_agent_thought_text(block["text"])]
            return []
        if t == "assistant/message" and replay:
            out: list[Any] = []  # the message's text and thought chunks, in order
            for block in (data.get("message") or {}).get("content") or []:
                if block.get("type") == "text" and block.get("text"):
                    out.append(update_agent_message_text(block["text"]))
                elif block.get("type") == "reasoning" and block.get("text"):
                    out.append(update_agent_thought_text(block["text"]))
            return out
        if t == "user/message" and replay and (data.get("source") or {}).get("kind") == "user":
            text = _text(data.get("content"))
            return [update_user_message_text(text)] if text else []
        if t == "working-directory/change" and isinstance(data.get("cwd"), str):
            self._cwds[sid] = data["cwd"]
            return []
        if t == "tool/call":
            name, raw = str(data.get("name", "")), data.get("arguments") or ""
            args = _args(raw)
            call_id = str(data.get("callId", ""))
            self.tools[call_id] = {"name": name, "args": args, "raw": raw}
            path = args.get("file_path") or args.get("path")
            # ACP's paths are absolute: a tool's relative path is the session's working directory's
            path = self.absolute(sid, path) if isinstance(path, str) and path else None
            locations = [ToolCallLocation(path=path)] if path else None
            content = None
            if name == "write" and isinstance(args.get("content"), str) and path:
                # the call is logged before it runs: a live write's old text is the file as it is now
                old = None if replay else _file_text(path)
                content = [tool_diff_content(path, args["content"], old)]
            elif name == "edit" and isinstance(path, str) and isinstance(args.get("new_string"), str):
                content = [tool_diff_content(path, args["new_string"], args.get("old_string"))]
            return [start_tool_call(call_id, title(name, args), kind=KINDS.get(name, "other"),
                                    status="in_progress", content=content, locations=locations, raw_input=args)]
        if t == "tool/result":
            message = data.get("message") or {}
            from dsh_tui.session.content import tool_result_block

            result = tool_result_block(message)  # v0's wrapper block or a v4 tool message
            call_id = str(result.get("toolCallId") or (message.get("source") or {}).get("callId") or "")
            text = _text(result.get("content"))
            failed = bool(result.get("isError"))
            return [update_tool_call(call_id, status="failed" if failed else "completed",
                                     content=[tool_content(text_block(text))] if text else None)]
        if t == "todo/write":
            todos = data.get("todos") or []
            entries = [plan_entry(str(td.get("content", "")), priority="medium", status=_plan_status(td.get("status")))
                       for td in todos if isinstance(td, dict)]
            return [update_plan(entries)]
        return []
