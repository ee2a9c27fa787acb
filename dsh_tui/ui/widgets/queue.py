"""The queue of prompts typed while a turn runs (send later, steer now, or remove)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message
from textual.widgets import OptionList


class QueueList(OptionList):
    """Follow-ups waiting for the next turn: Enter edits, Delete removes, S steers, Esc goes back."""

    DEFAULT_CSS = "QueueList { height: auto; max-height: 5; display: none; border: none; padding: 0 1; }"

    BINDINGS = [
        ("delete", "remove", "Remove"),
        ("s", "steer", "Steer now"),
        ("e", "edit", "Edit"),
        ("escape", "leave", "Back to the composer"),
    ]

    @dataclass
    class Action(Message):
        action: str
        index: int

    def _fire(self, action: str) -> None:
        if self.highlighted is not None:
            self.post_message(self.Action(action, self.highlighted))

    def action_remove(self) -> None:
        self._fire("remove")

    def action_steer(self) -> None:
        self._fire("steer")

    def action_edit(self) -> None:
        self._fire("edit")

    def action_leave(self) -> None:
        self.post_message(self.Action("leave", -1))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.post_message(self.Action("edit", event.option_index))

    def show(self, queued: list[str]) -> None:
        """List ``queued`` with an item always highlighted (the same index, or the last one)."""
        before = self.highlighted
        self.clear_options()
        self.add_options([_queue_label(q) for q in queued])
        self.display = bool(queued)
        if queued:
            self.highlighted = min(before or 0, len(queued) - 1)


def _queue_label(text: str) -> str:
    lines = text.splitlines() or [""]
    more = f"  (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
    return f"⏳ {lines[0][:100]}{more}"
