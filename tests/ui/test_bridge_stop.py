"""``Bridge.stop`` called twice at once — the quit on SIGTERM closes the harness in a worker thread while the
app's unmount (its output crashed: a served tab's server was SIGKILLed) calls it again on the UI thread. The
second call used to find the harness already closing (its ``close`` returns at once the second time) and stop
the loop under the first close, so the running turn never got its ``turn/end``."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

from dsh_tui.ui.bridge import Bridge


class SlowClose:
    """A harness whose ``close`` takes a while (a turn being aborted, a writer flushing) and, as the real one,
    returns at once when called again."""

    def __init__(self) -> None:
        self.session = SimpleNamespace(header={"id": "s"}, events=[], subscribe=lambda _fn: lambda: None)
        self.closing = threading.Event()
        self.closed = False
        self._started = False

    async def close(self) -> None:
        if self._started:
            return
        self._started = True
        self.closing.set()
        await asyncio.sleep(0.5)
        self.closed = True  # the turn's end written, the writer closed


def test_a_second_stop_waits_for_the_first_and_never_cuts_its_close_short():
    bridge = Bridge(lambda _kind: None)
    harness = SlowClose()

    async def factory(_bridge):
        return harness

    bridge.start(factory).result(10)
    bridge.harness = harness
    first = threading.Thread(target=bridge.stop)
    first.start()
    assert harness.closing.wait(10)
    bridge.stop()  # the unmount's call, while the first close runs
    assert harness.closed, "the second stop ended the loop under the first close"
    first.join(10)
    assert not first.is_alive() and harness.closed
