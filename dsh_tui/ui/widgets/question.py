"""The question panel: dsh's ``ask_user_question`` (and the plan review of ``exit_plan_mode``) waiting for the
user's answer.

It takes the composer's place like the approval panel, with the same guard: keys never decide anything
within ``GRACE_S`` of the panel taking the focus on its own (a key then was typed for the composer, often
before the panel was drawn: the focus goes back to the composer, with the key, ``QuestionPanel.Yielded``), and
when the composer was being typed in the panel waits for Tab. Then: **1**-**9** pick an option (toggle one
of a multi-select question), the line below takes a free-text answer ("Other"; for a plan review, the
feedback that keeps planning), **Enter** sends, **Esc** dismisses the question to speak instead (dsh's
``ASK_CANCELLED``). Several questions are asked one after the other. ``Answered.answer`` is
``{"answers": [{"id", "selected", "custom"?}]}`` or ``None`` (dismissed).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import events
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Input, Static

if TYPE_CHECKING:  # the request type is imported with the harness (after the first frame)
    from dsh_tui.harness_messages import QuestionRequest

GRACE_S = 0.6  # as the approval panel's (tests set 0)
HINT = "1-9 choose · type below for another answer · Enter sends · Esc dismisses (to reply in the composer)"
HINT_PLAN = "1 approves · 2, or feedback typed below, keeps planning · Enter sends · Esc dismisses"
HINT_UNFOCUSED = "A question waits: Tab answers it · what you type stays in the composer"


class QuestionPanel(Vertical, can_focus=True):
    """Takes over the composer while a question waits."""

    DEFAULT_CSS = """
    QuestionPanel { height: auto; max-height: 80%; display: none; border: heavy $accent; padding: 0 1; }
    QuestionPanel:focus-within { border: heavy $accent-lighten-1; }
    QuestionPanel #question-detail { height: auto; max-height: 12; border-left: thick $panel; padding-left: 1; }
    QuestionPanel #question-other { margin-top: 1; background: $boost; }
    """

    BINDINGS = [("escape", "dismiss", "Dismiss the question")]

    @dataclass
    class Answered(Message):
        request: QuestionRequest
        answer: dict | None

    @dataclass
    class Yielded(Message):
        key: str
        character: str | None

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.request: QuestionRequest | None = None
        self._built = False
        self._index = 0
        self._answers: list[dict] = []
        self._chosen: list[int] = []
        self._grace_until = 0.0
        self._yielding = False

    def _build(self) -> None:
        if self._built:
            return
        self._built = True
        self._title = Static(id="question-title")
        self._question = Static(id="question-text")
        self._detail = Static(id="question-detail-text")
        self._detail_box = VerticalScroll(self._detail, id="question-detail")
        self._options = Static(id="question-options")
        self._other = Input(placeholder="Other answer (Enter sends)", id="question-other", select_on_focus=False,
                             compact=True)
        self._help = Static(id="question-help")
        self.mount(self._title, self._question, self._detail_box, self._options, self._other, self._help)

    # -- showing ----------------------------------------------------------------------------------
    @property
    def current(self) -> dict:
        assert self.request is not None
        return self.request.questions[self._index]

    @property
    def plan_review(self) -> bool:
        return ((self.current.get("intent") or {}).get("kind")) == "plan-review"

    def show_request(self, request: QuestionRequest, take_focus: bool = True) -> None:
        self._build()
        self.request = request
        self._index = 0
        self._answers = []
        self.display = True
        self._show_question(take_focus)

    def _show_question(self, take_focus: bool) -> None:
        q = self.current
        n = len(self.request.questions) if self.request else 1
        title = q.get("header") or ("Plan review" if self.plan_review else "Question")
        if n > 1:
            title = f"{title} ({self._index + 1}/{n})"
        self._title.update(Text(title, style="bold"))
        self._question.update(Text(str(q.get("question") or ""), style="bold"))
        detail = q.get("detail")
        self._detail_box.display = bool(detail)
        if detail:
            from rich.markdown import Markdown

            self._detail.update(Markdown(str(detail)))
        self._chosen = []
        self._other.value = ""
        self._other.placeholder = ("Feedback: what should change? (Enter keeps planning)" if self.plan_review
                                   else "Other answer (Enter sends)")
        self._render_options()
        if take_focus:
            self._grace_until = time.monotonic() + GRACE_S
            self.focus()
            self._help.update(Text(HINT_PLAN if self.plan_review else HINT, style="dim"))
        else:
            self._help.update(Text(HINT_UNFOCUSED, style="bold"))

    def _render_options(self) -> None:
        options = self.current.get("options") or []
        multi = bool(self.current.get("multiSelect"))
        text = Text()
        for i, option in enumerate(options[:9]):
            mark = ("[x]" if i in self._chosen else "[ ]") if multi else ("(•)" if i in self._chosen else "( )")
            if i:
                text.append("\n")
            text.append(f"{mark} {i + 1}. ", style="bold" if i in self._chosen else "")
            text.append(str(option.get("label", "")), style="bold" if i in self._chosen else "")
            if option.get("description"):
                text.append(f" — {option['description']}", style="dim")
        self._options.update(text)
        self._options.display = bool(options)

    def focus_panel(self) -> None:
        """A deliberate move to the panel (Tab from the composer): its keys act at once."""
        if self.request is None:
            return
        self._grace_until = 0.0
        self._yielding = False
        self.focus()
        self._help.update(Text(HINT_PLAN if self.plan_review else HINT, style="dim"))

    @property
    def in_grace(self) -> bool:
        return time.monotonic() < self._grace_until

    # -- keys -------------------------------------------------------------------------------------
    async def _on_key(self, event: events.Key) -> None:
        if self.request is None:
            return
        if self.in_grace or self._yielding:
            event.stop()
            event.prevent_default()
            self._grace_until = 0.0
            self._yielding = True
            self._help.update(Text(HINT_UNFOCUSED, style="bold"))
            self.post_message(self.Yielded(event.key, event.character if event.is_printable else None))
            return
        if self._other.has_focus:
            return  # typed into the "Other" line (its Enter sends)
        if event.character and event.character.isdigit() and event.character != "0":
            event.stop()
            event.prevent_default()
            self.choose(int(event.character) - 1)
        elif event.key == "enter":
            event.stop()
            event.prevent_default()
            self.send()
        elif event.is_printable and event.character:
            # anything else typed is the free-text answer
            event.stop()
            event.prevent_default()
            self._other.focus()
            self._other.insert_text_at_cursor(event.character)

    def paste(self, text: str) -> None:
        """Pasted text (the chat hands it over while the panel has the focus) is the typed answer."""
        self._other.focus()
        self._other.insert_text_at_cursor(" ".join(text.split()))

    def on_descendant_focus(self, _event: events.DescendantFocus) -> None:
        self._yielding = False

    def on_click(self, _event: events.Click) -> None:
        self._grace_until = 0.0

    def choose(self, i: int) -> None:
        options = self.current.get("options") or []
        if not 0 <= i < len(options):
            return
        if self.current.get("multiSelect"):
            if i in self._chosen:
                self._chosen.remove(i)
            else:
                self._chosen.append(i)
        else:
            self._chosen = [i]
        self._render_options()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.send()

    def send(self) -> None:
        """Record this question's answer (the chosen options and the typed text) and go on."""
        if self.request is None:
            return
        options = self.current.get("options") or []
        custom = " ".join(self._other.value.split())
        selected = [str(options[i].get("label", "")) for i in sorted(self._chosen)]
        if not self.current.get("multiSelect") and custom:
            selected = []  # a typed answer is the "Other" choice
        if not selected and not custom:
            self._help.update(Text("Choose an option (1-9) or type an answer first.", style="bold"))
            return
        answer: dict[str, Any] = {"id": self.current.get("id"), "selected": selected}
        if custom:
            answer["custom"] = custom
        self._answers.append(answer)
        if self._index + 1 < len(self.request.questions):
            self._index += 1
            self._show_question(take_focus=False)
            self.focus_panel()
            return
        self._finish({"answers": list(self._answers)})

    def action_dismiss(self) -> None:
        self._finish(None)

    def _finish(self, answer: dict | None) -> None:
        request, self.request = self.request, None
        if request is None:
            return
        self.display = False
        self.post_message(self.Answered(request, answer))
