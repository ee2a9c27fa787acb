"""The payload of every event a plugin can listen on (``ctx.on(name, listener)``), as TypedDicts.

Every payload carries ``agent`` (the ``dsh_tui.runtime.Agent``; plugins should prefer ``ctx.agent``).
Modes (``dsh_tui.plugins.EVENTS``): *emit* listeners are ``listener(payload)`` and cannot veto; *serial*
ones are awaited in order; *waterfall* ones are ``listener(payload, next)``: ``await next()`` runs the
rest of the chain (other listeners, then the built-in behaviour) and its result is what the listener
returns unless it returns something else; not calling ``next()`` short-circuits.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal, TypedDict


class AgentPayload(TypedDict):
    agent: Any


# ---- emit -------------------------------------------------------------------------------------------
class AgentCreated(AgentPayload):
    """``agent/created``: once, after every plugin applied, before anything else."""


class AgentSessionStart(AgentPayload):
    """``agent/session-start``: once, before the first turn; a listener may ``ctx.agent.inject(...)``."""

    source: Literal["startup", "resume"]


class AgentDisposed(AgentPayload):
    """``agent/disposed``: the agent closed (plugins are unloaded right after)."""


class AgentStatus(AgentPayload):
    """``agent/status``: ``idle`` <-> ``running``."""

    status: Literal["idle", "running"]


class AgentPhase(AgentPayload):
    """``agent/phase``: every phase change; ``phase`` = {kind, since, turn?, step?, lastTurn?, wakeRequested?}."""

    phase: dict[str, Any]


class AgentInbox(AgentPayload):
    """``agent/inbox/inserted`` / ``claimed`` (with ``turn``) / ``discarded``: a queued user message."""

    message: dict[str, Any]


class AgentError(AgentPayload):
    """``agent/error``: a turn failed; ``error`` = {message, code, ...} (an LlmFailure)."""

    turn: int
    step: int
    error: dict[str, Any]


class SessionEvent(AgentPayload):
    """``session/event``: every event appended to the agent's session log, as it is appended (observe only:
    the log cannot be appended to from inside this listener)."""

    event: dict[str, Any]


class ToolsResult(AgentPayload):
    """``tools/result``: a tool call's final result (after post-execute and spill): ``{"content": [...],
    "isError"?: true, "error"?: {...}}``."""

    callId: str
    name: str
    arguments: Any
    exec: Any
    result: dict[str, Any]


class AgentStepEnd(AgentPayload):
    """``agent/step-end``: a step's ``step/end`` was appended (before the turn decides to go on)."""

    turn: int
    step: int
    signal: Any


# ---- serial -----------------------------------------------------------------------------------------
class AgentTurnStopping(AgentPayload):
    """``agent/turn-stopping``: the turn is about to end; ``ctx.agent.steer(...)`` here continues it."""

    turn: int
    signal: Any


# ---- waterfall --------------------------------------------------------------------------------------
class AgentPreStep(AgentPayload):
    """``agent/pre-step`` -> ``{"kind": "enter", "messages": [...]}`` (the messages this step adds to the
    history: the claimed inbox plus runtime context; a listener may add its own) or ``{"kind": "reject"}``."""

    messages: list[dict[str, Any]]
    turn: int
    step: int
    signal: Any


class AgentRequest(AgentPayload):
    """``agent/request`` -> the call config ``{provider, model, reasoningEffort?, maxTokens?, ...}``."""

    turn: int
    step: int
    signal: Any


class AgentRequestError(AgentPayload):
    """``agent/request-error`` -> ``{"kind": "retry"}`` to try the request again, or None to fail the
    turn. A user listener runs before the built-in retry and compaction."""

    turn: int
    step: int
    provider: str
    failure: dict[str, Any]
    retryPolicy: Any
    signal: Any


class SystemPromptAssemble(AgentPayload):
    """``system-prompt/assemble`` -> an ``Assembly`` (sections, tools, variables, contexts)."""

    signal: Any


class LlmStream(AgentPayload):
    """``llm/stream`` -> an async iterator of chunks. ``payload["request"]`` is the request; with the
    request invariant on, the request that reaches the provider must equal the log's (and is frozen)."""

    request: dict[str, Any]


class ToolsCall(AgentPayload):
    """``tools/pre-execute`` -> {"kind": "allow"} | {"kind": "deny", "reason"} | {"kind": "ask", "reason"};
    ``tools/execute`` -> the result dict; ``tools/post-execute`` (with ``result``) -> {"kind": "accept"} |
    {"kind": "block", "feedback"}.

    ``exec`` is the call's execution record: ``exec.args`` (the parsed arguments), ``exec.tool`` (its
    ``ToolDefinition``, None for an unknown tool) and ``exec.ctx`` (the ``ToolContext`` the body gets:
    ``call_id``, ``name``, ``cwd``, ``workspace``, ``turn``, ``step``)."""

    callId: str
    name: str
    arguments: Any
    exec: Any
    signal: Any


class ApprovalRequest(AgentPayload):
    """``approval/request`` -> "allowed-once" | "rejected" | "cancelled" | "unavailable"."""

    id: str
    toolName: str
    callId: str
    reason: str
    signal: Any


class UserQuestionsRequest(AgentPayload):
    """``user-questions/request`` -> ``{"answers": [{"id", "selected", "custom"?}]}``; raise
    ``dsh_tui.runtime.questions.QuestionCancelled`` for a question the user dismissed. ``questions``: dsh's
    question items (``id``, ``question``, ``header``?, ``detail``?, ``options``?, ``multiSelect``?, ``intent``?)."""

    questions: list[dict[str, Any]]
    callId: str | None
    signal: Any


StreamResult = AsyncIterator[dict[str, Any]]

#: event name -> its payload type
PAYLOADS: dict[str, type] = {
    "agent/created": AgentCreated,
    "agent/disposed": AgentDisposed,
    "agent/session-start": AgentSessionStart,
    "agent/status": AgentStatus,
    "agent/phase": AgentPhase,
    "agent/inbox/inserted": AgentInbox,
    "agent/inbox/claimed": AgentInbox,
    "agent/inbox/discarded": AgentInbox,
    "agent/pre-step": AgentPreStep,
    "agent/request": AgentRequest,
    "agent/request-error": AgentRequestError,
    "agent/turn-stopping": AgentTurnStopping,
    "agent/step-end": AgentStepEnd,
    "agent/error": AgentError,
    "system-prompt/assemble": SystemPromptAssemble,
    "llm/stream": LlmStream,
    "tools/pre-execute": ToolsCall,
    "tools/execute": ToolsCall,
    "tools/post-execute": ToolsCall,
    "tools/result": ToolsResult,
    "approval/request": ApprovalRequest,
    "user-questions/request": UserQuestionsRequest,
    "session/flush": AgentPayload,
    "session/event": SessionEvent,
}
