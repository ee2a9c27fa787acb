"""The user-questions seam (dsh's ``user-questions``; core: the bus event ``user-questions/request`` is the
core's, and the plan review asks through it too).

``ask(agent, questions, signal)`` asks whoever answers the ``user-questions/request`` waterfall (the app's
question panel, ``dsh_tui/ui/harness.py``) and returns ``{"answers": [{"id", "selected", "custom"?}]}``. With
nobody to answer (headless, the SDK) it raises dsh's ``NO_PROVIDER`` error; a subagent child (owned by a live
parent) is refused with dsh's ``DELEGATED_CALLER`` text. A listener of ``user-questions/request`` gets
``{"agent", "callId", "questions", "signal"}`` (each question ``{"id", "question", "header"?, "detail"?,
"options"?, "multiSelect"?, "intent"?}``) and returns the answer, or raises ``QuestionCancelled`` when the user
dismissed it. The model-facing ``ask_user_question`` tool is the ``ask-user`` extension
(``dsh_tui.extensions.questions``).
"""

from __future__ import annotations

import json
from typing import Any

from dsh_tui.session.errors import DshError
from dsh_tui.tools.base import ToolError

__all__ = ["ASK_USER_QUESTION_SCHEMA", "ask", "is_delegated", "QuestionCancelled"]

# dsh's ask_user_question (its schema as recorded in tests/fixtures/dsh): in a child it always refuses, since the
# child is owned by another live agent and no human can answer it.
ASK_USER_QUESTION_SCHEMA: dict = {
    "name": "ask_user_question",
    "description": "Ask the user a concise question when you need confirmation, a choice, or missing information before proceeding. Send one or more questions, each with a stable id that will be echoed in the answer.",
    "parameters": {
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "description": "Questions to ask the user before continuing.",
                "items": {
                    "type": "object",
                    "additionalProperties": True,
                    "properties": {
                        "id": {
                            "type": "string",
                            "description": "Stable id for this question; echoed in the answer."
                        },
                        "question": {
                            "type": "string",
                            "description": "The specific question to ask the user."
                        },
                        "header": {
                            "type": "string",
                            "description": "Optional short heading for the question, such as \"Confirm\" or \"Choose Mode\"."
                        },
                        "options": {
                            "type": "array",
                            "description": "Optional choices to show the user. If you recommend one, put it first and append \"(Recommended)\" to that label.",
                            "items": {
                                "type": "object",
                                "additionalProperties": True,
                                "properties": {
                                    "label": {
                                        "type": "string",
                                        "description": "Short user-facing option label."
                                    },
                                    "description": {
                                        "type": "string",
                                        "description": "One sentence explaining the tradeoff or impact."
                                    }
                                },
                                "required": [
                                    "label"
                                ]
                            }
                        },
                        "multi_select": {
                            "type": "boolean",
                            "description": "Whether the user may select more than one option. Defaults to false."
                        }
                    },
                    "required": [
                        "id",
                        "question"
                    ]
                }
            }
        },
        "required": [
            "questions"
        ]
    }
}

EVENT = "user-questions/request"
NO_PROVIDER = "no user-questions answerer accepted the request"
DELEGATED = ("human interaction is unavailable while the calling agent is owned by another live agent; include "
             "the unresolved question or decision in the child agent's final result")
ABORTED = "ask_user_question was aborted before the user answered"
EMPTY = "ask_user_question requires at least one question"


class QuestionCancelled(DshError):
    """The user dismissed the question to speak instead (dsh's ``ASK_CANCELLED``)."""


def _error(message: str, code: str) -> ToolError:
    return ToolError(message, code, "UserQuestionError")


def is_delegated(agent: Any) -> bool:
    """The agent is a subagent child owned by a live parent (no human can answer it)."""
    delegated = getattr(agent, "delegated", None)  # provided by the subagents built-in (no children without it)
    return bool(delegated()) if callable(delegated) else False


async def ask(agent: Any, questions: list[dict], signal: Any = None, call_id: str | None = None) -> dict:
    """Ask the user ``questions`` (dsh's ``ctx.userQuestions.ask``); raises ``ToolError`` with dsh's code
    (``ASK_ABORTED``, ``EMPTY_QUESTIONS``, ``DELEGATED_CALLER``, ``BAD_INTENT``, ``NO_PROVIDER``) or
    ``QuestionCancelled``."""
    if signal is not None and signal.aborted:
        raise _error(ABORTED, "ASK_ABORTED")
    if not questions:
        raise _error(EMPTY, "EMPTY_QUESTIONS")
    if is_delegated(agent):
        raise _error(DELEGATED, "DELEGATED_CALLER")
    for q in questions:
        intent = q.get("intent")
        if intent is None:
            continue
        if not any(o.get("label") == intent.get("approve") for o in q.get("options") or []):
            raise _error(f"question {q['id']} declares intent {intent.get('kind')} whose approve label "
                         f"{json.dumps(intent.get('approve'))} names none of its options", "BAD_INTENT")
        if q.get("detail") is None:
            raise _error(f"question {q['id']} declares intent {intent.get('kind')} without the detail it reviews",
                         "BAD_INTENT")

    def nobody() -> Any:
        raise _error(NO_PROVIDER, "NO_PROVIDER")

    payload = {"agent": agent, "callId": call_id, "questions": questions, "signal": signal}
    answer = await agent.bus.waterfall(EVENT, payload, nobody, scope=agent.id)
    if signal is not None and signal.aborted:
        raise _error(ABORTED, "ASK_ABORTED")
    return answer
