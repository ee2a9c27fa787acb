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
from typing import Any

from dsh_tui.runtime.options import plugin_options
from dsh_tui.session.errors import DshError
from dsh_tui.tools.base import ToolDefinition, ToolError

name = "goal"
__all__ = ["apply", "name", "fold_goal", "GoalFold", "round_prompt", "describe_goal", "GOALS"]

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


def new_goal_id() -> str:
    return f"goal-{uuid.uuid4()}"


class GoalError(DshError):
    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


# -------------------------------------------------------------------------------------------------
# The fold (pure: the UI's status bar and timeline use it too)


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


# -------------------------------------------------------------------------------------------------
# The service (dsh's ``ctx.goals``)


class Goals:
    def __init__(self, agent: Any, default_max: int) -> None:
        self.agent = agent
        self.default_max = default_max
        self.fold = GoalFold()
        self.activation = "disarmed"

    def state(self) -> GoalFold:
        return self.fold.update(self.agent.session.events)

    def view(self) -> dict | None:
        st = self.state()
        if st.goal is None:
            return None
        return {**st.goal, "roundsStarted": st.rounds_started, "createdAt": st.created_at,
                "updatedAt": st.updated_at, "activation": self.activation}

    def _now(self) -> int:
        clock = getattr(self.agent, "clock", None)
        return int(clock()) if callable(clock) else 0

    def _commit(self, change: dict, activation: str) -> None:
        self.agent.session.append("goal/change", change)
        self.activation = activation

    def _changed(self) -> dict:
        """The view after a change that leaves a goal (create, edit, a transition)."""
        view = self.view()
        if view is None:  # the session's events did not take the change: an error, not a view of nothing
            raise GoalError("the goal change was not recorded", "GOAL_NOT_FOUND")
        return view

    def _snapshot(self, operation: str, goal: dict, activation: str) -> dict:
        st = self.state()
        now = max(self._now(), st.updated_at or 0)
        self._commit({"kind": "goal/change", "version": 1, "operation": operation, "goal": goal,
                      "roundsStarted": st.rounds_started, "createdAt": st.created_at, "updatedAt": now},
                     activation)
        return self._changed()

    def _expect(self, ref: tuple[str, int]) -> dict:
        goal = self.state().goal
        if goal is None:
            raise GoalError("no current goal", "GOAL_NOT_FOUND")
        if ref != (goal["id"], goal["revision"]):
            raise GoalError(f'stale goal ref "{ref[0]}" revision {ref[1]}; current is "{goal["id"]}" revision '
                            f'{goal["revision"]}', "GOAL_STALE_REVISION")
        return goal

    @staticmethod
    def _objective(value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise GoalError("goal objective must be a non-empty string", "GOAL_INVALID_OBJECTIVE")
        return value.strip()

    @staticmethod
    def _max_rounds(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < 1 \
                or value > 2**53 - 1:
            raise GoalError("maxGoalRounds must be a positive safe integer", "GOAL_INVALID_MAX_ROUNDS")
        return int(value)

    @staticmethod
    def _transition_error(goal: dict, operation: str, allowed: list[str]) -> GoalError:
        return GoalError(f'cannot {operation} goal "{goal["id"]}" from phase "{goal["phase"]}"; expected '
                         f'{" or ".join(allowed)}', "GOAL_INVALID_TRANSITION")

    @staticmethod
    def _with_phase(goal: dict, phase: str) -> dict:
        return {"id": goal["id"], "revision": goal["revision"] + 1, "objective": goal["objective"], "phase": phase,
                "maxGoalRounds": goal["maxGoalRounds"]}

    def create(self, objective: Any, max_rounds: Any = None) -> dict:
        objective = self._objective(objective)
        cap = self._max_rounds(self.default_max if max_rounds is None else max_rounds)
        current = self.state().goal
        if current is not None and current["phase"] != "complete":
            raise GoalError(f'goal "{current["id"]}" already exists with phase "{current["phase"]}"',
                            "GOAL_ALREADY_EXISTS")
        now = self._now()
        goal = {"id": new_goal_id(), "revision": 1, "objective": objective, "phase": "active",
                "maxGoalRounds": cap}
        self._commit({"kind": "goal/change", "version": 1, "operation": "create", "goal": goal,
                      "roundsStarted": 0, "createdAt": now, "updatedAt": now}, "armed")
        return self._changed()

    def edit(self, ref: tuple[str, int], objective: Any = None, max_rounds: Any = None) -> dict:
        goal = self._expect(ref)
        if objective is None and max_rounds is None:
            raise GoalError("goal edit requires objective and/or maxGoalRounds", "GOAL_INVALID_EDIT")
        new = {**goal, "revision": goal["revision"] + 1}
        if objective is not None:
            new["objective"] = self._objective(objective)
        if max_rounds is not None:
            new["maxGoalRounds"] = self._max_rounds(max_rounds)
        return self._snapshot("edit", new, self.activation)

    def _transition(self, ref: tuple[str, int], operation: str, allowed: list[str], phase: str,
                    activation: str) -> dict:
        goal = self._expect(ref)
        if goal["phase"] not in allowed:
            raise self._transition_error(goal, operation, allowed)
        return self._snapshot(operation, self._with_phase(goal, phase), activation)

    def pause(self, ref: tuple[str, int]) -> dict:
        return self._transition(ref, "pause", ["active"], "paused", "disarmed")

    def resume(self, ref: tuple[str, int]) -> dict:
        goal = self._expect(ref)
        allowed = ["active", "paused", "blocked"]
        if goal["phase"] not in allowed:
            raise self._transition_error(goal, "resume", allowed)
        if goal["phase"] == "active" and self.activation == "armed":
            raise GoalError(f'goal "{goal["id"]}" is already active and armed', "GOAL_INVALID_TRANSITION")
        if self.state().rounds_started >= goal["maxGoalRounds"]:
            raise GoalError(f'goal "{goal["id"]}" exhausted {goal["maxGoalRounds"]} goal rounds; increase '
                            "maxGoalRounds before resuming", "GOAL_INVALID_TRANSITION")
        return self._snapshot("resume", self._with_phase(goal, "active"), "armed")

    def complete(self, ref: tuple[str, int]) -> dict:
        return self._transition(ref, "complete", ["active", "paused", "blocked"], "complete", "disarmed")

    def block(self, ref: tuple[str, int], code: str, message: str) -> dict:
        goal = self._expect(ref)
        if goal["phase"] != "active":
            raise self._transition_error(goal, "block", ["active"])
        if not re.match(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$", code) or not message.strip():
            raise GoalError("goal block reason requires a lower-kebab-case code and a non-empty message",
                            "GOAL_INVALID_BLOCK_REASON")
        new = {**self._with_phase(goal, "blocked"), "blockedReason": {"code": code, "message": message.strip()}}
        return self._snapshot("block", new, "disarmed")

    def clear(self, ref: tuple[str, int]) -> None:
        goal = self._expect(ref)
        st = self.state()
        self._commit({"kind": "goal/change", "version": 1, "operation": "clear",
                      "cleared": {"id": goal["id"], "revision": goal["revision"] + 1},
                      "clearedAt": max(self._now(), st.updated_at or 0)}, "disarmed")


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
