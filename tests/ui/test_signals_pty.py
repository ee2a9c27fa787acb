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
