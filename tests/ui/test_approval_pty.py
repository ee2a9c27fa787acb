"""Approval keys through a real terminal (issue #26.7): the user is typing a follow-up when the approval panel
appears; what they type lands in the composer and decides nothing, until they move to the panel (Tab) and
press its key. ``dsh-tui run`` in a pseudo-terminal against a model server on 127.0.0.1, the real grace period."""

from __future__ import annotations

import fcntl
import json
import os
import struct
import subprocess
import termios

from dsh_tui.store.open import open_store
from tests.llm.sse_server import chunk, tool_call
from tests.ui.browser_support import ModelServer
from tests.ui.test_demo_pty import _plain, _read_until
from tests.ui.test_keys_pty import DSH_TUI

TYPED = "yes and please also run the tests"


class AsksServer(ModelServer):
    """"run the command" gets a ``bash`` call (asked about under workspace-write); then the usual answer."""

    def reply(self, body):
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        prompts = json.dumps([m.get("content") for m in messages if m.get("role") == "user"])
        # the first turn only (the queued follow-up's turn gets the usual echo)
        if last.get("role") == "user" and "run the command" in prompts and TYPED not in prompts \
                and "concise" not in json.dumps(messages)[:2000]:
            call = tool_call(0, id="call_1", name="bash",
                             args=json.dumps({"command": "echo hi > approved.txt", "description": "write"}))
            usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
            return [chunk(role="assistant", tool_calls=[call]), chunk(finish="tool_calls"),
                    chunk(no_choices=True, usage=usage)]
        return super().reply(body)


def test_typing_when_the_approval_appears_decides_nothing(tmp_path):
    ws, root = tmp_path / "ws", tmp_path / "sessions"
    ws.mkdir()
    with AsksServer() as server:
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
            assert _read_until(master, buf, lambda b: text in _plain(b[mark:]), timeout), \
                (text, _plain(buf[mark:])[-3000:])
            return len(buf)

        try:
            mark = after(0, "Enter send")
            os.write(master, b"run the command\r")
            for ch in TYPED:  # a follow-up typed at once, as the app invites ("Enter queue")
                os.write(master, ch.encode())
                _read_until(master, buf, lambda b: False, 0.04)
            mark = after(mark, "Tab answers it")
            _read_until(master, buf, lambda b: False, 1.0)  # past any grace period
            assert "Approve bash?" in _plain(buf)
            assert not (ws / "approved.txt").exists()  # nothing was decided by the typing
            os.write(master, b"\r")  # Enter in the composer queues the follow-up (it does not approve)
            mark = after(mark, "1 queued")
            assert not (ws / "approved.txt").exists()
            os.write(master, b"\t")  # Tab: to the panel (deliberate)
            _read_until(master, buf, lambda b: False, 0.3)
            os.write(master, b"a")
            mark = after(mark, "The file says")  # the tool ran, the model answered
            assert (ws / "approved.txt").read_text() == "hi\n"
            mark = after(mark, "echo")  # then the queued follow-up was sent and answered
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
    assert [e["data"]["outcome"] for e in events if e["type"] == "approval/decided"] == ["allowed-once"]
    users = [e["data"]["content"][0]["text"] for e in events
             if e["type"] == "user/message" and e["data"]["source"]["kind"] == "user"]
    assert users == ["run the command", TYPED]  # the typed follow-up, whole, queued and sent after the turn
