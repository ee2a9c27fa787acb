"""The ``plan-mode`` built-in plugin: dsh's logged plan mode (dsh 0.2's ``plan-mode`` package).

Plan mode is per-session state logged as ``plan/mode`` (``{"active": bool}``; the last one wins, none means
inactive), so resume and fork restore it. While it is active the system prompt carries dsh's plan policy
section (``SECTION``) and, beyond dsh (whose plan mode is guidance only), tools that can change the workspace
(``write``/``exec``/``mcp`` access: ``write``, ``edit``, ``bash``, MCP tools) are refused with ``READ_ONLY``:
only read-only tools run until the plan is approved. A subagent child started while its parent is in plan mode
starts in plan mode too.

- ``/plan [message]`` enters plan mode (a message is then steered as the next user message), ``/plan off``
  leaves it; between turns the change is logged at once, during a turn at the next step (dsh's pending
  selection). A switch the model already saw a request for is narrated to it with dsh's notice.
- ``exit_plan_mode`` (always registered, so the tool list does not change with the mode) presents the plan
  for review through the user-questions seam (``dsh_tui/runtime/questions.py``): **Approve** leaves plan mode
  from the next step, **Keep planning** returns the feedback to the model as the tool's error.
- Beyond dsh (which keeps a pending change in memory only): a change still pending when the session closes
  (the app quit before the next step) is logged at close, after the turn's end (``PlanMode.on_close``).

Config (``[plugins.plan-mode]``): ``section`` (the guidance text; dsh's default).
"""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING, Any

from dsh_tui.session.errors import DshError
from dsh_tui.tools.base import ToolDefinition, ToolError

if TYPE_CHECKING:
    from dsh_tui.runtime.plugin_context import BuiltinContext

name = "plan-mode"
__all__ = ["apply", "name", "SECTION", "EXIT_PLAN_MODE", "fold_plan_mode", "set_plan_mode"]

EXIT_PLAN_MODE = "exit_plan_mode"
REVIEW_ID = "plan-review"
APPROVE_LABEL = "Approve"
KEEP_PLANNING_LABEL = "Keep planning"
EXIT_DESCRIPTION = ("Use only in plan mode. Present your plan for the user's review and, on approval, leave plan "
                    "mode. The user may approve (carry out the plan from your next step) or keep planning — their "
                    "feedback comes back in the tool result; revise and present again.")
PLAN_PARAM = "The complete plan, as markdown, starting with a # heading that names it."
APPROVED_TEXT = "Plan approved — plan mode exited; carry out the plan starting with your next step."
DISMISSED_TEXT = "The user dismissed the plan review to reply in their own words; plan mode remains active."
# dsh 0.2's bundled plan-mode config (packages/bundle/base), byte for byte
SECTION = "\n\n".join([
    "You are in plan mode. Stay in plan mode until the user approves your plan through exit_plan_mode or switches "
    "the session mode. Imperative language to implement changes means plan the implementation, not execute it. A "
    "user's conversational agreement — including an answer confirming something you asked — approves nothing and "
    "does not end plan mode; fold the confirmed decision into the plan and submit it through exit_plan_mode.",
    "Explore first. Use non-mutating reads, searches, static analysis, and checks to ground the plan in the actual "
    "repository. Do not edit or write files, change configuration, run formatters or code generation that rewrites "
    "tracked files, commit, or otherwise carry out the plan. Prefer existing functions and patterns over new "
    "machinery.",
    "The tool catalog stays the same across modes for request-cache stability. These plan-mode rules override any "
    "later tool description or guidance that suggests using mutation tools; those tools remain listed only to keep "
    "the request shape stable. Do not use todo_write to track this planning phase: it tracks implementation after "
    "an approved plan, while the plan itself belongs in exit_plan_mode.",
    "Resolve discoverable facts by inspection. Use ask_user_question only for user-owned choices or material "
    "ambiguity that inspection cannot answer. Do not ask the user where code lives or how current behavior works "
    "when you can find out.",
    "Make the plan decision-complete: state the goal and success criteria; group implementation changes by "
    "subsystem; identify public API, schema, and data-flow changes; cover edge cases, failure modes, tests, "
    "acceptance criteria, and explicit assumptions. Keep it concise enough to review but detailed enough that "
    "another engineer can implement it without making design decisions.",
    "When ready, call exit_plan_mode with the complete plan markdown, starting with a # title. Make exit_plan_mode "
    "the only and final tool call in that assistant response: it presents the plan for approval, and "
    "implementation begins only in a later step after approval. Do not paste the final plan as a plain reply or "
    "ask \"should I proceed?\" through prose or ask_user_question. If review rejects it, incorporate the feedback "
    "and present again. If the review channel is unavailable or aborted, stay in plan mode and ask the user to "
    "switch modes manually; do not proceed with implementation.",
]) + "\n"
SECTION_ORDER = 50  # dsh's PLAN_POLICY: after the persona, before every tool's guidance
READ_ONLY = ('plan mode is active: "{name}" can change the workspace, and only read-only tools run until the '
             "user approves the plan (exit_plan_mode) or leaves plan mode (/plan off)")
MUTATING_ACCESS = ("write", "exec", "mcp")
ON_TEXT = "The user switched this session to plan mode."
OFF_TEXT = "The user switched this session back to the default mode."


def fold_plan_mode(events: Any, end: int | None = None) -> bool:
    """Whether plan mode is active after ``events[:end]`` (the last ``plan/mode`` wins; none: inactive)."""
    stop = len(events) if end is None else end
    for i in range(stop - 1, -1, -1):
        event = events[i]
        if event.get("type") == "plan/mode":
            return bool((event.get("data") or {}).get("active"))
    return False


def _open_turn(events: Any) -> bool:
    for i in range(len(events) - 1, -1, -1):
        t = events[i].get("type")
        if t == "turn/end":
            return False
        if t == "turn/start":
            return True
    return False


def _active_at_last_header(events: Any) -> bool | None:
    for i in range(len(events) - 1, -1, -1):
        if events[i].get("type") == "request/header":
            return fold_plan_mode(events, i + 1)
    return None


class PlanMode:
    """One agent's plan-mode controller (dsh's ``ctx.planMode``)."""

    def __init__(self, agent: Any, section: str) -> None:
        self.agent = agent
        self.section = section
        self.pending: dict[str, bool] | None = None  # {"active", "narrate"}: applied at the next pre-step

    @property
    def logged(self) -> bool:
        return fold_plan_mode(self.agent.session.events)

    @property
    def effective(self) -> bool:
        return self.pending["active"] if self.pending is not None else self.logged

    def narration(self, target: bool) -> dict | None:
        told = _active_at_last_header(self.agent.session.events)
        if told is None or told == target:
            return None
        text = ON_TEXT if target else OFF_TEXT
        return {"id": str(uuid.uuid4()), "role": "user", "content": [{"type": "text", "text": text}],
                "source": {"kind": "plugin", "plugin": "plan-mode", "form": "notice", "summary": text}}

    def set(self, active: bool) -> str:
        """dsh's ``set``: ``committed`` (logged now), ``queued`` (at the next step), ``cancelled`` or ``noop``."""
        session = self.agent.session
        if active == self.effective:
            return "noop"
        if _open_turn(session.events):
            self.pending = {"active": active, "narrate": True}
            return "cancelled" if self.logged == active else "queued"
        if active == self.logged:
            self.pending = None
            return "cancelled"
        session.append("plan/mode", {"active": active})
        self.pending = None
        narration = self.narration(active)
        if narration is not None:
            self.agent.inject(narration)
        return "committed"

    def on_boundary(self) -> None:
        pending = self.pending
        if pending is None:
            return
        if pending["active"] != self.logged:
            self.agent.session.append("plan/mode", {"active": pending["active"]})
        self.pending = None

    def on_close(self) -> None:
        """The session closes with a selection still pending (the app quit between an approved plan review, or
        a ``/plan`` during a turn, and the next step): log it now, as a selection between turns is (``set``), so
        a resume (here or in dsh) is in the mode the user chose. dsh keeps it in memory only, and loses it."""
        pending = self.pending
        if pending is None or _open_turn(self.agent.session.events):
            return
        narration = self.narration(pending["active"]) if pending["narrate"] else None
        self.on_boundary()
        if narration is not None:
            self.agent.inject(narration)


CONTROLLERS: dict[str, PlanMode] = {}  # agent id -> its controller (the UI's key and the tests reach it)


def set_plan_mode(agent: Any, active: bool) -> str:
    """Enter or leave plan mode on ``agent`` (the ``/plan`` command's and the UI key's way)."""
    controller = CONTROLLERS.get(agent.id)
    if controller is None:
        raise DshError("plan mode is turned off ([plugins.plan-mode] enabled = false)")
    return controller.set(active)


def _config(raw: Any) -> str:
    cfg = dict(raw or {})
    unknown = set(cfg) - {"section"}
    if unknown:
        raise DshError(f"unknown option(s) {', '.join(sorted(unknown))} (expected section)")
    section = cfg.get("section", SECTION)
    if not isinstance(section, str):
        raise DshError("PlanModeConfig needs a string `section`")
    if not section.strip():
        raise DshError("PlanModeConfig needs a non-empty `section`")
    return section


def apply(ctx: BuiltinContext, config: Any = None) -> None:
    section = _config(config)
    agent = ctx.driver
    controller = PlanMode(agent, section)

    def register() -> Any:
        CONTROLLERS[agent.id] = controller

        def unregister() -> None:
            if CONTROLLERS.get(agent.id) is controller:
                CONTROLLERS.pop(agent.id, None)
            try:
                controller.on_close()
            except Exception as err:  # noqa: BLE001 - closing goes on; the selection is lost as dsh loses it
                ctx.log.warning("failed to append the pending plan mode at close: %r", err)

        return unregister

    ctx.effect(register, "plan-mode controller")
    header = agent.session.header
    parent = CONTROLLERS.get(str(header.get("parentSession") or ""))
    if header.get("origin") == "subagent" and parent is not None and parent.effective \
            and not any(e.get("type") == "plan/mode" for e in agent.session.events):
        # a child started in plan mode plans too (read-only tools): delegation is no way around it
        agent.session.append("plan/mode", {"active": True})

    async def assemble(payload: dict, nxt: Any) -> Any:
        from dsh_tui.runtime import prompt as prompt_mod

        assembly = await nxt()
        if controller.effective:
            assembly.sections.append(prompt_mod.Section("plan:policy", SECTION_ORDER, controller.section))
        return assembly

    ctx.on("system-prompt/assemble", assemble)

    async def pre_step(payload: dict, nxt: Any) -> Any:
        decision = await nxt()
        pending = controller.pending
        signal = payload.get("signal")
        if (decision or {}).get("kind") == "reject" or (signal is not None and signal.aborted) or pending is None:
            return decision
        narration = controller.narration(pending["active"])
        try:
            controller.on_boundary()
        except Exception as err:  # noqa: BLE001 - dsh: a failed append stays pending; the step goes on
            ctx.log.warning("failed to append selected plan mode at step start: %r", err)
            return decision
        if not pending["narrate"] or narration is None:
            return decision
        return {**decision, "messages": [*(decision.get("messages") or []), narration]}

    ctx.on("agent/pre-step", pre_step)

    async def pre_execute(payload: dict, nxt: Any) -> Any:
        ex = payload.get("exec")
        tool = getattr(ex, "tool", None)
        if tool is not None and tool.access in MUTATING_ACCESS and controller.effective:
            return {"kind": "deny", "reason": READ_ONLY.format(name=tool.name)}
        return await nxt()

    ctx.on("tools/pre-execute", pre_execute)

    def plan_command(call: Any) -> Any:
        from dsh_tui.runtime.commands import CommandResult

        message = call.raw.strip()
        if message == "off":
            outcome = controller.set(False)
            texts = {"committed": "Plan mode off.", "queued": "Leaving plan mode (applies from the next step).",
                     "cancelled": "Plan mode entry cancelled."}
            if outcome in texts:
                return CommandResult(texts[outcome])
            return CommandResult("Leaving plan mode (applies from the next step)." if controller.logged
                                 else "Plan mode is already inactive.")
        outcome = controller.set(True)
        if message:
            call.agent.steer({"role": "user", "content": [{"type": "text", "text": message}],
                              "source": {"kind": "user"}})
        return CommandResult("Plan mode on. Use /plan off to leave." if outcome == "committed"
                             else "Entering plan mode (applies from the next step). Use /plan off to leave.")

    ctx.commands.register("plan", "Enter or leave plan mode", plan_command, usage="/plan [off|message]")

    async def exit_plan_mode(args: dict, tctx: Any) -> dict:
        from dsh_tui.runtime.questions import QuestionCancelled, ask

        caller = tctx.agent or agent
        if not controller.logged:
            raise ToolError(f"{EXIT_PLAN_MODE} is only available in plan mode")
        raw_plan = args.get("plan")
        plan = raw_plan if isinstance(raw_plan, str) else ""
        if not re.match(r"^#\s+\S", plan.strip()):
            raise ToolError(f"{EXIT_PLAN_MODE} requires a non-empty markdown plan starting with a # heading")
        question = {"id": REVIEW_ID, "header": "Plan review", "question": "Approve this plan and leave plan mode?",
                    "detail": plan,
                    "options": [{"label": APPROVE_LABEL,
                                 "description": "Leave plan mode; the plan is carried out from the next step."},
                                {"label": KEEP_PLANNING_LABEL,
                                 "description": "Stay in plan mode; feedback goes back to the model."}],
                    "intent": {"kind": "plan-review", "approve": APPROVE_LABEL, "callId": tctx.call_id}}
        try:
            answer = await ask(caller, [question], caller.signal, tctx.call_id)
        except QuestionCancelled:
            conclude = getattr(tctx, "conclude_turn", None)
            if conclude is not None:
                conclude()
            return {"approved": False}
        items = [a for a in (answer or {}).get("answers") or [] if a.get("id") == REVIEW_ID]
        item = items[0] if len(items) == 1 else None
        if (item is None or list(item.get("selected") or []) != [APPROVE_LABEL]
                or item.get("custom") is not None):
            feedback = (item or {}).get("custom") or ""
            raise ToolError("The user chose to keep planning; revise the plan and present it again." if not feedback
                            else f"The user chose to keep planning; their feedback: {feedback}")
        controller.pending = {"active": False, "narrate": False}
        return {"approved": True}

    def render(_args: Any, value: Any) -> list[dict]:
        approved = isinstance(value, dict) and value.get("approved")
        return [{"type": "text", "text": APPROVED_TEXT if approved else DISMISSED_TEXT}]

    parameters = {"type": "object", "properties": {"plan": {"type": "string", "description": PLAN_PARAM}},
                  "required": ["plan"]}
    ctx.tools.register(ToolDefinition(EXIT_PLAN_MODE, EXIT_DESCRIPTION, parameters, exit_plan_mode, render,
                                      access="read"))
