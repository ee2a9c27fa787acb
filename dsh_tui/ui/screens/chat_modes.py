"""The chat screen's questions, plan mode and goal: the question panel (``ask_user_question``, the plan review),
the plan-mode key and the status bar's "plan mode" / goal segments (folded from ``plan/mode`` and
``goal/change`` events, as the runtime folds them: dsh_tui/runtime/planmode, dsh_tui/runtime/goals)."""

from __future__ import annotations

from typing import Any

from dsh_tui.harness_messages import QuestionAsked, QuestionClosed, QuestionRequest
from dsh_tui.ui.widgets.question import QuestionPanel

MODE_EVENTS = ("plan/mode", "goal/change", "user/message")


def on_message(chat: Any, message: QuestionAsked | QuestionClosed) -> None:
    value = message.request
    if isinstance(message, QuestionAsked):
        chat.pending_questions.append(value)
        if chat.question.request is None:
            show_next(chat)
    else:  # the turn was cancelled while it waited
        if value in chat.pending_questions:
            chat.pending_questions.remove(value)
        if chat.question.request is value:
            chat.question.request = None
            chat.question.display = False
            show_next(chat)


def waiting(chat: Any) -> bool:
    q = chat.question
    return q.is_attached and q.display and q.request is not None


def show_next(chat: Any) -> None:
    if not chat.pending_questions:
        chat.question.display = False
        if not chat._approval_waiting():
            chat.composer.display = True
            chat.composer.focus()
        return
    request: QuestionRequest = chat.pending_questions.pop(0)
    # never takes the focus from a composer being typed in: it shows, and Tab moves to it (the approval's rule)
    typing = chat.composer.display and chat.composer.has_focus and bool(chat.composer.text.strip())
    chat.composer.display = typing
    chat.status.set_phase("question")
    chat._ensure_mounted(chat.question)
    chat.question.show_request(request, take_focus=not typing)
    chat.transcript.back_to_bottom()


def answered(chat: Any, message: QuestionPanel.Answered) -> None:
    if not message.request.future.done():
        message.request.future.set_result(message.answer)
    show_next(chat)
    if chat.status.info.phase == "question" and chat.running:
        chat.status.set_phase("tools")


# -- plan mode and the goal in the status bar ------------------------------------------------------


class ModeFold:
    """Plan mode and the goal, folded from the session's events (incrementally, as they arrive)."""

    def __init__(self) -> None:
        from dsh_tui.runtime.goals import GoalFold

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


def show_modes(chat: Any) -> None:
    from dsh_tui.runtime.goals import describe_goal

    fold: ModeFold = chat.mode_fold
    chat.status.set_mode("plan", "plan mode" if fold.plan else "")
    chat.status.set_mode("goal", describe_goal(fold.goal))


def fold_events(chat: Any, events_: list[dict], reset: bool = False) -> None:
    if reset:
        chat.mode_fold = ModeFold()
    changed = reset
    for event in events_:
        if event.get("type") in MODE_EVENTS:
            changed = chat.mode_fold.apply(event) or changed
    if changed:
        show_modes(chat)


def toggle_plan(chat: Any) -> None:
    """The plan-mode key: enter plan mode, or leave it (dsh's ``/plan`` / ``/plan off``)."""
    harness = chat.bridge.harness
    if harness is None or harness.read_only or not harness.live():
        chat.notify("Plan mode needs a live session.", timeout=4, markup=False)
        return
    active = not (chat.mode_fold is not None and chat.mode_fold.plan)

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
