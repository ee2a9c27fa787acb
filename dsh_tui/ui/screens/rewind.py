"""Turn control in the chat (``TurnControl``, the chat screen's ``turns``): Esc and Ctrl+C (cancel the running
turn), rewind (Esc Esc), retry a failed turn (F5, ``/retry``), the permission mode (F4).

Rewind lists this session's earlier prompts; choosing one forks the session just before that turn (dsh's
fork rules: ``dsh_tui/runtime/turns.py``), opens the child in the chat and puts the prompt in the composer
to edit and resend. When turns from there on changed files, it asks first: "conversation only" or
"conversation and files" (those files put back, as ``/undo N`` does; the original's log records the undo).
The original session's conversation is not written; the browser shows the child under it.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.widgets import OptionList

from dsh_tui.runtime.approval import PRESETS
from dsh_tui.runtime.permissions import next_preset
from dsh_tui.runtime.turns import Prompt, failed_prompt, prompts
from dsh_tui.ui.bridge import SessionBackend
from dsh_tui.ui.screens.modals import ChoiceModal

if TYPE_CHECKING:
    from dsh_tui.ui.screens.chat import ChatScreen

DOUBLE_ESC_S = 0.8  # the second Esc of a rewind comes within this long of the first
ENDED = {"error": "failed", "aborted": "cancelled"}


class RewindModal(ChoiceModal):
    """The prompts to rewind to, oldest first, the latest highlighted."""

    def __init__(self, points: list[Prompt], width: int = 80) -> None:
        room = max(20, min(width, 100) - 16)
        choices = []
        for p in points:
            text = " ".join(p.text.split()) or "(no text)"
            if len(text) > room:
                text = text[: room - 1] + "…"
            label = Text(f"{p.turn:>3}  {text}")  # Text: a prompt's "[...]" is not markup
            if p.ended in ENDED:
                label.append(f"  ({ENDED[p.ended]})", style="dim")
            choices.append((label, p))
        super().__init__("Rewind: fork this session just before which prompt? (Enter: edit it and resend · Esc)",
                         choices)

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.focus()
        if self.choices:
            options.highlighted = len(self.choices) - 1


class TurnControl:
    """Cancel, rewind, retry and the permission mode of one chat screen (see the module docstring)."""

    def __init__(self, chat: ChatScreen) -> None:
        self.chat = chat
        self.last_idle_escape = 0.0

    def live_harness(self) -> SessionBackend | None:
        """The chat's live harness, or None (no session yet, or a read-only view)."""
        harness = self.chat.bridge.harness
        if harness is None or harness.read_only or not harness.live():
            return None
        return harness

    # -- Esc and Ctrl+C -----------------------------------------------------------------------------
    def cancel(self) -> None:
        """Esc: hide a command's output, reject a focused approval, cancel the running turn, or (idle) the
        first Esc of a rewind."""
        chat = self.chat
        output = chat.built("command_output")
        if output is not None and output.is_attached and output.display and not chat.running:
            output.display = False
            return
        if chat.built("approval") is not None and chat.approval.request is not None and not chat.composer.has_focus:
            chat.approval.action_reject()
            return
        if chat.running:
            self._cancel_turn()
        else:
            self.escape_when_idle()  # Esc Esc: rewind

    def _cancel_turn(self) -> None:
        pump = self.chat.pump
        if pump.missed_turn_end():  # the turn is over in the log: the key resets what the screen shows
            pump.recover_turn()
        else:
            self.chat.bridge.cancel()

    def interrupt(self) -> None:
        """Ctrl+C: cancel the running turn (as Esc); while idle clear the composer (Ctrl+Z brings the text
        back); an empty idle composer says how to quit. Text selected in the composer is copied instead."""
        chat = self.chat
        composer = chat.composer
        if composer.has_focus and composer.selected_text:
            composer.action_copy()
            return
        card = chat.terminal_card
        if card is not None and card.has_focus and card.user_attached:  # the terminal's own Ctrl+C
            card.write(b"\x03")
            return
        if chat.running:
            self._cancel_turn()
            return
        if composer.display and composer.text:
            composer.clear()  # an edit: Ctrl+Z undoes it
            composer.focus()
            chat.notify("Composer cleared · Ctrl+Z brings it back", timeout=4, markup=False)
            return
        chat.notify("Ctrl+Q quits (and prints how to resume)", timeout=4, markup=False)

    def escape_when_idle(self) -> None:
        """An Esc with nothing else to do: the second one in a row opens the rewind picker. In a read-only
        view (nothing to rewind) Esc goes back to the session browser it was opened from (or opens it)."""
        chat = self.chat
        if chat.read_only:
            app = chat.app
            stack = list(app.screen_stack)
            if len(stack) >= 2 and stack[-1] is chat and type(stack[-2]).__name__ == "BrowserScreen":
                app.pop_screen()
            elif hasattr(app, "action_browser"):
                app.action_browser()
            return
        now = time.monotonic()
        last, self.last_idle_escape = self.last_idle_escape, now
        if now - last <= DOUBLE_ESC_S:
            self.last_idle_escape = 0.0
            self.open_rewind()

    # -- rewind ----------------------------------------------------------------------------------------
    def open_rewind(self) -> None:
        chat = self.chat
        harness = self.live_harness()
        if harness is None:
            chat.say("Rewind needs a live session (resume this one first).")
            return
        if chat.running:
            chat.say("A turn is running: Esc cancels it, then Esc Esc rewinds.")
            return
        events = harness.events()  # a copy (the harness's thread-safe read)
        app = chat.app

        def scan() -> None:  # a worker thread: a 200k-event log is not read on the UI loop
            points = prompts(events)
            app.call_from_thread(show, points)

        def show(points: list[Prompt]) -> None:
            if not points:
                chat.say("Nothing to rewind to yet: no prompt has been sent in this session.")
                return
            app.push_screen(RewindModal(points, chat.size.width), chosen)

        def chosen(point: Prompt | None) -> None:
            if point is not None:
                self.ask_files(events, point)

        chat.run_worker(scan, thread=True, group="rewind-scan", exclusive=True, description="rewind points")

    def ask_files(self, events: list[dict], point: Prompt) -> None:
        """When turns from ``point`` on changed files, ask whether they go back too, then rewind."""
        from dsh_tui.extensions.undo.ops import files_plan

        chat = self.chat
        app = chat.app

        def scan() -> None:
            plan = files_plan(events, point.turn)
            app.call_from_thread(ask, plan)

        def ask(plan: Any) -> None:
            if plan is None:
                self.rewind_to(point)
                return
            app.push_screen(ChoiceModal(f"Rewind to before turn {point.turn}: what goes back? (Esc: nothing)",
                                        files_choices(plan, "Rewind")),
                            lambda choice: None if choice is None else self.rewind_to(
                                point, files=choice in ("files", "force"), force=choice == "force"))

        chat.run_worker(scan, thread=True, group="rewind-scan", exclusive=True, description="rewind files")

    def rewind_to(self, point: Prompt, *, files: bool = False, force: bool = False) -> None:
        """Fork before ``point``'s turn on the harness thread (``files``: the files the turns from there on
        changed put back first), then open the child with the prompt to edit."""
        chat = self.chat
        harness = chat.bridge.harness
        draft = chat.composer.text.strip()  # typed but not sent: it goes with the prompt, never lost
        future = chat.bridge.call(lambda h: h.rewind(point.turn, files=files, force=force))
        if future is None:
            chat.say("No session is open.")
            return
        app: Any = chat.app  # the DshApp (open_from_command, chat)

        async def wait() -> None:  # on the UI loop: the harness thread never waits for the UI
            try:
                child = await asyncio.wrap_future(future)
            except Exception as err:  # noqa: BLE001 - the bridge reported it as a notice too
                child, problem = None, str(err)
            else:
                problem = "" if child else "the fork failed (see the notice)"
            opened(child, problem)

        def opened(child: str | None, problem: str) -> None:
            if not child:
                chat.say(f"Rewind failed: {problem}")
                return
            problem = app.open_from_command(harness, {"kind": "fork", "child": child})
            if problem:
                chat.say(f"Rewind failed: {problem}")
                return
            new = app.chat
            if new is not chat:
                new.initial_text = "\n\n".join([point.text, *([draft] if draft else [])])
                app.notify(f"Rewound to before turn {point.turn}: this is a new session (the original is kept). "
                           "Edit the prompt and press Enter.", timeout=6)

        chat.run_worker(wait(), group="rewind", exclusive=True, description="rewind")

    # -- retry and the permission mode ---------------------------------------------------------------
    def retry_failed(self) -> None:
        """F5: when the last turn failed, send its prompt again as a new turn."""
        chat = self.chat
        harness = self.live_harness()
        prompt = failed_prompt(harness.events()) if harness is not None and not chat.running else None
        if prompt is None:
            chat.say("Nothing to retry: the last turn did not fail." if harness is not None and not chat.running
                     else "Retry needs a live, idle session.")
            return
        chat.sending.send(prompt, "followup")

    def cycle_permission(self) -> None:
        """F4: read-only → workspace-write → full-access → read-only, logged and obeyed from the next call."""
        chat = self.chat
        harness = self.live_harness()
        if harness is None:
            chat.say("The permission mode belongs to a live session.")
            return
        preset = next_preset(chat.status.preset or harness.preset())
        chat.status.preset = preset  # shown at once; the harness confirms with a message
        chat.status.redraw()
        chat.bridge.call(lambda h: h.set_preset(preset))
        chat.app.notify(f"Permission mode: {preset} ({describe(preset)})", timeout=3)


def files_choices(plan: Any, what: str) -> list[tuple[Any, Any]]:
    """"Conversation only" / "conversation and files" (rewind, the browser's fork), when turns from there
    on changed files; a file changed since is named, and overwritten only by its own choice."""
    n = len(plan.files)
    files = f"{n} file{'s' if n != 1 else ''}"
    choices: list[tuple[Any, Any]] = [(f"{what}: conversation only (the files stay as they are)", "conversation")]
    if plan.conflicts:
        c = len(plan.conflicts)
        choices.append((f"{what}: conversation and files ({files} put back, overwriting the {c} changed since: "
                        f"{', '.join(plan.conflicts[:3])}{' …' if c > 3 else ''})", "force"))
    else:
        choices.append((f"{what}: conversation and files ({files} put back: "
                        f"{', '.join(f.path for f in plan.files[:3])}{' …' if n > 3 else ''})", "files"))
    return choices


def describe(preset: str) -> str:
    return {"read-only": "edits and commands ask first",
            "workspace-write": "edits in the workspace run, commands ask first",
            "full-access": "nothing asks"}.get(preset, ", ".join(PRESETS))
