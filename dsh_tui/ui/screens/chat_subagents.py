"""The chat's subagent cards: ``SubagentSnapshot`` messages keep each child's live state (the card under the
tool call that spawned it, ``dsh_tui/ui/widgets/subagent.py``) and the status bar's running count; a running
card's elapsed time ticks each second; Enter on a card opens the child's transcript
(``dsh_tui/ui/screens/subagent.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from dsh_tui.ui.app import DshApp
    from dsh_tui.ui.screens.chat import ChatScreen


class SubagentCards:
    """Live subagent state for one chat screen (see the module docstring)."""

    def __init__(self, chat: ChatScreen) -> None:
        self.chat = chat
        self.snapshots: dict[str, dict[str, Any]] = {}  # child id -> live snapshot
        self._timer: Any = None

    def changed(self, snap: dict[str, Any]) -> None:
        """A subagent's live snapshot: its card (by the spawning call id) and the running count."""
        self.snapshots[snap["id"]] = snap
        if snap.get("callId"):
            self.chat.state.subagents[snap["callId"]] = snap
        self.refresh()
        if any(s.get("status") == "running" for s in self.snapshots.values()) and self._timer is None:
            self._timer = self.chat.set_interval(1.0, self._tick)

    def refresh(self) -> None:
        from dsh_tui.ui.widgets.subagent import SubagentCard

        status = self.chat.status
        running = sum(1 for s in self.snapshots.values() if s.get("status") == "running")
        if running != status.info.subagents:
            status.info.subagents = running
            status.redraw()
        for view in self.chat.transcript.views.values():
            if isinstance(view, SubagentCard):
                view.refresh_item()

    def _tick(self) -> None:
        """Elapsed time on running cards (the runtime posts only on changes)."""
        now_running = False
        for snap in self.snapshots.values():
            if snap.get("status") == "running":
                snap["elapsed"] = float(snap.get("elapsed") or 0) + 1.0
                now_running = True
        self.refresh()
        if not now_running and self._timer is not None:
            self._timer.stop()
            self._timer = None

    def open(self, child_id: str) -> None:
        """Push the child's live transcript (read-only while this session owns it; Esc returns)."""
        app = cast("DshApp", self.chat.app)  # the app opens screens (the subagent screen extends this chat)
        app.open_subagent(self.chat, child_id, self.snapshots.get(child_id) or {})
