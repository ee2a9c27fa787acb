"""The readable text of message content blocks (``text``, ``reasoning``, ``image``, ``tool-call``,
``tool-result`` ...), shared by the transcript, the timeline inspector and the catalog's search text."""

from __future__ import annotations

from typing import Any


def content_text(blocks: Any, *, sep: str = "\n", reasoning: bool = True, calls: str | None = None,
                 marks: bool = False) -> str:
    """The text of ``blocks``, one part per block joined with ``sep``; a ``tool-result``'s content is
    read the same way. Empty parts and non-dict blocks are skipped; anything but a list is "".

    ``reasoning``: include reasoning blocks. ``calls``: a format with ``{name}`` and ``{arguments}`` for
    tool calls (None leaves them out). ``marks``: an image as ``[its attachment name, size]`` (``image_mark``)
    and any other block as ``[its type]`` (otherwise left out).
    """
    if not isinstance(blocks, list):
        return ""
    out = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "text" or (btype == "reasoning" and reasoning):
            text = block.get("text")
            part = text if isinstance(text, str) else ""
        elif btype == "tool-result":
            part = content_text(block.get("content"), sep=sep, reasoning=reasoning, calls=calls, marks=marks)
        elif btype == "tool-call":
            part = calls.format(name=block.get("name", ""), arguments=block.get("arguments", "")) if calls else ""
        elif marks and btype == "image":
            part = image_mark(block.get("attachment"))
        elif marks and btype != "reasoning":
            part = f"[{btype}]"
        else:
            part = ""
        if part:
            out.append(part)
    return sep.join(out)


def tool_result_block(message: Any) -> dict:
    """The ``{toolCallId, content, isError}`` of a stored tool result's message in either format: v0's one
    ``tool-result`` block of a user message, or format v4's native ``role: "tool"`` message (its own
    ``toolCallId``, ``content`` and ``isError``). ``{}`` for anything else."""
    if not isinstance(message, dict):
        return {}
    if message.get("role") == "tool":
        return {"type": "tool-result", "toolCallId": message.get("toolCallId"), "content": message.get("content") or [],
                "isError": bool(message.get("isError"))}
    for b in message.get("content") or []:
        if isinstance(b, dict) and b.get("type") == "tool-result":
            return b
    return {}


def byte_size(n: int) -> str:
    """``139 B``, ``12 KB``, ``1.4 MB``."""
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.0f} KB"
    return f"{n / 1024 / 1024:.1f} MB"


def image_mark(attachment: Any) -> str:
    """An image as the transcript shows it: ``[shot.png, 640x480, 12 KB]`` (what is known of it)."""
    att = attachment if isinstance(attachment, dict) else {}
    parts = [str(att.get("name") or "image")]
    width, height, size = att.get("width"), att.get("height"), att.get("bytes")
    if isinstance(width, int) and isinstance(height, int):
        parts.append(f"{width}x{height}")
    if isinstance(size, int) and not isinstance(size, bool):
        parts.append(byte_size(size))
    return f"[{', '.join(parts)}]"
