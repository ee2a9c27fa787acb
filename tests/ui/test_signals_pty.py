"""Issue #26 item 4 / #37 item 4: the app in a real terminal quits as Ctrl+Q does on SIGTERM and on SIGHUP (the
terminal closed): the running turn is closed as aborted in the log, the terminal is restored, exit 0. Before,
the default action killed it mid-turn: an open turn in the log and its commands left running."""

from __future__ import annotations

import fcntl
import os
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from dsh_tui.store.open import open_store
from tests.ui.browser_support import ModelServer
from tests.ui.test_demo_pty import _plain, _read_until

DSH_TUI = Path(sys.executable).parent / "dsh-tui"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_the_app_quits_cleanly_on_a_signal_mid_turn(tmp_path, sig):
    ws, root = tmp_path / "ws", tmp_path / "sessions"
    ws.mkdir()
    with ModelServer() as server:
        env = {**os.environ, "TERM": "xterm-256color", "DSH_HOME": str(tmp_path / "home"),
               "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_DATA_HOME": str(tmp_path / "data"),
               "XDG_STATE_HOME": str(tmp_path / "state"), "DEEPSEEK_API_KEY": "sk-pty-0123456789abcdef",
               "DEEPSEEK_BASE_URL": server.base_url}
        env.pop("TEXTUAL", None)
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        proc = subprocess.Popen([str(DSH_TUI), "run", "--root", str(root)], cwd=ws, stdin=slave, stdout=slave,
                                stderr=slave, env=env, start_new_session=True, close_fds=True)
        os.close(slave)
        buf = bytearray()
        try:
            assert _read_until(master, buf, lambda b: "Enter send" in _plain(b), 30), _plain(buf)[-2000:]
            os.write(master, b"keep streaming\r")  # a turn that runs until it is cancelled
            end = time.monotonic() + 30
            while not any("keep streaming" in str(r) for r in server.requests):
                assert time.monotonic() < end, _plain(buf)[-2000:]
                _read_until(master, buf, lambda b: False, 0.1)
            _read_until(master, buf, lambda b: "still streaming" in _plain(b), 30)
            os.kill(proc.pid, sig)
            deadline = time.monotonic() + 60
            while proc.poll() is None and time.monotonic() < deadline:
                _read_until(master, buf, lambda b: False, 0.1)
            assert proc.poll() == 0, (proc.returncode, _plain(buf)[-2000:])
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
            os.close(master)
    store = open_store(root)
    (header,) = store.list()
    events = store.inspect(header["id"]).events
    ends = [e["data"]["reason"] for e in events if e["type"] == "turn/end"]
    assert len(ends) == 1 and ends[0]["kind"] == "aborted", ends
