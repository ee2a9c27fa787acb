"""The ``ask-user`` built-in plugin: dsh's ``ask_user_question`` tool (dsh's ``tool-ask-user``) over the core's
user-questions seam (``dsh_tui.runtime.questions``: ``ask``, ``QuestionCancelled``; re-exported here).

``ask(agent, questions, signal)`` asks whoever answers the ``user-questions/request`` waterfall (the app's
question panel, ``dsh_tui/ui/harness.py``) and returns ``{"answers": [{"id", "selected", "custom"?}]}``. With
nobody to answer (headless, the SDK) it raises dsh's ``NO_PROVIDER`` error; a subagent child (owned by a live
parent) is refused with dsh's ``DELEGATED_CALLER`` text. The plan review of ``exit_plan_mode``
(``dsh_tui/extensions/planmode``) asks through the same seam.

The model-facing tool is registered only where a human can answer (``[plugins.ask-user] interactive = true``,
which the app sets), as dsh's headless profile leaves it out; in children the ``subagents`` plugin registers
dsh's refusing copy. A listener of ``user-questions/request`` gets ``{"agent", "callId", "questions",
"signal"}`` (each question ``{"id", "question", "header"?, "detail"?, "options"?, "multiSelect"?,
"intent"?}``) and returns the answer, or raises ``QuestionCancelled`` when the user dismissed it.
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

from dsh_tui.runtime.questions import EVENT, QuestionCancelled, ask, is_delegated
from dsh_tui.session.errors import DshError
from dsh_tui.tools.base import ToolDefinition, ToolError

if TYPE_CHECKING:
    from dsh_tui.runtime.plugin_context import BuiltinContext

name = "ask-user"
__all__ = ["apply", "ask", "name", "QuestionCancelled", "SCHEMA", "DESCRIPTION", "EVENT", "is_delegated"]

# dsh 0.2's description (0.1 had a second sentence about ids; the refusing copy in children keeps 0.1's)
DESCRIPTION = ("Ask the user a concise question when you need confirmation, a choice, or missing information "
               "before proceeding.")
CANCELLED = "the user cancelled ask_user_question"


def _schema() -> dict:
    from dsh_tui.runtime.questions import ASK_USER_QUESTION_SCHEMA

    schema = copy.deepcopy(ASK_USER_QUESTION_SCHEMA)
    schema["description"] = DESCRIPTION
    return schema


SCHEMA = _schema()


def _error(message: str, code: str) -> ToolError:
    return ToolError(message, code, "UserQuestionError")


def _question(q: dict) -> dict:
    out = {"id": q.get("id"), "question": q.get("question")}
    if q.get("header") is not None:
        out["header"] = q["header"]
    if q.get("options") is not None:
        out["options"] = q["options"]
    if q.get("multi_select") is not None:
        out["multiSelect"] = q["multi_select"]
    return out


def apply(ctx: BuiltinContext, config: Any = None) -> None:
    cfg = dict(config or {})
    unknown = set(cfg) - {"interactive"}
    if unknown:
        raise DshError(f"unknown option(s) {', '.join(sorted(unknown))} (expected interactive)")
    agent = ctx.driver
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
