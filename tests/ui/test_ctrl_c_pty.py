"""Ctrl+C through a real terminal (issue #26.13): it cancels a running turn (as Esc), clears the composer while
idle, and Ctrl+Q quits. ``dsh-tui run`` in a pseudo-terminal against a model server on 127.0.0.1."""

from __future__ import annotations

from tests.ui.browser_support import ModelServer
from tests.ui.pty_support import PtyApp, app_env, session_events, typed


def test_ctrl_c_cancels_a_turn_and_clears_the_idle_composer(tmp_path):
    ws, root = tmp_path / "ws", tmp_path / "sessions"
    ws.mkdir()
    with ModelServer() as server, PtyApp(["run", "--root", str(root)], env=app_env(tmp_path, server.base_url),
                                         cwd=ws, rows=24, cols=80) as app:
        mark = app.after(0, "Enter send")
        app.write(b"keep streaming\r")  # a turn that runs until it is cancelled
        mark = app.after(mark, "still streaming")
        app.write(b"\x03")  # Ctrl+C: cancels it
        app.after(mark, "interrupted")
        # the turn has ended once the composer says "Enter send" again (a Ctrl+C before that cancels again)
        mark = app.after(mark, "Enter send")
        assert app.proc.poll() is None
        app.write(b"a draft to throw away")
        mark = app.after(mark, "throw away")
        app.write(b"\x03")  # idle: clears the composer
        mark = app.after(mark, "Composer cleared")
        app.write(b"fresh\r")  # (the server streams forever while "keep streaming" is in the history)
        mark = app.after(mark, "still streaming")
        app.write(b"\x03")
        app.after(mark, "interrupted")
        mark = app.after(mark, "Enter send")
        app.write(b"\x03")  # idle and empty: says how to quit, quits nothing
        mark = app.after(mark, "Ctrl+Q quits")
        assert app.proc.poll() is None
        app.write(b"\x11")  # Ctrl+Q
        assert app.wait_exit() == 0, app.plain()[-2000:]
    events = session_events(root)
    users = typed(events)
    assert users == ["keep streaming", "fresh"]
    ends = [e["data"]["reason"]["kind"] for e in events if e["type"] == "turn/end"]
    assert ends == ["aborted", "aborted"]  # as Esc ends a turn
