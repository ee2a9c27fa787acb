"""A subagent's live transcript: the chat screen over the child's session, read-only while the parent
owns it (its composer refuses input; Esc returns to the parent's chat).

The child session lives on the harness thread like the parent's; ``ChildBridge`` subscribes to it there
and wakes this screen the way the parent's bridge wakes the app (one message per drain)."""

from __future__ import annotations

import asyncio
from typing import Any

from textual.binding import Binding
from textual.message import Message

from dsh_tui.ui.bridge import BackendDefaults, Bridge
from dsh_tui.ui.screens.chat import ChatScreen

READ_ONLY = "read-only: the parent session owns this subagent — Esc returns"


class ChildHarness(BackendDefaults):
    """The bridge's harness for a child session: it shows, it never sends (``BackendDefaults.send`` refuses)."""

    read_only = True
    read_only_reason = "This subagent belongs to the parent session: it is read-only here (Esc returns)."

    def __init__(self, session: Any) -> None:
        self.session = session


class ChildBridge(Bridge):
    """A bridge on the parent's harness loop (no thread of its own) over one child session."""

    def __init__(self, post: Any, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(post)
        self.loop = loop

    def open(self, session: Any) -> None:
        assert self.loop is not None
        self.loop.call_soon_threadsafe(self.attach, ChildHarness(session))

    def stop(self, timeout: float = 10.0) -> None:
        unsubscribe, self._unsubscribe = self._unsubscribe, None
        if unsubscribe is not None and self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(unsubscribe)


class ChildEvents(Message):
    pass


class SubagentScreen(ChatScreen):
    """The chat screen of one subagent (see the module docstring)."""

    BINDINGS = [Binding("escape", "back", "Back to parent", id="subagent.back")]

    def __init__(self, bridge: ChildBridge, snap: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(bridge, **kwargs)
        self.snap = snap

    def on_mount(self) -> None:
        super().on_mount()
        label = self.snap.get("label") or self.snap.get("id", "")
        self.composer.placeholder = f"subagent “{label}” — {READ_ONLY}"
        self.sub_title = f"subagent {self.snap.get('id', '')}"
        if self.snap.get("status") == "running":  # opened mid-turn: the bar shows it running until turn/end
            self.set_running(True)
            self.status.set_phase("responding" if "responding" in (self.snap.get("phase") or "") else "waiting")

    def on_child_events(self, _message: ChildEvents) -> None:
        self.events_ready()

    def action_cancel(self) -> None:
        self.action_back()

    def action_back(self) -> None:
        self.bridge.stop()
        self.app.pop_screen()

    def on_unmount(self) -> None:
        self.bridge.stop()


def open_child_screen(chat: ChatScreen, child_id: str, snap: dict[str, Any]) -> SubagentScreen | None:
    """Push ``child_id``'s transcript above ``chat`` (the parent's chat screen)."""
    parent = chat.bridge
    harness = parent.harness
    session = harness.child_session(child_id) if harness is not None else None
    if session is None or parent.loop is None:
        chat.app.notify("That subagent is not open in this app session.", severity="warning", timeout=5)
        return None
    screen: SubagentScreen | None = None

    def post(_kind: str) -> None:
        if screen is not None:
            screen.post_message(ChildEvents())

    bridge = ChildBridge(post, parent.loop)
    screen = SubagentScreen(bridge, snap, enter_steers=chat.enter_steers, clock=chat.clock,
                            show_time=chat.state.show_time, prices=chat.prices)
    chat.app.push_screen(screen)
    bridge.open(session)
    return screen
