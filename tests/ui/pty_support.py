"""The installed ``dsh-tui`` in a real pseudo-terminal, for the ``*_pty`` tests.

``PtyApp`` starts ``dsh-tui ARGS`` on a pty of a given size and reads what it draws into ``buf``; ``after``
waits for a text drawn after a mark, ``asked`` / ``request`` for a request at the model server, ``wait_exit``
for the process to end. Leaving the ``with`` block kills a process still running and closes the pty."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

from dsh_tui.store.open import open_store

ANSI = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]")
DSH_TUI = Path(sys.executable).parent / "dsh-tui"
API_KEY = "sk-pty-0123456789abcdef"


def read_until(fd: int, buf: bytearray, predicate, timeout: float) -> bool:
    """Read ``fd`` into ``buf`` until ``predicate(buf)`` holds (True) or ``timeout`` seconds pass or the
    other end is closed (then what ``predicate`` says)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return predicate(buf)
            if not data:
                return predicate(buf)
            buf.extend(data)
        if predicate(buf):
            return True
    return predicate(buf)


def plain(buf: bytes) -> str:
    """The text of terminal output, escape sequences removed."""
    return ANSI.sub(b"", bytes(buf)).decode("utf-8", "replace")


def user_texts(request: dict) -> list[str]:
    """The texts of the user messages in a chat-completions request body."""
    out = []
    for m in request.get("messages") or []:
        if m.get("role") == "user":
            content = m.get("content")
            out.append(content if isinstance(content, str) else "".join(p.get("text", "") for p in content))
    return out


def session_events(root: Path) -> list[dict]:
    """The events of the one session under ``root``."""
    store = open_store(root)
    (header,) = store.list()
    return store.inspect(header["id"]).events


def typed(events: list[dict]) -> list[str]:
    """The texts the user sent (not the app's own messages), in order."""
    return [e["data"]["content"][0]["text"] for e in events
            if e["type"] == "user/message" and e["data"]["source"]["kind"] == "user"]


def app_env(tmp_path: Path, base_url: str | None = None, **extra: str) -> dict[str, str]:
    """The environment of an app under test: its home and XDG folders under ``tmp_path``; with ``base_url``,
    a DeepSeek key and that server as the provider."""
    env = {**os.environ, "TERM": "xterm-256color", "DSH_HOME": str(tmp_path / "home"),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_DATA_HOME": str(tmp_path / "data"),
           "XDG_STATE_HOME": str(tmp_path / "state")}
    if base_url is not None:
        env.update(DEEPSEEK_API_KEY=API_KEY, DEEPSEEK_BASE_URL=base_url)
    env.update(extra)
    env.pop("TEXTUAL", None)
    return env


class PtyApp:
    """``dsh-tui ARGS`` in a pseudo-terminal of ``rows`` x ``cols``; a context manager."""

    def __init__(self, args: list[str], *, env: dict[str, str], cwd: Path | None = None, rows: int = 30,
                 cols: int = 100) -> None:
        self.args, self.env, self.cwd, self.size = [str(DSH_TUI), *args], env, cwd, (rows, cols)
        self.buf = bytearray()
        self.master = -1
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> PtyApp:
        self.master, slave = os.openpty()
        try:
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *self.size, 0, 0))
            self.proc = subprocess.Popen(self.args, cwd=self.cwd, stdin=slave, stdout=slave, stderr=slave,
                                         env=self.env, start_new_session=True, close_fds=True)
        except BaseException:
            os.close(self.master)
            raise
        finally:
            os.close(slave)
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(10)
        finally:
            os.close(self.master)

    def read_until(self, predicate: Callable[[bytearray], bool], timeout: float) -> bool:
        return read_until(self.master, self.buf, predicate, timeout)

    def read(self, seconds: float) -> None:
        """Read what the app draws for ``seconds``."""
        read_until(self.master, self.buf, lambda b: False, seconds)

    def plain(self, start: int = 0) -> str:
        return plain(self.buf[start:])

    def write(self, data: bytes) -> None:
        os.write(self.master, data)

    def after(self, mark: int, text: str, timeout: float = 30) -> int:
        """Wait until ``text`` is drawn after byte ``mark``; returns the new mark."""
        assert self.read_until(lambda b: text in plain(b[mark:]), timeout), (text, plain(self.buf[mark:])[-3000:])
        return len(self.buf)

    def request(self, server, match: Callable[[dict], bool], timeout: float = 30, what: str = "") -> dict:
        """The first request at ``server`` (its ``requests`` list) that ``match`` accepts, waited for while
        reading the terminal."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for request in list(server.requests):
                if match(request):
                    return request
            self.read(0.1)
        raise AssertionError(f"no request {what}: {server.requests} {plain(self.buf)[-1500:]}")

    def asked(self, server, text: str, timeout: float = 30) -> dict:
        """The first turn request (not a title request) with a user message containing ``text``."""
        return self.request(server, lambda r: any(text in t for t in user_texts(r)) and "title" not in str(r)[:400],
                            timeout, f"asked {text!r}")

    def wait_exit(self, timeout: float = 20) -> int:
        """Read until the process ends (``timeout`` seconds at most), then its exit code (waiting 10 s more)."""
        assert self.proc is not None
        self.read_until(lambda b: self.proc.poll() is not None, timeout)
        return self.proc.wait(10)
