"""``/undo`` in a real pseudo-terminal (issue #31's journey): ``dsh-tui run`` against a model server on
127.0.0.1; turn 1's command changes a.txt and creates c.txt, turn 2's write tool creates b.txt; ``/undo``
removes b.txt (a.txt stays as turn 1 left it), ``/undo 1`` puts a.txt back and removes c.txt."""

from __future__ import annotations

import time

from tests.llm.sse_server import ScriptServer
from tests.runtime.test_undo import _answer, _call
from tests.ui.pty_support import PtyApp, app_env

BASH = {"command": "printf 'changed by turn 1\\n' > a.txt && echo c > c.txt", "description": "change a, make c"}


def test_undo_journey_in_a_terminal(tmp_path):
    ws, root = tmp_path / "ws", tmp_path / "sessions"
    ws.mkdir()
    (ws / "a.txt").write_text("original a\n")
    with ScriptServer() as srv:
        env = app_env(tmp_path)
        cfg = tmp_path / "cfg" / "dsh-tui"
        cfg.mkdir(parents=True)
        (cfg / "settings.toml").write_text(
            f'[default]\nprovider = "local"\nmodel = "m"\n[providers.local]\nbase_url = "{srv.base_url}/v1"\n'
            '[plugins.session-title-llm]\nenabled = false\n')
        srv.push(_call("bash", BASH, "c1"), _answer("turn one done"),
                 _call("write", {"file_path": "b.txt", "content": "b from turn 2\n"}, "c2"), _answer("turn two done"))
        with PtyApp(["run", "--root", str(root), "--preset", "full-access"], env=env, cwd=ws, rows=30,
                    cols=100) as app:
            mark = app.after(0, "Enter send")
            app.write(b"change a, make c\r")
            mark = app.after(mark, "turn one done")
            app.write(b"make b\r")
            # the turn's answer and its footer come in one frame, in no set order: both looked for from here
            app.after(mark, "turn two done")
            mark = app.after(mark, "changed b.txt (new)")  # the turn footer
            app.write(b"/undo\r")  # one burst: Enter runs what was typed, not the list's earlier match
            mark = app.after(mark, "Put these files back?")
            app.write(b"y\r")  # typed on, as for the composer, before the choices take the focus: no answer
            app.read(1.0)  # the grace is over
            assert (ws / "b.txt").exists()
            app.write(b"\x1b[A")  # up: from Cancel to Undo
            app.read(0.3)
            app.write(b"\r")
            mark = app.after(mark, "put back")
            assert not (ws / "b.txt").exists()
            assert (ws / "a.txt").read_text() == "changed by turn 1\n" and (ws / "c.txt").exists()
            app.write(b"\x15/undo 1")  # Ctrl+U clears the "y" left in the composer
            app.read(0.5)
            app.write(b"\r")
            mark = app.after(mark, "Put these files back?")
            app.read(1.0)
            app.write(b"\x1b[A")
            app.read(0.3)
            app.write(b"\r")
            end = time.monotonic() + 20
            while (ws / "c.txt").exists() and time.monotonic() < end:
                app.read(0.2)
            assert (ws / "a.txt").read_text() == "original a\n" and not (ws / "c.txt").exists()
            app.write(b"\x11")
            assert app.wait_exit() == 0, app.plain()[-2000:]
