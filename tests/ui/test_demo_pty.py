"""The installed ``dsh-tui demo`` in a real pseudo-terminal: tour runs, Ctrl+Q quits cleanly."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.ui.pty_support import DSH_TUI, PtyApp, plain


def test_demo_runs_in_a_real_terminal_and_quits_cleanly(tmp_path):
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"}
    env.pop("TEXTUAL", None)
    with PtyApp(["demo", "--pace", "0", "--root", str(tmp_path / "demo")], env=env, rows=30, cols=100) as app:
        finished = app.read_until(lambda b: "This was the offline demo" in plain(b), 60)
        assert finished, app.plain()[-2000:]
        assert b"\x1b[?1049h" in app.buf  # the app took the alternate screen
        app.write(b"\x11")  # Ctrl+Q, the documented quit key
        assert app.wait_exit() == 0
        app.read(0.5)
    buf = app.buf
    tail = bytes(buf[buf.rfind(b"\x1b[?1049h"):])
    assert b"\x1b[?1049l" in tail  # alternate screen left
    assert b"\x1b[?25h" in tail  # cursor shown again
    assert "the session log and workspace are in" in plain(tail)
    # the printed command reopens the demo's sessions: its root holds them
    (reopen,) = re.findall(r"Reopen its sessions with: dsh-tui --root (\S+)", plain(tail))
    assert Path(reopen) == tmp_path / "demo" / "sessions"
    listed = subprocess.run([str(DSH_TUI), "sessions", "--all", "--json", "--root", reopen], capture_output=True,
                            text=True, env=env, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert any(r["path"].startswith(reopen) for r in json.loads(listed.stdout))
    # the real tools changed the real workspace, and the session is on disk
    workspace = tmp_path / "demo" / "workspace"
    assert "if not values:" in (workspace / "stats.py").read_text()
    assert "test_mean_of_nothing_is_zero_not_an_error" in (workspace / "test_stats.py").read_text()
    assert list((tmp_path / "demo" / "sessions").rglob("session*.jsonl*"))
    check = subprocess.run([sys.executable, "-m", "unittest", "-q"], cwd=workspace, capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_app_without_a_model_opens_and_says_how_to_configure_one(tmp_path):
    env = {**os.environ, "TERM": "xterm-256color"}
    env.pop("DEEPSEEK_API_KEY", None)
    with PtyApp([], env=env, cwd=tmp_path, rows=30, cols=100) as app:
        assert app.read_until(lambda b: "DEEPSEEK_API_KEY" in plain(b), 30), app.plain()[-2000:]
        app.write(b"\x11")
        assert app.wait_exit() == 0
    assert b"\x1b[?1049l" in bytes(app.buf[app.buf.rfind(b"\x1b[?1049h"):])
