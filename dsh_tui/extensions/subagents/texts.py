"""dsh's model-visible texts of the subagent tools (docs/extensions.md, "Subagents"), verbatim."""

from __future__ import annotations

from dsh_tui.runtime.questions import ASK_USER_QUESTION_SCHEMA  # noqa: F401 - re-exported (the children's refusing copy)
from dsh_tui.tools.base import ToolSchema

DESCRIPTION_PARAM = "A short (3-5 word) description of the delegated task, for display."

SPAWN_BASE = (
    "Delegate a self-contained task to a subagent (a separate agent that works in its own context) to offload "
    "focused, independent work — research, a scoped implementation, an analysis — so it does not consume this "
    "conversation's context. The subagent returns its result, not its intermediate steps. Give it a complete, "
    "standalone prompt: it does not see this conversation."
)
SPAWN_PROMPT = ("The complete, self-contained task for the subagent. It does not share this conversation's "
                "context, so include everything it needs.")
FORK_BASE = (
    "Delegate a task to a subagent that inherits this conversation: a child agent seeded with all completed turns "
    "so far (it does not see the current in-flight turn). Use this when the subtask builds on this conversation's "
    "context — a follow-up analysis, a review, a continuation — without consuming this conversation's context for "
    "the work itself. You receive its result, not its intermediate steps."
)
FORK_PROMPT = ("The task for the subagent. It already sees this conversation's completed turns, so build on them "
               "freely and state only what is new.")
CONTINUABLE_SUFFIX = (
    " This tool runs in the background by default, immediately returns a durable subagent id, and keeps the child "
    "conversation available for later turns. When that run settles, the runtime sends the parent a notice "
    "containing its outcome and any final assistant message; `send_message` starts a later turn in the same child "
    "conversation. Set `run_in_background: false` only when your next action depends on receiving the result."
)
CONTINUABLE_PARAM = ("Whether to run in the background and return a durable subagent id immediately. Defaults to "
                     "true. Set false to wait for the result when your next action depends on it.")
ONE_SHOT_SUFFIX = (" This call waits for the result by default. Set `run_in_background: true` to return a job id; "
                   "collect with `job_output` and stop with `job_kill`.")
ONE_SHOT_PARAM = ("Whether to run as a background job and return its id. Defaults to false; collect with "
                  "job_output or stop with job_kill.")
NO_BACKGROUND_SUFFIX = " This call waits for the subagent and returns its result."
BACKGROUND_DISABLED = "run_in_background is disabled for this tool instance (enableRunInBackground: false)"


def continuable_section(tool_name: str) -> str:
    return (f"Use {tool_name} in the background by default. Start independent delegations together in one assistant "
            f"message and continue useful work while they run. Set `run_in_background: false` only when your next "
            f"action depends on that subagent's result. When a background run settles, the runtime sends you a "
            f"notice containing its outcome and any final assistant message.")


REPORT_SECTION = (
    "Deliver your result with the report tool before you finish: call it once with a self-contained answer. The "
    "agent that started you shares your workspace but does not automatically receive your transcript, tool output, "
    "or reasoning, so a closing remark such as \"done\" leaves it nothing it can use. Report earlier as well whenever "
    "a partial finding changes what that agent should do next; reporting never ends your turn."
)

DELEGATED_CONTEXT = (
    "You are a delegated subagent: your permission scope was fixed when you were started and cannot be widened "
    "from inside this session — operations that require approval are rejected automatically. When the task needs "
    "access beyond that scope, do not retry the denied operation; state the limitation in your reply so the "
    "delegating agent can handle it."
)

# Foreground failures by the child's turn-end kind.
FAILURES = {
    "aborted": "subagent run was cancelled",
    "error": "subagent run failed",
    "max-tokens": "subagent run hit its token limit before finishing",
    "blocked": "subagent declined the task",
}

# Settlement summaries by the child's turn-end kind ("{id}" is the child id).
SETTLED = {
    "completed": "Background subagent {id} finished and will do no further work unless you send it more.",
    "aborted": "Background subagent {id} was stopped before it finished.",
    "max-tokens": "Background subagent {id} ran out of room before it finished.",
    "blocked": "Background subagent {id} declined the task.",
    "error": "Background subagent {id} failed before it finished.",
}
NO_CLOSING = "It left no closing message."
CLOSING = "Its closing message:"

# The control tools, exactly as dsh advertises them (name, description, parameters).
SEND_MESSAGE_SCHEMA: ToolSchema = {
    "name": "send_message",
    "description": "Send a message to a background subagent by its subagent id, continuing the same conversation. It becomes the subagent's next turn: if it is still working, the message waits until its current turn finishes, so it cannot redirect work already underway. This call returns no answer from the subagent — only confirmation that the message was delivered — so use it to give it more work. A failure means the message was NOT delivered.",
    "parameters": {
        "type": "object",
        "properties": {
            "subagent_id": {
                "type": "string",
                "description": "The subagent id returned when the background subagent was started."
            },
            "message": {
                "type": "string",
                "description": "The message to deliver to the subagent."
            }
        },
        "required": [
            "subagent_id",
            "message"
        ]
    }
}
INTERRUPT_AGENT_SCHEMA: ToolSchema = {
    "name": "interrupt_agent",
    "description": "Ask a subagent to stop its current work. This call returns without waiting for it to stop. You can continue a local direct child's conversation later with send_message. External executions stop permanently and cannot receive follow-ups. Subagents it started will keep running.",
    "parameters": {
        "type": "object",
        "properties": {
            "agent_id": {
                "type": "string",
                "description": "The id of an agent created under you: your direct child or a deeper descendant."
            }
        },
        "required": [
            "agent_id"
        ]
    }
}
LIST_AGENTS_SCHEMA: ToolSchema = {
    "name": "list_agents",
    "description": "List your continuable background subagents by durable id and label. Use it to recall which ones you started, not to poll for completion — you are told when one finishes. Status comes from the live registry: running means the agent is working right now, idle means it is loaded but between turns (it may be waiting on agents it started), and ready means it exists only in storage — resumable, not terminal, and not a result waiting to be collected; a `send_message` starts a new turn on the same conversation, and a direct child remains a `send_message` candidate in every status. The snapshot is not a delivery promise — `send_message` performs the authoritative check and may still fail. Children that could not be read are reported as diagnostics instead of being silently dropped. Scope `descendants` walks the whole tree below you in stable pre-order, annotating each entry with its durable direct-parent session id and depth. You may use `send_message` only for depth-1 entries; deeper entries are candidates for `interrupt_agent` only.",
    "parameters": {
        "type": "object",
        "properties": {
            "scope": {
                "type": "string",
                "description": "children (default) lists direct children only; descendants walks the complete tree below you.",
                "enum": [
                    "children",
                    "descendants"
                ]
            }
        }
    }
}
REPORT_SCHEMA: ToolSchema = {
    "name": "report",
    "description": "Report selected content to the agent that started you. Call this once before you finish, with a self-contained final result, and earlier for progress or findings that change what that agent does next. That agent shares your workspace but does not automatically receive your transcript, tool output, or reasoning, so finishing your work is not itself a result. Reporting does not end your turn or finish your work, and only your direct parent receives it. A failed call may still have arrived, so do not blindly repeat it.",
    "parameters": {
        "type": "object",
        "properties": {
            "output": {
                "type": "string",
                "description": "Actionable content for your parent; summarize conclusions and reference relevant shared paths."
            }
        },
        "required": [
            "output"
        ]
    }
}

DELEGATED_QUESTION = ("human interaction is unavailable while the calling agent is owned by another live agent; "
                      "include the unresolved question or decision in the child agent's final result")
