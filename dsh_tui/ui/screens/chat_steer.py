"""The chat's steer queue: follow-ups queued while a turn runs (the queue above the composer: steer one now,
edit, remove), steers the running turn has not taken yet (a pinned row each, given back to the composer when
the turn ends without them), and the prompts queued when the app last quit (``dsh_tui/ui/pending.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dsh_tui.ui.screens.chat import ChatScreen
    from dsh_tui.ui.widgets.queue import QueueList


class SteerQueue:
    """Queued follow-ups and pending steers of one chat screen (see the module docstring)."""

    def __init__(self, chat: ChatScreen) -> None:
        self.chat = chat
        self.queue: list[str] = []  # follow-ups for the next turns, in order
        self.steers: list[str] = []  # steered into the running turn, not yet seen as a user message

    # -- the queue -------------------------------------------------------------------------------------
    def enqueue(self, text: str) -> None:
        self.queue.append(text)
        self.show_queue()

    def show_queue(self) -> None:
        chat = self.chat
        chat.ensure_mounted(chat.queue_list)
        chat.queue_list.show(self.queue)
        chat.status.info.queued = len(self.queue)
        chat.status.redraw()
        if not self.queue:
            chat.keys.restore_focus()

    def next_turn(self) -> None:
        """The agent went idle: the next queued follow-up goes."""
        if self.queue:
            self.chat.sending.send(self.queue.pop(0), "followup")
            self.show_queue()

    def into_composer(self, texts: list[str]) -> None:
        """``texts`` back in the composer, before what is typed there, a blank line between each."""
        composer = self.chat.composer
        composer.value = "\n\n".join(t for t in (*texts, composer.text.strip()) if t)

    def back_to_composer(self) -> None:
        """Every queued message back in the composer, before what is typed there (nothing is sent)."""
        if not self.queue:
            return
        queued, self.queue = self.queue, []
        self.into_composer(queued)
        self.show_queue()

    def on_action(self, message: QueueList.Action) -> None:
        chat = self.chat
        if message.action == "leave":
            chat.set_focus(chat.composer)
            return
        if not 0 <= message.index < len(self.queue):
            return
        text = self.queue.pop(message.index)
        if message.action == "edit":
            composer = chat.composer
            draft = composer.text.strip()  # a draft typed meanwhile stays, after the queued text
            composer.value = "\n\n".join([text, *([draft] if draft else [])])
            composer.move_cursor(composer.document.end)
            composer.focus()
        elif message.action == "steer":
            chat.sending.send(text, "steer" if chat.running else "followup")
            chat.set_focus(chat.composer)  # sent: what comes next is typed
        self.show_queue()

    def focus_queue(self) -> bool:
        """Focus the queue with its first (next to go) message highlighted; False when it is empty."""
        if not self.queue:
            return False
        self.chat.queue_list.highlighted = 0
        self.chat.queue_list.focus()
        return True

    # -- steers ----------------------------------------------------------------------------------------
    def steered(self, text: str) -> None:
        self.steers.append(text)
        self.show_steers()

    def seen(self, data: dict[str, Any]) -> None:
        """A ``user/message``: a steer the turn took is no longer pending."""
        if self.steers and (data.get("source") or {}).get("kind") == "user":
            text = "".join(p.get("text", "") for p in data.get("content") or [] if isinstance(p, dict))
            if text in self.steers:
                self.steers.remove(text)
                self.show_steers()

    def return_undelivered(self) -> None:
        """A cancelled turn discards the input steered into it that no step took yet (dsh's inbox is
        cleared): give that text back in the composer instead of losing it."""
        if not self.steers:
            return
        chat = self.chat
        lost, self.steers = self.steers, []
        self.show_steers()
        self.into_composer(lost)
        chat.say("The turn ended before your steer reached the model: it is back in the composer.")

    def show_steers(self) -> None:
        """A pinned row per steer the running turn has not taken yet (shown at once: the user message
        comes only when the next step starts), and their count in the status bar."""
        chat, steers = self.chat, self.steers
        if steers or chat.steer_row.is_attached:
            chat.ensure_mounted(chat.steer_row)
            shown = [f"⤷ steering: {' '.join(t.split())}" for t in steers[-2:]]
            if len(steers) > 2:
                shown.insert(0, f"⤷ +{len(steers) - 2} more steering")
            chat.steer_row.update("\n".join(shown))
            chat.steer_row.display = bool(steers)
        chat.status.info.steering = len(steers)
        chat.status.redraw()

    # -- prompts queued at the last quit ---------------------------------------------------------------
    def restore_pending(self, session_id: str) -> None:
        """Prompts queued when the app last quit on this session come back in the composer (not sent on
        their own: the user decides), with a notice (``dsh_tui/ui/pending.py``)."""
        if not session_id:
            return
        from dsh_tui.ui.pending import take

        queued, draft = take(session_id)
        if not queued and not draft:
            return
        chat = self.chat
        self.into_composer([*queued, draft.strip()])
        n = len(queued)
        chat.say(f"{n} prompt{'s' if n != 1 else ''} queued when you quit {'are' if n != 1 else 'is'} back in the "
                 "composer: Enter sends.")
