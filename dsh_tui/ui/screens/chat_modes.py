"""The chat screen's questions, plan mode and goal: the question panel (``ask_user_question``, the plan review:
``QuestionFlow``), the plan-mode key and the status bar's "plan mode" / goal segments (``ModeStatus``, folded
from ``plan/mode`` and ``goal/change`` events, as the runtime folds them: dsh_tui/extensions/planmode,
dsh_tui/extensions/goals)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dsh_tui.harness_messages import QuestionAsked, QuestionClosed, QuestionRequest
    from dsh_tui.ui.screens.chat import ChatScreen
    from dsh_tui.ui.widgets.question import QuestionPanel

MODE_EVENTS = ("plan/mode", "goal/change", "user/message")


class QuestionFlow:
    """Questions from the model wait in order; the question panel shows one at a time in the composer's place."""

    def __init__(self, chat: ChatScreen) -> None:
        self.chat = chat
        self.pending: list[QuestionRequest] = []  # ask_user_question / plan reviews waiting

    def on_message(self, message: QuestionAsked | QuestionClosed) -> None:
        from dsh_tui.harness_messages import QuestionAsked

        chat, request = self.chat, message.request
        if isinstance(message, QuestionAsked):
            self.pending.append(request)
            if chat.question.request is None:
                self.show_next()
        else:  # the turn was cancelled while it waited
            if request in self.pending:
                self.pending.remove(request)
            if chat.question.request is request:
                chat.question.request = None
                chat.question.display = False
                self.show_next()

    def waiting(self) -> bool:
        q = self.chat.question
        return q.is_attached and q.display and q.request is not None

    def show_next(self) -> None:
        chat = self.chat
        if not self.pending:
            chat.question.display = False
            if not chat.approvals.waiting():
                chat.composer.display = True
                chat.composer.focus()
            return
        chat.offer_panel(chat.question, self.pending.pop(0), "question")

    def answered(self, message: QuestionPanel.Answered) -> None:
        chat = self.chat
        if not message.request.future.done():
            message.request.future.set_result(message.answer)
        self.show_next()
        if chat.status.info.phase == "question" and chat.running:
            chat.status.set_phase("tools")


# -- plan mode and the goal in the status bar ------------------------------------------------------


class ModeFold:
    """Plan mode and the goal, folded from the session's events (incrementally, as they arrive)."""

    def __init__(self) -> None:
        from dsh_tui.extensions.goals import GoalFold

        self.plan = False
        self.goal = GoalFold()

    def apply(self, event: dict) -> bool:
        t = event.get("type")
        if t == "plan/mode":
            self.plan = bool((event.get("data") or {}).get("active"))
            return True
        if t in ("goal/change", "user/message"):
            return self.goal.apply(event)
        return False


class ModeStatus:
    """The status bar's plan-mode and goal segments, and the plan-mode key."""

    def __init__(self, chat: ChatScreen) -> None:
        self.chat = chat
        self.mode_fold: ModeFold | None = None  # built when a session attaches

    def show(self) -> None:
        from dsh_tui.extensions.goals import describe_goal

        fold, status = self.mode_fold, self.chat.status
        if fold is None:
            return
        status.set_mode("plan", "plan mode" if fold.plan else "")
        status.set_mode("goal", describe_goal(fold.goal))

    def fold(self, events_: list[dict], reset: bool = False) -> None:
        if reset:
            self.mode_fold = ModeFold()
        fold = self.mode_fold
        if fold is None:
            return
        changed = reset
        from dsh_tui.session.rows import events_of

        for event in events_of(events_, MODE_EVENTS):  # a loaded v4 log decodes only these
            if event.get("type") in MODE_EVENTS:
                changed = fold.apply(event) or changed
        if changed:
            self.show()

    def toggle_plan(self) -> None:
        """The plan-mode key: enter plan mode, or leave it (dsh's ``/plan`` / ``/plan off``)."""
        chat = self.chat
        harness = chat.bridge.harness
        if harness is None or harness.read_only or not harness.live():
            chat.notify("Plan mode needs a live session.", timeout=4, markup=False)
            return
        active = not (self.mode_fold is not None and self.mode_fold.plan)

        def done(future: Any) -> None:
            try:
                outcome = future.result()
            except Exception as err:  # noqa: BLE001 - shown, not raised
                chat.app.call_from_thread(chat.notify, str(err), severity="error", timeout=6, markup=False)
                return
            texts = {"committed": "Plan mode on." if active else "Plan mode off.",
                     "queued": ("Entering plan mode (applies from the next step)." if active
                                else "Leaving plan mode (applies from the next step)."),
                     "cancelled": "Plan mode change cancelled.", "noop": "No change."}
            chat.app.call_from_thread(chat.notify, texts.get(outcome, str(outcome)), timeout=4, markup=False)

        future = chat.bridge.call(lambda h: h.set_plan_mode(active))
        if future is not None:
            future.add_done_callback(done)
