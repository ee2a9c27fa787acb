"""SIGTERM and SIGHUP in the app (a closed terminal, a served tab's server gone) quit as Ctrl+Q does: the running
turn is closed as aborted and every session flushed; what the sessions started ends with the process
(``dsh_tui.tools.procs``). A second signal ends the process at once.

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


def handle_exit_signals(app: Any) -> None:
    """Install the handlers on ``app`` (a ``DshApp``) from its ``on_mount``: see the module docstring."""
    import signal
    import sys
    import threading

    from dsh_tui.tools import procs

    loop = asyncio.get_running_loop()
    got: list[int] = []

    async def quit_on_signal() -> None:
        await app.action_quit()  # the sessions are flushed when this returns

        def end() -> None:
            procs.sweep()
            os._exit(0)

        timer = threading.Timer(SIGNAL_EXIT_GRACE_S, end)
        timer.daemon = True
        timer.start()

    def on_signal(signum: int) -> None:
        if got:
            procs.sweep()
            os._exit(128 + got[0])
        got.append(signum)
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
