"""dsh's public names for MCP tools (docs/extensions.md, "MCP").

``mcp__<server>__<raw>`` when that is already a valid DeepSeek function name (``[A-Za-z0-9_-]``, at most
64 characters); otherwise the invalid characters become ``_``, the name is cut to 51 characters and
``_`` + the first 12 hex digits of SHA-256(``server + "\\0" + raw``) is appended, so distinct tools never
collapse into one name. The raw name is what goes on the wire; the public name is never parsed back.
"""

from __future__ import annotations

import hashlib
import re

PREFIX = "mcp__"
MAX_NAME = 64
HASH_LEN = 12
_INVALID = re.compile(r"[^A-Za-z0-9_-]")
SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
#: how the client names itself to a server (``initialize``; the OAuth login too)
CLIENT_INFO = {"name": "dsh-mcp-client", "version": "0.0.1"}


def public_tool_name(server: str, raw: str) -> str:
    joined = f"{PREFIX}{server}__{raw}"
    normalized = _INVALID.sub("_", joined)
    if normalized == joined and len(normalized) <= MAX_NAME:
        return normalized
    digest = hashlib.sha256(f"{server}\0{raw}".encode()).hexdigest()[:HASH_LEN]
    return f"{normalized[:MAX_NAME - HASH_LEN - 1]}_{digest}"


def split_public_name(name: str) -> tuple[str, str] | None:
    """(server, tool) of an ``mcp__<server>__<tool>`` name, for display only (a hashed name keeps its
    normalized, cut form). Server names hold no ``__``-free guarantee, so the first ``__`` after the
    prefix ends the server name, as dsh's names are built."""
    if not name.startswith(PREFIX):
        return None
    server, sep, tool = name[len(PREFIX):].partition("__")
    if not sep or not server or not tool:
        return None
    return server, tool
