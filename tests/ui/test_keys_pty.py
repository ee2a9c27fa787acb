"""Keys and paste through a real terminal (issue #14: 1, 3, 4): ``dsh-tui run`` in a pseudo-terminal against a
scripted model server on 127.0.0.1, fed the bytes a terminal sends — a bracketed paste, Enter, Ctrl+Down, ``s``,
Ctrl+S, Esc, Ctrl+Q — so the terminal parser, the bindings and the focus are the real ones. What arrived is read
from the model's requests and the session log after the app has quit."""

from __future__ import annotations

from tests.ui.browser_support import ModelServer
from tests.ui.pty_support import PtyApp, app_env, session_events, typed, user_texts

PASTE = "line one\nline two\nline three"


def test_paste_queue_steer_and_focus_through_a_real_terminal(tmp_path):
    ws, root = tmp_path / "ws", tmp_path / "sessions"
    ws.mkdir()
    with ModelServer() as server, PtyApp(["run", "--root", str(root)], env=app_env(tmp_path, server.base_url),
                                         cwd=ws, rows=30, cols=100) as app:
        mark = app.after(0, "Enter send")
        app.write(f"\x1b[200~{PASTE}\x1b[201~".encode())  # a bracketed paste of three lines
        mark = app.after(mark, "line three")
        app.write(b"\r")
        request = app.asked(server, "line one")
        assert user_texts(request)[0] == PASTE  # whole, once
        mark = app.after(mark, "echo")
        app.write(b"keep streaming\r")  # a turn that runs until it is cancelled
        app.asked(server, "keep streaming")
        mark = app.after(mark, "Ctrl+S steer")  # the composer says how to steer while a turn runs
        app.write(b"queued one\r")  # Enter queues
        mark = app.after(mark, "queued one")
        app.write(b"\x1b[1;5B")  # Ctrl+Down: the queue, its first message highlighted
        mark = app.after(mark, "s steer now")
        app.write(b"s")  # steers the highlighted message; the focus comes back to the composer
        mark = app.after(mark, "Ctrl+S steer")
        app.write(b"steer two")  # typed into the composer
        mark = app.after(mark, "steer two")
        app.write(b"\x13")  # Ctrl+S (flow control is off in the app's raw mode)
        app.read(1.0)
        app.write(b"\x1b")  # Esc cancels the turn
        mark = app.after(mark, "interrupted")
        app.write(b"\x11")  # Ctrl+Q
        assert app.wait_exit() == 0, app.plain()[-2000:]
    events = session_events(root)
    users = typed(events)
    assert users[:2] == [PASTE, "keep streaming"]
    steers = [m["content"][0]["text"] for e in events if e["type"] == "agent/inbox/spliced"
              and e["data"]["target"] == "next-step" for m in e["data"].get("inserted", [])]
    assert steers == ["queued one", "steer two"]


def test_a_prompt_typed_while_the_app_starts_is_sent_and_the_terminal_is_given_back(tmp_path):
    """Type-ahead: ``dsh-tui run`` ⏎ and the prompt ⏎ at once, before the first frame. The keys used to go to the
    transcript (the first focusable widget, focused before the composer's ``focus()`` ran) and be lost, and an
    Enter typed before the app's raw mode arrived as Ctrl+J (a newline): now the prompt is sent, once, and the
    terminal's line mode is back after the app quits."""
    import termios
    import time

    ws, root = tmp_path / "ws", tmp_path / "sessions"
    ws.mkdir()
    with ModelServer() as server, PtyApp(["run", "--root", str(root)], env=app_env(tmp_path, server.base_url),
                                         cwd=ws, rows=30, cols=100) as app:
        # the moment the process has left the terminal's line mode (long before its first frame), as a person
        # types on after ``dsh-tui run`` ⏎ (keys the shell's line mode already read are the shell's)
        deadline = time.monotonic() + 30
        while termios.tcgetattr(app.master)[3] & termios.ICANON and time.monotonic() < deadline:
            time.sleep(0.002)
        app.write(b"typed ahead\r")
        request = app.asked(server, "typed ahead")
        assert user_texts(request)[0] == "typed ahead"
        mark = app.after(0, "echo")
        app.write(b"\x11")  # Ctrl+Q
        assert app.wait_exit() == 0, app.plain(mark)[-2000:]
        lflag = termios.tcgetattr(app.master)[3]
        assert lflag & termios.ICANON and lflag & termios.ECHO
    assert typed(session_events(root)) == ["typed ahead"]


def test_the_terminal_leaves_line_mode_at_once_and_gets_it_back_at_exit(tmp_path):
    """``dsh_tui.cli._hold_type_ahead`` (called before the app's imports): an Enter typed from then on reaches
    the app as CR (Enter), not as the NL that line mode makes of it (Ctrl+J, a newline in the composer), and
    is not echoed; at exit the terminal's own mode is back."""
    import fcntl
    import os
    import struct
    import subprocess
    import sys
    import termios
    import time

    child = ("import os, sys, time\nfrom dsh_tui.cli import _hold_type_ahead\n_hold_type_ahead()\n"
             "print('HELD', flush=True)\ntime.sleep(0.5)\nsys.stdout.write(repr(os.read(0, 100)) + '\\n')\n")
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen([sys.executable, "-c", child], stdin=slave, stdout=slave, stderr=slave,
                            start_new_session=True)
    os.close(slave)
    try:
        out = bytearray()
        deadline = time.monotonic() + 30
        while b"HELD" not in out and time.monotonic() < deadline:
            out += os.read(master, 1000)
        os.write(master, b"hi\r")
        while b"'" not in out[out.index(b"HELD"):] and time.monotonic() < deadline:
            out += os.read(master, 1000)
        assert proc.wait(30) == 0
        after = out[out.index(b"HELD") + 4:]
        assert b"b'hi\\r'" in after and b"hi\r\n" not in after, bytes(out)  # CR kept, nothing echoed
        lflag = termios.tcgetattr(master)[3]
        assert lflag & termios.ICANON and lflag & termios.ECHO
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
