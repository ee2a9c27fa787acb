"""Issue #26 item 4 / #37 item 4: the app in a real terminal quits as Ctrl+Q does on SIGTERM and on SIGHUP (the
terminal closed): the running turn is closed as aborted in the log, the terminal is restored, exit 0. Before,
the default action killed it mid-turn: an open turn in the log and its commands left running."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.ui.browser_support import ModelServer
from tests.ui.pty_support import PtyApp, app_env, plain, session_events


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_the_app_quits_cleanly_on_a_signal_mid_turn(tmp_path, sig):
    ws, root = tmp_path / "ws", tmp_path / "sessions"
    ws.mkdir()
    with ModelServer() as server, PtyApp(["run", "--root", str(root)], env=app_env(tmp_path, server.base_url),
                                         cwd=ws, rows=30, cols=100) as app:
        assert app.read_until(lambda b: "Enter send" in plain(b), 30), app.plain()[-2000:]
        app.write(b"keep streaming\r")  # a turn that runs until it is cancelled
        app.request(server, lambda r: "keep streaming" in str(r), what="with the prompt")
        app.read_until(lambda b: "still streaming" in plain(b), 30)
        os.kill(app.proc.pid, sig)
        deadline = time.monotonic() + 60
        while app.proc.poll() is None and time.monotonic() < deadline:
            app.read(0.1)
        assert app.proc.poll() == 0, (app.proc.returncode, app.plain()[-2000:])
    events = session_events(root)
    ends = [e["data"]["reason"] for e in events if e["type"] == "turn/end"]
    assert len(ends) == 1 and ends[0]["kind"] == "aborted", ends


def test_the_app_ends_when_its_terminal_is_closed(tmp_path):
    """A closed terminal (``tmux kill-session``, a closed window): the kernel hangs the terminal up and sends its
    session SIGHUP and SIGCONT together. Textual's SIGCONT handler took that for a resume from Ctrl+Z and
    restarted its output on the dead terminal, whose writer died at once; the quit then waited forever for that
    writer, so the app outlived its terminal (holding its session). Now it quits as on SIGHUP: the turn is closed
    as aborted and the process ends."""
    import fcntl
    import subprocess
    import termios

    from tests.ui.pty_support import DSH_TUI

    ws, root = tmp_path / "ws", tmp_path / "sessions"
    ws.mkdir()

    def take_terminal() -> None:  # the app leads a session whose controlling terminal is the pty, as in a shell
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    with ModelServer() as server:
        master, slave = os.openpty()
        proc = subprocess.Popen([str(DSH_TUI), "run", "--root", str(root)], cwd=ws,
                                env=app_env(tmp_path, server.base_url), stdin=slave, stdout=slave, stderr=slave,
                                preexec_fn=take_terminal, close_fds=True)
        os.close(slave)
        buf = bytearray()
        try:
            from tests.ui.pty_support import read_until

            assert read_until(master, buf, lambda b: "Enter send" in plain(b), 30), plain(buf)[-2000:]
            os.write(master, b"keep streaming\r")
            assert read_until(master, buf, lambda b: "still streaming" in plain(b), 30), plain(buf)[-2000:]
        finally:
            os.close(master)  # the terminal goes away
        try:
            code = proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
            raise AssertionError("the app outlived its closed terminal") from None
        assert code in (0, 1, 128 + signal.SIGHUP), code  # 1: its last writes met the closed terminal
    events = session_events(root)
    ends = [e["data"]["reason"] for e in events if e["type"] == "turn/end"]
    assert len(ends) == 1 and ends[0]["kind"] == "aborted", ends
