"""The goal service (dsh's ``ctx.goals``): create, edit, pause, resume, complete, block and clear one goal with
dsh's revision checks and transitions, each a ``goal/change`` event in the log (``GoalError`` with dsh's codes
when a check fails)."""

from __future__ import annotations

import re
import uuid
from typing import Any

from dsh_tui.extensions.goals import GoalFold
from dsh_tui.session.errors import DshError


def new_goal_id() -> str:
    return f"goal-{uuid.uuid4()}"


class GoalError(DshError):
    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


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
