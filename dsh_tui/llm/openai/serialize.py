"""Request serialization: a harness request as a ``/chat/completions`` body (dsh-llm-deepseek
``serialize.ts``; text blocks joined with ""), reasoning effort on the wire per ``thinking_format``."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import orjson

from dsh_tui.llm.protocol import (
    UNSUPPORTED_REASONING_EFFORT,
    LlmError,
)

DEEPSEEK_EFFORTS = ("off", "low", "high", "max")
OPENAI_EFFORTS = ("off", "low", "medium", "high")
THINKING_FORMATS = ("deepseek", "openai", "none")
TOOL_RESULT_IMAGE_TEXT = "Attached image(s) from tool result:"
# ref -> dsh_tui.store.attachments.RequestImage for a route that takes images; None: a text-only route
ImageResolver = Callable[[dict[str, Any]], Any] | None


# --------------------------------------------------------------------------------------------------
# Serialization (dsh-llm-deepseek serialize.ts, text blocks joined with "")


def _text_only(ref: dict[str, Any]) -> str:
    from dsh_tui.store.attachments import text_only_text

    return text_only_text(ref)


def _flatten_text(blocks: list[dict[str, Any]]) -> str:
    out = []
    for block in blocks:
        t = block.get("type")
        if t == "text":
            out.append(block.get("text", ""))
        elif t == "image":  # a text-only route: dsh's stand-in text
            out.append(_text_only(block.get("attachment") or {}))
    return "".join(out)


def _parts(blocks: list[dict[str, Any]], images: Callable[[dict[str, Any]], Any]) -> list[dict[str, Any]]:
    """User (or tool-result) blocks as ordered content parts: dsh's handle text before each image_url."""
    from dsh_tui.store.attachments import handle_text

    parts: list[dict[str, Any]] = []
    for block in blocks:
        t = block.get("type")
        if t == "text":
            if block.get("text"):
                parts.append({"type": "text", "text": block["text"]})
        elif t == "image":
            ref = block.get("attachment") or {}
            version = images(ref)
            if version is None or isinstance(version, str):  # lost from the store / left out to fit the budget
                parts.append({"type": "text", "text": _text_only(ref) if version is None else version})
                continue
            lead = "\n" if parts else ""
            parts.append({"type": "text", "text": lead + handle_text(ref, version)})
            data = base64.b64encode(version.data).decode("ascii")
            parts.append({"type": "image_url", "image_url": {"url": f"data:{version.media_type};base64,{data}"}})
    return parts


def _user_content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    if all(p["type"] == "text" for p in parts):
        return "".join(p["text"] for p in parts)
    return parts


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


def serialize_messages(messages: list[dict[str, Any]], *, reasoning_passback: bool = True,
                       images: ImageResolver = None) -> list[dict]:
    """``images``: how a route that takes images gets each image's request version (dsh-llm-deepseek's
    ``serializeMessagesWithImages``: a user message's images as ``image_url`` parts, a tool result's in one
    user message after the tool messages); None: images become dsh's text-only stand-in."""
    if images is not None:
        from dsh_tui.store.attachments import has_image

        if any(has_image(m.get("content")) for m in messages):
            return _serialize_with_images(messages, images, reasoning_passback)
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


def _serialize_with_images(messages: list[dict[str, Any]], images: Callable[[dict[str, Any]], Any],
                           reasoning_passback: bool) -> list[dict]:
    wire: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []

    def flush() -> None:
        if pending:
            wire.append({"role": "user", "content": [{"type": "text", "text": TOOL_RESULT_IMAGE_TEXT}, *pending]})
            pending.clear()

    for message in messages:
        role = message.get("role")
        content = message.get("content") or []
        if role == "system":
            flush()
            wire.append({"role": "system", "content": _flatten_text(content)})
            continue
        if role == "assistant":
            flush()
            entry = _serialize_assistant(message)
            if not reasoning_passback:
                entry.pop("reasoning_content", None)
            wire.append(entry)
            continue
        regular = [b for b in content if b.get("type") != "tool-result"]
        results = [b for b in content if b.get("type") == "tool-result"]
        user = _user_content(_parts(regular, images))
        if user or not results:
            flush()
            wire.append({"role": "user", "content": user})
        for result in results:
            parts = _parts(result.get("content") or [], images)
            text = "".join(p["text"] for p in parts if p["type"] == "text")
            wire.append({"role": "tool", "tool_call_id": result.get("toolCallId", ""),
                         "content": text or "(no output)"})
            pending.extend(p for p in parts if p["type"] != "text")
    flush()
    return wire


def serialize_request(
    request: dict[str, Any],
    *,
    thinking_format: str = "deepseek",
    thinking: str | None = None,
    default_effort: str | None = None,
    images: ImageResolver = None,
) -> dict[str, Any]:
    """The ``/chat/completions`` body for one harness request (optional fields omitted, never null)."""
    config = request.get("config") or {}
    messages: list[dict[str, Any]] = []
    system = request.get("system")
    if system is not None:
        messages.append({"role": "system", "content": system})
    messages.extend(
        serialize_messages(request.get("messages") or [], reasoning_passback=thinking_format != "none",
                           images=images)
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
