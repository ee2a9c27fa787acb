"""Write-behind persistence for one live session (docs/format.md, "Write path").

``SessionWriter(store, session)`` subscribes to the Session. Every appended event joins one queue; the first
event into an empty queue arms a **fixed** window (200 ms, not reset by later events); when it expires a
background thread writes the whole pending prefix as one batch (``store.append`` fsyncs before returning).
Events arriving while a write is in flight form the next batch.

``flush()`` cancels the wait and drains to quiescence, returning only when everything observed so far (and
anything that arrived meanwhile) is durable; ``aflush()`` is the awaitable form. A failed background write
keeps its batch at the head of the queue (ahead of newer events), is reported once, and automatic retry
pauses until the next event, flush or close. ``checkpoint(reason)`` is the harness's semantic checkpoint
(before a model request, before a top-level tool body, at each pre-step): a flush that raises
``CheckpointError`` on failure so the caller fails closed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from dsh_tui.session.errors import DshError

if TYPE_CHECKING:
    from dsh_tui.store.lifecycle import ResumeFacts

log = logging.getLogger(__name__)

DEFAULT_WINDOW_MS = 200


class WriterError(DshError):
    """A batch could not be made durable."""


class CheckpointError(WriterError):
    """A semantic checkpoint could not flush: the caller must not proceed."""


def _settle(fut: asyncio.Future, outcome: object) -> None:
    if fut.done():  # cancelled by its awaiter: the flush completed all the same
        return
    if isinstance(outcome, BaseException):
        fut.set_exception(outcome)
    else:
        fut.set_result(outcome)


class SessionWriter:
    def __init__(
        self,
        store,
        session,
        window_ms: float = DEFAULT_WINDOW_MS,
        *,
        persisted: int = 0,
        lock=None,
        on_error: Callable[[BaseException], None] | None = None,
        on_flush: Callable[[int], None] | None = None,
    ) -> None:
        """``persisted`` = events of ``session`` already stored (resume: the stored length); the rest of
        ``session.events`` is queued at once. ``lock`` (a SessionLock) is released by ``close()``."""
        self.store = store
        self.session_id = session.id
        self.window = window_ms / 1000.0
        self.lock = lock
        self.on_error = on_error
        self.on_flush = on_flush  # called on the writer thread with the durable length after each write
        self._mutex = threading.Lock()
        self._cv = threading.Condition(self._mutex)
        self._pending: list[dict] = list(session.events[persisted:])
        self._durable = persisted
        self.resume_facts: ResumeFacts | None = None  # set by ``store.lifecycle.resume``
        self._deadline: float | None = time.monotonic() + self.window if self._pending else None
        self._flush_waiters = 0
        self._hot = False  # True while an event needs nothing but joining the queue (set/cleared under the mutex)
        # aflush() waiters resolved by the writer thread itself: (loop, future, error generation at entry)
        self._async_waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future, int]] = []
        self._error: BaseException | None = None
        self._error_gen = 0
        self._paused = False
        self._closing = False
        self._closed = False
        # events reaching the writer were validated by Session.append: a store that can skip its own
        # lossless-JSON walk for them says so with a ``trusted`` keyword on ``append``
        try:
            self._append_kw = {"trusted": True} if "trusted" in inspect.signature(store.append).parameters else {}
        except (TypeError, ValueError):
            self._append_kw = {}
        self._unsubscribe = session.subscribe(self._on_event)
        self._thread = threading.Thread(target=self._run, name=f"dsh-writer-{self.session_id}", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ producer side (any thread)
    def _on_event(self, _session, event: dict) -> None:
        if self._hot:
            # the window is armed and nothing needs re-enabling: list.append is atomic under the GIL. An
            # event that read ``_hot`` just before the writer took its batch is armed by the writer itself
            self._pending.append(event)
            return
        with self._mutex:  # the condition's own lock, entered without Condition.__enter__'s Python frame
            if self._closed:
                return
            self._pending.append(event)
            if self._paused:
                self._paused = False  # a new event re-enables retry of a failed batch
            if self._deadline is None:
                self._deadline = time.monotonic() + self.window
                self._cv.notify_all()
            self._hot = True

    @property
    def durable_length(self) -> int:
        """Number of events known to be fsynced."""
        with self._cv:
            return self._durable

    @property
    def pending_count(self) -> int:
        with self._cv:
            return len(self._pending)

    @property
    def last_error(self) -> BaseException | None:
        return self._error

    # ------------------------------------------------------------------ background thread
    def _run(self) -> None:
        try:
            self._loop()
        finally:
            with self._cv:
                self._resolve_async(gone=True)

    def _resolve_async(self, gone: bool = False) -> None:
        """Settle the aflush() waiters that ``flush()`` would have returned or raised for (mutex held)."""
        keep = []
        for loop, fut, gen in self._async_waiters:
            if not self._pending:
                outcome: object = self._durable
            elif self._error_gen != gen:
                err = self._error
                outcome = WriterError(f"session {self.session_id}: could not persist events: {err}")
                outcome.__cause__ = err
            elif gone:
                outcome = WriterError(f"session {self.session_id}: writer thread is gone")
            else:
                keep.append((loop, fut, gen))
                continue
            self._flush_waiters -= 1
            with contextlib.suppress(RuntimeError):  # the waiter's loop is closed: nobody to tell
                loop.call_soon_threadsafe(_settle, fut, outcome)
        self._async_waiters = keep

    def _loop(self) -> None:
        grace = False  # after a take: an unlocked append may land just after this thread blocks
        while True:
            with self._cv:
                while True:
                    if self._pending and not self._paused:
                        if self._flush_waiters or self._closing:
                            break
                        if self._deadline is None:  # joined via the unlocked path as a batch was taken
                            self._deadline = time.monotonic() + self.window
                        if self._deadline is not None:
                            delay = self._deadline - time.monotonic()
                            if delay <= 0:
                                break
                            self._cv.wait(delay)
                            continue
                    if self._closing and (not self._pending or self._paused):
                        return
                    if grace:  # one bounded wait: such an append does not notify
                        grace = False
                        self._cv.wait(self.window)
                    else:
                        self._cv.wait()
                batch = list(self._pending)
                grace = True
                # the queue behind this batch is empty now: the first event arriving during the write
                # arms the next fixed window at its own arrival (not at the end of this write)
                self._deadline = None
                self._hot = False
            try:
                self.store.append(self.session_id, batch, **self._append_kw)
            except BaseException as err:  # keep the batch at the head; pause until event/flush/close
                with self._cv:
                    first = self._error is None
                    self._error = err
                    self._error_gen += 1
                    self._paused = True
                    self._deadline = None
                    self._hot = False
                    self._resolve_async()
                    self._cv.notify_all()
                if first:
                    log.warning("session %s: background write failed: %s", self.session_id, err)
                    if self.on_error is not None:
                        try:
                            self.on_error(err)
                        except Exception:  # noqa: BLE001 - a reporting hook must not kill the writer
                            log.exception("writer on_error hook failed")
                continue
            with self._cv:
                del self._pending[: len(batch)]
                self._durable += len(batch)
                self._error = None
                # events that arrived during the write form the next batch: the first one armed its window
                # (or, joining unlocked as the batch was taken, the loop's next pass arms it); with none, the
                # deadline is still the None the take left
                durable = self._durable
                self._resolve_async()
                self._cv.notify_all()
            if self.on_flush is not None:
                self.on_flush(durable)

    # ------------------------------------------------------------------ barriers
    def flush(self, timeout: float | None = None) -> int:
        """Drain to quiescence; return the durable length once fsynced. Raises WriterError on failure."""
        with self._cv:
            if self._closed and self._pending:
                raise WriterError(f"session {self.session_id}: writer is closed with unwritten events")
            start_gen = self._error_gen
            self._paused = False  # a flush retries a failed batch
            self._flush_waiters += 1
            self._cv.notify_all()
            try:
                end = None if timeout is None else time.monotonic() + timeout
                while self._pending:
                    if self._error_gen != start_gen:
                        err = self._error
                        raise WriterError(f"session {self.session_id}: could not persist events: {err}") from err
                    if not self._thread.is_alive():
                        raise WriterError(f"session {self.session_id}: writer thread is gone")
                    if end is not None:
                        left = end - time.monotonic()
                        if left <= 0:
                            raise WriterError(f"session {self.session_id}: flush timed out")
                        self._cv.wait(left)
                    else:
                        self._cv.wait()
                return self._durable
            finally:
                self._flush_waiters -= 1

    def flush_future(self) -> concurrent.futures.Future:
        fut: concurrent.futures.Future = concurrent.futures.Future()

        def run():
            # an awaiting task may be cancelled meanwhile (asyncio cancels this future): the flush still
            # completes, its outcome is then simply dropped
            try:
                result = self.flush()
            except BaseException as err:  # noqa: BLE001
                with contextlib.suppress(concurrent.futures.InvalidStateError):
                    fut.set_exception(err)
                return
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                fut.set_result(result)

        threading.Thread(target=run, name=f"dsh-flush-{self.session_id}", daemon=True).start()
        return fut

    async def aflush(self) -> int:
        """Awaitable flush: does not block the event loop. The writer thread settles the awaited future
        itself (no helper thread); a cancelled await still lets the flush complete."""
        loop = asyncio.get_running_loop()
        with self._cv:
            if not self._pending:
                return self._durable
            if self._closed:
                raise WriterError(f"session {self.session_id}: writer is closed with unwritten events")
            if not self._thread.is_alive():
                raise WriterError(f"session {self.session_id}: writer thread is gone")
            fut = loop.create_future()
            self._paused = False  # a flush retries a failed batch
            self._flush_waiters += 1
            self._async_waiters.append((loop, fut, self._error_gen))
            self._cv.notify_all()
        return await fut

    async def checkpoint(self, reason: str) -> int:
        """Semantic checkpoint (``request``, ``tool``, ``pre-step``...): fail closed on any write failure."""
        try:
            return await self.aflush()
        except WriterError as err:
            raise CheckpointError(f"checkpoint before {reason} failed: {err}") from err

    # ------------------------------------------------------------------ teardown
    def close(self) -> None:
        """Flush (retrying a failed batch), stop the thread, unsubscribe, release the lock.

        Raises WriterError if events could not be persisted; the lock is released in every case."""
        if self._closed:
            return
        try:
            self.flush()
        finally:
            with self._cv:
                self._closing = True
                self._closed = True
                self._hot = False
                self._cv.notify_all()
            self._unsubscribe()
            self._thread.join(timeout=30)
            if self.lock is not None:
                self.lock.release()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def __enter__(self) -> SessionWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
