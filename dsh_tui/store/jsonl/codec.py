"""The JSONL record codec (docs/format.md, "JSONL storage"): the header record (parse, canonical key
order) and encoding events as lines or zstd batches, chunk runs packed into rows."""

from __future__ import annotations

from typing import Any

import orjson

from dsh_tui.session.errors import (
    SessionCorruptionError,
    SessionValidationError,
)
from dsh_tui.store import zstdframes

ROW_TAGS = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})
HEADER_ORDER = (
    "type", "version", "id", "createdAt", "cwd", "parentSession", "seedLength", "isSeeded", "origin",
    "delegationDepth", "agentPreset",
)


MAX_SAFE = 2**53 - 1




def _safe_nonneg_int(v: Any) -> bool:
    return type(v) is int and 0 <= v <= MAX_SAFE


def parse_header_record(record: bytes, *, lenient: bool = False, refuse_version: bool = True) -> dict[str, Any]:
    """Parse the first record (exactly one ``\\n``-terminated line) into a header dict.

    Strict mode follows dsh's JSONL reader (``isHeaderLine``); lenient mode (projected fixtures)
    tolerates placeholders and a missing ``delegationDepth``. A foreign ``version`` is refused
    before any shape check (format refusal, not corruption).
    """
    from dsh_tui.session import headers

    if not record or record[-1:] != b"\n" or record.find(b"\n") != len(record) - 1:
        raise SessionCorruptionError("empty or header-less session log")
    try:
        parsed = orjson.loads(record[:-1])
    except orjson.JSONDecodeError:
        try:  # JavaScript accepts lone-surrogate escapes orjson refuses (as the body scanner does)
            from dsh_tui.session import jsonutil

            parsed = jsonutil.loads(record[:-1])
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise SessionCorruptionError("corrupt session log: header line is not valid JSON") from None
    if refuse_version:
        headers.check_header_version(parsed)
    if lenient:
        try:
            # authored test stubs omit "version" (and older fixtures delegationDepth)
            probe = {"version": 0, **parsed} if isinstance(parsed, dict) else parsed
            headers.validate_header(probe, lenient=True)
        except SessionValidationError as err:
            raise SessionCorruptionError(f"corrupt session log: first line is not a session header ({err})") from None
        if parsed.get("type") != "session":
            raise SessionCorruptionError("corrupt session log: first line is not a session header")
        return parsed
    if not (
        isinstance(parsed, dict)
        and parsed.get("type") == "session"
        and type(parsed.get("version")) in (int, float)
        and isinstance(parsed.get("id"), str)
        and _safe_nonneg_int(parsed.get("createdAt"))
        and _safe_nonneg_int(parsed.get("delegationDepth"))
        and parsed.get("origin", "subagent") == "subagent"
        and isinstance(parsed.get("agentPreset", ""), str)
        and (parsed.get("version") != 4 or (type(parsed.get("isSeeded")) is bool and "seedLength" not in parsed))
    ):
        raise SessionCorruptionError("corrupt session log: first line is not a session header")
    if "sandboxMode" in parsed or "approvalPolicy" in parsed:
        raise SessionCorruptionError("corrupt session log: session header uses retired policy baseline fields")
    return {k: parsed[k] for k in HEADER_ORDER if k in parsed}


def header_line(header: dict[str, Any]) -> bytes:
    """The header as dsh writes it (``toHeaderLine``): fixed key order, delegationDepth always."""
    from dsh_tui.session import jsonutil

    h = {"type": "session", "version": header.get("version", 0), "id": header["id"],
         "createdAt": header["createdAt"]}
    for k in ("cwd", "parentSession", "seedLength", "isSeeded", "origin"):
        if header.get(k) is not None:
            h[k] = header[k]
    h["delegationDepth"] = header.get("delegationDepth") or 0
    if header.get("agentPreset") is not None:
        h["agentPreset"] = header["agentPreset"]
    return jsonutil.dumps_bytes(h) + b"\n"




def encode_lines(events: list[dict[str, Any]], pack: bool = True) -> bytes:
    """A batch as JSONL text, each line ``\\n``-terminated; chunk runs packed per batch."""
    from dsh_tui.session import jsonutil, rows

    lines = rows.pack_batch(events) if pack else events
    return b"".join(jsonutil.dumps_bytes(line) + b"\n" for line in lines)


def encode_batch(events: list[dict[str, Any]], compression: str, pack: bool = True) -> bytes:
    body = encode_lines(events, pack)
    return zstdframes.compress_frame(body) if compression == "zstd" else body


def encode_materialization(header: dict[str, Any], events: list[dict[str, Any]], compression: str,
                           pack: bool = True) -> bytes:
    head = header_line(header)
    if compression == "zstd":
        return zstdframes.compress_frame(head) + encode_batch(events, compression, pack)
    return head + encode_lines(events, pack)
