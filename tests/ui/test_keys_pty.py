"""Keys and paste through a real terminal (issue #14: 1, 3, 4): ``dsh-tui run`` in a pseudo-terminal against a
scripted model server on 127.0.0.1, fed the bytes a terminal sends — a bracketed paste, Enter, Ctrl+Down, ``s``,
Ctrl+S, Esc, Ctrl+Q — so the terminal parser, the bindings and the focus are the real ones. What arrived is read
from the model's requests and the session log after the app has quit."""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from dsh_tui.store.open import open_store
from tests.ui.browser_support import ModelServer
from tests.ui.test_demo_pty import _plain, _read_until

DSH_TUI = Path(sys.executable).parent / "dsh-tui"
PASTE = "line one\nline two\nline three"


def _user_texts(request: dict) -> list[str]:
    out = []
    for m in request.get("messages") or []:
        if m.get("role") == "user":
            content = m.get("content")
            out.append(content if isinstance(content, str) else "".join(p.get("text", "") for p in content))
    return out


def test_paste_queue_steer_and_focus_through_a_real_terminal(tmp_path):
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

        def after(mark: int, text: str, timeout: float = 30) -> int:
            """Wait until ``text`` is drawn after byte ``mark``; returns the new mark."""
            assert _read_until(master, buf, lambda b: text in _plain(b[mark:]), timeout), \
                (text, _plain(buf[mark:])[-3000:])
            return len(buf)

        def asked(text: str, timeout: float = 30) -> dict:
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                for request in list(server.requests):
                    if any(text in t for t in _user_texts(request)) and "title" not in str(request)[:400]:
                        return request
                _read_until(master, buf, lambda b: False, 0.1)
            raise AssertionError(f"no request asked {text!r}: {server.requests} {_plain(buf)[-1500:]}")

        try:
            mark = after(0, "Enter send")
            os.write(master, f"\x1b[200~{PASTE}\x1b[201~".encode())  # a bracketed paste of three lines
            mark = after(mark, "line three")
            os.write(master, b"\r")
            request = asked("line one")
            assert _user_texts(request)[0] == PASTE  # whole, once
            mark = after(mark, "echo")
            os.write(master, b"keep streaming\r")  # a turn that runs until it is cancelled
            asked("keep streaming")
            mark = after(mark, "Ctrl+S steer")  # the composer says how to steer while a turn runs
            os.write(master, b"queued one\r")  # Enter queues
            mark = after(mark, "queued one")
            os.write(master, b"\x1b[1;5B")  # Ctrl+Down: the queue, its first message highlighted
            mark = after(mark, "s steer now")
            os.write(master, b"s")  # steers the highlighted message; the focus comes back to the composer
            mark = after(mark, "Ctrl+S steer")
            os.write(master, b"steer two")  # typed into the composer
            mark = after(mark, "steer two")
            os.write(master, b"\x13")  # Ctrl+S (flow control is off in the app's raw mode)
            _read_until(master, buf, lambda b: False, 1.0)
            os.write(master, b"\x1b")  # Esc cancels the turn
            mark = after(mark, "interrupted")
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
    assert users[:2] == [PASTE, "keep streaming"]
    steers = [m["content"][0]["text"] for e in events if e["type"] == "agent/inbox/spliced"
              and e["data"]["target"] == "next-step" for m in e["data"].get("inserted", [])]
    assert steers == ["queued one", "steer two"]
