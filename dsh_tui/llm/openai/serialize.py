"""Request serialization: a harness request as a ``/chat/completions`` body (dsh-llm-deepseek
``serialize.ts``; text blocks joined with ""), reasoning effort on the wire per ``thinking_format``."""

from __future__ import annotations

import json
from typing import Any

import orjson

from dsh_tui.llm.protocol import (
    UNSUPPORTED_REASONING_EFFORT,
    LlmError,
)

DEEPSEEK_EFFORTS = ("off", "low", "high", "max")
OPENAI_EFFORTS = ("off", "low", "medium", "high")
THINKING_FORMATS = ("deepseek", "openai", "none")
IMAGE_PLACEHOLDER = "[image omitted: this model route does not accept image input]"


# --------------------------------------------------------------------------------------------------
# Serialization (dsh-llm-deepseek serialize.ts, text blocks joined with "")


def _flatten_text(blocks: list[dict[str, Any]]) -> str:
    out = []
    for block in blocks:
        t = block.get("type")
        if t == "text":
            out.append(block.get("text", ""))
        elif t == "image":
            out.append(IMAGE_PLACEHOLDER)
    return "".join(out)


def _serialize_assistant(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content") or []
    text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
    reasoning = "".join(b.get("text", "") for b in content if b.get("type") == "reasoning")
    calls = [
        {
            "id": b.get("id", ""),
            "type": "function",
            "function": {"name": b.get("name", ""), "arguments": b.get("arguments", "")},
        }
        for b in content
        if b.get("type") == "tool-call"
    ]
    out: dict[str, Any] = {"role": "assistant", "content": text}
    if reasoning:
        out["reasoning_content"] = reasoning
    if calls:
        out["tool_calls"] = calls
    return out


def serialize_messages(messages: list[dict[str, Any]], *, reasoning_passback: bool = True) -> list[dict]:
    wire: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content") or []
        if role == "system":
            wire.append({"role": "system", "content": _flatten_text(content)})
            continue
        if role == "assistant":
            entry = _serialize_assistant(message)
            if not reasoning_passback:
                entry.pop("reasoning_content", None)
            wire.append(entry)
            continue
        results = [b for b in content if b.get("type") == "tool-result"]
        text = _flatten_text(content)
        if text or not results:
            wire.append({"role": "user", "content": text})
        for result in results:
            wire.append(
                {
                    "role": "tool",
                    "tool_call_id": result.get("toolCallId", ""),
                    "content": _flatten_text(result.get("content") or []) or "(no output)",
                }
            )
    return wire


def serialize_request(
    request: dict[str, Any],
    *,
    thinking_format: str = "deepseek",
    thinking: str | None = None,
    default_effort: str | None = None,
) -> dict[str, Any]:
    """The ``/chat/completions`` body for one harness request (optional fields omitted, never null)."""
    config = request.get("config") or {}
    messages: list[dict[str, Any]] = []
    system = request.get("system")
    if system is not None:
        messages.append({"role": "system", "content": system})
    messages.extend(
        serialize_messages(request.get("messages") or [], reasoning_passback=thinking_format != "none")
    )
    body: dict[str, Any] = {
        "model": config.get("model"),
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    body.update(
        _thinking_fields(
            config.get("reasoningEffort"), request.get("purpose"), thinking_format, thinking, default_effort
        )
    )
    tools = request.get("tools") or []
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.get("name"),
                    "description": t.get("description"),
                    "parameters": t.get("parameters"),
                },
            }
            for t in tools
        ]
    if config.get("temperature") is not None:
        body["temperature"] = config["temperature"]
    if config.get("maxTokens") is not None:
        body["max_tokens"] = config["maxTokens"]
    if config.get("stop") is not None:
        body["stop"] = config["stop"]
    return body


def _thinking_fields(
    effort: str | None, purpose: str | None, fmt: str, thinking: str | None, default_effort: str | None
) -> dict[str, Any]:
    if fmt == "none":
        return {}
    if fmt == "openai":
        if purpose == "session-title":
            return {}
        effort = default_effort if effort is None else effort
        if effort is None or effort == "off":
            return {}
        if effort not in OPENAI_EFFORTS:
            raise LlmError(
                f'this provider does not support reasoning effort "{effort}"', UNSUPPORTED_REASONING_EFFORT
            )
        return {"reasoning_effort": effort}
    # deepseek
    if purpose == "session-title":
        return {"thinking": {"type": "disabled"}}
    if effort is None:
        effort = default_effort
    elif effort not in DEEPSEEK_EFFORTS:
        raise LlmError(f'DeepSeek does not support reasoning effort "{effort}"', UNSUPPORTED_REASONING_EFFORT)
    if thinking == "disabled" and effort is not None and effort != "off":
        raise LlmError(
            f'DeepSeek deployment does not support reasoning effort "{effort}"', UNSUPPORTED_REASONING_EFFORT
        )
    if effort == "off":
        return {"thinking": {"type": "disabled"}}
    if effort in ("low", "high", "max"):
        return {"thinking": {"type": "enabled"}, "reasoning_effort": effort}
    return {} if thinking is None else {"thinking": {"type": thinking}}


def encode_body(body: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(body)
    except TypeError:
        # Lone surrogates (legal in a dsh log) cannot be UTF-8: escape them as JSON.stringify does.
        return json.dumps(body, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode()
