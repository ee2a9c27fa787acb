"""Format v4's write shapes (docs/format.md, "Writing v4"): what the runtime appends (v0 shapes) as a v4 log
stores it, message sources as dsh 0.2 migrates a released plugin's, and a v4 surface event read back as the
runtime's providers read messages. ``Session.append`` uses them on a v4 log; ``dsh_tui.session.log``
re-exports them.
"""

from __future__ import annotations

from typing import Any

from .events import (
    ASSISTANT_CHUNK,
    ASSISTANT_MESSAGE,
    REQUEST_HEADER,
    SESSION_TITLE_LLM_REQUEST,
    TOOL_RESULT,
    USER_MESSAGE,
)
from .surface import event_message


def v4_write_shape(type: str, data: Any, surface_op: Any, source_event_seqs: Any, ignorable: bool  # noqa: A002
                   ) -> tuple[Any, Any, Any, bool]:
    """What the runtime appends (v0 shapes), as format v4 stores it (docs/format.md, "Writing v4"):
    ``assistant/chunk`` (not in v4's vocabulary) is kept as an ``ignorable`` event; an assistant message
    cites no chunk seqs; a tool result becomes a native ``role: "tool"`` message; a replace is
    ``{op, startSeq, endSeq}``; ``request/header`` drops ``system`` (the ``system/message`` head holds it)."""
    if type == ASSISTANT_CHUNK:
        return data, surface_op, source_event_seqs, True
    if type == USER_MESSAGE and isinstance(data, dict):
        data = v4_message(data)
    elif type in ("agent/inbox/spliced", SESSION_TITLE_LLM_REQUEST) and isinstance(data, dict):
        key = "inserted" if type == "agent/inbox/spliced" else "messages"
        if isinstance(data.get(key), list):
            data = {**data, key: [v4_message(m) if isinstance(m, dict) else m for m in data[key]]}
    if type == ASSISTANT_MESSAGE:
        return data, surface_op, None, ignorable
    if type == REQUEST_HEADER and isinstance(data, dict) and isinstance(data.get("header"), dict) \
            and "system" in data["header"]:
        return ({**data, "header": {k: v for k, v in data["header"].items() if k != "system"}}, surface_op,
                source_event_seqs, ignorable)
    if type == TOOL_RESULT and isinstance(data, dict) and isinstance(data.get("message"), dict):
        msg = data["message"]
        content = msg.get("content")
        if msg.get("role") == "user" and isinstance(content, list) and len(content) == 1 \
                and isinstance(content[0], dict) and content[0].get("type") == "tool-result":
            block = content[0]
            data = {**data, "message": {"role": "tool", "source": v4_source(msg.get("source")),
                                        "toolCallId": block.get("toolCallId"), "content": block.get("content", []),
                                        "isError": bool(block.get("isError")), "id": msg.get("id")}}
    if isinstance(surface_op, dict) and "start" in surface_op:  # a pruned result, a compaction checkpoint
        surface_op = {"op": "replace", "startSeq": surface_op["start"], "endSeq": surface_op["end"]}
    return data, surface_op, source_event_seqs, ignorable


#: dsh 0.2's producer kinds for released plugin sources (``rewriteV3MessageSource``): a renamed producer, one that
#: keeps its name, else ``plugin:<name>``
_RENAMED_PRODUCERS = {"compact": "compact-checkpoint", "tools-code-mode": "ptc-mode", "tools-ptc": "ptc-mode",
                      "dsh-compaction-basic": "compact-basic", "@deepseek-ai/dsh-system-prompt": "runtime-context"}
_SAME_NAME_PRODUCERS = frozenset((
    "agent-instructions", "session-reference", "team-message", "goal", "skill-invocation", "skill-catalog",
    "coordinator", "subagent-report", "subagent-settled", "webhook", "agent-message", "model-selection", "plan-mode",
    "time-context", "tmux-context", "user-approval", "repeat-tool-reminder", "tool-cordis", "cordis-host-runner",
    "tool-goal", "tool-jobs", "hooks-codex", "hooks-claude-code", "schedule", "dsh-session-title-llm"))


def v4_source(source: Any, role: Any = None) -> Any:
    """A message source in format v4: ``{kind: "plugin", plugin: P, ...}`` becomes P's producer kind (the other
    fields kept, ``plugin`` dropped), as dsh 0.2 migrates a released one."""
    if not isinstance(source, dict) or source.get("kind") != "plugin" or not isinstance(source.get("plugin"), str):
        return source
    plugin = source["plugin"]
    if plugin == "@deepseek-ai/dsh-system-prompt" and role == "system":
        kind = "system-prompt"
    else:
        kind = _RENAMED_PRODUCERS.get(plugin) or (plugin if plugin in _SAME_NAME_PRODUCERS else f"plugin:{plugin}")
    return {k: (kind if k == "kind" else v) for k, v in source.items() if k != "plugin"}


def v4_message(message: dict) -> dict:
    src = message.get("source")
    new = v4_source(src, message.get("role"))
    return message if new is src else {**message, "source": new}


def v4_runtime_message(event: dict) -> Any:
    """A v4 surface event as the runtime's providers read messages (v0 shapes): system and developer
    messages are not messages there (the system prompt travels as the request's ``system``), and a native
    tool message is the v0 user message with one ``tool-result`` block."""
    t = event["type"]
    if t in ("system/message", "developer/message"):
        return None
    if t == TOOL_RESULT:
        msg = event["data"]["message"]
        if msg.get("role") == "tool":
            block: dict[str, Any] = {"type": "tool-result", "toolCallId": msg.get("toolCallId"),
                                     "content": msg.get("content", [])}
            if "isError" in msg:  # a v4 result always says (false too), as the runtime's own v0 block does
                block["isError"] = bool(msg["isError"])
            return {"id": msg.get("id"), "role": "user", "content": [block], "source": msg.get("source")}
        return msg
    return event_message(event)
