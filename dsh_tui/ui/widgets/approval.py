"""The approval panel: a tool call waiting for the user's decision."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Static

from dsh_tui.ui.bridge import ApprovalRequest
from dsh_tui.ui.widgets.render import describe_args


class ApprovalPanel(Vertical):
    """Takes over the composer while a tool call waits: tool, arguments/command, reason, buttons."""

    DEFAULT_CSS = """
    ApprovalPanel { height: auto; max-height: 16; display: none; border: heavy $warning; padding: 0 1; }
    ApprovalPanel #approval-args { max-height: 8; overflow-y: auto; }
    ApprovalPanel Horizontal { height: auto; }
    ApprovalPanel Button { margin-right: 2; width: auto; }
    """

    BINDINGS = [("a", "allow", "Allow once"), ("y", "allow", "Allow once"), ("r", "reject", "Reject"),
                ("n", "reject", "Reject")]

    @dataclass
    class Decided(Message):
        request: ApprovalRequest
        outcome: str

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.request: ApprovalRequest | None = None
        self._built = False

    def _build(self) -> None:
        """Mount the panel's widgets on its first request: Button's stylesheet and six widgets are not on
        the way to the app's first paint (most sessions never ask)."""
        if self._built:
            return
        self._built = True
        self._title, self._args, self._reason = (Static(id="approval-title"), Static(id="approval-args"),
                                                 Static(id="approval-reason"))
        self._allow = Button("Allow once \\[a]", id="allow", variant="warning")
        self.mount(self._title, self._args, self._reason,
                   Horizontal(self._allow, Button("Reject \\[r]", id="reject", variant="error")))

    def show_request(self, request: ApprovalRequest) -> None:
        self._build()
        self.request = request
        self._title.update(Text(f"Approve {request.tool}?", style="bold"))
        self._args.update(Text(describe_args(request.arguments)))
        self._reason.update(Text(request.reason or "", style="italic"))
        self.display = True
        self._allow.focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self._decide("allowed-once" if event.button.id == "allow" else "rejected")

    def action_allow(self) -> None:
        self._decide("allowed-once")

    def action_reject(self) -> None:
        self._decide("rejected")

    def _decide(self, outcome: str) -> None:
        request, self.request = self.request, None
        if request is None:
            return
        self.display = False
        self.post_message(self.Decided(request, outcome))
