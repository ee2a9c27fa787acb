"""The hot shapes of a session log as ``TypedDict``s (docs/format.md; dsh's ``packages/core/session/src/types.ts``).

Events travel as plain dicts (lossless JSON, compared byte for byte with dsh's logs), so these types describe them
for readers and the type checker rather than wrap them: ``Event`` is the envelope, the ``*Data`` types the payloads
of the core vocabulary, ``SessionHeader`` the header line, ``TurnEndReason`` the ``turn/end`` reason. Payloads are
merge-extensible in dsh (unknown keys are kept), so every type here is a description of the keys dsh defines, not a
closed set.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, Required, TypedDict


class Event(TypedDict, total=False):
    """One logical event: ``type``, ``seq`` (its index in the log), ``time`` (epoch ms), ``data``; the three surface
    types also carry ``surfaceOp`` and ``sourceEventSeqs``."""

    type: Required[str]
    seq: Required[int]
    time: int
    data: Required[dict[str, Any]]
    surfaceOp: dict[str, Any]
    sourceEventSeqs: list[int]
    ignorable: Literal[True]


class SessionHeader(TypedDict, total=False):
    """The header line of a JSONL log (``{"type": "session", ...}``) or a SQLite session row."""

    type: Literal["session"]
    version: Required[int]
    id: Required[str]
    createdAt: Required[int]
    cwd: str
    parentSession: str
    seedLength: int
    origin: Literal["subagent"]
    delegationDepth: int
    agentPreset: str


class TurnData(TypedDict):
    """``turn/start``."""

    turn: int


class StepData(TypedDict):
    """``step/start`` and ``step/end``."""

    turn: int
    step: int


class TurnEndReason(TypedDict, total=False):
    """``completed``, ``aborted`` (``reason.kind``: user, parent, hook, disposed, legacy), ``blocked``, ``error``
    (``error``: an ``LlmFailure``), ``max-tokens``, ``interrupted`` (crash recovery only)."""

    kind: Required[str]
    reason: dict[str, Any]
    error: dict[str, Any]


class TurnEndData(TypedDict):
    """``turn/end``."""

    turn: int
    reason: TurnEndReason


class ToolCallData(TypedDict):
    """``tool/call``: the durable record that a requested call started (``arguments``: the raw streamed string)."""

    turn: int
    step: int
    callId: str
    name: str
    arguments: str


class ToolResultData(TypedDict):
    """``tool/result``: ``message`` is a ``ToolResultMessage`` (role user, source ``{kind: tool, callId}``, one
    ``tool-result`` block); ``error`` is the internal failure identity (``{name, code}``), ``meta`` the tool's own
    presentation data."""

    turn: int
    step: int
    message: dict[str, Any]
    error: NotRequired[dict[str, str]]
    meta: NotRequired[Any]


class AssistantMessageData(TypedDict):
    """``assistant/message``: the assembled output of one successful attempt."""

    turn: int
    step: int
    message: dict[str, Any]
    usage: NotRequired[dict[str, Any]]
    interrupted: NotRequired[Literal[True]]
