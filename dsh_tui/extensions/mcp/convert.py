"""MCP ``tools/call`` results as dsh shows them to the model (docs/extensions.md, "MCP").

The canonical value of a call is ``{"content": [...], "structuredContent"?: ...}`` (the raw blocks, for
programmatic callers); the model sees text: text runs joined with ``\\n``, every other block as dsh's
placeholder text. An image becomes a real image block (``{"type": "image", "attachment": ref}``, the
provider-neutral part the providers send as ``image_url`` / Messages image blocks) only with an attachment
store (``dsh_tui.store.attachments``) and an image-capable route, as in dsh (``admit_images``, at call time);
otherwise it is dsh's diagnostic text (after dsh's validation of its media type and base64, whose reasons come
first). A result with only ``structuredContent`` gives the model that JSON.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from dsh_tui.session.errors import DshError

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


def project(content: list, raw_name: str, image_reason: Any = None, images: dict | None = None) -> list[dict]:
    """The ordered blocks as model content: text-like runs coalesced with ``\\n``; each image its own
    block at its position: ``{"type": "image", "attachment": ref}`` for an admitted one (``images``: index ->
    attachment ref), else text (``image_reason(block, index)`` names why; default: not admitted)."""
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
            if images is not None and index in images:
                out.append({"type": "image", "attachment": images[index]})
                continue
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


ADMITTED = "_dshImages"  # the value's admitted images: {"refs": {index: attachment ref}} or {"reason": text}


def image_errors(content: list) -> dict[int, str]:
    """dsh's validation of a result's image blocks: index -> why it cannot be admitted."""
    return {i: err for i, b in enumerate(content)
            if isinstance(b, dict) and b.get("type") == "image" and (err := _image_error(b)) is not None}


def admit_images(value: dict, resolved: tuple[str, bool] | None) -> None:
    """dsh's ``prepareImageProjection`` at call time: a result whose images are all valid has them saved in
    the attachment store (``dsh_tui.store.attachments``) when the current model takes images (``resolved``:
    (model id, takes images), None when the route cannot be resolved); the refs (or why not) go in the value
    under ``ADMITTED`` for ``model_content``. Blocking (decoding, writing): run it in a thread."""
    content = value.get("content") or []
    images = [i for i, b in enumerate(content) if isinstance(b, dict) and b.get("type") == "image"]
    if not images or image_errors(content):
        return
    try:
        from dsh_tui.store import attachments  # the attachment store (issue #32)
    except ImportError:
        return  # NO_STORE
    if not resolved or not resolved[0]:
        value[ADMITTED] = {"reason": "the current model route could not be resolved"}
        return
    model, takes_images = resolved
    if not takes_images:
        value[ADMITTED] = {"reason": f'model "{model}" does not declare image input'}
        return
    refs: dict[str, Any] = {}
    try:
        for i in images:
            block = content[i]
            refs[str(i)] = attachments.save_image(base64.b64decode(block["data"]), block["mimeType"])
    except attachments.AttachmentError as err:
        reason = ("durable image storage rejected the result" if err.code == "ATTACHMENT_WRITE_FAILED"
                  else f"image admission rejected the result: {err}")
        value[ADMITTED] = {"reason": reason}
        return
    value[ADMITTED] = {"refs": refs}


def model_content(value: dict, raw_name: str) -> list[dict]:
    """What the model sees for a successful call's canonical ``value``. A result whose only payload is its
    ``structuredContent`` (no content blocks) gives the model that value as compact JSON, not dsh's "returned
    no model-visible content" (a server that sends both has its text blocks read, as in dsh)."""
    content = value.get("content") or []
    if not content and "structuredContent" in value:
        return [{"type": "text", "text": _js(value["structuredContent"])}]
    if not any(isinstance(b, dict) and b.get("type") == "image" for b in content):
        return [{"type": "text", "text": extract_text(content, raw_name)}]
    errors = image_errors(content)
    if errors:
        return project(content, raw_name, lambda _b, i: errors.get(i, OTHER_INVALID))
    admitted = value.get(ADMITTED) or {}
    if admitted.get("refs"):
        return project(content, raw_name, images={int(k): v for k, v in admitted["refs"].items()})
    reason = admitted.get("reason") or NO_STORE
    return project(content, raw_name, lambda _b, _i: reason)


class McpToolError(DshError):
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
