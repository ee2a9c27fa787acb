"""A harness that replays a recorded log into the chat screen (read-only view, demos, tests).

``send`` plays the recording's next turn, chunk by chunk, at ``chunk_delay`` seconds per event, so
the screen streams exactly as it does for a live model; ``cancel`` stops the playback.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

from dsh_tui.ui.bridge import BackendDefaults


class RecordedSession:
    """The observable part of a session the UI needs: header, events, subscribe."""

    def __init__(self, header: dict[str, Any]) -> None:
        self.header = header
        self.id = header.get("id")
        self.events: list[dict[str, Any]] = []
        self._observers: list[Callable[[Any, dict[str, Any]], None]] = []

    def subscribe(self, fn: Callable[[Any, dict[str, Any]], None]) -> Callable[[], None]:
        self._observers.append(fn)
        return lambda: self._observers.remove(fn) if fn in self._observers else None

    def publish(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        for fn in list(self._observers):
            fn(self, event)


class ReplayHarness(BackendDefaults):
    """Plays ``events`` turn by turn; events before the first ``turn/start`` are shown at once."""

    def __init__(self, header: dict[str, Any], events: list[dict[str, Any]], *, chunk_delay: float = 0.0,
                 preload_turns: int = 0) -> None:
        self.session = RecordedSession(header)
        self.chunk_delay = chunk_delay
        self._cancel = asyncio.Event()
        start = len(events) if preload_turns >= len(events) else 0  # "everything" needs no scan
        while start < len(events) and (events[start]["type"] != "turn/start" or preload_turns > 0):
            if events[start]["type"] == "turn/end":
                preload_turns -= 1
            start += 1
        self.session.events = list(events[:start])
        self._pending = deque(events[start:])
        self.read_only = not self._pending  # nothing left to play: a read-only view

    def complete_events(self, events: list[dict[str, Any]]) -> None:
        self.session.events = events  # the timeline and search see the whole log

    async def send(self, text: str, mode: str, images: bool = True) -> None:
        self._cancel.clear()
        while self._pending:
            event = self._pending.popleft()
            self.session.publish(event)
            if event["type"] == "turn/end":
                break
            if self.chunk_delay and event["type"] == "assistant/chunk":
                try:
                    await asyncio.wait_for(self._cancel.wait(), self.chunk_delay)
                except TimeoutError:
                    continue
                return

    async def cancel(self) -> None:
        self._cancel.set()

    async def close(self) -> None:
        self._cancel.set()
