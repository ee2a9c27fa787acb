"""Opening a stored session in the app: read-only (the tail first, then the whole log in a worker), resumed,
or opened by a slash command's action. ``SessionOpener`` is the app's ``opener`` (``DshApp.open_session`` and
``open_from_command`` hand over to it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dsh_tui.ui.bridge import Bridge, SessionBackend

if TYPE_CHECKING:
    from dsh_tui.ui.app import DshApp


class SessionOpener:
    """Opens sessions in one app (see the module docstring)."""

    def __init__(self, app: DshApp) -> None:
        self.app = app
        self.generation = 0  # count of open_session calls: results of an older open are dropped

    # -- opening a stored session ---------------------------------------------------------------
    def open_session(self, row: Any, *, at_seq: int | None = None, resume: bool = False) -> None:
        """Open a browser row read-only (tail first) or resumed; ``at_seq`` scrolls to an event.

        Read-only: the last turns are read cheaply (``dsh_tui.store.tail``) and painted first; the full
        validated load runs in a thread afterwards and stays the authority: it confirms the tail and
        the older part is folded in, or its result replaces the tail, and a repair or corruption it
        reports is shown."""
        origin = self.app.screen
        if hasattr(origin, "opened_at"):
            origin.opened_at = None
        self.generation += 1  # a later open makes this one's results stale
        if resume:
            problem = self._resume_row(row, origin)
            if problem:
                self.app.notify(problem, severity="warning", timeout=6)
            return
        gen = self.generation
        self.app.run_worker(lambda: self._load_row(row, at_seq, origin, gen), thread=True, group="open-session",
                        description="open session")

    def _resume_row(self, row: Any, origin: Any, text: str = "") -> str:
        """Resume ``row`` in a new chat that sends ``text`` once the session is open; returns "" or why
        it cannot (no model configured)."""
        from pathlib import Path

        from dsh_tui.ui.harness import HarnessSpec, open_harness

        route: Callable[[], tuple[Any, str, str]] | None = getattr(origin, "provider_route", None)
        if route is None:
            from dsh_tui.llm.route import model_route

            route = model_route
        provider, model, hint = route()
        if provider is None:
            return hint or "No model provider is configured."
        spec = HarnessSpec(root=Path(row.root), cwd=Path(row.cwd or Path.cwd()), provider=provider, model=model,
                           resume_id=row.id)
        chat = self.app.open_chat(lambda bridge: open_harness(bridge, spec))
        if text:
            chat.initial_text, chat.send_on_attach = text, True
        return ""

    def open_from_command(self, harness: Any, action: dict[str, Any]) -> str:
        """``/new`` (a new session in the same root and cwd) or ``/fork`` (the forked child, resumed), on the
        live session's provider and model (handed over: the closing harness does not close it); the live
        session is flushed and closed first. Returns "" or why it could not."""
        from dsh_tui.ui.harness import AgentHarness, open_harness

        spec = harness.handover_spec(action) if isinstance(harness, AgentHarness) else None
        if spec is None:
            return "No live session."
        self.app.open_chat(lambda bridge: open_harness(bridge, spec))
        return ""

    def _current(self, gen: int, fn: Callable[..., Any]) -> Callable[..., None]:
        """``fn`` that does nothing once another session has been opened after open #``gen``."""
        def call(*args: Any) -> None:
            if gen == self.generation:
                fn(*args)
        return call

    def _load_row(self, row: Any, at_seq: int | None, origin: Any, gen: int) -> None:
        """Worker thread: tail read -> paint; then the full load -> confirm or replace."""
        import threading

        from dsh_tui.store import catalog
        from dsh_tui.ui.screens.chat_stream import TAIL_EVENTS

        painted = threading.Event()
        tail = None
        path = str(getattr(row, "path", "") or "")
        if path.endswith((".jsonl", ".jsonl.zstd", ".zstd")):
            from dsh_tui.store.tail import read_tail

            tail = read_tail(path, TAIL_EVENTS)
            if tail is not None and tail.complete:
                tail = None  # a short log: the full load is as cheap
        if tail is not None:
            self.app.call_from_thread(self._current(gen, self._show_stored), tail.header, tail.events, at_seq, origin,
                                  tail, painted, row)
            painted.wait(2.0)  # let the tail reach the screen before this thread takes the GIL for long
        try:
            res = catalog._store_for(row).inspect(row.id)
        except Exception as err:  # noqa: BLE001 - shown to the user, never a traceback
            self.app.call_from_thread(self._current(gen, self._stored_failed), err, tail is not None)
            return
        if tail is None:
            self.app.call_from_thread(self._current(gen, self._show_stored), res.header, res.events, at_seq, origin,
                                  None, None, row)
            self.app.call_from_thread(self._current(gen, self._say_repaired), res)
        else:
            self.app.call_from_thread(self._current(gen, self._confirm_tail), res, tail)

    def _show_stored(self, header: dict, events: list[dict], at_seq: int | None, origin: Any, tail: Any,
                     painted: Any, row: Any = None) -> None:
        from dsh_tui.ui.replay import ReplayHarness

        async def factory(_bridge: Bridge) -> SessionBackend:
            return ReplayHarness(header, events, preload_turns=1 << 30)

        chat = self.app.open_chat(factory)
        if row is not None:  # Enter in the read-only view's composer resumes it right there
            chat.resume = lambda text: self._resume_row(row, origin, text)
        if tail is not None:
            chat.expect_head = True  # the older part arrives with the full load
            # the full load waits for the tail's paint: the frame after the attach's refresh, which mounts the
            # rest of the item window (``_fill_window``); a load started before it holds the GIL half the time
            # and delayed that paint by ~0.2 s (issue #29)
            chat.on_attached = lambda: chat.call_after_refresh(
                lambda: chat.call_after_refresh(lambda: chat.set_timer(0.05, painted.set)))
        if at_seq is None:
            return
        deadline = time.monotonic() + 10

        def try_scroll() -> None:
            if self.app.chat is not chat:
                return
            if chat.attached and chat.fold.items and chat.scroll_to_seq(at_seq):
                if hasattr(origin, "opened_at"):
                    origin.opened_at = at_seq
                return
            if time.monotonic() < deadline:
                self.app.set_timer(0.05, try_scroll)

        self.app.set_timer(0.05, try_scroll)

    def _confirm_tail(self, res: Any, tail: Any) -> None:
        chat = self.app.chat
        if chat is None or getattr(chat, "tail_of", None) is None:
            return  # another screen or session replaced the tail meanwhile
        harness = self.app.bridge.harness
        if harness is not None:
            harness.complete_events(res.events)  # the timeline and search see the whole log
        chat.complete_history(res.header, res.events, tail.first_seq, tail.events)
        self._say_repaired(res)

    def _say_repaired(self, res: Any) -> None:
        if not getattr(res, "repaired", False):
            return
        parts = []
        if res.truncated_bytes:
            parts.append(f"a torn tail of {res.truncated_bytes} bytes")
        if res.closers:
            parts.append(f"{len(res.closers)} closing event(s) for an interrupted turn")
        self.app.notify("This log was not closed cleanly: shown with " + " and ".join(parts)
                    + " (read-only view: nothing was written).", title="Log repaired in memory",
                    severity="warning", timeout=10)

    def _stored_failed(self, err: BaseException, tail_shown: bool) -> None:
        text = f"Cannot open: {err}"
        if tail_shown and self.app.chat is not None:
            self.app.chat.loading_head = False
            self.app.chat.status.info.notice = "log damaged: only its last turns are shown"
            self.app.chat.status.redraw()
            text += " (only the last turns, read without validation, are shown)"
        self.app.notify(text, severity="error", timeout=10)
