"""The chat's stream pump: what the bridge delivers, onto the screen.

Session events reach the chat only through the bridge's queue; they are drained at most
``1 / FLUSH_INTERVAL`` times per second (20 Hz, slower when a drain costs more), folded with the same
``TranscriptFold`` a cold load uses, and the resulting item changes applied in one batch; the harness's typed
messages of the same drain go to the chat's ``MessageInbox`` (``chat_messages``). A (new) session is attached
tail first (its older part folded in a worker thread); the title header and the status bar's phase follow the
events; the watchdog makes sure the chat always drains and that a turn the log ended has ended here too
(issue #26.11).
"""

from __future__ import annotations

import gc
import time
from typing import TYPE_CHECKING, Any

from textual.widgets import Static

from dsh_tui.session.transcript import PLAN, TranscriptFold, tail_start
from dsh_tui.ui.bridge import ATTACH
from dsh_tui.ui.screens import chat_modes
from dsh_tui.ui.widgets.transcript import FIRST_PAINT_ITEMS, MAX_MOUNTED

if TYPE_CHECKING:
    from dsh_tui.ui.screens.chat import ChatScreen

FLUSH_INTERVAL = 0.05
WATCHDOG_S = 1.0  # how often the chat checks that it drains and that a turn the log ended has ended here
FREEZE_EVERY = 2.0  # seconds between gc.freeze() calls while a turn streams
TAIL_EVENTS = 6_000  # a longer log shows its last turns first and folds the rest in the background


class StreamPump:
    """Drains the bridge into one chat screen (see the module docstring)."""

    def __init__(self, chat: ChatScreen) -> None:
        self.chat = chat
        self.last_flush = 0.0
        self.flush_timer: Any = None  # a timer, "after-echo" (a flush is due after the composer's paint), None
        self.flush_cost = 0.0
        self.last_freeze = 0.0
        self.flushes = 0  # drains applied (tests and benches read it)
        self.echo_deferred = False
        self.pending_seq: int | None = None  # scroll there once the session (or its older part) is folded
        self.turn_end_seq: Any = None  # seq of the last turn/end this screen applied (the watchdog's mark)
        self.stuck_ticks = 0

    # -- the drain ---------------------------------------------------------------------------------
    def show_title(self) -> None:
        """The session's title in a one-line header, mounted when the session first has one."""
        chat = self.chat
        title = chat.fold.title
        bar = chat.title_bar
        if title is None and bar is None:
            return
        text = title or ""
        if bar is None:
            chat.title_bar = bar = Static(text, id="chat-title", markup=False)
            chat.mount(bar, before=chat.transcript)
        elif chat.title_text != text:
            bar.update(text)
        chat.title_text = text

    def events_ready(self) -> None:
        """Called (on the UI thread) when the bridge has something; coalesces to <= 20 Hz."""
        chat = self.chat
        if not chat.ready:  # the bridge can post before the screen is composed: on_mount drains it
            return
        now = time.monotonic()
        # adaptive coalescing: never spend more than about a third of the loop on transcript updates
        interval = max(FLUSH_INTERVAL, 1.5 * self.flush_cost)
        wait = interval - (now - self.last_flush)
        if wait <= 0:
            self.flush()
        elif self.flush_timer is None:
            self.flush_timer = chat.set_timer(wait, self.flush)

    def flush(self) -> None:
        chat = self.chat
        self.flush_timer = None
        if chat.composer.echo_pending and not self.echo_deferred:
            # a keystroke waits for its paint: let that frame be the composer's cheap repaint and apply
            # the stream right after it (once: a fast typist does not hold the stream back)
            self.echo_deferred = True
            self.flush_timer = "after-echo"  # a flush is due: events_ready schedules no other
            chat.call_after_refresh(self.flush)
            return
        self.echo_deferred = False
        self.last_flush = time.monotonic()
        chat.call_after_refresh(self._measure_flush, self.last_flush)
        events, messages = chat.bridge.drain()
        if not events and not messages:
            return
        if events:
            # the drain re-arms the bridge's one wake-up: a timeline open over this chat is told too, else the
            # events queued behind a wake it already used (a turn's last ones) would wait for the next event
            live = getattr(chat.app.screen, "live_events_ready", None)
            if live is not None:
                live()
        self.flushes += 1
        if chat.running and self.last_flush - self.last_freeze > FREEZE_EVERY:
            # a long stream allocates fast; full GC passes over it would stall the loop
            gc.freeze()
            self.last_freeze = self.last_flush
        changes: list[tuple[str, Any]] = []
        for event in events:
            if event.get("type") == ATTACH:
                self.attach_session(event)
                changes = []
                continue
            changes.extend(chat.fold.apply(event))
            if event.get("type") in chat_modes.MODE_EVENTS:
                chat.modes.fold([event])
            self.phase_from_event(event)
            if event.get("type") == "session/title":
                self.show_title()
        with chat.app.batch_update():
            if changes:
                self._apply(changes)
            for message in messages:
                chat.inbox.dispatch(message)
            chat.status.redraw()

    def _apply(self, changes: list[tuple[str, Any]]) -> None:
        chat = self.chat
        plan = [c for c in changes if c[0] == PLAN]
        if plan:
            chat.show_plan(plan[-1][1])
        chat.transcript.apply_changes([c for c in changes if c[0] != PLAN])

    def _measure_flush(self, started: float) -> None:
        # time from the drain to the screen settled (fold + layout + paint), smoothed
        cost = min(0.5, time.monotonic() - started)
        self.flush_cost = 0.7 * self.flush_cost + 0.3 * cost

    # -- attaching a session -------------------------------------------------------------------------
    def attach_session(self, event: dict[str, Any]) -> None:
        """A (new) session: fold its last turns, mount only the tail, fold the head in the background."""
        chat = self.chat
        header = event.get("header")
        events = event.get("events") or []
        partial, chat.expect_head, chat.tail_of = chat.expect_head, False, None
        start = 0 if partial else tail_start(events, TAIL_EVENTS)
        fold = TranscriptFold(header, chat.prices)
        for i in range(start, len(events)):
            fold.apply(events[i])
        if start:
            # fold the older part only after the tail is on screen: the worker holds the GIL
            chat.loading_head = True
            chat.call_after_refresh(lambda: chat.set_timer(0.05, lambda: self._fold_head(header, events, start, fold)))
        chat.fold = fold
        chat.status.usage = fold.usage
        transcript = chat.transcript
        transcript.fold = fold
        for view in list(transcript.views.values()):
            view.remove()
        transcript.views.clear()
        transcript.load_tail(FIRST_PAINT_ITEMS)
        transcript.anchor()
        if len(fold.items) > FIRST_PAINT_ITEMS:
            chat.call_after_refresh(self._fill_window)
        chat.show_plan(fold.plan)
        self.show_title()
        chat.modes.fold(events, reset=True)
        chat.attached = True
        if partial:
            chat.loading_head = True
            chat.tail_of = fold
        if chat.on_attached is not None:
            callback, chat.on_attached = chat.on_attached, None
            callback()
        harness = chat.bridge.harness
        chat.read_only = harness is not None and harness.read_only
        if not chat.read_only and harness is not None and isinstance(header, dict):
            chat.steering.restore_pending(str(header.get("id") or ""))
        ends = [e for e in events[-2000:] if e.get("type") == "turn/end"][-1:]
        self.turn_end_seq = ends[0].get("seq") if ends else None
        chat.last_failed = bool(ends) and ((ends[0].get("data") or {}).get("reason") or {}).get("kind") == "error"
        chat.update_composer_hint()
        if chat.send_on_attach and harness is not None:
            chat.send_on_attach = False
            if chat.read_only:  # typed while a stored session was loading: nothing is sent on its own
                chat.steering.back_to_composer()
                chat.say("This is a read-only view: Enter resumes the session here and sends your text.")
            elif chat.steering.queue:  # Enter while the session started: the first goes now, the rest in turn
                chat.say("")
                chat.call_after_refresh(chat.steering.next_turn)
            else:  # a text put in the composer to be sent (a read-only view resumed by typing)
                chat.say("")
                chat.call_after_refresh(chat.sending.submit, False, None)
        # the log and its views live as long as the screen: keep them out of the cyclic GC, whose
        # full collections otherwise stall the loop for ~100 ms each while a stream allocates
        gc.freeze()
        if self.pending_seq is not None:
            seq, self.pending_seq = self.pending_seq, None
            chat.call_after_refresh(chat.scroll_to_seq, seq)

    def complete_history(self, header: Any, events: list[dict[str, Any]], first_seq: int,
                         tail_events: list[dict[str, Any]]) -> None:
        """The full load of a log shown tail first: when it holds the same tail, fold the older part in
        (in a thread) and apply what the full load adds after it (crash closers); otherwise (the log
        changed or was repaired differently) show the full load instead."""
        chat = self.chat
        fold, chat.tail_of = chat.tail_of, None
        if fold is None or chat.fold is not fold:
            return
        n = len(tail_events)
        if events[first_seq:first_seq + n] != tail_events:
            chat.loading_head = False
            self.attach_session({"header": header, "events": events})
            return
        changes: list[tuple[str, Any]] = []
        for event in events[first_seq + n:]:
            changes.extend(fold.apply(event))
        if changes:
            with chat.app.batch_update():
                self._apply(changes)
                chat.status.redraw()
        if first_seq:
            self._fold_head(header, events, first_seq, fold)
        else:
            chat.loading_head = False

    def _fill_window(self) -> None:
        """After the first paint: mount the rest of the item window above the visible tail."""
        transcript = self.chat.transcript
        if not transcript.detached:
            transcript.load_earlier(MAX_MOUNTED - len(transcript.views), keep_following=transcript.following)

    def _fold_head(self, header: Any, events: list[dict[str, Any]], start: int, tail: TranscriptFold) -> None:
        """Fold the older part of a long session in a worker thread, then prepend it."""
        chat = self.chat

        def fold() -> None:
            head = TranscriptFold(header, chat.prices)
            for i in range(start):
                head.apply(events[i])
            chat.app.call_from_thread(self._prepend_head, head, tail)

        chat.run_worker(fold, thread=True, group="chat-head", description="fold the older part of a long session")

    def _prepend_head(self, head: TranscriptFold, tail: TranscriptFold) -> None:
        chat = self.chat
        chat.loading_head = False
        if chat.fold is not tail:
            return  # another session was attached meanwhile
        tail.prepend(head)
        self.show_title()
        gc.freeze()
        chat.transcript._update_earlier()
        chat.show_plan(tail.plan)
        chat.status.redraw()
        if self.pending_seq is not None:
            seq, self.pending_seq = self.pending_seq, None
            chat.scroll_to_seq(seq)

    # -- the status bar's phase ----------------------------------------------------------------------
    def phase_from_event(self, event: dict[str, Any]) -> None:
        chat = self.chat
        etype = event.get("type")
        status = chat.status
        if etype == "turn/start":
            chat.set_running(True)
            status.set_phase("waiting")
        elif etype == "assistant/chunk":
            ctype = ((event.get("data") or {}).get("chunk") or {}).get("type")
            if ctype == "reasoning-delta" and status.info.phase != "thinking":
                status.set_phase("thinking")
            elif ctype in ("text-delta", "tool-call-delta") and status.info.phase != "responding":
                status.set_phase("responding")
        elif etype == "tool/call":
            status.info.tools_running += 1
            status.set_phase("tools")
        elif etype == "tool/result":
            status.info.tools_running = max(0, status.info.tools_running - 1)
        elif etype == "step/start":
            status.info.tools_running = 0
            status.set_phase("waiting")
        elif etype == "llm/retry":
            status.set_phase("retrying")
        elif etype == "compaction/start":
            status.set_phase("compacting")
        elif etype == "approval/asked":
            status.set_phase("approval")
        elif etype == "approval/decided":
            chat.approvals.leave_phase()
        elif etype == "user/message":
            chat.steering.seen(event.get("data") or {})
        elif etype == "turn/end":
            self.turn_end_seq = event.get("seq")
            chat.last_failed = ((event.get("data") or {}).get("reason") or {}).get("kind") == "error"
            chat.steering.return_undelivered()
            if chat.running:  # a live turn ended: say so when the terminal is not focused
                chat.inbox.desktop_notify("the turn finished")
            chat.set_running(False)
            gc.freeze()  # the finished turn's events and views are long-lived now

    # -- watchdog (issue #26.11) -----------------------------------------------------------------------
    def logged_turn_end(self) -> dict[str, Any] | None:
        """The session log's last turn/end when no turn started after it (the harness is idle), else None."""
        harness = self.chat.bridge.harness
        events = harness.events(-5000) if harness is not None else []
        for i in range(len(events) - 1, -1, -1):
            etype = events[i].get("type")
            if etype == "turn/end":
                return events[i]
            if etype == "turn/start":
                return None
        return None

    def missed_turn_end(self) -> bool:
        """The log ended a turn this screen still shows as running."""
        if not self.chat.running:
            return False
        end = self.logged_turn_end()
        return end is not None and end.get("seq") != self.turn_end_seq

    def watchdog(self) -> None:
        """The UI always drains: events waiting with no flush for a while are flushed now (a lost timer
        left the chat on "responding" with the answer cut), and a turn the log has ended but this screen
        still shows as running is ended here after two checks in a row (the queue then goes on)."""
        bridge = self.chat.bridge
        if bridge.has_pending() and time.monotonic() - self.last_flush > 2 * WATCHDOG_S:
            self.flush_timer = None
            self.echo_deferred = True  # no waiting for an echo paint
            self.flush()
        if not self.missed_turn_end() or bridge.has_pending():
            self.stuck_ticks = 0
            return
        self.stuck_ticks += 1
        if self.stuck_ticks >= 2:
            self.recover_turn()

    def recover_turn(self) -> None:
        end = self.logged_turn_end()
        self.stuck_ticks = 0
        if end is None:
            return
        chat = self.chat
        self.turn_end_seq = end.get("seq")
        chat.status.info.tools_running = 0
        chat.status.set_phase("")
        chat.steering.return_undelivered()
        chat.set_running(False)
