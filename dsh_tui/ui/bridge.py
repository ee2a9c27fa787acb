"""The only crossing between the Textual UI thread and the harness thread.

The harness (agent loop, providers, tools, writer) runs in its own thread with its own asyncio
loop. UI → harness goes only through the methods below, which schedule coroutines on the harness
loop with ``asyncio.run_coroutine_threadsafe`` and never block the UI. Harness → UI goes only
through ``post`` (``App.post_message`` / ``call_from_thread``): session events are buffered in a
thread-safe deque and announced with at most one pending ``EventsReady`` message, so a 2,000 tok/s
stream costs the UI one wake-up per drain, not one per chunk. Approvals carry a
``concurrent.futures.Future`` that the UI resolves.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


class Harness(Protocol):
    """What the chat screen drives. Every coroutine runs on the harness loop."""

    session: Any  # dsh_tui.session.log.Session-like: .header, .events, .subscribe()

    async def send(self, text: str, mode: str) -> None:  # mode: "followup" | "steer"
        ...

    async def cancel(self) -> None: ...

    async def close(self) -> None:
        """Stop work and flush every session to disk."""


@dataclass
class ApprovalRequest:
    """A tool call waiting for the user; resolve ``future`` with "allowed-once" or "rejected"."""

    tool: str
    arguments: str
    reason: str
    call_id: str | None = None
    future: concurrent.futures.Future = field(default_factory=concurrent.futures.Future)
    # "tool" (a tool call) or "trust" (trust this workspace? ``tool`` is its folder, ``arguments`` what in it
    # needs trust): answered in the same panel, with the same guards, "allowed-once" (trust) or "rejected"
    kind: str = "tool"


# Live notices from the harness (never history): ("status", "running"|"idle"), ("phase", name),
# ("approval", ApprovalRequest), ("question", QuestionRequest), ("question-closed", QuestionRequest),
# ("error", text), ("turn-error", text: a turn failed, its footer says so too),
# ("plugin-error", text: a plugin failed to load, the session still opens), ("notice", text),
# ("model", (provider, model, effort)).
LiveNotice = tuple[str, Any]

# Pseudo-event queued when a session is attached: {"type": ATTACH, "header", "events"}.
ATTACH = "__attach__"


class Bridge:
    """Owns the harness thread and its loop; see the module docstring."""

    def __init__(self, post: Callable[[str], None]) -> None:
        # ``post(kind)`` is called from the harness thread to wake the UI; it must be thread-safe
        # and non-blocking (the app passes a ``post_message`` wrapper).
        self._post = post
        self._events: deque[dict[str, Any]] = deque()
        self._notices: deque[LiveNotice] = deque()
        self._wake_pending = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self.harness: Harness | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self.start_error: BaseException | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self, factory: Callable[[Bridge], Awaitable[Harness]]) -> concurrent.futures.Future:
        """Start the harness thread and build the harness there with ``await factory(bridge)``."""
        self._thread = threading.Thread(target=self._run_loop, name="dsh-harness", daemon=True)
        self._thread.start()
        self._ready.wait()
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(self._build(factory), self.loop)

    def _run_loop(self) -> None:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self._ready.set()
        self.loop.run_forever()
        self.loop.close()

    async def _build(self, factory: Callable[[Bridge], Awaitable[Harness]]) -> Harness:
        try:
            harness = await factory(self)
        except BaseException as err:
            self.start_error = err
            self.notice("error", str(err) or type(err).__name__)
            raise
        self.attach(harness)
        return harness

    def attach(self, harness: Harness) -> None:
        """Subscribe to ``harness.session`` (in the harness thread) and announce existing events."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        self.harness = harness
        session = harness.session
        # a fresh session for the UI: its header and the events it already has, then live appends
        self._events.append({"type": ATTACH, "header": session.header, "events": list(session.events)})
        self._unsubscribe = session.subscribe(self.session_event)
        self._wake()

    def stop(self, timeout: float = 10.0) -> None:
        """Close the harness (flushing sessions) and end the thread. Safe to call twice."""
        loop, thread = self.loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return
        if self.harness is not None:
            fut = asyncio.run_coroutine_threadsafe(self.harness.close(), loop)
            try:
                fut.result(timeout)
            except Exception:  # noqa: BLE001 - shutdown must go on; the writer logged it
                pass
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)

    # -- harness -> UI (called in the harness thread) -----------------------------------------
    def session_event(self, session: Any, event: dict[str, Any]) -> None:
        """Session observer: queue one appended event for the UI."""
        self._events.append(event)
        self._wake()

    def notice(self, kind: str, value: Any = None) -> None:
        self._notices.append((kind, value))
        self._wake()

    def ask_trust(self, root: str, needs: list[str]) -> ApprovalRequest:
        """Ask the UI whether to trust the workspace ``root`` (``needs``: what in it waits for trust); the
        harness awaits the request's future ("allowed-once": trust it)."""
        request = ApprovalRequest(root, "\n".join(needs), "", kind="trust")
        self.notice("approval", request)
        return request

    def ask_approval(self, tool: str, arguments: str, reason: str, call_id: str | None = None) -> ApprovalRequest:
        """Post an approval to the UI; the harness awaits ``asyncio.wrap_future(request.future)``."""
        request = ApprovalRequest(tool, arguments, reason, call_id)
        self.notice("approval", request)
        return request

    def ask_question(self, questions: list[dict], call_id: str | None = None) -> Any:
        """Post a question (``ask_user_question``, a plan review) to the UI; the harness awaits
        ``asyncio.wrap_future(request.future)`` (the answer dict, or None when the user dismissed it)."""
        from dsh_tui.ui.widgets.question import QuestionRequest

        request = QuestionRequest(questions, call_id, concurrent.futures.Future())
        self.notice("question", request)
        return request

    def _wake(self) -> None:
        if not self._wake_pending.is_set():
            self._wake_pending.set()
            self._post("events")

    # -- UI side -------------------------------------------------------------------------------
    def has_pending(self) -> bool:
        """Events or notices wait to be drained."""
        return bool(self._events or self._notices)

    def drain(self) -> tuple[list[dict[str, Any]], list[LiveNotice]]:
        """Everything queued so far (called on the UI thread)."""
        self._wake_pending.clear()
        events, notices = [], []
        while self._events:
            events.append(self._events.popleft())
        while self._notices:
            notices.append(self._notices.popleft())
        return events, notices

    def _submit(self, make: Callable[[Harness], Awaitable[Any]]) -> concurrent.futures.Future | None:
        if self.loop is None or self.harness is None:
            return None
        harness = self.harness

        async def call() -> Any:
            try:
                return await make(harness)
            except Exception as err:  # noqa: BLE001 - shown to the user as a notice
                self.notice("error", str(err) or type(err).__name__)
                return None

        return asyncio.run_coroutine_threadsafe(call(), self.loop)

    def send(self, text: str, mode: str = "followup") -> concurrent.futures.Future | None:
        return self._submit(lambda h: h.send(text, mode))

    def cancel(self) -> concurrent.futures.Future | None:
        return self._submit(lambda h: h.cancel())

    def call(self, fn: Callable[[Harness], Awaitable[Any]]) -> concurrent.futures.Future | None:
        """Run any other harness coroutine (fork, model switch, ...)."""
        return self._submit(fn)
