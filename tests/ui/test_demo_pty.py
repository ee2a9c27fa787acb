"""The installed ``dsh-tui demo`` in a real pseudo-terminal: tour runs, Ctrl+Q quits cleanly."""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

ANSI = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]")
DSH_TUI = Path(sys.executable).parent / "dsh-tui"


def _read_until(fd: int, buf: bytearray, predicate, timeout: float) -> bool:
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


def _plain(buf: bytes) -> str:
    return ANSI.sub(b"", bytes(buf)).decode("utf-8", "replace")


def test_demo_runs_in_a_real_terminal_and_quits_cleanly(tmp_path):
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"}
    env.pop("TEXTUAL", None)
    proc = subprocess.Popen([str(DSH_TUI), "demo", "--pace", "0", "--root", str(tmp_path / "demo")],
                            stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True,
                            close_fds=True)
    os.close(slave)
    buf = bytearray()
    try:
        finished = _read_until(master, buf, lambda b: "This was the offline demo" in _plain(b), 60)
        assert finished, _plain(buf)[-2000:]
        assert b"\x1b[?1049h" in buf  # the app took the alternate screen
        os.write(master, b"\x11")  # Ctrl+Q, the documented quit key
        _read_until(master, buf, lambda b: proc.poll() is not None, 20)
        assert proc.wait(10) == 0
        _read_until(master, buf, lambda b: False, 0.5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    tail = bytes(buf[buf.rfind(b"\x1b[?1049h"):])
    assert b"\x1b[?1049l" in tail  # alternate screen left
    assert b"\x1b[?25h" in tail  # cursor shown again
    assert "the session log and workspace are in" in _plain(tail)
    # the printed command reopens the demo's sessions: its root holds them
    (reopen,) = re.findall(r"Reopen its sessions with: dsh-tui --root (\S+)", _plain(tail))
    assert Path(reopen) == tmp_path / "demo" / "sessions"
    listed = subprocess.run([str(DSH_TUI), "sessions", "--all", "--json", "--root", reopen], capture_output=True,
                            text=True, env=env, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert any(r["path"].startswith(reopen) for r in json.loads(listed.stdout))
    # the real tools changed the real workspace, and the session is on disk
    workspace = tmp_path / "demo" / "workspace"
    assert "if not values:" in (workspace / "stats.py").read_text()
    assert "test_mean_of_nothing_is_zero_not_an_error" in (workspace / "test_stats.py").read_text()
    assert list((tmp_path / "demo" / "sessions").rglob("session.jsonl*"))
    check = subprocess.run([sys.executable, "-m", "unittest", "-q"], cwd=workspace, capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_app_without_a_model_opens_and_says_how_to_configure_one(tmp_path):
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color"}
    env.pop("DEEPSEEK_API_KEY", None)
    proc = subprocess.Popen([str(DSH_TUI)], cwd=tmp_path, stdin=slave, stdout=slave, stderr=slave, env=env,
                            start_new_session=True, close_fds=True)
    os.close(slave)
    buf = bytearray()
    try:
        assert _read_until(master, buf, lambda b: "DEEPSEEK_API_KEY" in _plain(b), 30), _plain(buf)[-2000:]
        os.write(master, b"\x11")
        _read_until(master, buf, lambda b: proc.poll() is not None, 20)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    assert b"\x1b[?1049l" in bytes(buf[buf.rfind(b"\x1b[?1049h"):])
