"""The chat's approval flow: ``ApprovalAsked`` / ``ApprovalClosed`` messages in, an ``ApprovalOutcome`` out.

Requests wait in order; the approval panel (``dsh_tui/ui/widgets/approval.py``) shows one at a time in the
composer's place, and never takes the focus from a composer being typed in (Tab moves to it). The panel's
``Decided`` message carries the user's ``ApprovalOutcome``: it resolves the request's future, which the
harness thread awaits (``dsh_tui/ui/harness.py``). ``docs/ui.md`` follows an approval end to end.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dsh_tui.harness_messages import ApprovalRequest
    from dsh_tui.ui.screens.chat import ChatScreen
    from dsh_tui.ui.widgets.approval import ApprovalPanel


class ApprovalFlow:
    """The approvals waiting for one chat screen (see the module docstring)."""

    def __init__(self, chat: ChatScreen) -> None:
        self.chat = chat
        self.pending: list[ApprovalRequest] = []

    def asked(self, request: ApprovalRequest) -> None:
        chat = self.chat
        chat.inbox.desktop_notify(f"{request.tool} is waiting for your approval")
        self.pending.append(request)
        if chat.built("approval") is None or chat.approval.request is None:
            self.show_next()

    def closed(self, request: ApprovalRequest) -> None:
        """The harness no longer waits for ``request`` (the turn was cancelled)."""
        chat = self.chat
        if request in self.pending:
            self.pending.remove(request)
        if chat.built("approval") is not None and chat.approval.request is request:
            chat.approval.request = None
            self.show_next()

    def show_next(self) -> None:
        chat = self.chat
        if not self.pending:
            chat.approval.display = False
            chat.composer.display = True
            chat.composer.focus()
            return
        chat.offer_panel(chat.approval, self.pending.pop(0), "approval")

    def decided(self, message: ApprovalPanel.Decided) -> None:
        """The user answered: the harness thread's future gets the ``ApprovalOutcome``."""
        if not message.request.future.done():
            message.request.future.set_result(message.outcome)
        self.show_next()
        self.leave_phase()

    def leave_phase(self) -> None:
        """An approval was answered: the status goes back to the running tools unless another one waits."""
        chat = self.chat
        status = chat.status
        if status.info.phase != "approval" or not chat.running or (
                chat.built("approval") is not None and chat.approval.request is not None):
            return
        status.set_phase("tools" if status.info.tools_running else "waiting")

    def shown(self) -> bool:
        approval = self.chat.built("approval")
        return approval is not None and approval.is_attached and approval.display

    def waiting(self) -> bool:
        approval = self.chat.built("approval")
        return approval is not None and approval.is_attached and approval.display and approval.request is not None

    def fit(self, width: int, height: int) -> None:
        approval = self.chat.built("approval")
        if approval is not None and approval.is_attached:
            approval.fit(width, height)
