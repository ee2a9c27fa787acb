"""The only crossing between the Textual UI thread and the harness thread.

The harness (agent loop, providers, tools, writer) runs in its own thread with its own asyncio
loop. UI → harness goes only through the methods below, which schedule coroutines on the harness
loop with ``asyncio.run_coroutine_threadsafe`` and never block the UI. Harness → UI goes only
through ``post`` (``App.post_message`` / ``call_from_thread``): session events and the harness's typed
messages (``dsh_tui.harness_messages``: ``StatusChanged``, ``ApprovalAsked``, ``ModelChanged``, ...) are
buffered in thread-safe deques and announced with at most one pending ``EventsReady`` message, so a
2,000 tok/s stream costs the UI one wake-up per drain, not one per chunk. Approvals and questions carry a
``concurrent.futures.Future`` that the UI resolves (an ``ApprovalOutcome``, an answer dict).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # the messages are built on the harness thread, after the first frame (imported there)
    from dsh_tui.harness_messages import ApprovalRequest, HarnessMessage, QuestionRequest


class SessionBackend(Protocol):
    """The UI's view of one session's backend (a live agent, a stored log replayed, a subagent's session):
    what the UI drives and reads of it. Coroutines run on the harness loop (through ``Bridge.call``); the
    plain methods are the thread-safe reads the UI thread makes: each returns a copy or an immutable value,
    never a live agent or session object (a list copy of the append-only event log is atomic under the GIL).
    ``BackendDefaults`` gives every read a default for a backend that has no live agent (a replay, a subagent's
    view); ``dsh_tui.ui.harness.AgentHarness`` is the live one."""

    session: Any  # only the bridge reads it (``attach``, on the harness thread): .header, .events, .subscribe()

    @property
    def read_only(self) -> bool:
        """A view: nothing is sent (``read_only_reason`` says why, or None for the default text)."""
        ...

    @property
    def read_only_reason(self) -> str | None: ...

    async def send(self, text: str, mode: str, images: bool = True) -> None:  # "followup" | "steer"
        ...

    async def cancel(self) -> None: ...

    async def close(self) -> None:
        """Stop work and flush every session to disk."""

    # -- thread-safe reads (UI thread) ------------------------------------------------------------
    def events(self, start: int = 0) -> list[dict[str, Any]]:
        """A copy of the session's events from index ``start`` on (negative: counted from the end)."""
        ...

    def header(self) -> dict[str, Any] | None: ...

    def session_id(self) -> str | None: ...

    def store_root(self) -> Path | None:
        """The session root the live session is stored in (None: not stored here)."""
        ...

    def resume_point(self) -> tuple[str, Path | None] | None:
        """(session id, root) to print as a resume hint at quit: a live session that wrote something."""
        ...

    def cwd(self) -> str | None: ...

    def preset(self) -> str: ...

    def live(self) -> bool:
        """A live agent runs behind this harness (commands, rewind, model switches work)."""
        ...

    def commands(self) -> Any:
        """The slash-command registry (``dsh_tui.runtime.commands.Registry``), or None."""
        ...

    def skills(self) -> list[tuple[str, str]]:
        """(name, one-line help) of the user-invocable skills."""
        ...

    def terminals(self) -> Any:
        """The agent's terminal service (the terminal card reads its screens), or None."""
        ...

    def provider(self) -> Any:
        """The live provider (the timeline rebuilds a request's wire body with it), or None."""
        ...

    def provider_name(self) -> str: ...

    def model_efforts(self) -> tuple[str | None, tuple[str, ...]]:
        """(model, the reasoning efforts it takes) for the palette."""
        ...

    def images_enabled(self) -> bool: ...

    def image_route(self) -> tuple[str, bool]: ...

    def child_spans(self) -> list[dict[str, Any]]: ...

    def child_session(self, child_id: str) -> Any: ...

    def complete_events(self, events: list[dict[str, Any]]) -> None:
        """The whole log of a view opened on its tail: the timeline and search see all of it."""
        ...

    # -- live-session calls (coroutines on the harness loop, through ``Bridge.call``) ------------------
    async def run_command(self, text: str) -> Any:
        """A slash command: a ``CommandResult``, or None (not a command)."""
        ...

    async def shell(self, command: str) -> Any: ...

    async def set_model(self, model: str, effort: str | None = None) -> None: ...

    async def set_preset(self, preset: str) -> str: ...

    async def set_plan_mode(self, active: bool) -> str: ...

    async def set_title(self, text: str) -> dict[str, Any]: ...

    async def rewind(self, turn: int, files: bool = False, force: bool = False) -> str: ...

    async def undo_files(self, turn: int | None, force: bool = False) -> str: ...

    async def mcp_servers(self) -> list[Any]: ...

    async def mcp_reconnect(self, name: str) -> bool: ...



class BackendDefaults:
    """Defaults of every ``SessionBackend`` read for a backend with no live agent (see ``SessionBackend``)."""

    session: Any = None
    read_only = False
    read_only_reason: str | None = None

    async def send(self, text: str, mode: str, images: bool = True) -> None:
        raise RuntimeError(self.read_only_reason or "This session is read-only.")

    async def cancel(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def events(self, start: int = 0) -> list[dict[str, Any]]:
        session = self.session
        return list(session.events[start:]) if session is not None else []

    def header(self) -> dict[str, Any] | None:
        header = getattr(self.session, "header", None)
        return header if isinstance(header, dict) else None

    def session_id(self) -> str | None:
        try:
            sid = getattr(self.session, "id", None)
        except Exception:  # noqa: BLE001 - a session without a readable header
            return None
        return sid if isinstance(sid, str) else None

    def store_root(self) -> Path | None:
        return None

    def resume_point(self) -> tuple[str, Path | None] | None:
        return None

    def cwd(self) -> str | None:
        cwd = (self.header() or {}).get("cwd")
        return cwd if isinstance(cwd, str) and cwd else None

    def preset(self) -> str:
        return ""

    def live(self) -> bool:
        return False

    def commands(self) -> Any:
        return None

    def skills(self) -> list[tuple[str, str]]:
        return []

    def terminals(self) -> Any:
        return None

    def provider(self) -> Any:
        return None

    def provider_name(self) -> str:
        return ""

    def model_efforts(self) -> tuple[str | None, tuple[str, ...]]:
        return None, ()

    def images_enabled(self) -> bool:
        return False

    def image_route(self) -> tuple[str, bool]:
        return "", False

    def child_spans(self) -> list[dict[str, Any]]:
        return []

    def child_session(self, child_id: str) -> Any:
        return None

    def complete_events(self, events: list[dict[str, Any]]) -> None:
        return None

    def _no_session(self) -> RuntimeError:
        return RuntimeError(self.read_only_reason or "This needs a live session.")

    async def run_command(self, text: str) -> Any:
        raise self._no_session()

    async def shell(self, command: str) -> Any:
        raise self._no_session()

    async def set_model(self, model: str, effort: str | None = None) -> None:
        raise self._no_session()

    async def set_preset(self, preset: str) -> str:
        raise self._no_session()

    async def set_plan_mode(self, active: bool) -> str:
        raise self._no_session()

    async def set_title(self, text: str) -> dict[str, Any]:
        raise self._no_session()

    async def rewind(self, turn: int, files: bool = False, force: bool = False) -> str:
        raise self._no_session()

    async def undo_files(self, turn: int | None, force: bool = False) -> str:
        raise self._no_session()

    async def mcp_servers(self) -> list[Any]:
        return []

    async def mcp_reconnect(self, name: str) -> bool:
        return False


# Pseudo-event queued when a session is attached: {"type": ATTACH, "header", "events"}.
ATTACH = "__attach__"


class Bridge:
    """Owns the harness thread and its loop; see the module docstring."""

    def __init__(self, post: Callable[[str], None]) -> None:
        # ``post(kind)`` is called from the harness thread to wake the UI; it must be thread-safe
        # and non-blocking (the app passes a ``post_message`` wrapper).
        self._post = post
        self._events: deque[dict[str, Any]] = deque()
        self._messages: deque[HarnessMessage] = deque()
        self._wake_pending = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self.harness: SessionBackend | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self.start_error: BaseException | None = None
        self._stopping = threading.Lock()  # one stop at a time: see ``stop``

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self, factory: Callable[[Bridge], Awaitable[SessionBackend]]) -> concurrent.futures.Future:
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

    async def _build(self, factory: Callable[[Bridge], Awaitable[SessionBackend]]) -> SessionBackend:
        try:
            harness = await factory(self)
        except BaseException as err:
            from dsh_tui.harness_messages import BackendFailed

            self.start_error = err
            self.announce(BackendFailed(str(err) or type(err).__name__))
            raise
        self.attach(harness)
        return harness

    def attach(self, harness: SessionBackend) -> None:
        """Subscribe to ``harness.session`` (in the harness thread) and announce existing events."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        self.harness = harness
        session = harness.session
        # a fresh session for the UI: its header and the events it already has, then live appends
        # (a copy as of now; a loaded log's compact events stay compact: the UI decodes the tail first)
        from dsh_tui.session.rows import EventList

        events = session.events
        snapshot = events.snapshot() if type(events) is EventList else list(events)
        self._events.append({"type": ATTACH, "header": session.header, "events": snapshot})
        self._unsubscribe = session.subscribe(self.session_event)
        self._wake()

    def stop(self, timeout: float = 10.0) -> None:
        """Close the harness (flushing sessions) and end the thread. Safe to call twice, and from two threads at
        once: a second call waits for the first (a quit on SIGTERM closes in a worker thread while the app's
        unmount, after a crash of its output, calls this again on the UI thread; stopping the loop then would
        cut the first close short, and the running turn would be left without its ``turn/end``)."""
        with self._stopping:
            self._stop(timeout)

    def _stop(self, timeout: float) -> None:
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

    def announce(self, message: HarnessMessage) -> None:
        """Queue one typed message for the UI (``dsh_tui.harness_messages``)."""
        self._messages.append(message)
        self._wake()

    def ask_trust(self, root: str, needs: list[str]) -> ApprovalRequest:
        """Ask the UI whether to trust the workspace ``root`` (``needs``: what in it waits for trust); the
        harness awaits the request's future (an ``ApprovalOutcome``; allowed: trust it)."""
        from dsh_tui.harness_messages import ApprovalAsked, ApprovalRequest

        request = ApprovalRequest(root, "\n".join(needs), "", kind="trust")
        self.announce(ApprovalAsked(request))
        return request

    def ask_approval(self, tool: str, arguments: str, reason: str, call_id: str | None = None) -> ApprovalRequest:
        """Post an approval to the UI; the harness awaits ``asyncio.wrap_future(request.future)`` (an
        ``ApprovalOutcome``)."""
        from dsh_tui.harness_messages import ApprovalAsked, ApprovalRequest

        request = ApprovalRequest(tool, arguments, reason, call_id)
        self.announce(ApprovalAsked(request))
        return request

    def ask_question(self, questions: list[dict], call_id: str | None = None) -> QuestionRequest:
        """Post a question (``ask_user_question``, a plan review) to the UI; the harness awaits
        ``asyncio.wrap_future(request.future)`` (the answer dict, or None when the user dismissed it)."""
        from dsh_tui.harness_messages import QuestionAsked, QuestionRequest

        request = QuestionRequest(questions, call_id)
        self.announce(QuestionAsked(request))
        return request

    def _wake(self) -> None:
        if not self._wake_pending.is_set():
            self._wake_pending.set()
            self._post("events")

    # -- UI side -------------------------------------------------------------------------------
    def has_pending(self) -> bool:
        """Events or messages wait to be drained."""
        return bool(self._events or self._messages)

    def drain(self) -> tuple[list[dict[str, Any]], list[HarnessMessage]]:
        """Everything queued so far (called on the UI thread): session events, then the harness's messages."""
        self._wake_pending.clear()
        events: list[dict[str, Any]] = []
        messages: list[HarnessMessage] = []
        while self._events:
            events.append(self._events.popleft())
        while self._messages:
            messages.append(self._messages.popleft())
        return events, messages

    def _submit(self, make: Callable[[SessionBackend], Awaitable[Any]]) -> concurrent.futures.Future | None:
        if self.loop is None or self.harness is None:
            return None
        harness = self.harness

        async def call() -> Any:
            try:
                return await make(harness)
            except Exception as err:  # noqa: BLE001 - shown to the user as a notice
                from dsh_tui.harness_messages import BackendFailed

                self.announce(BackendFailed(str(err) or type(err).__name__))
                return None

        return asyncio.run_coroutine_threadsafe(call(), self.loop)

    def send(self, text: str, mode: str = "followup", images: bool = True) -> concurrent.futures.Future | None:
        return self._submit(lambda h: h.send(text, mode) if images else h.send(text, mode, images=False))

    def cancel(self) -> concurrent.futures.Future | None:
        return self._submit(lambda h: h.cancel())

    def call(self, fn: Callable[[SessionBackend], Awaitable[Any]]) -> concurrent.futures.Future | None:
        """Run any other harness coroutine (fork, model switch, ...)."""
        return self._submit(fn)
