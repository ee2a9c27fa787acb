"""The approval panel: a tool call waiting for the user's decision.

Four answers: allow once (**a**), allow this command — for bash the exact command, for another tool
the tool with these arguments — for the rest of the session (**s**), reject (**r**), and reject with
a reason the model receives (**e**: a line to type, Enter sends it, Esc goes back). The keys act only while
the panel has the focus, and never within ``GRACE_S`` of it taking the focus on its own: a key then (typed
for the composer, often before the panel was drawn) gives the focus back to the composer, with the key
(``ApprovalPanel.Yielded``). Enter alone never decides (the buttons do not take it); a click does. ``Decided.outcome`` is
an ``ApprovalOutcome`` (``dsh_tui.harness_messages``): allowed once, allowed for the session, rejected, or
rejected with a reason; the harness hands its ``wire()`` form to the runtime (``dsh_tui/ui/harness.py``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Input, Static

from dsh_tui.harness_messages import ALLOW_ONCE, ALLOW_SESSION, REJECT, ApprovalOutcome, ApprovalRequest
from dsh_tui.ui.widgets.toolcard import describe_call

GRACE_S = 0.6  # after the panel takes the focus on its own, keys give it back to the composer (tests set 0)
HINT_UNFOCUSED = "Tab answers it (keys there: a s r e) · what you type stays in the composer"
HINT_TRUST_UNFOCUSED = "Tab answers it (keys there: a r) · what you type stays in the composer"
HINT_UNFOCUSED_SHORT = "Tab answers it (a s r e)"
COMPACT_BELOW = (70, 22)  # a terminal narrower or lower than this (columns, rows) gets the compact panel
NARROW_BELOW = 56  # ... and narrower than this: the buttons two per row
TRUST_LABELS = {"allow": ("Trust \\[a]", "Trust \\[a]"), "reject": ("Don't trust \\[r]", "No \\[r]")}
LABELS = {"allow": ("Allow once \\[a]", "Allow \\[a]"), "allow-session": ("This session \\[s]", "Session \\[s]"),
          "reject": ("Reject \\[r]", "Reject \\[r]"), "reject-why": ("Why not… \\[e]", "Why \\[e]")}


class DecideButton(Button, inherit_bindings=False):
    """A button that Enter does not press: a decision is a deliberate key (or a click)."""

    BINDINGS = []


class ApprovalPanel(Vertical):
    """Takes over the composer while a tool call waits: tool, arguments/command, reason, buttons."""

    DEFAULT_CSS = """
    ApprovalPanel { height: auto; max-height: 18; display: none; border: heavy $warning; padding: 0 1; }
    ApprovalPanel #approval-args { max-height: 8; overflow-y: auto; }
    ApprovalPanel Horizontal { height: auto; }
    ApprovalPanel Button { margin-right: 1; width: auto; }
    ApprovalPanel #approval-why { display: none; margin-top: 1; }
    /* small terminals (COMPACT_BELOW): one-row buttons with short labels, two per row when narrow, no
       reason or key help; the title on the border: the command and every choice stay on screen */
    ApprovalPanel.-compact { padding: 0; }
    ApprovalPanel.-compact #approval-title, ApprovalPanel.-compact #approval-reason { display: none; }
    ApprovalPanel.-compact #approval-help { display: none; }
    ApprovalPanel.-compact.-unfocused #approval-help { display: block; }
    ApprovalPanel.-compact.-unfocused Horizontal { display: none; }  /* Tab shows them (room for the composer) */
    ApprovalPanel.-compact #approval-args { max-height: 3; }
    ApprovalPanel.-compact Button { min-width: 0; }
    ApprovalPanel.-compact.-narrow Horizontal { layout: grid; grid-size: 2; grid-gutter: 0 1; }
    """

    BINDINGS = [("a", "allow", "Allow once"), ("s", "allow_session", "Allow for this session"),
                ("r", "reject", "Reject"), ("e", "reject_with_reason", "Reject with a reason")]

    @dataclass
    class Decided(Message):
        request: ApprovalRequest
        outcome: ApprovalOutcome

    @dataclass
    class Yielded(Message):
        """A key arrived within the grace period: the chat gives the focus back to the composer, with it."""

        key: str
        character: str | None

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.request: ApprovalRequest | None = None
        self._built = False
        self._grace_until = 0.0
        self._wants_focus = False
        self._yielding = False  # keys of a burst that began in the grace period go to the composer
        self._title_text = ""

    def _build(self) -> None:
        """Mount the panel's widgets on its first request: Button's stylesheet and the widgets are not on
        the way to the app's first paint (most sessions never ask)."""
        if self._built:
            return
        self._built = True
        self._title, self._args, self._reason = (Static(id="approval-title"), Static(id="approval-args"),
                                                 Static(id="approval-reason"))
        self._allow = DecideButton("Allow once \\[a]", id="allow", variant="warning")
        self._session = DecideButton("This session \\[s]", id="allow-session")  # short: four fit in 80 columns
        self._buttons = (self._allow, self._session, DecideButton("Reject \\[r]", id="reject", variant="error"),
                         DecideButton("Why not… \\[e]", id="reject-why"))
        self._help = Static(id="approval-help")
        self._why = Input(placeholder="Why not? The model reads this (Enter sends, Esc goes back)",
                          id="approval-why")
        self.mount(self._title, self._args, self._reason, self._help,
                   Horizontal(*self._buttons),
                   self._why)

    def show_request(self, request: ApprovalRequest, take_focus: bool = True) -> None:
        """Show ``request``; ``take_focus``: move the focus to the panel (the composer was not being typed
        in), with the grace period; else the panel waits for Tab (``focus_buttons``) or a click."""
        self._build()
        self.request = request
        trusting = self.trusting
        self._session.display = self._buttons[3].display = not trusting  # trust: yes or no
        if trusting:  # the workspace's folder and what in it runs only once it is trusted
            self._title_text = "Trust this workspace?"
            self._args.update(Text(f"{request.tool}\n{request.arguments}"))
            self._reason.update(Text("Its project code runs with your permissions. Trust it only if you trust "
                                     "its authors (remembered; not trusted: it is skipped).", style="italic"))
            self._label = ""
        else:
            reason = request.reason or ""
            if reason.startswith("escalate sandbox to danger-full-access:"):  # Codex's "run without sandbox?"
                self._title_text = f"Run {request.tool} without the sandbox?"
            elif reason.startswith("escalate sandbox to "):
                self._title_text = f"Run {request.tool} with more sandbox access?"
            else:
                self._title_text = f"Approve {request.tool}?"
            self._args.update(describe_call(request.tool, request.arguments))
            self._reason.update(Text(request.reason or "", style="italic"))
            from dsh_tui.runtime.permissions import (
                allowance_label,  # the runtime package: not on the first frame's path
            )

            self._label = allowance_label(request.tool, request.arguments)
        self._title.update(Text(self._title_text, style="bold"))
        self._why.value = ""
        self._why.display = False
        self.display = True
        self._update_help(take_focus)
        self._yielding = False
        self.fit(*self.app.size)
        self._wants_focus = take_focus
        if not take_focus:
            return
        self._grace_until = time.monotonic() + GRACE_S
        self._wants_focus = True
        self._allow.focus()
        # on the first request the buttons are still being mounted: focus again once they are (else the
        # keys would reach no widget of the panel)
        self.call_after_refresh(self._focus_allow, request)

    def fit(self, width: int, height: int) -> None:
        """Lay the panel out for a ``width`` × ``height`` terminal (compact below ``COMPACT_BELOW``)."""
        compact = width < COMPACT_BELOW[0] or height < COMPACT_BELOW[1]
        self.set_class(compact, "-compact")
        self.set_class(compact and width < NARROW_BELOW, "-narrow")
        if not self._built:
            return
        labels = TRUST_LABELS if self.trusting else {}
        for button in self._buttons:
            button.compact = compact
            button.label = labels.get(button.id or "", LABELS[button.id or "reject"])[1 if compact else 0]
        self.border_title = self._title_text if compact else ""
        if self.request is not None and self.has_class("-unfocused"):
            self._update_help(False)  # the short or the long hint

    def _update_help(self, focused: bool) -> None:
        self.set_class(not focused, "-unfocused")
        if not focused:
            short = self.has_class("-compact")
            long = HINT_TRUST_UNFOCUSED if self.trusting else HINT_UNFOCUSED
            self._help.update(Text(HINT_UNFOCUSED_SHORT if short and not self.trusting else long if not short
                                   else "Tab answers it (a r)", style="bold"))
            return
        if self.trusting:
            self._help.update(Text("a trusts this workspace (remembered) · r skips its project code", style="dim"))
            return
        self._help.update(Text(f"s allows {self._label} for the rest of this session · e rejects with a reason "
                               "the model reads", style="dim"))

    def focus_buttons(self) -> None:
        """A deliberate move to the panel (Tab from the composer, a click): its keys act at once."""
        if self.request is None:
            return
        self._grace_until = 0.0
        self._update_help(True)
        self._allow.focus()

    @property
    def trusting(self) -> bool:
        """The request is the workspace-trust question (two answers), not a tool call."""
        return self.request is not None and getattr(self.request, "kind", "tool") == "trust"

    @property
    def in_grace(self) -> bool:
        return time.monotonic() < self._grace_until

    async def _on_key(self, event: events.Key) -> None:
        """Within the grace period every key goes back to the composer (the panel decides nothing); Enter
        on a button does nothing (the reason line's Enter sends the reason)."""
        if self.request is None:
            return
        if self.in_grace or self._yielding:
            # the rest of a burst typed into the panel goes the same way, in order, until the focus moves
            event.stop()
            event.prevent_default()
            self._grace_until = 0.0
            self._wants_focus = False
            self._yielding = True
            self._update_help(False)
            self.post_message(self.Yielded(event.key, event.character if event.is_printable else None))
        elif event.key == "enter" and not self.asking_reason:
            event.stop()
            event.prevent_default()

    def on_descendant_focus(self, _event: events.DescendantFocus) -> None:
        self._yielding = False
        if self._built and self.request is not None and not self.in_grace:
            self._update_help(True)

    def on_click(self, _event: events.Click) -> None:
        self._grace_until = 0.0  # a click is deliberate

    def _focus_allow(self, request: ApprovalRequest) -> None:
        focused = self.screen.focused if self.is_attached else None
        if self.request is request and self._wants_focus and (focused is None or focused not in self.query("*")):
            self._allow.focus()

    @property
    def asking_reason(self) -> bool:
        return self._built and bool(self._why.display)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        actions = {"allow": self.action_allow, "allow-session": self.action_allow_session,
                   "reject": self.action_reject, "reject-why": self.action_reject_with_reason}
        actions[event.button.id or "reject"]()

    def action_allow(self) -> None:
        self._decide(ALLOW_ONCE)

    def action_allow_session(self) -> None:
        if not self.trusting:
            self._decide(ALLOW_SESSION)

    def action_reject(self) -> None:
        """Reject; while the reason line is open (Esc there): close it and go back to the buttons."""
        if self.asking_reason:
            self._why.display = False
            self._allow.focus()
            return
        self._decide(REJECT)

    def action_reject_with_reason(self) -> None:
        if self.request is None or self.trusting:
            return
        self._why.display = True
        self._why.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        reason = " ".join(event.value.split())
        self._decide(ApprovalOutcome("rejected", reason=reason) if reason else REJECT)

    def _decide(self, outcome: ApprovalOutcome) -> None:
        request, self.request = self.request, None
        if request is None:
            return
        if self._built:
            self._why.display = False
        self.display = False
        self.post_message(self.Decided(request, outcome))
