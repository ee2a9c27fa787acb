"""Notifications when the terminal is not focused (``[ui] notify``, dsh_tui/ui/notify.py), in a real terminal:
``dsh-tui run`` in a pseudo-terminal against a model server on 127.0.0.1; the terminal's focus reports
(``CSI O`` out, ``CSI I`` in) are written to the app as a terminal would."""

from __future__ import annotations

import re

from dsh_tui.ui.notify import Notifier, protocol, sequence
from tests.cli.sandbox_support import BashServer, cmd_prompt
from tests.ui.pty_support import PtyApp, app_env

OSC = re.compile(rb"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
FOCUS_OUT, FOCUS_IN = b"\x1b[O", b"\x1b[I"


def bells(raw: bytes) -> int:
    """Bells that are not the end of an OSC sequence."""
    return OSC.sub(b"", raw).count(b"\x07")


def start(tmp_path, server, *args: str, **env: str) -> PtyApp:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    run_env = app_env(tmp_path, None, **env)
    run_env.update(DEEPSEEK_API_KEY="sk-pty-0123456789abcdef", DEEPSEEK_BASE_URL=server.base_url)
    return PtyApp(["run", "--root", str(tmp_path / "sessions"), *args], env=run_env, cwd=ws, rows=30, cols=110)


def test_a_turn_that_ends_while_the_terminal_is_not_focused_notifies(tmp_path):
    with BashServer() as server, start(tmp_path, server, "--preset", "full-access", TERM_PROGRAM="iTerm.app") as app:
        mark = app.after(0, "Enter send")
        app.write(cmd_prompt("echo one").encode() + b"\r")
        mark = app.after(mark, "RESULT: one")
        app.read(0.5)
        assert b"\x1b]9;" not in bytes(app.buf)  # focused: nothing
        app.write(cmd_prompt("sleep 1; echo two").encode() + b"\r")
        app.read(0.2)
        app.write(FOCUS_OUT)  # the user switched to another window
        mark = app.after(mark, "RESULT: two")
        app.read(0.5)
        assert bytes(app.buf).count(b"\x1b]9;dsh-tui: the turn finished\x07") == 1
        app.write(FOCUS_IN + b"\x11")
        assert app.wait_exit() == 0


def test_an_approval_waiting_while_unfocused_rings_the_bell(tmp_path):
    with BashServer() as server, start(tmp_path, server, "--sandbox", "off") as app:  # TERM=xterm-256color
        mark = app.after(0, "Enter send")
        app.write(cmd_prompt("sleep 0; echo hi").encode() + b"\r")
        app.write(FOCUS_OUT)
        before = len(app.buf)
        mark = app.after(mark, "Approve bash?")
        app.read(0.5)
        assert bells(bytes(app.buf[before:])) == 1
        app.write(FOCUS_IN)
        app.read(1.0)
        app.write(b"r")  # reject: the turn ends while focused, no second bell
        mark = app.after(mark, "RESULT:")
        app.read(0.3)
        assert bells(bytes(app.buf[before:])) == 1
        app.write(b"\x11")
        assert app.wait_exit() == 0


def test_notify_off_and_the_protocols():
    written: list[str] = []
    Notifier("off", lambda: False, written.append)("x")
    Notifier("auto", lambda: True, written.append)("x")
    assert written == []
    Notifier("bell", lambda: False, written.append, {"TERM_PROGRAM": "iTerm.app"})("x")
    Notifier("auto", lambda: False, written.append, {"VTE_VERSION": "7600"})("bash; waits\x07")
    assert written == ["\x07", "\x1b]777;notify;dsh-tui;bash; waits \x07"]
    assert protocol({"TERM": "xterm-kitty"}) == "osc9" and protocol({"TERM_PROGRAM": "iTerm.app", "TMUX": "1"}) == \
        "bell" and protocol({"TERM": "xterm-256color"}) == "bell"
    assert sequence("osc9", "dsh-tui", "done") == "\x1b]9;dsh-tui: done\x07"
