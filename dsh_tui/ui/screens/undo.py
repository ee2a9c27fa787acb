"""``/undo`` in the chat: the files listed, a question, then the undo on the harness thread.

The question is a modal whose choices refuse every key for ``GRACE_S`` after it opens, with "Cancel"
highlighted: keys typed for the composer (an Enter, a "y") before it was drawn never answer it. A file
changed since the turn is marked; undoing anyway overwrites it only when that choice is taken explicitly.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from dsh_tui.ui.screens.modals import ChoiceModal

GRACE_S = 0.6  # the choices refuse keys this long after the question opens (tests set 0)


class GuardedOptions(OptionList):
    """An option list whose keys do nothing until ``armed_at`` (a click still does)."""

    armed_at = 0.0

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if time.monotonic() < self.armed_at:
            return False
        return super().check_action(action, parameters)


class UndoModal(ChoiceModal):
    def __init__(self, text: str, conflicts: list[str]) -> None:
        choices: list[tuple[Any, Any]] = []
        if conflicts:
            n = len(conflicts)
            choices.append((f"Undo, overwriting the {n} file{'s' if n != 1 else ''} changed since", "force"))
        else:
            choices.append(("Undo", "undo"))
        choices.append(("Cancel", None))
        title = Text(text + "\n\n")
        if conflicts:
            title.append("Changed since the turn (by you or a later command): " + ", ".join(conflicts[:8])
                         + (" …" if len(conflicts) > 8 else ""), style="bold")
        else:
            title.append("Put these files back?", style="bold")
        super().__init__(title, choices)  # type: ignore[arg-type]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.title_text, id="title")
            yield GuardedOptions(*[Option(label, id=str(i)) for i, (label, _) in enumerate(self.choices)],
                                 id="choices")

    def on_mount(self) -> None:
        options = self.query_one(GuardedOptions)
        options.armed_at = time.monotonic() + GRACE_S
        options.focus()
        options.highlighted = len(self.choices) - 1  # Cancel


def confirm_undo(chat: Any, text: str, action: dict[str, Any]) -> None:
    """Ask, then undo (``SessionBackend.undo_files``) and say what was put back."""
    turn = action.get("turn")

    def chosen(choice: Any) -> None:
        if choice is None:
            chat.commands.show_output("Undo cancelled: no file was changed.", error=False)
            return
        force = choice == "force"
        future = chat.bridge.call(lambda h: h.undo_files(turn, force))
        if future is None:
            chat.commands.show_output("No session is open.", error=True)
            return

        async def wait() -> None:
            try:
                said = await asyncio.wrap_future(future)
            except Exception as err:  # noqa: BLE001 - the bridge reported it as a notice too
                said = None
                chat.commands.show_output(f"Undo failed: {err}", error=True)
                return
            chat.commands.show_output(said or "Undo failed (see the notice).", error=not said)

        chat.run_worker(wait(), group="undo", exclusive=True, description="undo")

    chat.app.push_screen(UndoModal(text, list(action.get("conflicts") or [])), chosen)
