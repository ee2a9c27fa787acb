"""``/undo`` in the chat: the files listed, a question, then the undo on the harness thread.

The question is a modal whose choices take the focus only ``GRACE_S`` after it opens, with "Cancel"
highlighted: keys typed for the composer (an Enter, a "y") before it was drawn never answer it. A file
changed since the turn is marked; undoing anyway overwrites it only when that choice is taken explicitly.
"""

from __future__ import annotations

import asyncio
from typing import Any

from rich.text import Text
from textual.widgets import OptionList

from dsh_tui.ui.screens.modals import ChoiceModal

GRACE_S = 0.6  # the choices take the focus this long after the question opens (tests set 0)


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

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = len(self.choices) - 1  # Cancel
        if GRACE_S <= 0:
            options.focus()
        else:
            self.set_timer(GRACE_S, options.focus)


def confirm_undo(chat: Any, text: str, action: dict[str, Any]) -> None:
    """Ask, then undo (``Harness.undo_files``) and say what was put back."""
    turn = action.get("turn")

    def chosen(choice: Any) -> None:
        if choice is None:
            chat._show_output("Undo cancelled: no file was changed.", error=False)
            return
        force = choice == "force"
        future = chat.bridge.call(lambda h: h.undo_files(turn, force))
        if future is None:
            chat._show_output("No session is open.", error=True)
            return

        async def wait() -> None:
            try:
                said = await asyncio.wrap_future(future)
            except Exception as err:  # noqa: BLE001 - the bridge reported it as a notice too
                said = None
                chat._show_output(f"Undo failed: {err}", error=True)
                return
            chat._show_output(said or "Undo failed (see the notice).", error=not said)

        chat.run_worker(wait(), group="undo", exclusive=True, description="undo")

    chat.app.push_screen(UndoModal(text, list(action.get("conflicts") or [])), chosen)
