"""Request serialization for the Anthropic Messages wire (dsh 0.2's ``dsh-llm-deepseek`` ``serialize``).

A harness request becomes ``{model, stream, messages, max_tokens, thinking, output_config?, system?,
temperature?, stop_sequences?, tools?}``. Tool results travel as ``tool_result`` blocks in user turns
(results first), consecutive turns of one role are merged, empty text is skipped, and a reasoning block
is sent back as ``thinking`` with the signature the same model gave it (``replayState`` of kind
``deepseek-messages``, version 1): signatures are not portable across models, so any other replay state
sends the reasoning text alone.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import orjson

from dsh_tui.llm.protocol import INVALID_REQUEST, UNSUPPORTED_REASONING_EFFORT, LlmError

MESSAGES_EFFORTS = ("off", "low", "high", "max")
REPLAY_KIND = "deepseek-messages"
REPLAY_VERSION = 1
UNSUPPORTED_CONTENT = "UNSUPPORTED_CONTENT"
# ref -> dsh_tui.store.attachments.RequestImage for a route that takes images; None: a text-only route
ImageResolver = Callable[[dict[str, Any]], Any] | None


def replay_state(model: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """The replay envelope stored on the assistant message (index-aligned with its content blocks)."""
    return {"response": {"kind": REPLAY_KIND, "version": REPLAY_VERSION, "model": model}, "blocks": blocks}


def read_replay(message: dict[str, Any], model: str | None) -> list[dict[str, Any]] | None:
    """The per-block replay metadata of ``message`` when it is usable for ``model``, else ``None``
    (foreign, malformed, another model's: the content is then sent without signatures)."""
    source = message.get("source")
    if not isinstance(source, dict) or source.get("kind") != "model":
        return None
    envelope = source.get("replayState")
    if not isinstance(envelope, dict):
        return None
    response = envelope.get("response")
    blocks = envelope.get("blocks")
    content = message.get("content") or []
    if (
        not isinstance(response, dict)
        or response.get("kind") != REPLAY_KIND
        or response.get("version") != REPLAY_VERSION
        or response.get("model") != source.get("model")
        or not isinstance(blocks, list)
        or len(blocks) != len(content)
    ):
        return None
    for block, meta in zip(content, blocks, strict=True):
        if not isinstance(meta, dict) or meta.get("type") != block.get("type"):
            return None
        sig = meta.get("signature")
        if sig is not None and (meta.get("type") != "reasoning" or not isinstance(sig, str)):
            return None
    return blocks if response.get("model") == model else None


def _tool_input(raw: Any) -> dict[str, Any]:
    """Historical arguments Messages cannot represent (not a JSON object) become ``{}``; the log keeps them."""
    try:
        value = orjson.loads(raw) if isinstance(raw, (str, bytes)) else raw
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _input_blocks(blocks: list[dict[str, Any]], images: ImageResolver = None) -> list[dict[str, Any]]:
    from dsh_tui.store import attachments

    out: list[dict[str, Any]] = []
    for block in blocks:
        t = block.get("type")
        if t == "text":
            if block.get("text"):
                out.append({"type": "text", "text": block["text"]})
        elif t == "image":
            ref = block.get("attachment") or {}
            # dsh 0.2: the handle text, then the image inline (base64)
            version = images(ref) if images is not None else None
            if version is None:  # a text-only route (or an image not in the local store): dsh's stand-in
                out.append({"type": "text", "text": attachments.text_only_text(ref)})
                continue
            if isinstance(version, str):  # left out to fit the request's image budget
                out.append({"type": "text", "text": version})
                continue
            out.append({"type": "text", "text": attachments.handle_text(ref, version)})
            out.append({"type": "image", "source": {"type": "base64", "media_type": version.media_type,
                                                    "data": base64.b64encode(version.data).decode("ascii")}})
    return out


def _assistant(message: dict[str, Any], model: str | None) -> list[dict[str, Any]]:
    replay = read_replay(message, model)
    out: list[dict[str, Any]] = []
    for index, block in enumerate(message.get("content") or []):
        t = block.get("type")
        if t == "text":
            if block.get("text"):
                out.append({"type": "text", "text": block["text"]})
        elif t == "reasoning":
            entry: dict[str, Any] = {"type": "thinking", "thinking": block.get("text", "")}
            sig = replay[index].get("signature") if replay is not None else None
            if sig is not None:
                entry["signature"] = sig
            out.append(entry)
        elif t == "tool-call":
            out.append({"type": "tool_use", "id": block.get("id", ""), "name": block.get("name", ""),
                        "input": _tool_input(block.get("arguments", ""))})
        else:
            raise LlmError(f"DeepSeek Messages cannot represent assistant content {t}", UNSUPPORTED_CONTENT)
    return out


def serialize_messages(messages: list[dict[str, Any]], model: str | None,
                       images: ImageResolver = None) -> tuple[list[dict[str, Any]], str]:
    """(wire messages, system text found in the history). ``images``: how a route that takes images gets
    each image's request version; None: images become dsh's text-only stand-in."""
    wire: list[dict[str, Any]] = []
    history_system: list[str] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content") or []
        if role == "system":
            history_system.append("".join(b.get("text", "") for b in content if b.get("type") == "text"))
            continue
        if role == "assistant":
            blocks = _assistant(message, model)
        else:
            blocks = []
            for block in content:
                if block.get("type") == "tool-result":
                    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.get("toolCallId", ""),
                                              "content": _input_blocks(block.get("content") or [], images)}
                    if block.get("isError") is not None:
                        result["is_error"] = bool(block["isError"])
                    blocks.append(result)
                else:
                    blocks.extend(_input_blocks([block], images))
            role = "user"
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    _check_pairs(wire)
    return wire, "\n\n".join(s for s in history_system if s)


def _check_pairs(wire: list[dict[str, Any]]) -> None:
    """Every tool call is answered in the next user turn, results first (what the Messages API requires)."""
    pending: set[str] = set()
    for message in wire:
        if message["role"] == "assistant":
            calls = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
            pending = set(calls)
            if len(pending) != len(calls):
                raise LlmError("DeepSeek Messages duplicate tool call id", INVALID_REQUEST)
            continue
        results = [b for b in message["content"] if b["type"] == "tool_result"]
        for result in results:
            if result["tool_use_id"] not in pending:
                raise LlmError("DeepSeek Messages tool result has no matching call", INVALID_REQUEST)
            pending.discard(result["tool_use_id"])
        if pending:
            raise LlmError("DeepSeek Messages tool calls need immediate results", INVALID_REQUEST)
        message["content"] = results + [b for b in message["content"] if b["type"] != "tool_result"]
    if pending:
        raise LlmError("DeepSeek Messages history ends with unresolved tools", INVALID_REQUEST)


def serialize_request(
    request: dict[str, Any],
    *,
    thinking: str | None = None,
    default_effort: str | None = None,
    max_tokens: int | None = None,
    images: ImageResolver = None,
) -> dict[str, Any]:
    """The ``/v1/messages`` body for one harness request (key order as dsh 0.2 sends it)."""
    config = request.get("config") or {}
    model = config.get("model")
    messages, history_system = serialize_messages(request.get("messages") or [], model, images)
    if request.get("purpose") == "session-title":
        effort = "off"
    else:
        effort = config.get("reasoningEffort") or default_effort or ("off" if thinking == "disabled" else "high")
    if effort not in MESSAGES_EFFORTS or (thinking == "disabled" and effort != "off"):
        raise LlmError(f"DeepSeek Messages does not support reasoning effort {effort}", UNSUPPORTED_REASONING_EFFORT)
    system = "\n\n".join(s for s in (request.get("system"), history_system) if s)
    body: dict[str, Any] = {
        "model": model,
        "stream": True,
        "messages": messages,
        "max_tokens": config.get("maxTokens") or max_tokens,
        "thinking": {"type": "disabled" if effort == "off" else "enabled"},
    }
    if effort != "off":
        body["output_config"] = {"effort": effort}
    if system:
        body["system"] = system
    if config.get("temperature") is not None:
        body["temperature"] = config["temperature"]
    if config.get("stop") is not None:
        body["stop_sequences"] = config["stop"]
    tools = request.get("tools")
    if tools:
        body["tools"] = [
            {"name": t.get("name"), "description": t.get("description"), "input_schema": t.get("parameters")}
            for t in tools
        ]
    return body
