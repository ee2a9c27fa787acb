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
