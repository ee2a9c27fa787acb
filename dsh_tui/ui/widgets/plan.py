"""The plan strip above the composer: the agent's todo list in one line."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from dsh_tui.session.transcript import PlanState


class PlanStrip(Static):
    """Todo counts above the composer (hidden until the first ``todo/write``)."""

    DEFAULT_CSS = "PlanStrip { height: auto; display: none; color: $text-muted; padding: 0 1; }"

    def show_plan(self, plan: PlanState) -> None:
        self.display = bool(plan.todos)
        current = next((t.get("content", "") for t in plan.todos if t.get("status") == "in_progress"), "")
        text = Text(f"Plan: {plan.describe()}")
        if current:
            text.append(f"  ▶ {current}", style="bold")
        self.update(text)
