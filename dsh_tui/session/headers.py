"""The session header (docs/format.md, "Header"): construction in dsh's on-disk key order and validation."""

from __future__ import annotations

import math
import time
from typing import Any

from .errors import SessionFormatUnsupportedError, SessionValidationError
from .jsonutil import MAX_SAFE_INTEGER

SESSION_FORMAT_VERSION = 0
#: dsh 0.2's session format (docs/format.md, "Format v4"): header ``isSeeded`` instead of ``seedLength``.
SESSION_FORMAT_V4 = 4
READABLE_VERSIONS = (SESSION_FORMAT_VERSION, SESSION_FORMAT_V4)

HEADER_KEYS = (
    "type", "version", "id", "createdAt", "cwd", "parentSession", "seedLength", "isSeeded", "origin",
    "delegationDepth", "agentPreset",
)
RETIRED_HEADER_KEYS = frozenset({"sandboxMode", "approvalPolicy"})


def _is_safe_nonneg_int(v: Any) -> bool:
    return type(v) is int and 0 <= v <= MAX_SAFE_INTEGER


def _is_neg_zero(v: Any) -> bool:
    return type(v) is float and v == 0 and math.copysign(1.0, v) < 0


def header_in_order(
    id: str,  # noqa: A002 - the dsh field name
    created_at: Any,
    *,
    version: Any = SESSION_FORMAT_VERSION,
    cwd: str | None = None,
    parent_session: str | None = None,
    seed_length: int | None = None,
    origin: str | None = None,
    delegation_depth: Any = 0,
    agent_preset: str | None = None,
    is_seeded: bool | None = None,
) -> dict[str, Any]:
    """A header dict in dsh's key order (absent optional fields left out, ``delegationDepth`` always
    present), not validated: what a store read back is checked where it is loaded. A v4 header carries
    ``isSeeded`` (always) where v0 has the optional ``seedLength``."""
    h: dict[str, Any] = {"type": "session", "version": version, "id": id, "createdAt": created_at}
    if cwd is not None:
        h["cwd"] = cwd
    if parent_session is not None:
        h["parentSession"] = parent_session
    if version == SESSION_FORMAT_V4:
        h["isSeeded"] = bool(is_seeded) if is_seeded is not None else seed_length is not None
    elif seed_length is not None:
        h["seedLength"] = seed_length
    if origin is not None:
        h["origin"] = origin
    h["delegationDepth"] = delegation_depth
    if agent_preset is not None:
        h["agentPreset"] = agent_preset
    return h


def make_header(
    id: str,  # noqa: A002 - the dsh field name
    *,
    cwd: str | None = None,
    created_at: int | None = None,
    parent_session: str | None = None,
    seed_length: int | None = None,
    origin: str | None = None,
    delegation_depth: int = 0,
    agent_preset: str | None = None,
    version: int = SESSION_FORMAT_VERSION,
) -> dict[str, Any]:
    """Build a header dict in dsh's key order (``delegationDepth`` always present). Validated strictly.
    ``created_at`` defaults to now (epoch milliseconds). ``version=4`` builds a format-v4 header (its
    ``isSeeded`` is whether ``seed_length`` was given)."""
    if created_at is None:
        created_at = time.time_ns() // 1_000_000
    h = header_in_order(id, created_at, version=version, cwd=cwd, parent_session=parent_session,
                        seed_length=seed_length, origin=origin, delegation_depth=delegation_depth,
                        agent_preset=agent_preset)
    validate_header(h)
    return h


def check_header_version(h: Any) -> None:
    """The version refusal that precedes every shape check."""
    if isinstance(h, dict):
        v = h.get("version")
        if isinstance(v, (int, float)) and type(v) in (int, float) and not _is_neg_zero(v) and v not in READABLE_VERSIONS:
            if v > SESSION_FORMAT_V4:
                raise SessionFormatUnsupportedError(
                    f"session format version {v} was written by a newer harness — upgrade dsh-tui"
                )
            if v > 0:
                raise SessionFormatUnsupportedError(
                    f"session format version {v} is an intermediate dsh generation dsh-tui does not read (it reads "
                    "0 and 4); open it once with dsh 0.2, which migrates it to version 4"
                )
            raise SessionFormatUnsupportedError(f"session format version {v} has no upgrade path")


def validate_header(h: Any, *, lenient: bool = False, expected_id: str | None = None) -> dict[str, Any]:
    """Validate a header dict; returns it. ``lenient`` tolerates fixture placeholders (non-absolute cwd such
    as ``{{cwd}}``), a missing ``delegationDepth`` (older fixtures) and a missing ``version`` (authored stubs). Raises
    :class:`SessionFormatUnsupportedError` for a version other than 0, else :class:`SessionValidationError`."""
    check_header_version(h)

    def bad(msg: str) -> SessionValidationError:
        return SessionValidationError(f"invalid session header: {msg}", "INVALID_HEADER")

    if not isinstance(h, dict):
        raise bad("not an object")
    if "type" in h and h["type"] != "session":
        raise bad(f"type must be 'session', got {h['type']!r}")
    if "version" not in h and lenient:
        pass  # authored test stubs omit it
    elif h.get("version", None) not in READABLE_VERSIONS or type(h.get("version")) is bool:
        raise bad("version must be 0 or 4")
    v4 = h.get("version") == SESSION_FORMAT_V4
    if v4:
        if type(h.get("isSeeded")) is not bool:
            raise bad("a format v4 header requires isSeeded (a boolean)")
        if "seedLength" in h:
            raise bad("a format v4 header has no seedLength")
    elif "isSeeded" in h:
        raise bad("isSeeded belongs to format v4 headers")
    for k in RETIRED_HEADER_KEYS:
        if k in h:
            raise bad(f"retired field {k!r}")
    sid = h.get("id")
    if not isinstance(sid, str) or not sid:
        raise bad("id must be a non-empty string")
    if expected_id is not None and sid != expected_id and not lenient:
        raise bad(f"id {sid!r} does not match the requested id {expected_id!r}")
    ca = h.get("createdAt")
    if _is_neg_zero(ca):
        raise bad("createdAt must not be -0")
    if not _is_safe_nonneg_int(ca):
        raise bad(f"createdAt must be a non-negative safe integer, got {ca!r}")
    if "cwd" in h:
        cwd = h["cwd"]
        if not isinstance(cwd, str) or not cwd:
            raise bad("cwd must be a non-empty string")
        if not lenient and not (cwd.startswith("/") or (len(cwd) > 2 and cwd[1] == ":" and cwd[2] in "\\/")):
            raise bad(f"cwd must be an absolute path, got {cwd!r}")
    if "parentSession" in h and (not isinstance(h["parentSession"], str) or not h["parentSession"]):
        raise bad("parentSession must be a non-empty string")
    if "seedLength" in h and (_is_neg_zero(h["seedLength"]) or not _is_safe_nonneg_int(h["seedLength"])):
        raise bad("seedLength must be a non-negative safe integer")
    if "origin" in h and h["origin"] != "subagent":
        raise bad(f"origin must be 'subagent', got {h['origin']!r}")
    if "delegationDepth" in h:
        dd = h["delegationDepth"]
        if _is_neg_zero(dd):
            raise bad("delegationDepth must not be -0")
        if not _is_safe_nonneg_int(dd):
            raise bad(f"delegationDepth must be a non-negative safe integer, got {dd!r}")
    elif not lenient:
        raise bad("missing delegationDepth")
    if "agentPreset" in h and not isinstance(h["agentPreset"], str):
        raise bad("agentPreset must be a string")
    return h

