"""The ``ask-user`` built-in plugin: dsh's ``ask_user_question`` tool and the user-questions seam
(dsh's ``tool-ask-user`` + ``user-questions``).

``ask(agent, questions, signal)`` asks whoever answers the ``user-questions/request`` waterfall (the app's
question panel, ``dsh_tui/ui/harness.py``) and returns ``{"answers": [{"id", "selected", "custom"?}]}``. With
nobody to answer (headless, the SDK) it raises dsh's ``NO_PROVIDER`` error; a subagent child (owned by a live
parent) is refused with dsh's ``DELEGATED_CALLER`` text. The plan review of ``exit_plan_mode``
(``dsh_tui/runtime/planmode``) asks through the same seam.

The model-facing tool is registered only where a human can answer (``[plugins.ask-user] interactive = true``,
which the app sets), as dsh's headless profile leaves it out; in children the ``subagents`` plugin registers
dsh's refusing copy. A listener of ``user-questions/request`` gets ``{"agent", "callId", "questions",
"signal"}`` (each question ``{"id", "question", "header"?, "detail"?, "options"?, "multiSelect"?,
"intent"?}``) and returns the answer, or raises ``QuestionCancelled`` when the user dismissed it.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from dsh_tui.session.errors import DshError
from dsh_tui.tools.base import ToolDefinition, ToolError

name = "ask-user"
__all__ = ["apply", "ask", "name", "QuestionCancelled", "SCHEMA", "DESCRIPTION"]

EVENT = "user-questions/request"
# dsh 0.2's description (0.1 had a second sentence about ids; the refusing copy in children keeps 0.1's)
DESCRIPTION = ("Ask the user a concise question when you need confirmation, a choice, or missing information "
               "before proceeding.")
NO_PROVIDER = "no user-questions answerer accepted the request"
DELEGATED = ("human interaction is unavailable while the calling agent is owned by another live agent; include "
             "the unresolved question or decision in the child agent's final result")
ABORTED = "ask_user_question was aborted before the user answered"
CANCELLED = "the user cancelled ask_user_question"
EMPTY = "ask_user_question requires at least one question"


class QuestionCancelled(DshError):
    """The user dismissed the question to speak instead (dsh's ``ASK_CANCELLED``)."""


def _schema() -> dict:
    from dsh_tui.runtime.subagents.texts import ASK_USER_QUESTION_SCHEMA

    schema = copy.deepcopy(ASK_USER_QUESTION_SCHEMA)
    schema["description"] = DESCRIPTION
    return schema


SCHEMA = _schema()


def _error(message: str, code: str) -> ToolError:
    return ToolError(message, code, "UserQuestionError")


def is_delegated(agent: Any) -> bool:
    """The agent is a subagent child owned by a live parent (no human can answer it)."""
    from dsh_tui.runtime.subagents import children as ch

    child = ch.CHILDREN.get(getattr(agent, "id", ""))
    return child is not None and getattr(child, "host", None) is not None


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


def _question(q: dict) -> dict:
    out = {"id": q.get("id"), "question": q.get("question")}
    if q.get("header") is not None:
        out["header"] = q["header"]
    if q.get("options") is not None:
        out["options"] = q["options"]
    if q.get("multi_select") is not None:
        out["multiSelect"] = q["multi_select"]
    return out


def apply(ctx: Any, config: Any = None) -> None:
    cfg = dict(config or {})
    unknown = set(cfg) - {"interactive"}
    if unknown:
        raise DshError(f"unknown option(s) {', '.join(sorted(unknown))} (expected interactive)")
    agent = ctx._agent
    if not cfg.get("interactive") or agent.session.header.get("origin") == "subagent":
        return  # headless: dsh's headless profile has no such tool; children: the subagents plugin's refusal

    async def execute(args: dict, tctx: Any) -> dict:
        try:
            caller = tctx.agent or agent
            answer = await ask(caller, [_question(q) for q in args.get("questions") or []], caller.signal,
                               tctx.call_id)
        except QuestionCancelled:
            raise _error(CANCELLED, "ASK_CANCELLED") from None
        answers = []
        for a in (answer or {}).get("answers") or []:
            item = {"id": a.get("id"), "selected": list(a.get("selected") or [])}
            if a.get("custom") is not None:
                item["custom"] = a["custom"]
            answers.append(item)
        return {"answers": answers}

    def render(_args: Any, value: Any) -> list[dict]:
        return [{"type": "text", "text": json.dumps(value, ensure_ascii=False, separators=(",", ":"))}]

    ctx.tools.register(ToolDefinition(SCHEMA["name"], SCHEMA["description"], copy.deepcopy(SCHEMA["parameters"]),
                                      execute, render, access="read"))
