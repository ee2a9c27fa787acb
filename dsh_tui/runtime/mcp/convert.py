"""MCP ``tools/call`` results as dsh shows them to the model (docs/extensions.md, "MCP").

The canonical value of a call is ``{"content": [...], "structuredContent"?: ...}`` (the raw blocks, for
programmatic callers); the model sees text: text runs joined with ``\\n``, every other block as dsh's
placeholder text. An image becomes real image blocks only with an attachment store and an
image-capable route; dsh-tui has no attachment store, so images are always the diagnostic text (after
dsh's validation of their media type and base64, whose reasons come first).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

IMAGE_MEDIA_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")
_CANONICAL_B64 = re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$")
NOT_ADMITTED = "this result was not admitted to durable model context"
NO_STORE = "no attachment store is mounted"
OTHER_INVALID = "another image in the same result was invalid"


def _js(value: Any) -> str:
    """``JSON.stringify``."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def image_diagnostic(block: dict, reason: str) -> str:
    media = block.get("mimeType")
    media = media if media is not None else "unknown media type"
    return f"[image unavailable: {media}; {reason}; raw image data remains available to programmatic callers]"


def project(content: list, raw_name: str, image_reason: Any = None) -> list[dict]:
    """The ordered blocks as model content: text-like runs coalesced with ``\\n``; each image its own
    block at its position (``image_reason(block, index)`` names why it is text; default: not admitted)."""
    out: list[dict] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            out.append({"type": "text", "text": "\n".join(run)})
            run.clear()

    for index, block in enumerate(content):
        if not isinstance(block, dict):
            run.append("[unsupported MCP content block: expected an object]")
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if text is not None:
                run.append(text if isinstance(text, str) else _js(text))
        elif kind == "image":
            flush()
            reason = image_reason(block, index) if image_reason is not None else NOT_ADMITTED
            out.append({"type": "text", "text": image_diagnostic(block, reason)})
        elif kind == "resource_link":
            name, uri = block.get("name"), block.get("uri")
            if name is None or uri is None:
                run.append("[resource link unavailable: the MCP block is missing its name or URI]")
            else:
                run.append(f"Resource link: {name} ({uri})")
        elif kind == "audio":
            media = block.get("mimeType")
            run.append(f"[audio result unsupported: {media if media is not None else 'unknown media type'}; "
                       "raw audio data remains available to programmatic callers]")
        elif kind == "resource":
            run.append("[embedded resource unsupported; raw resource data remains available to programmatic callers]")
        else:
            run.append(f"[unsupported MCP content type: {kind if isinstance(kind, str) else _js(kind)}]")
    flush()
    return out or [{"type": "text", "text": f"({raw_name} returned no model-visible content)"}]


def extract_text(content: list, raw_name: str) -> str:
    return "\n".join(b["text"] for b in project(content, raw_name))


def _image_error(block: dict) -> str | None:
    media = block.get("mimeType")
    if media not in IMAGE_MEDIA_TYPES:
        return "the declared media type is not PNG, JPEG, WebP, or GIF"
    data = block.get("data")
    if not isinstance(data, str) or not _CANONICAL_B64.match(data):
        return "the image data is not canonical base64"
    try:
        if base64.b64encode(base64.b64decode(data, validate=True)).decode("ascii") != data:
            return "the image data is not canonical base64"
    except (binascii.Error, ValueError):
        return "the image data is not canonical base64"
    return None


def model_content(value: dict, raw_name: str) -> list[dict]:
    """What the model sees for a successful call's canonical ``value``. A result whose only payload is its
    ``structuredContent`` (no content blocks) gives the model that value as compact JSON, not dsh's "returned
    no model-visible content" (a server that sends both has its text blocks read, as in dsh)."""
    content = value.get("content") or []
    if not content and "structuredContent" in value:
        return [{"type": "text", "text": _js(value["structuredContent"])}]
    if not any(isinstance(b, dict) and b.get("type") == "image" for b in content):
        return [{"type": "text", "text": extract_text(content, raw_name)}]
    errors = {i: err for i, b in enumerate(content)
              if isinstance(b, dict) and b.get("type") == "image" and (err := _image_error(b)) is not None}
    if errors:
        return project(content, raw_name, lambda _b, i: errors.get(i, OTHER_INVALID))
    return project(content, raw_name, lambda _b, _i: NO_STORE)


class McpToolError(Exception):
    """An ``isError: true`` result: its text is the error message (``Error: <text>`` for the model)."""


def canonical(raw: dict, raw_name: str) -> dict:
    """The canonical value of a raw ``tools/call`` result; raises ``McpToolError`` for ``isError``."""
    content = raw.get("content")
    if not isinstance(content, list):  # a legacy ``toolResult`` result
        text = _js(raw["toolResult"]) if "toolResult" in raw else "(no output)"
        if raw.get("isError") is True:
            raise McpToolError(text)
        value: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    else:
        if raw.get("isError") is True:
            raise McpToolError(extract_text(content, raw_name))
        value = {"content": content}
    if "structuredContent" in raw:
        value["structuredContent"] = raw["structuredContent"]
    return value
