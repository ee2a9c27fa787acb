"""SIGTERM and SIGHUP in the app (a closed terminal, a served tab's server gone) quit as Ctrl+Q does: the running
turn is closed as aborted and every session flushed; what the sessions started ends with the process
(``dsh_tui.tools.procs``). A second signal ends the process at once — except a repeated SIGTERM in a served
tab's app: there it is the kernel's parent-death signal again (``dsh_tui.tools.procs.bind_to_parent``: one per
thread of the dying server), sent while the first quit is still closing the turn, and ending at once then lost
the turn's ``turn/end``. Such an app ends within ``BOUND_EXIT_S`` of its first signal whatever happens.

A closed terminal sends SIGHUP and SIGCONT together: Textual's SIGCONT handler (a resume after Ctrl+Z) would
restart its output on the dead terminal, and its quit would then wait forever for that output's writer, so
SIGCONT resumes only while the terminal is there. And once the sessions are flushed, a quit that a signal
started ends the process within ``SIGNAL_EXIT_GRACE_S`` whatever is left of Textual's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Any

SIGNAL_EXIT_GRACE_S = 5.0  # after a signal's quit has flushed the sessions, the process ends within this
# a served tab's app, whose repeated SIGTERMs do not end it at once, ends this long after its first signal at
# the latest: past the quit's own bounds (the harness's close, 10 s, its thread's end, 10 s, then the grace)
BOUND_EXIT_S = 30.0


def handle_exit_signals(app: Any) -> None:
    """Install the handlers on ``app`` (a ``DshApp``) from its ``on_mount``: see the module docstring."""
    import signal
    import sys
    import threading

    from dsh_tui.tools import procs

    loop = asyncio.get_running_loop()
    got: list[int] = []

    def end_now(code: int) -> None:
        procs.sweep()
        os._exit(code)

    def later(seconds: float, code: int) -> None:
        timer = threading.Timer(seconds, end_now, (code,))
        timer.daemon = True
        timer.start()

    async def quit_on_signal() -> None:
        await app.action_quit()  # the sessions are flushed when this returns
        later(SIGNAL_EXIT_GRACE_S, 0)

    def on_signal(signum: int) -> None:
        if got:
            if signum == signal.SIGTERM and procs.bound_to_parent():
                return  # the kernel's parent-death signal again: the quit under way closes the turn
            end_now(128 + got[0])
        got.append(signum)
        if procs.bound_to_parent():
            later(BOUND_EXIT_S, 128 + signum)
        app.call_later(quit_on_signal)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) != signal.SIG_IGN:
            with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
                loop.add_signal_handler(sig, on_signal, sig)
    resume = signal.getsignal(signal.SIGCONT)
    if callable(resume):
        def on_continue(signum: int, frame: Any) -> None:
            with contextlib.suppress(ValueError, OSError):
                out = sys.__stderr__  # the terminal Textual draws on
                if not got and out is not None and os.isatty(out.fileno()):  # not a hung-up terminal
                    resume(signum, frame)

        with contextlib.suppress(ValueError):
            signal.signal(signal.SIGCONT, on_continue)
