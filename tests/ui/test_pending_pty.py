"""Queued prompts survive Ctrl+Q (issue #26.10): quitting with follow-ups queued keeps them (a private file
per session), says so, and ``dsh-tui resume`` puts them back in the composer. ``dsh-tui run`` and ``resume``
in a pseudo-terminal against a model server on 127.0.0.1."""

from __future__ import annotations

import fcntl
import json
import os
import stat
import struct
import subprocess
import termios
import time
from pathlib import Path

from dsh_tui.store.open import open_store
from tests.ui.browser_support import ModelServer
from tests.ui.test_demo_pty import _plain, _read_until
from tests.ui.test_keys_pty import DSH_TUI


def _drive(args: list[str], cwd: Path, env: dict, script) -> str:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen([str(DSH_TUI), *args], cwd=cwd, stdin=slave, stdout=slave, stderr=slave, env=env,
                            start_new_session=True, close_fds=True)
    os.close(slave)
    buf = bytearray()

    def after(mark: int, text: str, timeout: float = 30) -> int:
        assert _read_until(master, buf, lambda b: text in _plain(b[mark:]), timeout), (text, _plain(buf[mark:])[-3000:])
        return len(buf)

    try:
        script(master, after)
        _read_until(master, buf, lambda b: proc.poll() is not None, 20)
        _read_until(master, buf, lambda b: False, 0.3)  # what it printed after leaving the screen
        assert proc.wait(10) == 0, _plain(buf)[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return _plain(buf)


def test_queued_prompts_survive_quit_and_come_back_on_resume(tmp_path):
    ws, root = tmp_path / "ws", tmp_path / "sessions"
    ws.mkdir()
    data = tmp_path / "data"
    with ModelServer() as server:
        env = {**os.environ, "TERM": "xterm-256color", "DSH_HOME": str(tmp_path / "home"),
               "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_DATA_HOME": str(data),
               "XDG_STATE_HOME": str(tmp_path / "state"), "DEEPSEEK_API_KEY": "sk-pty-0123456789abcdef",
               "DEEPSEEK_BASE_URL": server.base_url}
        env.pop("TEXTUAL", None)

        def first(master, after):
            mark = after(0, "Enter send")
            os.write(master, b"keep streaming\r")  # a turn that runs until the app quits
            mark = after(mark, "still streaming")
            os.write(master, b"queued one\r")
            mark = after(mark, "1 queued")
            os.write(master, b"queued two\r")
            mark = after(mark, "2 queued")
            os.write(master, b"\x11")  # Ctrl+Q with two prompts queued

        out = _drive(["run", "--root", str(root)], ws, env, first)
        assert "2 queued prompts kept" in out, out[-1500:]
        (header,) = open_store(root).list()
        kept = list((data / "dsh-tui" / "pending").glob("*.json"))
        assert len(kept) == 1 and stat.S_IMODE(kept[0].stat().st_mode) == 0o600
        assert "queued one" in kept[0].read_text()

        def second(master, after):
            after(0, "back in the composer")
            os.write(master, b"\r")  # Enter sends them
            end = time.monotonic() + 30
            while not any("queued two" in json.dumps(r.get("messages")) for r in list(server.requests)):
                assert time.monotonic() < end, "the restored prompts were never sent"
                time.sleep(0.05)
            os.write(master, b"\x11")

        _drive(["resume", header["id"], "--root", str(root)], ws, env, second)
    assert not list((data / "dsh-tui" / "pending").glob("*.json"))  # taken
    events = open_store(root).inspect(header["id"]).events
    users = [e["data"]["content"][0]["text"] for e in events
             if e["type"] == "user/message" and e["data"]["source"]["kind"] == "user"]
    assert users[-1] == "queued one\n\nqueued two", (users, [e["type"] for e in events][-30:])
