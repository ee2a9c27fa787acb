"""The driver of a served tab's app (``dsh-tui serve`` sets ``TEXTUAL_DRIVER`` to it): Textual's web driver,
which talks to the server over the app's stdin and stdout, plus what it lacks when the server goes away.

Textual's own driver takes the server's end of the pipes closing badly: stdin at EOF is ignored (the app
runs on, holding its session), and a write to the closed stdout raises in the middle of a refresh, whose
error handling writes again (a bell) and raises again, leaving the app half stopped, with no quit begun;
its shutdown then raised before the unmount that flushes the sessions (only a quit already under way, on
the kernel's signal, had flushed them). Here either end closing is a hang-up: nothing more is written,
and the app is sent SIGTERM, which quits it as Ctrl+Q does (``dsh_tui.ui.exit_signals``: the running turn
is closed as aborted, every session flushed). On Linux the kernel's parent-death signal usually says the
same first (``dsh_tui.tools.procs.bind_to_parent``); a served app takes a repeated SIGTERM as the same quit.
"""

from __future__ import annotations

import os
import signal
import threading

from textual.drivers.web_driver import WebDriver


class ServedDriver(WebDriver):
    """``WebDriver`` that takes the server's end of stdin or stdout closing as a hang-up (module docstring)."""

    _hung_up = False
    _hangup_lock = threading.Lock()

    def write(self, data: str) -> None:
        if not self._hung_up:
            try:
                super().write(data)
            except OSError:  # EPIPE: the server is gone
                self.hang_up()

    def write_meta(self, data: dict[str, object]) -> None:
        if not self._hung_up:
            try:
                super().write_meta(data)
            except OSError:
                self.hang_up()

    def write_binary_encoded(self, data: tuple[str | bytes, ...]) -> None:
        if not self._hung_up:
            try:
                super().write_binary_encoded(data)
            except OSError:
                self.hang_up()

    def run_input_thread(self) -> None:
        super().run_input_thread()
        if not self.exit_event.is_set():  # stdin ended before the app stopped: the server is gone
            self.hang_up()

    def hang_up(self) -> None:
        """Write nothing more, and quit the app as on SIGTERM (once)."""
        with self._hangup_lock:
            if self._hung_up:
                return
            self._hung_up = True
        os.kill(os.getpid(), signal.SIGTERM)
