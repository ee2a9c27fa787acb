"""The write-behind writer (§3.4): fixed window, flush barriers, failure retention, checkpoints.

The writer runs on its real background thread against real stores (raw JSONL and SQLite). Failures are
injected by a thin wrapper around the real store (``Flaky``): the only stand-in, since a transient write
error cannot be produced on demand otherwise (the full-disk test in test_crash_fulldisk.py uses a real
``RLIMIT_FSIZE``).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest

from dsh_tui.session.headers import make_header
from dsh_tui.session.log import Session
from dsh_tui.store import lifecycle
from dsh_tui.store import lock as locks
from dsh_tui.store import writer as writer_mod
from dsh_tui.store.jsonl import JsonlStore
from dsh_tui.store.lock import SessionInUseError
from dsh_tui.store.sqlite import SqliteSessionStore
from dsh_tui.store.writer import CheckpointError, SessionWriter, WriterError
from tests.store import crash_child as cc


def _wait(cond, timeout=10.0):
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("condition not reached")
        time.sleep(0.002)


class Flaky:
    """Delegates to a real store; records each append attempt; can fail or block on demand."""

    def __init__(self, inner):
        self.inner = inner
        self.attempts: list[list[int]] = []
        self.fail_next = 0
        self.gate: threading.Event | None = None
        self.entered = threading.Event()

    def append(self, sid, events):
        self.attempts.append([e["seq"] for e in events])
        self.entered.set()
        if self.gate is not None:
            self.gate.wait(10)
        if self.fail_next:
            self.fail_next -= 1
            raise OSError(28, "No space left on device")
        self.inner.append(sid, events)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class Clock:
    """The writer's monotonic clock, moved by hand, and a probe of its thread: ``settle()`` returns once the
    writer has looked at the queue again after the clock moved (no wall-clock waiting in the assertions)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.waits = 0
        self.writer: SessionWriter | None = None

    def monotonic(self) -> float:
        return self.now

    def watch(self, writer: SessionWriter) -> None:
        self.writer = writer
        wait = writer._cv.wait

        def counting_wait(timeout=None):
            self.waits += 1
            return wait(timeout)

        writer._cv.wait = counting_wait

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.settle()

    def settle(self) -> None:
        # two more waits entered: the second one follows an evaluation that began after this call
        n = self.waits
        cv = self.writer._cv
        end = time.monotonic() + 10
        while self.waits < n + 2:
            with cv:
                cv.notify_all()
            if time.monotonic() > end:
                raise AssertionError("the writer thread did not come back to its wait")
            time.sleep(0.0005)


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(writer_mod, "time", c)
    return c


@pytest.fixture(params=["jsonl", "sqlite"])
def store(request, tmp_path):
    if request.param == "sqlite":
        s = SqliteSessionStore(tmp_path / "root")
        yield s
        s.close()
    else:
        yield JsonlStore(tmp_path / "root", "none")


def _new(store, sid="w1", window_ms=200, wrap=True):
    header = make_header(sid, cwd="/work/w", created_at=1_700_000_000_000)
    store.create(header)
    flaky = Flaky(store) if wrap else store
    session = Session(header)
    return session, SessionWriter(flaky, session, window_ms), flaky


def _turn(session, turn=1, chunks=10, seed=1):
    import random

    rng = random.Random(seed)
    cc.scripted_turn(session, turn, rng, first=turn == 1, chunks=chunks)


def test_flush_drains_everything_and_returns_the_durable_length(store):
    session, writer, flaky = _new(store, window_ms=60_000)
    _turn(session, chunks=50)
    n = len(session.events)
    assert writer.flush() == n
    assert flaky.attempts == [list(range(n))]  # one batch: the window never expired
    assert store.read_from("w1", 0) == session.events
    assert writer.flush() == n and len(flaky.attempts) == 1  # nothing pending: no write
    writer.close()


def test_window_is_fixed_and_batches_everything_queued_within_it(store, clock):
    session, writer, flaky = _new(store, window_ms=1500)
    clock.watch(writer)
    session.append("turn/start", {"turn": 1})
    for i in range(1, 20):
        clock.advance(0.005)
        session.append("session/title", {"title": f"t{i}", "messageSeqs": [], "source": {"kind": "user"}})
    clock.advance(1.4)  # 1.495 s after the first event: not yet
    assert flaky.attempts == []
    clock.advance(0.01)
    _wait(lambda: writer.durable_length == 20)
    assert flaky.attempts == [list(range(20))]
    writer.close()


def test_window_is_not_reset_by_later_events(store, clock):
    session, writer, flaky = _new(store, window_ms=100)
    clock.watch(writer)
    session.append("turn/start", {"turn": 1})
    for _ in range(40):  # a steady stream, one event per 20 ms for 0.8 s: a resetting window never fires
        clock.advance(0.02)
        session.append("todo/write", {"todos": []})
    clock.settle()
    assert len(flaky.attempts) >= 6  # a batch at least every 120 ms
    writer.close()
    flat = [s for a in flaky.attempts for s in a]
    assert flat == list(range(len(session.events)))


def test_events_arriving_during_a_write_form_the_next_batch(store):
    session, writer, flaky = _new(store, window_ms=60_000)
    flaky.gate = threading.Event()
    _turn(session, chunks=5)
    first = len(session.events)
    fut = writer.flush_future()
    assert flaky.entered.wait(5)
    _turn(session, turn=2, chunks=5)  # queued while the first batch is being written
    flaky.gate.set()
    assert fut.result(10) == len(session.events)  # the barrier drains to quiescence
    assert flaky.attempts[0] == list(range(first))
    assert flaky.attempts[1] == list(range(first, len(session.events)))
    assert store.read_from("w1", 0) == session.events
    writer.close()


def test_failed_background_write_keeps_its_batch_first_and_pauses_retry(store, clock):
    errors = []
    session, writer, flaky = _new(store, window_ms=100)
    clock.watch(writer)
    writer.on_error = errors.append
    flaky.fail_next = 1
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    clock.advance(0.15)
    _wait(lambda: writer.last_error is not None)
    for _ in range(5):
        clock.advance(0.1)  # several windows: no automatic retry while paused
    assert flaky.attempts == [[0, 1]]
    assert len(errors) == 1 and isinstance(errors[0], OSError)
    session.append("step/end", {"turn": 1, "step": 1})  # a new event re-enables retry
    clock.advance(0.15)
    _wait(lambda: writer.durable_length == 3)
    assert flaky.attempts[1] == [0, 1, 2]  # the failed batch stays ahead of the newer event
    assert store.read_from("w1", 0) == session.events
    writer.close()


def test_flush_retries_a_failed_batch_and_raises_if_it_fails_again(store):
    session, writer, flaky = _new(store, window_ms=10)
    flaky.fail_next = 2
    session.append("turn/start", {"turn": 1})
    _wait(lambda: writer.last_error is not None)
    with pytest.raises(WriterError, match="No space left"):
        writer.flush()
    assert writer.flush() == 1  # third attempt succeeds
    assert [a for a in flaky.attempts] == [[0], [0], [0]]
    writer.close()


async def test_checkpoint_fails_closed_and_aflush_does_not_block_the_loop(store):
    session, writer, flaky = _new(store, window_ms=60_000)
    flaky.fail_next = 1
    session.append("turn/start", {"turn": 1})
    with pytest.raises(CheckpointError, match="checkpoint before request failed") as err:
        await writer.checkpoint("request")
    cause = err.value.__cause__  # the awaited flush's error, and the store's error behind it
    assert isinstance(cause, WriterError) and isinstance(cause.__cause__, OSError) and cause.__cause__.errno == 28
    flaky.gate = threading.Event()
    flaky.entered = threading.Event()
    ticks = 0

    async def ticker():
        nonlocal ticks
        while not flaky.gate.is_set():
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    waiter = asyncio.create_task(writer.checkpoint("tool"))
    assert await asyncio.to_thread(flaky.entered.wait, 5)  # the retried write is in flight, held by the gate
    before = ticks
    for _ in range(5):
        await asyncio.sleep(0)
    assert not waiter.done() and ticks > before  # the loop keeps running while the flush waits
    flaky.gate.set()
    assert await waiter == 1
    await task
    await writer.aclose()
    assert store.read_from("w1", 0) == session.events


def test_close_flushes_and_the_writer_then_ignores_nothing(store):
    session, writer, _ = _new(store, window_ms=60_000, wrap=False)
    _turn(session)
    writer.close()
    assert store.read_from("w1", 0) == session.events
    writer.close()  # idempotent


def test_start_takes_the_lock_and_close_releases_it(store):
    header = make_header("w2", cwd="/work/w", created_at=1)
    session, writer = lifecycle.start(store, header)
    with pytest.raises(SessionInUseError, match=f"session w2 is in use by pid {os.getpid()}"):
        locks.acquire(store, "w2", header)
    _turn(session)
    writer.close()
    assert store.read_from("w2", 0) == session.events
    locks.acquire(store, "w2", header).release()


def test_bench_append_runs_at_tiny_size(capsys):
    from tests.bench import bench_append

    assert bench_append.main(["--turns", "1", "--paced-seconds", "0.3"]) == 0
    out = capsys.readouterr().out
    assert "events/s" in out and "rows=31 inserts=31 updates=0 deletes=0" in out


async def test_a_cancelled_checkpoint_still_completes_its_flush(store):
    session, writer, flaky = _new(store, window_ms=60_000)
    flaky.gate = threading.Event()
    session.append("turn/start", {"turn": 1})
    seen = []
    old_hook = threading.excepthook
    threading.excepthook = lambda args: seen.append(args.exc_value)
    # settling the cancelled future must not raise in the loop's callback either (InvalidStateError)
    asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: seen.append(ctx.get("exception")))
    try:
        task = asyncio.create_task(writer.checkpoint("tool"))
        assert await asyncio.to_thread(flaky.entered.wait, 5)  # the flush is writing (held by the gate)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        flaky.gate.set()
        _wait(lambda: writer.durable_length == 1)
        for _ in range(3):  # the writer thread's call_soon_threadsafe(_settle) runs on this loop
            await asyncio.sleep(0)
    finally:
        threading.excepthook = old_hook
    assert seen == []
    assert await writer.aflush() == 1
    await writer.aclose()


def test_an_event_joining_unlocked_as_a_batch_is_taken_still_gets_a_window(store):
    """Producer fast path: while a window is armed an event joins the queue without the mutex. One that read
    the armed flag just before the writer took its batch lands behind that batch with no window armed; the
    writer arms one for it (no later event, flush or close needed)."""
    session, writer, flaky = _new(store, window_ms=50)
    flaky.gate = threading.Event()
    _turn(session, chunks=5)
    assert flaky.entered.wait(5)  # the window expired: the first batch is being written
    assert writer._hot is False  # taking the batch disarmed the fast path
    writer._hot = True  # the race: this append read the flag before the take
    session.append("session/title", {"title": "late"})
    assert writer._deadline is None and writer.pending_count == len(session.events)  # the batch + this one
    flaky.gate.set()
    _wait(lambda: writer.durable_length == len(session.events), 5)
    assert flaky.attempts[1] == [len(session.events) - 1]
    assert store.read_from("w1", 0) == session.events
    writer.close()


def test_a_close_that_cannot_persist_raises_releases_the_lock_and_refuses_later_flushes(store):
    """A failed close keeps nothing alive: it raises, lets go of the session lock, stops queueing events, and
    every later barrier says the events were never written (instead of waiting for a thread that is gone)."""
    header = make_header("w3", cwd="/work/w", created_at=1)
    store.create(header)
    flaky = Flaky(store)
    session = Session(header)
    writer = SessionWriter(flaky, session, 60_000, lock=locks.acquire(store, "w3", header))
    flaky.fail_next = 99
    session.append("turn/start", {"turn": 1})
    with pytest.raises(WriterError, match="^session w3: could not persist events: .*No space left"):
        writer.close()
    locks.acquire(store, "w3", header).release()  # the lock was released all the same
    session.append("step/start", {"turn": 1, "step": 1})
    assert writer.pending_count == 1  # the closed writer took no new event
    with pytest.raises(WriterError, match="^session w3: writer is closed with unwritten events$"):
        writer.flush()
    with pytest.raises(WriterError, match="^session w3: writer is closed with unwritten events$"):
        asyncio.run(writer.aflush())
    writer.close()  # a second close does nothing (and raises nothing)


def test_a_flush_with_a_timeout_gives_up_while_the_write_hangs(store):
    session, writer, flaky = _new(store, window_ms=60_000)
    flaky.gate = threading.Event()
    session.append("turn/start", {"turn": 1})
    with pytest.raises(WriterError, match="^session w1: flush timed out$"):
        writer.flush(timeout=0.05)
    flaky.gate.set()
    assert writer.flush(timeout=30) == 1
    writer.close()


def test_a_failing_error_hook_does_not_stop_the_writer(store, caplog):
    calls = []

    def hook(err):
        calls.append(err)
        raise RuntimeError("hook broke")

    session, writer, flaky = _new(store, window_ms=10)
    writer.on_error = hook
    flaky.fail_next = 1
    session.append("turn/start", {"turn": 1})
    _wait(lambda: calls)
    assert writer.flush() == 1  # the thread survived the hook and retried the batch
    assert [r.getMessage() for r in caplog.records] == [
        "session w1: background write failed: [Errno 28] No space left on device", "writer on_error hook failed"]
    writer.close()


async def test_aflush_with_nothing_pending_returns_the_durable_length_at_once(store):
    session, writer, flaky = _new(store, window_ms=60_000)
    assert await writer.aflush() == 0 and flaky.attempts == []
    session.append("turn/start", {"turn": 1})
    assert await writer.aflush() == 1
    assert await writer.aflush() == 1 and flaky.attempts == [[0]]
    await writer.aclose()


async def test_a_writer_thread_that_dies_fails_every_barrier_instead_of_hanging(store):
    """A hook that raises on the writer thread ends it. A barrier waiting for events behind the write that
    just finished, and every later one, is told the thread is gone (nothing hangs)."""
    session, writer, flaky = _new(store, window_ms=60_000)
    died = []
    old_hook = threading.excepthook
    threading.excepthook = lambda args: died.append(args.exc_value)

    def broken(durable):
        raise RuntimeError("on_flush broke")

    writer.on_flush = broken
    flaky.gate = threading.Event()
    session.append("turn/start", {"turn": 1})
    try:
        waiter = asyncio.create_task(writer.aflush())
        assert await asyncio.to_thread(flaky.entered.wait, 5)  # [0] is being written
        session.append("step/start", {"turn": 1, "step": 1})  # behind it: the waiter waits for this one too
        flaky.gate.set()
        with pytest.raises(WriterError, match="^session w1: writer thread is gone$"):
            await waiter
        # the waiters are settled in _run's finally, before the thread's excepthook runs: wait for the thread
        await asyncio.to_thread(writer._thread.join, 5)
        assert [str(e) for e in died] == ["on_flush broke"]
        with pytest.raises(WriterError, match="^session w1: writer thread is gone$"):
            writer.flush()
        with pytest.raises(WriterError, match="^session w1: writer thread is gone$"):
            await writer.aflush()
        with pytest.raises(WriterError, match="thread is gone"):
            writer.close()
    finally:
        threading.excepthook = old_hook
    assert store.read_from("w1", 0) == session.events[:1]


async def test_aclose_and_the_with_block_flush_and_release(store):
    header = make_header("w4", cwd="/work/w", created_at=1)
    session, writer = lifecycle.start(store, header, window_ms=60_000)
    session.append("turn/start", {"turn": 1})
    await writer.aclose()  # the queued event is made durable, the lock let go
    assert store.read_from("w4", 0) == session.events
    locks.acquire(store, "w4", header).release()
    header = make_header("w5", cwd="/work/w", created_at=1)
    store.create(header)
    session = Session(header)
    with SessionWriter(store, session, 60_000) as writer:
        assert isinstance(writer, SessionWriter)
        session.append("turn/start", {"turn": 1})
    assert store.read_from("w5", 0) == session.events  # leaving the block closed (flushed) the writer
    assert writer.pending_count == 0 and writer.flush() == 1


def test_events_queued_at_construction_are_written_without_another_event(store):
    """A resumed or seeded session's events not yet stored are queued at once and written when the first
    window ends: no later event, flush or close is needed (the writer does not start paused)."""
    header = make_header("w6", cwd="/work/w", created_at=1)
    store.create(header)
    session = Session(header)
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    writer = SessionWriter(store, session, 10)
    _wait(lambda: writer.durable_length == 2)
    assert store.read_from("w6", 0) == session.events
    writer.close()


def test_an_unlocked_append_landing_as_the_writer_blocks_is_still_written(store):
    """The race the fast path leaves: an event that read the armed flag before the writer took its batch
    joins the queue without the mutex (and without a notify) just as the writer, its queue empty, goes back
    to waiting. The writer's wait after a take is bounded, so the event is still written, unprompted."""
    session, writer, flaky = _new(store, window_ms=20)
    real_wait = writer._cv.wait
    late = []

    def wait(timeout=None):  # runs on the writer thread, mutex held
        if not late and writer._durable == 1 and not writer._pending:
            late.append(timeout)
            writer._hot = True  # this producer read the flag while the window was still armed
            session.append("session/title", {"title": "late", "messageSeqs": [], "source": {"kind": "user"}})
        return real_wait(timeout)

    writer._cv.wait = wait
    session.append("turn/start", {"turn": 1})
    _wait(lambda: writer.durable_length == 2, 5)
    assert late and late[0] is not None  # the wait the late event landed in was a bounded one
    assert flaky.attempts == [[0], [1]]
    writer.close()


def test_an_event_arriving_as_close_finishes_is_not_queued_behind_it(store):
    """An event delivered after close's last flush (before it unsubscribes) is not queued on the closed
    writer: nothing is left pending, so no later barrier reports unwritten events."""
    session, writer, flaky = _new(store, window_ms=60_000)
    session.append("turn/start", {"turn": 1})
    unsubscribe = writer._unsubscribe

    def late_then_unsubscribe():
        session.append("step/start", {"turn": 1, "step": 1})
        unsubscribe()

    writer._unsubscribe = late_then_unsubscribe
    writer.close()
    assert writer.pending_count == 0 and writer.flush() == 1
    assert store.read_from("w1", 0) == session.events[:1]


def test_each_batch_s_window_starts_at_its_first_event(store, clock):
    """The window is fixed at the first event into an empty queue: an event arriving during a write starts
    the next window at its arrival (not when the write ends), and an event after an idle gap gets a whole
    window of its own (not the expired one of the batch before)."""
    session, writer, flaky = _new(store, window_ms=100)
    clock.watch(writer)
    flaky.gate = threading.Event()
    session.append("turn/start", {"turn": 1})  # t=0: window until 0.1
    clock.now += 0.1  # (no settle: the writer is about to block in the gated write, not in a wait)
    assert flaky.entered.wait(5)  # [0] is being written (held by the gate)
    clock.now += 0.02
    session.append("step/start", {"turn": 1, "step": 1})  # t=0.12: window until 0.22
    clock.now += 0.08  # the write ends at t=0.2
    flaky.gate.set()
    _wait(lambda: writer.durable_length == 1)
    clock.advance(0.03)  # t=0.23: past the second window (a window from the write's end would run to 0.3)
    _wait(lambda: writer.durable_length == 2)
    clock.advance(5)  # idle
    session.append("step/end", {"turn": 1, "step": 1})  # t=5.23: window until 5.33
    clock.advance(0.05)
    assert flaky.attempts == [[0], [1]]  # not yet: its window is its own
    clock.advance(0.06)
    _wait(lambda: writer.durable_length == 3)
    assert flaky.attempts == [[0], [1], [2]]
    writer.close()


async def test_after_a_barrier_events_wait_for_their_window_again(store, clock):
    """A flush or checkpoint writes at once; once it has returned, the next event waits for its window."""
    session, writer, flaky = _new(store, window_ms=100)
    clock.watch(writer)
    session.append("turn/start", {"turn": 1})
    assert writer.flush() == 1
    session.append("step/start", {"turn": 1, "step": 1})
    await asyncio.to_thread(clock.settle)
    assert flaky.attempts == [[0]]
    assert await writer.aflush() == 2
    session.append("step/end", {"turn": 1, "step": 1})
    await asyncio.to_thread(clock.settle)
    assert flaky.attempts == [[0], [1]]
    await asyncio.to_thread(clock.advance, 0.1)
    await asyncio.to_thread(_wait, lambda: writer.durable_length == 3)
    assert flaky.attempts == [[0], [1], [2]]
    # that write settled nothing more: the aflush() above was answered once, so the next event waits too
    session.append("step/start", {"turn": 1, "step": 2})
    await asyncio.to_thread(clock.settle)
    assert flaky.attempts == [[0], [1], [2]]
    await asyncio.to_thread(clock.advance, 0.1)
    await asyncio.to_thread(_wait, lambda: writer.durable_length == 4)
    assert flaky.attempts == [[0], [1], [2], [3]]
    await writer.aclose()


def test_flush_future_carries_the_flush_outcome(store):
    session, writer, flaky = _new(store, window_ms=60_000)
    flaky.fail_next = 1
    session.append("turn/start", {"turn": 1})
    seen = []
    old_hook = threading.excepthook
    threading.excepthook = lambda args: seen.append(args.exc_value)
    try:
        with pytest.raises(WriterError, match="No space left"):
            writer.flush_future().result(10)
        assert writer.flush_future().result(10) == 1
        writer.close()
    finally:
        threading.excepthook = old_hook
    assert seen == []  # the helper thread ended cleanly both times


def test_close_unsubscribes_and_waits_for_the_thread_before_releasing_the_lock(store):
    """close() returns with the writer detached from the session and its thread ended: the lock is let go
    only after the thread's last hook (``on_flush``) has returned."""
    session, writer, _ = _new(store, window_ms=60_000)
    gate = threading.Event()
    seen = []

    class Lock:
        def release(self):
            seen.append(writer._thread.is_alive())
            gate.set()

    def slow_hook(durable):  # runs on the writer thread after the flush close() waits for
        gate.wait(1)

    writer.lock = Lock()
    writer.on_flush = slow_hook
    session.append("turn/start", {"turn": 1})
    assert writer._on_event in session._observers
    writer.close()
    assert seen == [False]  # the hook (and the thread) had finished when the lock was released
    assert writer._on_event not in session._observers  # the session no longer feeds a closed writer
    assert store.read_from("w1", 0) == session.events


def test_events_queued_at_construction_wait_for_one_window_from_the_start(store, clock):
    """The queued events of a resumed or seeded session arm the fixed window when the writer starts: they are
    written one window later, not at once."""
    header = make_header("w7", cwd="/work/w", created_at=1)
    store.create(header)
    session = Session(header)
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    flaky = Flaky(store)
    writer = SessionWriter(flaky, session, 100)
    clock.watch(writer)
    clock.advance(0.05)
    clock.advance(0.049)
    assert flaky.attempts == [] and writer.durable_length == 0  # still inside the window
    clock.advance(0.002)
    _wait(lambda: writer.durable_length == 2)
    assert flaky.attempts == [[0, 1]] and store.read_from("w7", 0) == session.events
    writer.close()


def test_an_idle_writer_sleeps_until_notified_after_its_one_bounded_wait(store, clock):
    """After a write the writer waits once for at most a window (an unlocked append may have landed as it
    blocked), then sleeps until an event notifies it: an idle writer does not poll."""
    session, writer, flaky = _new(store, window_ms=100)
    clock.watch(writer)
    seen = []
    wait = writer._cv.wait

    def recording(timeout=None):
        seen.append((writer._durable, timeout))
        return wait(timeout)

    writer._cv.wait = recording
    session.append("turn/start", {"turn": 1})
    clock.advance(0.1)
    _wait(lambda: writer.durable_length == 1)
    for _ in range(3):
        clock.settle()  # wake it (as an unrelated notify would) three more times
    after = [timeout for durable, timeout in seen if durable == 1]
    assert after[0] == pytest.approx(0.1) and len(after) >= 4 and set(after[1:]) == {None}
    writer.close()


def test_a_failed_write_pauses_until_the_next_event_which_gets_a_whole_window(store, clock):
    """After a failed write nothing is retried on its own; the next event re-enables the retry, with a window
    of its own (not the expired one armed during the failed write)."""
    session, writer, flaky = _new(store, window_ms=100)
    clock.watch(writer)
    flaky.gate = threading.Event()
    flaky.fail_next = 1
    session.append("turn/start", {"turn": 1})  # t=0: window until 0.1
    clock.now += 0.1
    assert flaky.entered.wait(5)  # [0] is being written (held by the gate), and will fail
    session.append("step/start", {"turn": 1, "step": 1})  # t=0.1, during the write: arms a window until 0.2
    flaky.gate.set()
    _wait(lambda: writer.last_error is not None)
    clock.advance(5)  # t=5.1: paused, no retry
    assert flaky.attempts == [[0]]
    session.append("step/end", {"turn": 1, "step": 1})  # t=5.1: re-enables the retry, window until 5.2
    clock.advance(0.05)
    assert flaky.attempts == [[0]]
    clock.advance(0.06)
    _wait(lambda: writer.durable_length == 3)
    assert flaky.attempts == [[0], [0, 1, 2]] and store.read_from("w1", 0) == session.events
    writer.close()


def test_a_store_whose_append_signature_cannot_be_read_is_called_without_keywords(store):
    """A store method written in C (or behind a proxy) may have no readable signature: it is called with the
    session id and the batch alone."""

    class Unreadable:
        __signature__ = "unreadable"  # inspect.signature raises TypeError for it

        def __init__(self, fn):
            self.fn = fn

        def __call__(self, *args, **kwargs):
            assert kwargs == {}
            return self.fn(*args)

    class Store:
        def __init__(self, inner):
            self.append = Unreadable(inner.append)

    header = make_header("w8", cwd="/work/w", created_at=1)
    store.create(header)
    session = Session(header)
    writer = SessionWriter(Store(store), session, 60_000)
    session.append("turn/start", {"turn": 1})
    assert writer.flush() == 1 and store.read_from("w8", 0) == session.events
    writer.close()


def test_a_zero_timeout_flush_gives_up_at_once(store, clock):
    """flush(0) polls: with a write in flight it raises at once (the clock does not move here, so a flush
    that waited for time to pass would never return)."""
    session, writer, flaky = _new(store, window_ms=60_000)
    flaky.gate = threading.Event()
    session.append("turn/start", {"turn": 1})
    with pytest.raises(WriterError, match="^session w1: flush timed out$"):
        writer.flush(timeout=0)
    flaky.gate.set()
    assert writer.flush(timeout=0.5) == 1  # time left (the clock is still): it waits for the write
    writer.close()


def test_a_failure_after_a_success_is_reported_again(store):
    """A successful write clears the error: the next failure is a new one (reported to on_error again) and
    ``last_error`` reads None in between."""
    session, writer, flaky = _new(store, window_ms=60_000)
    reported = []
    writer.on_error = reported.append
    flaky.fail_next = 1
    session.append("turn/start", {"turn": 1})
    with pytest.raises(WriterError):
        writer.flush()
    assert writer.flush() == 1 and writer.last_error is None
    flaky.fail_next = 1
    session.append("step/start", {"turn": 1, "step": 1})
    with pytest.raises(WriterError):
        writer.flush()
    _wait(lambda: len(reported) == 2)  # the hook runs on the writer thread after the flush has been told
    assert [str(e) for e in reported] == ["[Errno 28] No space left on device"] * 2
    assert writer.flush() == 2
    writer.close()


@pytest.mark.parametrize("hung", [False, True])
def test_a_program_that_never_closes_its_writer_still_exits(tmp_path, hung):
    """The writer thread is a daemon: an unclosed writer does not keep the process alive, nor does a
    ``flush_future()`` whose write hangs (its helper thread is a daemon too)."""
    import subprocess
    import sys

    ending = ("import threading\n"
              "store.append = lambda *a, **k: threading.Event().wait()\n"
              "session.append('step/start', {'turn': 1, 'step': 1})\n"
              "fut = writer.flush_future()\n"
              "assert not fut.done()\n") if hung else ""
    script = (
        "from dsh_tui.session.headers import make_header\n"
        "from dsh_tui.session.log import Session\n"
        "from dsh_tui.store.jsonl import JsonlStore\n"
        "from dsh_tui.store.writer import SessionWriter\n"
        f"store = JsonlStore({str(tmp_path / 'root')!r}, 'none')\n"
        "header = make_header('w9', cwd='/work/w', created_at=1)\n"
        "store.create(header)\n"
        "session = Session(header)\n"
        "writer = SessionWriter(store, session, 60_000)\n"
        "session.append('turn/start', {'turn': 1})\n"
        "assert writer.flush() == 1\n"
        f"{ending}"
        "print('done')\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=20,
                          cwd=os.getcwd())
    assert proc.returncode == 0 and proc.stdout == "done\n", proc.stderr


def test_an_unlocked_append_after_a_take_still_waits_for_its_window(store, clock):
    """An event that joined the queue without the mutex as a batch was taken finds no armed window: the
    writer arms one at its next look (the event is written a window later, not at once)."""
    session, writer, flaky = _new(store, window_ms=100)
    clock.watch(writer)
    counting_wait = writer._cv.wait
    late = []

    def wait(timeout=None):  # runs on the writer thread, mutex held
        if not late and writer._durable == 1 and not writer._pending:
            late.append(timeout)
            writer._hot = True  # this producer read the flag while the window was still armed
            session.append("session/title", {"title": "late", "messageSeqs": [], "source": {"kind": "user"}})
        return counting_wait(timeout)

    writer._cv.wait = wait
    session.append("turn/start", {"turn": 1})
    clock.advance(0.1)
    _wait(lambda: late != [])
    clock.settle()
    clock.advance(0.05)
    assert flaky.attempts == [[0]]  # its window runs from the writer's look at it
    clock.advance(0.06)
    _wait(lambda: writer.durable_length == 2)
    assert flaky.attempts == [[0], [1]]
    writer.close()


def test_an_awaited_flush_names_the_session_and_the_error(store):
    session, writer, flaky = _new(store, window_ms=60_000)
    flaky.fail_next = 1
    session.append("turn/start", {"turn": 1})
    with pytest.raises(WriterError, match=r"^session w1: could not persist events: \[Errno 28\] No space left on device$"):
        asyncio.run(writer.aflush())
    assert asyncio.run(writer.aflush()) == 1
    writer.close()


def test_a_store_that_accepts_trusted_is_told_the_events_were_validated(store):
    seen = []

    class Trusting:
        def append(self, sid, events, trusted=False):
            seen.append(trusted)
            store.append(sid, events)

    header = make_header("w10", cwd="/work/w", created_at=1)
    store.create(header)
    session = Session(header)
    writer = SessionWriter(Trusting(), session, 60_000)
    session.append("turn/start", {"turn": 1})
    assert writer.flush() == 1 and seen == [True]
    writer.close()


def test_the_writer_threads_are_named_after_the_session(store):
    """Thread names show in thread dumps and in an unhandled hook error's report."""
    session, writer, flaky = _new(store, window_ms=60_000)
    flaky.gate = threading.Event()
    session.append("turn/start", {"turn": 1})
    fut = writer.flush_future()
    names = {t.name for t in threading.enumerate()}
    flaky.gate.set()
    assert fut.result(10) == 1
    assert writer._thread.name == "dsh-writer-w1" and "dsh-flush-w1" in names
    writer.close()


def test_an_event_arriving_as_a_failed_close_finishes_is_not_queued_either(store):
    """close() whose flush failed: an event that joined between that failure and close marking the writer
    closed stays (unwritten, reported); one delivered after that is not queued on the closed writer."""
    session, writer, flaky = _new(store, window_ms=60_000)
    flaky.fail_next = 100
    session.append("turn/start", {"turn": 1})
    failing_flush = writer.flush
    unsubscribe = writer._unsubscribe

    def flush_then_an_event():
        try:
            failing_flush()
        finally:
            session.append("step/start", {"turn": 1, "step": 1})  # a producer, just before close locks

    def late_then_unsubscribe():
        session.append("step/end", {"turn": 1, "step": 1})
        unsubscribe()

    writer.flush = flush_then_an_event
    writer._unsubscribe = late_then_unsubscribe
    with pytest.raises(WriterError, match="could not persist events"):
        writer.close()
    assert writer.pending_count == 2 and writer.durable_length == 0
