"""The approval panel: a tool call waiting for the user's decision.

Four answers: allow once (**a**/**y**), allow this command — for bash the exact command, for another tool
the tool with these arguments — for the rest of the session (**s**), reject (**r**/**n**), and reject with
a reason the model receives (**e**: a line to type, Enter sends it, Esc goes back). ``Decided.outcome`` is
what the harness's approval answerer returns: ``"allowed-once"``, ``"rejected"``,
``{"outcome": "allowed-once", "scope": "session"}`` or ``{"outcome": "rejected", "reason": text}``
(``dsh_tui/ui/harness.py``, ``dsh_tui/runtime/permissions.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Input, Static

from dsh_tui.ui.bridge import ApprovalRequest
from dsh_tui.ui.widgets.render import describe_args

SESSION = {"outcome": "allowed-once", "scope": "session"}


class ApprovalPanel(Vertical):
    """Takes over the composer while a tool call waits: tool, arguments/command, reason, buttons."""

    DEFAULT_CSS = """
    ApprovalPanel { height: auto; max-height: 18; display: none; border: heavy $warning; padding: 0 1; }
    ApprovalPanel #approval-args { max-height: 8; overflow-y: auto; }
    ApprovalPanel Horizontal { height: auto; }
    ApprovalPanel Button { margin-right: 1; width: auto; }
    ApprovalPanel #approval-why { display: none; margin-top: 1; }
    """

    BINDINGS = [("a", "allow", "Allow once"), ("y", "allow", "Allow once"),
                ("s", "allow_session", "Allow for this session"), ("r", "reject", "Reject"),
                ("n", "reject", "Reject"), ("e", "reject_with_reason", "Reject with a reason")]

    @dataclass
    class Decided(Message):
        request: ApprovalRequest
        outcome: Any  # str, or a dict (see the module docstring)

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.request: ApprovalRequest | None = None
        self._built = False

    def _build(self) -> None:
        """Mount the panel's widgets on its first request: Button's stylesheet and the widgets are not on
        the way to the app's first paint (most sessions never ask)."""
        if self._built:
            return
        self._built = True
        self._title, self._args, self._reason = (Static(id="approval-title"), Static(id="approval-args"),
                                                 Static(id="approval-reason"))
        self._allow = Button("Allow once \\[a]", id="allow", variant="warning")
        self._session = Button("This session \\[s]", id="allow-session")  # short: four fit in 80 columns
        self._help = Static(id="approval-help")
        self._why = Input(placeholder="Why not? The model reads this (Enter sends, Esc goes back)",
                          id="approval-why")
        self.mount(self._title, self._args, self._reason, self._help,
                   Horizontal(self._allow, self._session, Button("Reject \\[r]", id="reject", variant="error"),
                              Button("Why not… \\[e]", id="reject-why")),
                   self._why)

    def show_request(self, request: ApprovalRequest) -> None:
        self._build()
        self.request = request
        self._title.update(Text(f"Approve {request.tool}?", style="bold"))
        self._args.update(Text(describe_args(request.arguments)))
        self._reason.update(Text(request.reason or "", style="italic"))
        from dsh_tui.runtime.permissions import (
            allowance_label,  # the runtime package: not on the first frame's path
        )

        self._help.update(Text(f"s allows {allowance_label(request.tool, request.arguments)} for the rest of this "
                               "session · e rejects with a reason the model reads", style="dim"))
        self._why.value = ""
        self._why.display = False
        self.display = True
        self._allow.focus()
        # on the first request the buttons are still being mounted: focus again once they are (else the
        # keys would reach no widget of the panel)
        self.call_after_refresh(self._focus_allow, request)

    def _focus_allow(self, request: ApprovalRequest) -> None:
        focused = self.screen.focused if self.is_attached else None
        if self.request is request and (focused is None or focused not in self.query("*")):
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
        self._decide("allowed-once")

    def action_allow_session(self) -> None:
        self._decide(dict(SESSION))

    def action_reject(self) -> None:
        """Reject; while the reason line is open (Esc there): close it and go back to the buttons."""
        if self.asking_reason:
            self._why.display = False
            self._allow.focus()
            return
        self._decide("rejected")

    def action_reject_with_reason(self) -> None:
        if self.request is None:
            return
        self._why.display = True
        self._why.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        reason = " ".join(event.value.split())
        self._decide({"outcome": "rejected", "reason": reason} if reason else "rejected")

    def _decide(self, outcome: Any) -> None:
        request, self.request = self.request, None
        if request is None:
            return
        if self._built:
            self._why.display = False
        self.display = False
        self.post_message(self.Decided(request, outcome))
