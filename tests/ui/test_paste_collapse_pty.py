"""A long paste shows collapsed (issue #26.14): 401 pasted lines show as ``[Pasted text #1 +401 lines]`` in the
composer and the model gets all of them. Through a real terminal (bracketed paste), against a model server on
127.0.0.1; F2 (expand) is checked with the app's pilot."""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import termios
import time

from textual import events

from dsh_tui.llm import scripted
from tests.ui.browser_support import ModelServer
from tests.ui.conftest import scripted_app, wait_for
from tests.ui.test_demo_pty import _plain, _read_until
from tests.ui.test_keys_pty import DSH_TUI, _user_texts

LOG = "\n".join(f"log line {i}" for i in range(401))


def test_a_long_paste_is_collapsed_and_sent_whole(tmp_path):
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
            os.write(master, b"look at this: ")
            os.write(master, f"\x1b[200~{LOG}\x1b[201~".encode())
            mark = after(mark, "[Pasted text #1 +401 lines]")
            assert "log line 5" not in _plain(buf[mark - 2000:])
            os.write(master, b"\r")
            end = time.monotonic() + 30
            while not any(LOG in "".join(_user_texts(r)) for r in list(server.requests)):
                assert time.monotonic() < end, "the paste was never sent whole"
                _read_until(master, buf, lambda b: False, 0.1)
            request = next(r for r in server.requests if LOG in "".join(_user_texts(r)))
            assert _user_texts(request)[0] == "look at this: " + LOG
            os.write(master, b"\x11")
            _read_until(master, buf, lambda b: proc.poll() is not None, 20)
            assert proc.wait(10) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            os.close(master)


async def test_f2_expands_a_collapsed_paste_and_a_short_paste_stays_as_it_is(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("ok")])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        composer = app.chat.composer
        app.post_message(events.Paste("one\ntwo"))
        await wait_for(pilot, lambda: composer.text == "one\ntwo")
        app.post_message(events.Paste(LOG))
        await wait_for(pilot, lambda: composer.text == "one\ntwo[Pasted text #1 +401 lines]")
        await pilot.press("f2")
        assert composer.text == "one\ntwo" + LOG
