"""Ctrl+C through a real terminal (issue #26.13): it cancels a running turn (as Esc), clears the composer while
idle, and Ctrl+Q quits. ``dsh-tui run`` in a pseudo-terminal against a model server on 127.0.0.1."""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import termios

from dsh_tui.store.open import open_store
from tests.ui.browser_support import ModelServer
from tests.ui.test_demo_pty import _plain, _read_until
from tests.ui.test_keys_pty import DSH_TUI


def test_ctrl_c_cancels_a_turn_and_clears_the_idle_composer(tmp_path):
    ws, root = tmp_path / "ws", tmp_path / "sessions"
    ws.mkdir()
    with ModelServer() as server:
        env = {**os.environ, "TERM": "xterm-256color", "DSH_HOME": str(tmp_path / "home"),
               "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_DATA_HOME": str(tmp_path / "data"),
               "XDG_STATE_HOME": str(tmp_path / "state"), "DEEPSEEK_API_KEY": "sk-pty-0123456789abcdef",
               "DEEPSEEK_BASE_URL": server.base_url}
        env.pop("TEXTUAL", None)
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        proc = subprocess.Popen([str(DSH_TUI), "run", "--root", str(root)], cwd=ws, stdin=slave, stdout=slave,
                                stderr=slave, env=env, start_new_session=True, close_fds=True)
        os.close(slave)
        buf = bytearray()

        def after(mark: int, text: str, timeout: float = 30) -> int:
            assert _read_until(master, buf, lambda b: text in _plain(b[mark:]), timeout), \
                (text, _plain(buf[mark:])[-3000:])
            return len(buf)

        try:
            mark = after(0, "Enter send")
            os.write(master, b"keep streaming\r")  # a turn that runs until it is cancelled
            mark = after(mark, "still streaming")
            os.write(master, b"\x03")  # Ctrl+C: cancels it
            mark = after(mark, "interrupted")
            assert proc.poll() is None
            os.write(master, b"a draft to throw away")
            mark = after(mark, "throw away")
            os.write(master, b"\x03")  # idle: clears the composer
            mark = after(mark, "Composer cleared")
            os.write(master, b"fresh\r")  # (the server streams forever while "keep streaming" is in the history)
            mark = after(mark, "still streaming")
            os.write(master, b"\x03")
            mark = after(mark, "interrupted")
            os.write(master, b"\x03")  # idle and empty: says how to quit, quits nothing
            mark = after(mark, "Ctrl+Q quits")
            assert proc.poll() is None
            os.write(master, b"\x11")  # Ctrl+Q
            _read_until(master, buf, lambda b: proc.poll() is not None, 20)
            assert proc.wait(10) == 0, _plain(buf)[-2000:]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            os.close(master)
    store = open_store(root)
    (header,) = store.list()
    events = store.inspect(header["id"]).events
    users = [e["data"]["content"][0]["text"] for e in events
             if e["type"] == "user/message" and e["data"]["source"]["kind"] == "user"]
    assert users == ["keep streaming", "fresh"]
    ends = [e["data"]["reason"]["kind"] for e in events if e["type"] == "turn/end"]
    assert ends == ["aborted", "aborted"]  # as Esc ends a turn
