"""What the harness tells the chat: each typed message (``dsh_tui.harness_messages``) dispatched on its class
to the controller or widget that shows it, and the desktop notification (or the bell) when the terminal is
not focused. ``docs/ui.md`` tables the messages and what the chat does with each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dsh_tui.harness_messages import (
    ApprovalAsked,
    ApprovalClosed,
    BackendFailed,
    HarnessMessage,
    ModelChanged,
    Notice,
    PhaseChanged,
    PluginFailed,
    PresetChanged,
    QuestionAsked,
    QuestionClosed,
    SandboxChanged,
    StatusChanged,
    SubagentSnapshot,
    TurnFailed,
)

if TYPE_CHECKING:
    from dsh_tui.ui.screens.chat import ChatScreen


class MessageInbox:
    """The harness's messages to one chat screen (see the module docstring)."""

    def __init__(self, chat: ChatScreen) -> None:
        self.chat = chat
        self._notifier: Any = None

    def dispatch(self, message: HarnessMessage) -> None:
        """One typed message from the harness, to the controller or widget that shows it."""
        chat = self.chat
        status = chat.status
        match message:
            case StatusChanged(status=state):
                chat.set_running(state == "running")
            case PhaseChanged(phase=phase):
                status.set_phase(phase)
            case ApprovalAsked(request=request):
                chat.approvals.asked(request)
            case ApprovalClosed(request=request):
                chat.approvals.closed(request)
            case QuestionAsked() | QuestionClosed():
                chat.questions.on_message(message)
            case TurnFailed(text=text):  # the footer and the status bar show it: no toast repeating them
                status.info.notice = text
                status.redraw()
            case BackendFailed(text=text) | PluginFailed(text=text):
                status.info.notice = text
                if isinstance(message, BackendFailed) and chat.bridge.harness is None:
                    chat.steering.back_to_composer()  # the session could not start: what waited is kept
                    chat.send_on_attach = False
                    chat.say(text)  # nothing typed is sent
                chat.app.notify(text, title="Error", severity="error", timeout=8, markup=False)
            case Notice(text=text):
                chat.app.notify(text, timeout=5, markup=False)
            case SubagentSnapshot(snapshot=snap):
                chat.subagent_cards.changed(snap)
            case PresetChanged(preset=preset):
                status.preset = preset
                status.redraw()
            case SandboxChanged(label=label):
                status.sandbox = label
                status.redraw()
            case ModelChanged(provider=provider, model=model, effort=effort):
                status.route = (provider, model, effort)
                status.redraw()

    def desktop_notify(self, body: str) -> None:
        """A desktop notification (or the bell) when the terminal is not focused (``dsh_tui.ui.notify``)."""
        notifier = self._notifier
        if notifier is None:
            from dsh_tui.ui.notify import Notifier
            from dsh_tui.ui.textual_compat import terminal_write

            app = self.chat.app
            settings = getattr(app, "settings", None)
            mode = settings.ui.notify if settings is not None else "auto"
            notifier = self._notifier = Notifier(mode, lambda: app.app_focus, lambda seq: terminal_write(app, seq))
        notifier(body)
