"""The ``goal`` built-in plugin: dsh's same-session goals (dsh 0.2's ``goal``, ``tool-goal``, ``command-goal`` and
``goal-round-driver`` packages in one plugin).

A goal is an objective the session keeps working on across automatic continuation rounds. Its state lives in
the log only: every mutation appends dsh's ``goal/change`` event (the whole post-change snapshot, or a clear
tombstone), and each admitted round is a ``user/message`` whose source is ``{"kind": "goal", "goalId",
"revision", "round"}`` carrying dsh's ``<goal_round>`` prompt. ``fold_goal(events)`` recovers the goal.

Whether rounds may start is process-local (*armed*/*disarmed*, never logged): creating or resuming a goal arms
it; pausing, completing, blocking, an error or a cancelled round disarm it; a resumed session starts disarmed
(the user resumes it with ``/goal resume``, or asks the model to).

- Tools: ``create_goal``, ``get_goal``, ``update_goal`` (dsh's schemas, texts and authority checks: a direct
  human turn for create/edit/pause/resume; complete/blocked also during the goal's own round, blocked only
  after ``blocked_after_consecutive_rounds`` rounds).
- ``/goal [<objective>|clear|edit <objective>|pause|resume]``.
- The driver: when the agent goes idle with an active, armed goal and nothing else queued, it queues the next
  round (or, at the round limit, blocks the goal with dsh's ``round-limit`` reason). A round that ends in
  ``complete``/``blocked`` gets dsh's closing-message context.

Config (``[plugins.goal]``): ``default_max_goal_rounds`` (256), ``blocked_after_consecutive_rounds`` (3),
``rounds`` (true; false leaves the driver out, as dsh's compositions without ``goal-round-driver`` do: the
goal tools and ``/goal`` work, no round starts by itself).
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dsh_tui.runtime.options import plugin_options
from dsh_tui.session.errors import DshError
from dsh_tui.tools.base import ToolDefinition, ToolError

name = "goal"
__all__ = ["apply", "name", "fold_goal", "GoalFold", "round_prompt", "describe_goal", "GOALS"]

if TYPE_CHECKING:
    from dsh_tui.extensions.goals.service import Goals

DEFAULTS: dict[str, Any] = {"default_max_goal_rounds": 256, "blocked_after_consecutive_rounds": 3, "rounds": True}
SECTION_ORDER = 115  # dsh's TOOL_GOAL: after the jobs guidance, before the subagent report's
CREATE_DESCRIPTION = ("Create a persisted goal that keeps this session working across automatic continuation "
                      "rounds. Use it when the direct human request is a long-running objective, even if the user "
                      "did not say \"goal\"; not for single-turn work.")
GET_DESCRIPTION = "Read the current session goal, including the id and revision that update_goal requires."
UPDATE_DESCRIPTION = "Update the current goal."
ACTION_DESCRIPTION = ("edit, pause, and resume require a direct top-level human request. complete and blocked are "
                      "also allowed during an automatic continuation of this goal; blocked is rejected before the "
                      "configured minimum round count.")
USAGE = "Usage: /goal [<objective>|clear|edit <objective>|pause|resume]"


def guidance(blocked_after: int) -> str:
    return ("create_goal may infer goal intent from a direct human request in any language. After session resume "
            "or fork, an active goal is disarmed: when a human asks to continue or resume in any wording or "
            "language, use update_goal action resume to rearm it. Mark complete only when the objective is "
            "actually achieved. Mark blocked only after the same blocking condition persists for at least "
            f"{blocked_after} consecutive goal rounds, and report that concrete condition in blocked_reason; "
            "difficulty, uncertainty, or useful remaining work is not blocked.")


def round_prompt(goal: dict, round_no: int) -> str:
    """dsh's continuation prompt for one goal round."""
    return (f"<goal_round>\nObjective: {json.dumps(goal['objective'], ensure_ascii=False)}\nRound: {round_no}/"
            f"{goal['maxGoalRounds']}\n\nContinue working toward the objective in this same session. Treat the "
            "current workspace, tool results, and durable session state as authoritative; inspect them instead of "
            "assuming earlier narration is still current. Make concrete progress and verify the result. Before "
            "claiming completion, gather evidence that the whole objective is achieved, read the current goal, "
            "and mark it complete. If work remains, leave the goal active for the next round. Follow the "
            "configured goal-tool policy before reporting a blocker.\n</goal_round>")


def wrapup_text(objective: str, blocked_reason: str | None = None) -> str:
    """dsh's closing-message instruction after a goal round reports ``complete`` or ``blocked``."""
    heading = f"Objective: {json.dumps(objective, ensure_ascii=False)}\n"
    if blocked_reason is None:
        return ("<goal_complete>\n" + heading + "The goal is marked complete and this autonomous run is ending. "
                "Write the closing message to the user now: state the outcome, summarize what was done and how it "
                "was verified, and point to the concrete results (files, commits, or other artifacts). Report only "
                "what earlier rounds and tool results in this session actually establish; when a detail is not in "
                "the session, say so instead of inventing it. Note anything the user should review or do next. "
                "Address the user directly. Do not call any more tools in this run; further work waits for the "
                "user's next instruction.\n</goal_complete>")
    return ("<goal_blocked>\n" + heading + f"Blocked: {json.dumps(blocked_reason, ensure_ascii=False)}\nThe goal "
            "is marked blocked and this autonomous run is ending. Write the closing message to the user now: state "
            "what has been completed so far, describe the concrete blocking condition and what you tried, and say "
            "exactly what you need from the user to continue. Report only what earlier rounds and tool results in "
            "this session actually establish; when a detail is not in the session, say so instead of inventing "
            "it. Address the user directly. Do not call any more tools in this run; further work waits for the "
            "user's next instruction.\n</goal_blocked>")


def _bound_summary(text: str) -> str:
    return text if len(text) <= 120 else text[:119] + "…"


# -------------------------------------------------------------------------------------------------
# The fold (pure: the UI's status bar and timeline use it too; the service is ``service.py``, imported when
# the plugin is applied, not on the way to the app's first frame)


@dataclass
class GoalFold:
    """The goal folded from a log: ``goal`` (dsh's snapshot, or None), ``rounds_started``, timestamps."""

    goal: dict | None = None
    rounds_started: int = 0
    created_at: int | None = None
    updated_at: int | None = None
    seen: int = 0  # events folded so far (``update`` continues from there)
    changed_at: list[int] = field(default_factory=list)

    def apply(self, event: dict) -> bool:
        """Fold one event; True when the goal (or its round count) changed."""
        t = event.get("type")
        data = event.get("data") or {}
        if t == "goal/change" and isinstance(data, dict):
            if data.get("operation") == "clear":
                self.goal, self.rounds_started, self.created_at, self.updated_at = None, 0, None, None
            elif isinstance(data.get("goal"), dict):
                self.goal = dict(data["goal"])
                self.rounds_started = int(data.get("roundsStarted") or 0)
                self.created_at, self.updated_at = data.get("createdAt"), data.get("updatedAt")
            return True
        if t == "user/message" and isinstance(data, dict):
            source = data.get("source") or {}
            goal = self.goal
            if (source.get("kind") == "goal" and goal is not None and source.get("goalId") == goal.get("id")
                    and isinstance(source.get("round"), int) and source["round"] > self.rounds_started):
                self.rounds_started = source["round"]
                return True
        return False

    def update(self, events: Any) -> GoalFold:
        for i in range(self.seen, len(events)):
            self.apply(events[i])
        self.seen = len(events)
        return self


def fold_goal(events: Any) -> GoalFold:
    return GoalFold().update(events)


def describe_goal(fold: GoalFold) -> str:
    """The goal in one short line for the status bar ("" without one)."""
    goal = fold.goal
    if goal is None:
        return ""
    return f"goal {goal.get('phase')} {fold.rounds_started}/{goal.get('maxGoalRounds')}"


GOALS: dict[str, Goals] = {}  # agent id -> its goal service (the UI and the tests reach it)


def _goal_value(view: dict | None) -> dict:
    if view is None:
        return {"goal": None}
    goal = {"id": view["id"], "revision": view["revision"], "objective": view["objective"], "phase": view["phase"],
            "roundsStarted": view["roundsStarted"], "maxGoalRounds": view["maxGoalRounds"]}
    if view.get("blockedReason") is not None:
        goal["blockedReason"] = {"code": view["blockedReason"]["code"], "message": view["blockedReason"]["message"]}
    return {"goal": goal, "activation": view["activation"]}


def _render(_args: Any, value: Any) -> list[dict]:
    return [{"type": "text", "text": json.dumps(value, ensure_ascii=False, separators=(",", ":"))}]


def _open_turn_events(events: Any) -> list[dict]:
    for i in range(len(events) - 1, -1, -1):
        if events[i].get("type") == "turn/start":
            return list(events[i + 1:])
    return []


def _config(raw: Any) -> dict[str, Any]:
    cfg = plugin_options(raw, DEFAULTS, positive=("default_max_goal_rounds", "blocked_after_consecutive_rounds"))
    if not isinstance(cfg["rounds"], bool):
        raise DshError("rounds must be true or false")
    return cfg


def apply(ctx: Any, config: Any = None) -> None:  # noqa: C901 - dsh's four goal packages, one closure each
    from dsh_tui.extensions.goals.service import GoalError, Goals

    cfg = _config(config)
    agent = ctx.driver
    goals = Goals(agent, cfg["default_max_goal_rounds"])

    def register() -> Any:
        GOALS[agent.id] = goals
        return lambda: GOALS.pop(agent.id, None) if GOALS.get(agent.id) is goals else None

    ctx.effect(register, "goal service")
    blocked_after = cfg["blocked_after_consecutive_rounds"]

    # -- authority (dsh's tool-goal) --------------------------------------------------------------
    def direct_human() -> bool:
        from dsh_tui.runtime.questions import is_delegated

        if is_delegated(agent):
            return False
        return any(e.get("type") == "user/message" and ((e.get("data") or {}).get("source") or {}).get("kind")
                   == "user" for e in _open_turn_events(agent.session.events))

    def require_direct_human() -> None:
        if not direct_human():
            raise ToolError("this goal operation requires a direct human turn on a top-level agent", "GOAL_TOOL_AUTHORITY",
                            "HarnessError")

    def goal_round(view: dict) -> bool:
        for e in _open_turn_events(agent.session.events):
            source = ((e.get("data") or {}).get("source") or {}) if e.get("type") == "user/message" else {}
            if (source.get("kind") == "goal" and source.get("goalId") == view["id"]
                    and source.get("revision") == view["revision"] and source.get("round") == view["roundsStarted"]):
                return True
        return False

    def call(fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except GoalError as err:
            raise ToolError(str(err), err.code, "GoalError") from None

    def ref_of(args: dict) -> tuple[str, int]:
        goal_id, revision = args.get("goal_id"), args.get("revision")
        if (not isinstance(goal_id, str) or not goal_id or goal_id != goal_id.strip() or isinstance(revision, bool)
                or not isinstance(revision, (int, float)) or revision != int(revision) or revision < 1):
            raise ToolError("goal_id must be non-empty and revision must be a positive safe integer",
                            "GOAL_TOOL_INVALID_UPDATE", "HarnessError")
        return goal_id, int(revision)

    # -- tools ----------------------------------------------------------------------------------
    async def get_goal(_args: dict, _tctx: Any) -> dict:
        return _goal_value(goals.view())

    async def create_goal(args: dict, _tctx: Any) -> dict:
        require_direct_human()
        return _goal_value(call(goals.create, args.get("objective"), args.get("max_goal_rounds")))

    async def update_goal(args: dict, tctx: Any) -> dict:
        def invalid(text: str) -> ToolError:
            return ToolError(text, "GOAL_TOOL_INVALID_UPDATE", "HarnessError")

        ref = ref_of(args)
        action = args.get("action")
        objective = args.get("objective") if args.get("objective") not in (None, "") else None
        cap = args.get("max_goal_rounds") if args.get("max_goal_rounds") not in (None, 0) else None
        reason = args.get("blocked_reason")
        has_reason = reason not in (None, "")
        if action == "edit":
            require_direct_human()
            if has_reason:
                raise invalid("blocked_reason is valid only with action blocked")
            return _goal_value(call(goals.edit, ref, objective, cap))
        if action in ("pause", "resume"):
            require_direct_human()
            if objective is not None or cap is not None or has_reason:
                raise invalid("objective and max_goal_rounds are valid only with action edit; blocked_reason is "
                              "valid only with action blocked")
            current = goals.view()
            if (action == "resume" and current is not None and (current["id"], current["revision"]) == ref
                    and current["phase"] == "paused"):
                raise ToolError("the model cannot resume a paused goal; the user must resume it",
                                "GOAL_TOOL_RESUME_PAUSED", "HarnessError")
            return _goal_value(call(goals.pause if action == "pause" else goals.resume, ref))
        # complete | blocked
        authority = "direct-human" if direct_human() else None
        current = goals.view()
        if authority is None and current is not None and goal_round(current):
            authority = "goal-round"
        if authority is None:
            raise ToolError("complete and blocked require a direct human turn or the current goal round",
                            "GOAL_TOOL_AUTHORITY", "HarnessError")
        if objective is not None or cap is not None:
            raise invalid("objective and max_goal_rounds are valid only with action edit")
        if action == "complete" and has_reason:
            raise invalid("blocked_reason is valid only with action blocked")
        if action == "blocked" and (not isinstance(reason, str) or not reason.strip()):
            raise invalid("blocked_reason is required with action blocked")
        if action == "blocked" and authority == "goal-round" and current is not None \
                and current["roundsStarted"] < blocked_after:
            raise ToolError(f"blocked requires at least {blocked_after} consecutive goal rounds; current round is "
                            f"{current['roundsStarted']}", "GOAL_TOOL_BLOCK_THRESHOLD", "HarnessError")
        view = call(goals.complete, ref) if action == "complete" else call(goals.block, ref, "model-reported", reason)
        if authority == "goal-round":
            text = wrapup_text(view["objective"], None if action == "complete" else reason)
            tctx.defer_context({"id": str(uuid.uuid4()), "role": "user", "content": [{"type": "text", "text": text}],
                                "source": {"kind": "plugin", "plugin": "tool-goal", "form": "notice",
                                           "summary": _bound_summary(f"{action}: {view['objective']}")}})
        return _goal_value(view)

    obj = {"type": "object"}
    ctx.tools.register(ToolDefinition("get_goal", GET_DESCRIPTION, {**obj, "properties": {}}, get_goal, _render))
    ctx.tools.register(ToolDefinition("create_goal", CREATE_DESCRIPTION, {**obj, "properties": {
        "objective": {"type": "string",
                      "description": "The concrete completion objective inferred from the direct human request."},
        "max_goal_rounds": {"type": "number",
                            "description": "Optional positive safe-integer limit on automatic continuation rounds."}},
        "required": ["objective"]}, create_goal, _render))
    ctx.tools.register(ToolDefinition("update_goal", UPDATE_DESCRIPTION, {**obj, "properties": {
        "goal_id": {"type": "string", "description": "Exact id returned by get_goal."},
        "revision": {"type": "number", "description": "Exact positive revision returned by get_goal."},
        "action": {"type": "string", "description": ACTION_DESCRIPTION,
                   "enum": ["edit", "pause", "resume", "complete", "blocked"]},
        "objective": {"type": "string", "description": "Replacement objective; valid only with action edit."},
        "max_goal_rounds": {"type": "number", "description": "Replacement cap; valid only with action edit."},
        "blocked_reason": {"type": "string", "description": "Required only with action blocked: the concrete "
                                                            "condition that persisted across rounds and blocks "
                                                            "progress."}},
        "required": ["goal_id", "revision", "action"]}, update_goal, _render))

    async def assemble(payload: dict, nxt: Any) -> Any:
        from dsh_tui.runtime import prompt as prompt_mod

        assembly = await nxt()
        if "update_goal" in agent.tools.tools:
            assembly.sections.append(prompt_mod.Section("tool:goal", SECTION_ORDER, guidance(blocked_after)))
        return assembly

    ctx.on("system-prompt/assemble", assemble)

    # -- /goal (dsh's command-goal) ---------------------------------------------------------------
    def render_goal(title: str, view: dict) -> str:
        hint = {"paused": "/goal edit <objective>, /goal resume, /goal clear",
                "blocked": "/goal edit <objective>, /goal resume, /goal clear",
                "complete": "/goal <objective>, /goal clear"}.get(view["phase"])
        if view["phase"] == "active":
            hint = ("/goal edit <objective>, /goal pause, /goal clear" if view["activation"] == "armed"
                    else "/goal edit <objective>, /goal resume, /goal clear")
        blocker = view.get("blockedReason")
        lines = [title, f"Status: {view['phase']}"]
        if blocker:
            lines.append(f"Blocker: {blocker['code']}: {blocker['message']}")
        lines += [f"Objective: {view['objective']}", f"Rounds: {view['roundsStarted']}/{view['maxGoalRounds']}",
                  f"Activation: {view['activation']}", f"Commands: {hint}"]
        return "\n".join(lines)

    def goal_command(call_: Any) -> Any:
        from dsh_tui.runtime.commands import CommandResult

        text = call_.raw.strip()
        control = text.lower()
        current = goals.view()

        def missing(action: str) -> Any:
            return CommandResult(f"No goal is currently set; /goal {action} requires one. {USAGE}", kind="error")

        try:
            if not text:
                return CommandResult(f"No goal is currently set.\n{USAGE}" if current is None
                                     else render_goal("Goal", current))
            if control == "clear":
                if current is None:
                    return CommandResult("No goal to clear.")
                goals.clear((current["id"], current["revision"]))
                return CommandResult("Goal cleared.")
            if control == "pause":
                if current is None:
                    return missing("pause")
                view = goals.pause((current["id"], current["revision"]))
                if agent.status == "running":
                    agent.cancel({"kind": "user"}, keep_inbox=True)
                return CommandResult(render_goal("Goal paused", view))
            if control == "resume":
                if current is None:
                    return missing("resume")
                return CommandResult(render_goal("Goal resumed", goals.resume((current["id"], current["revision"]))))
            if control == "edit":
                return CommandResult(f"Goal editing requires a replacement objective.\n{USAGE}", kind="error")
            if re.match(r"^edit\s", text, re.I):
                objective = text[4:].strip()
                if current is None:
                    return missing("edit")
                if current["phase"] == "complete":
                    return CommandResult(render_goal("Goal created", goals.create(objective)))
                return CommandResult(render_goal("Goal updated", goals.edit((current["id"], current["revision"]),
                                                                          objective)))
            if current is not None and current["phase"] != "complete":
                return CommandResult(f"A goal is already {current['phase']}. Use /goal edit <objective> to change it "
                                     "or /goal clear before replacing it.", kind="error")
            return CommandResult(render_goal("Goal created", goals.create(text)))
        except GoalError:
            return CommandResult("The goal command is not valid for the current state. Run /goal to view available "
                                 "commands.", kind="error")
        finally:
            schedule()

    ctx.commands.register("goal", "Set or view the goal for a long-running task", goal_command,
                          usage="/goal [<objective>|clear|edit <objective>|pause|resume]")

    # -- the round driver (dsh's goal-round-driver) ------------------------------------------------
    attempt: dict[str, Any] = {}  # the round this driver queued: {"id", "goal", "revision", "round", "phase"}
    scheduled = [False]

    def disarm() -> None:
        goals.activation = "disarmed"

    def drive() -> None:
        scheduled[0] = False
        if not cfg["rounds"] or agent.status != "idle" or getattr(agent, "_disposed", False) or agent.inbox.pending():
            return
        view = goals.view()
        if view is None or view["phase"] != "active" or goals.activation != "armed":
            return
        if view["roundsStarted"] >= view["maxGoalRounds"]:
            goals.block((view["id"], view["revision"]), "round-limit",
                        f"Goal reached its configured limit of {view['maxGoalRounds']} rounds.")
            return
        round_no = view["roundsStarted"] + 1
        message = {"id": str(uuid.uuid4()), "role": "user",
                   "content": [{"type": "text", "text": round_prompt(view, round_no)}],
                   "source": {"kind": "goal", "goalId": view["id"], "revision": view["revision"], "round": round_no}}
        attempt.clear()
        attempt.update({"id": message["id"], "goal": view["id"], "revision": view["revision"], "round": round_no,
                        "phase": "queued"})
        agent.followup(message)

    def schedule() -> None:
        if not scheduled[0]:
            scheduled[0] = True
            asyncio.get_running_loop().call_soon(drive)

    def on_status(payload: dict) -> None:
        if payload.get("status") != "idle":
            return
        if attempt.get("cancelled"):  # a cancelled goal round pauses its goal (dsh's driver, at idle)
            view = goals.view()
            goal_id = attempt.get("goal")
            attempt.clear()
            if view is not None and view["id"] == goal_id and view["phase"] == "active" \
                    and goals.activation == "armed":
                try:
                    goals.pause((view["id"], view["revision"]))
                except DshError:
                    disarm()
        schedule()

    ctx.on("agent/status", on_status)
    ctx.on("agent/error", lambda _p: disarm())

    def on_event(payload: Any) -> None:
        event = payload.get("event") if isinstance(payload, dict) else None
        if not isinstance(event, dict):
            return
        t = event.get("type")
        if t == "user/message" and attempt and (event.get("data") or {}).get("id") == attempt.get("id"):
            attempt["phase"] = "admitted"
        elif t == "turn/end":
            kind = (((event.get("data") or {}).get("reason")) or {}).get("kind")
            if kind == "max-tokens":
                disarm()
            elif kind == "aborted":  # an observer may not append: the pause happens at idle (on_status)
                if attempt.get("phase") in ("queued", "admitted"):
                    attempt["cancelled"] = True
                else:
                    disarm()

    ctx.effect(lambda: agent.session.subscribe(lambda _session, event: on_event({"event": event})),
               "goal driver: the session's events")

    async def pre_step(payload: dict, nxt: Any) -> Any:
        messages = payload.get("messages") or []
        submitted = next((m for m in messages if (m.get("source") or {}).get("kind") == "goal"), None)
        if submitted is None:
            return await nxt()
        source = submitted["source"]
        view = goals.view()
        valid = (view is not None and view["phase"] == "active" and goals.activation == "armed"
                 and source.get("goalId") == view["id"] and source.get("revision") == view["revision"]
                 and source.get("round") == view["roundsStarted"] + 1)
        if not valid:
            attempt.clear()
            schedule()
            return {"kind": "reject"}
        return await nxt()

    ctx.on("agent/pre-step", pre_step)
