"""Queued prompts survive Ctrl+Q (issue #26.10): quitting with follow-ups queued keeps them (a private file
per session), says so, and ``dsh-tui resume`` puts them back in the composer. ``dsh-tui run`` and ``resume``
in a pseudo-terminal against a model server on 127.0.0.1."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

from dsh_tui.store.open import open_store
from tests.ui.browser_support import ModelServer
from tests.ui.pty_support import PtyApp, app_env, typed


def _drive(args: list[str], cwd: Path, env: dict, script) -> str:
    with PtyApp(args, env=env, cwd=cwd, rows=24, cols=80) as app:
        script(app)
        assert app.wait_exit() == 0, app.plain()[-2000:]
        app.read(0.3)  # what it printed after leaving the screen
    return app.plain()


def test_queued_prompts_survive_quit_and_come_back_on_resume(tmp_path):
    ws, root = tmp_path / "ws", tmp_path / "sessions"
    ws.mkdir()
    data = tmp_path / "data"
    with ModelServer() as server:
        env = app_env(tmp_path, server.base_url)

        def first(app):
            mark = app.after(0, "Enter send")
            app.write(b"keep streaming\r")  # a turn that runs until the app quits
            mark = app.after(mark, "still streaming")
            app.write(b"queued one\r")
            mark = app.after(mark, "1 queued")
            app.write(b"queued two\r")
            mark = app.after(mark, "2 queued")
            app.write(b"\x11")  # Ctrl+Q with two prompts queued

        out = _drive(["run", "--root", str(root)], ws, env, first)
        assert "2 queued prompts kept" in out, out[-1500:]
        (header,) = open_store(root).list()
        kept = list((data / "dsh-tui" / "pending").glob("*.json"))
        assert len(kept) == 1 and stat.S_IMODE(kept[0].stat().st_mode) == 0o600
        assert "queued one" in kept[0].read_text()

        def second(app):
            app.after(0, "back in the composer")
            app.write(b"\r")  # Enter sends them
            end = time.monotonic() + 30
            while not any("queued two" in json.dumps(r.get("messages")) for r in list(server.requests)):
                assert time.monotonic() < end, "the restored prompts were never sent"
                time.sleep(0.05)
            app.write(b"\x11")

        _drive(["resume", header["id"], "--root", str(root)], ws, env, second)
    assert not list((data / "dsh-tui" / "pending").glob("*.json"))  # taken
    events = open_store(root).inspect(header["id"]).events
    users = typed(events)
    assert users[-1] == "queued one\n\nqueued two", (users, [e["type"] for e in events][-30:])
