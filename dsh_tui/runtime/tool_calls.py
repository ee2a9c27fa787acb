"""A tool call as the model sent it and the canonical error results the tool service answers with: argument
parsing (``parse_arguments``; nested too deep: ``TooDeepArguments``), tool-name and duplicate-id checks
(``rename_duplicate_call_ids``), and ``error_result``/``aborted_result`` (docs/runtime.md, "Tool pipeline,
result format and spill"). ``runtime/tools.py`` runs the calls."""

from __future__ import annotations

import re
from typing import Any

from dsh_tui.session.jsonutil import NestedTooDeeply, loads_bounded

ABORTED_INFO = {"name": "AbortError", "code": "ABORTED"}
ABORTED_BEFORE_INFO = {"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"}

def error_result(message: str, info: dict | None = None) -> dict:
    err: dict[str, Any] = {"message": message}
    if info is not None:
        err["info"] = info
    return {"isError": True, "error": err, "content": [{"type": "text", "text": f"Error: {message}"}]}


def aborted_before_dispatch() -> dict:
    return error_result("tool call aborted before dispatch", dict(ABORTED_BEFORE_INFO))


def aborted_result() -> dict:
    return error_result("tool call aborted", dict(ABORTED_INFO))


class TooDeepArguments(str):
    """Raw argument text nested deeper than ``MAX_ARGUMENT_DEPTH``: passed on as the raw string (as
    invalid JSON is), and answered with an ``INVALID_ARGS`` result instead of running the tool."""


def parse_arguments(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    if raw.strip() == "":
        return {}
    try:
        return loads_bounded(raw)
    except NestedTooDeeply:
        return TooDeepArguments(raw)
    except ValueError:
        return raw


TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
DUPLICATE_CALL_ID_INFO = {"name": "ToolCallIdError", "code": "DUPLICATE_CALL_ID"}


def rename_duplicate_call_ids(blocks: list[dict]) -> dict[str, str]:
    """Two tool calls of one response with the same id (a sloppy gateway): every call after the first
    is renamed ``<id>-dup<n>`` in place, so that each call has its own result (the log and the next
    request pair them by id). Returns {new id: original id}; the renamed calls are answered with a
    ``DUPLICATE_CALL_ID`` error instead of running (the model may repeat the call)."""
    seen: set[str] = set()
    for b in blocks:
        if b.get("type") == "tool-call":
            seen.add(str(b.get("id") or ""))
    renamed: dict[str, str] = {}
    firsts: set[str] = set()
    for b in blocks:
        if b.get("type") != "tool-call":
            continue
        cid = str(b.get("id") or "")
        if cid not in firsts:
            firsts.add(cid)
            continue
        n = 2
        while f"{cid}-dup{n}" in seen:
            n += 1
        new = f"{cid}-dup{n}"
        seen.add(new)
        b["id"] = new
        renamed[new] = cid
    return renamed
