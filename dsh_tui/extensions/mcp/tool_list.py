"""What one MCP server's tool list may bring, and how it is read (``client.Server`` registers the result).

A hostile or broken server may list 20,000 tools, megabyte descriptions or deep schemas: ``list_tools``
reads every page of ``tools/list`` (stopping past ``MAX_TOOLS``), validating each entry on its own, and
``checked_schema`` says why a tool's input schema cannot go into a provider request. Imported only when a
server connects (it imports pydantic).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

MAX_TOOLS = 128
MAX_DESCRIPTION = 4096
MAX_SCHEMA_DEPTH = 32
MAX_SCHEMA_BYTES = 64 * 1024


async def list_tools(session: Any) -> tuple[list[Any], list[str]]:
    """Every page of ``tools/list`` (stopping past ``MAX_TOOLS``), each entry validated on its own:
    one that is not a tool is left out with a note instead of failing the whole list."""
    import mcp.types as types
    from pydantic import ValidationError

    tools: list[Any] = []
    notes: list[str] = []
    cursor: str | None = None
    seen: set[str] = set()
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        request = types.ListToolsRequest(params=params)
        try:
            raw = (await session.send_request(request, RawResult)).model_dump(by_alias=True)
        except ValidationError:  # the SDK checks the whole list: ask again, take it as sent, check each
            raw = await _unchecked_request(session, request)
        entries = raw.get("tools")
        if not isinstance(entries, list):
            raise ValueError("the tools/list result has no list of tools")
        for index, entry in enumerate(entries):
            try:
                tool = types.Tool.model_validate(entry, by_name=False)
            except ValidationError as err:
                name = entry.get("name") if isinstance(entry, dict) else None
                what = f'tool "{shown(name)}"' if isinstance(name, str) else f"tools/list entry {index + 1}"
                notes.append(f"{what} left out: not a valid tool ({err.errors()[0].get('msg', 'invalid')})")
                continue
            if tool.name in seen:
                raise ValueError(f'server listed tool "{tool.name}" more than once — invalid tool list')
            seen.add(tool.name)
            tools.append(tool)
        cursor = raw.get("nextCursor")
        if not isinstance(cursor, str) or not cursor or len(tools) > MAX_TOOLS:
            return tools, notes[:20]


def _schema(tool: Any) -> dict:
    schema = tool.input_schema
    if hasattr(schema, "model_dump"):
        schema = schema.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dict(schema) if isinstance(schema, dict) else {"type": "object"}


async def _unchecked_request(session: Any, request: Any) -> dict:
    """``request``'s result as the server sent it: ``ClientSession.send_request`` without its check of
    the whole result (which would refuse a tool list for one bad entry)."""
    data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    opts: dict[str, Any] = {}
    session._stamp(data, opts)
    raw = await session._dispatcher.send_raw_request(data["method"], data.get("params"), opts)
    return raw if isinstance(raw, dict) else {}


def shown(name: str) -> str:
    """A tool's raw name for a one-line note: printable, at most 60 characters."""
    text = "".join(c if c.isprintable() else "?" for c in name)
    return text if len(text) <= 60 else text[:59] + "…"


def checked_schema(tool: Any) -> tuple[dict, str]:
    """The tool's input schema and, if it cannot go into a provider request, why (the tool is left out):
    not an object schema, nested deeper than ``MAX_SCHEMA_DEPTH`` or larger than ``MAX_SCHEMA_BYTES``."""
    from dsh_tui.extensions.mcp.stdio import _depth_exceeds

    schema = _schema(tool)
    if schema.get("type", "object") != "object":
        return schema, f'its input schema is not an object schema (type {json.dumps(schema.get("type"))[:40]})'
    if _depth_exceeds(schema, MAX_SCHEMA_DEPTH):
        return schema, f"its input schema is nested more than {MAX_SCHEMA_DEPTH} levels deep"
    try:
        size = len(json.dumps(schema, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError, RecursionError) as err:
        return schema, f"its input schema cannot be sent ({type(err).__name__})"
    if size > MAX_SCHEMA_BYTES:
        return schema, f"its input schema is {size} bytes, over {MAX_SCHEMA_BYTES}"
    return schema, ""


class RawResult(BaseModel):
    """Any ``tools/call`` result, kept as sent (dsh converts the blocks itself)."""

    model_config = ConfigDict(extra="allow")
