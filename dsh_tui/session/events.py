"""Event type names (the dsh vocabulary), surface types and the packed-row storage tags."""

from __future__ import annotations

# Core vocabulary (packages/core/session/src/types.ts)
TURN_START = "turn/start"
TURN_END = "turn/end"
STEP_START = "step/start"
STEP_END = "step/end"
USER_MESSAGE = "user/message"
ASSISTANT_CHUNK = "assistant/chunk"
ASSISTANT_MESSAGE = "assistant/message"
TOOL_CALL = "tool/call"
TOOL_RESULT = "tool/result"
TODO_WRITE = "todo/write"
REQUEST_HEADER = "request/header"
REQUEST_CONTEXT = "request/context"
SESSION_END_SEED = "session/end-seed"

# Plugin-merged types (log-only; payloads opaque to the core)
AGENT_INBOX_SPLICED = "agent/inbox/spliced"
AGENT_PRESET_SELECTED = "agent-preset/selected"
APPROVAL_ASKED = "approval/asked"
APPROVAL_DECIDED = "approval/decided"
APPROVAL_POLICY = "approval/policy"
COMMAND_RUN = "command/run"
COMMAND_DONE = "command/done"
COMPACTION_START = "compaction/start"
COMPACTION_SUMMARY = "compaction/summary"
COMPACTION_PRUNE = "compaction/prune"
COMPACTION_END = "compaction/end"
FEEDBACK_RECORD = "feedback/record"
GOAL_CHANGE = "goal/change"
HOOK_INVOKED = "hook/invoked"
HOOK_RESULT = "hook/result"
LLM_RETRY = "llm/retry"
LLM_RETRY_STARTED = "llm/retry-started"
PERMISSION_PRESET = "permission/preset"
PLAN_MODE = "plan/mode"
SANDBOX_MODE = "sandbox/mode"
SCHEDULE_CHANGE = "schedule/change"
SESSION_TITLE = "session/title"
SESSION_TITLE_LLM_REQUEST = "session/title-llm-request"
SUBAGENT_DESCRIPTOR = "subagent/descriptor"
TEAM_MEMBER = "team/member"
TEAM_TASK = "team/task"
TEAM_MESSAGE_QUEUED = "team/message/queued"
TEAM_MESSAGE_DELIVERED = "team/message/delivered"
TOOL_CODE_DISPATCH_START = "tool/code-dispatch-start"
TOOL_CODE_DISPATCH = "tool/code-dispatch"
TOOL_WORKFLOW_RUN_START = "tool-workflow/run-start"
TOOL_WORKFLOW_AGENT_START = "tool-workflow/agent-start"
TOOL_WORKFLOW_AGENT_END = "tool-workflow/agent-end"
TOOL_WORKFLOW_RUN_END = "tool-workflow/run-end"
WEB_DEEPSEEK_SEARCH_LLM_REQUEST = "web/deepseek-search-llm-request"

CORE_EVENT_TYPES: frozenset[str] = frozenset({
    TURN_START, TURN_END, STEP_START, STEP_END, USER_MESSAGE, ASSISTANT_CHUNK, ASSISTANT_MESSAGE,
    TOOL_CALL, TOOL_RESULT, TODO_WRITE, REQUEST_HEADER, REQUEST_CONTEXT, SESSION_END_SEED,
})

PLUGIN_EVENT_TYPES: frozenset[str] = frozenset({
    AGENT_INBOX_SPLICED, AGENT_PRESET_SELECTED, APPROVAL_ASKED, APPROVAL_DECIDED, APPROVAL_POLICY,
    COMMAND_RUN, COMMAND_DONE, COMPACTION_START, COMPACTION_SUMMARY, COMPACTION_PRUNE, COMPACTION_END,
    FEEDBACK_RECORD, GOAL_CHANGE, HOOK_INVOKED, HOOK_RESULT, LLM_RETRY, LLM_RETRY_STARTED,
    PERMISSION_PRESET, PLAN_MODE, SANDBOX_MODE, SCHEDULE_CHANGE, SESSION_TITLE, SESSION_TITLE_LLM_REQUEST,
    SUBAGENT_DESCRIPTOR, TEAM_MEMBER, TEAM_TASK, TEAM_MESSAGE_QUEUED, TEAM_MESSAGE_DELIVERED,
    TOOL_CODE_DISPATCH_START, TOOL_CODE_DISPATCH, TOOL_WORKFLOW_RUN_START, TOOL_WORKFLOW_AGENT_START,
    TOOL_WORKFLOW_AGENT_END, TOOL_WORKFLOW_RUN_END, WEB_DEEPSEEK_SEARCH_LLM_REQUEST,
})

#: KNOWN_SESSION_EVENT_TYPES of dsh 0.1.1-rc.2 (48 names).
KNOWN_EVENT_TYPES: frozenset[str] = CORE_EVENT_TYPES | PLUGIN_EVENT_TYPES

#: The three model-visible (surface) event types: surfaceOp mandatory, sourceEventSeqs allowed.
SURFACE_TYPES: frozenset[str] = frozenset({USER_MESSAGE, ASSISTANT_MESSAGE, TOOL_RESULT})

#: Format v4 (dsh 0.2): its KNOWN_SESSION_EVENT_TYPES (62 names; no ``assistant/chunk``: a v4 assistant
#: message embeds its stream) and its five surface types.
SYSTEM_MESSAGE = "system/message"
DEVELOPER_MESSAGE = "developer/message"
V4_KNOWN_EVENT_TYPES: frozenset[str] = frozenset((
    "agent-preset/selected", "agent/inbox/spliced", "approval/asked", "approval/decided", "approval/policy",
    "assistant/attempt", "assistant/message", "command/done", "command/run", "compaction/end",
    "compaction/prune", "compaction/start", "compaction/summary", "deliverables/presented", "developer/message",
    "feedback/message-delete", "feedback/message-put", "feedback/record", "goal/change", "hook/invoked",
    "hook/result", "image/offload", "job/registered", "job/settled", "llm/retry", "llm/retry-started",
    "model/selection", "permission/preset", "plan/mode", "request/context", "request/header", "sandbox/mode",
    "schedule/change", "session-log-deepseek/delivery-accepted", "session/end-seed", "session/title",
    "session/title-llm-request", "step/end", "step/start", "subagent/catalog", "subagent/descriptor",
    "subagent/model-selection-policy", "system/message", "team/member", "team/message/delivered",
    "team/message/queued", "team/task", "todo/write", "tool-workflow/agent-end", "tool-workflow/agent-start",
    "tool-workflow/run-end", "tool-workflow/run-start", "tool/call", "tool/ptc-dispatch",
    "tool/ptc-dispatch-start", "tool/result", "turn/end", "turn/start", "user/message",
    "web/deepseek-search-llm-request", "working-directory/change", "workspace/changes",
))
V4_SURFACE_TYPES: frozenset[str] = SURFACE_TYPES | {SYSTEM_MESSAGE, DEVELOPER_MESSAGE}

#: Legacy shapes refused after import.
LEGACY_REFUSED_TYPES: frozenset[str] = frozenset({"request/header-delta", "mode/set"})

# Packed storage rows: not events.
TEXT_CHUNKS = "text-chunks"
REASONING_CHUNKS = "reasoning-chunks"
TOOL_CALL_CHUNKS = "tool-call-chunks"
ROW_TAGS: frozenset[str] = frozenset({TEXT_CHUNKS, REASONING_CHUNKS, TOOL_CALL_CHUNKS})

#: Allowed top-level keys of an event envelope.
ENVELOPE_KEYS: frozenset[str] = frozenset({"type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable"})

assert len(KNOWN_EVENT_TYPES) == 48
assert len(V4_KNOWN_EVENT_TYPES) == 62

