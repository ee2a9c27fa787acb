"""Model text with terminal control sequences, drawn by the real app in a pseudo-terminal (issue #26 item 5).

The answer carries an OSC 52 clipboard write, an OSC 0 window title, a clear-screen and a cursor move, plus
a surrogate pair split over two SSE chunks and a lone surrogate. None of the sequences may reach the
terminal (the bytes the app wrote are read from the pty); the text around them is shown, the pair as its
character and the lone surrogate as U+FFFD; the app keeps running and quits cleanly."""

from __future__ import annotations

from tests.llm.sse_server import ScriptServer, chunk, sse_reply
from tests.ui.pty_support import PtyApp, app_env, plain

HOSTILE = "start \x1b]52;c;aGVsbG8=\x07\x1b]0;PWNED-TITLE\x07\x1b[2J\x1b[1;1Hmiddle \x9d0;C1-TITLE\x9c split:"


def test_control_sequences_in_an_answer_never_reach_the_terminal(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    cfg = tmp_path / "cfg" / "dsh-tui"
    cfg.mkdir(parents=True)
    with ScriptServer() as srv:
        srv.push(sse_reply(chunk(HOSTILE),
                           b'data: {"choices":[{"index":0,"delta":{"content":"\\ud83d"}}]}\n\n',
                           b'data: {"choices":[{"index":0,"delta":{"content":"\\ude00 lone:\\ud83d finish"}}]}\n\n',
                           chunk(finish="stop", usage={"prompt_tokens": 3, "completion_tokens": 1})))
        (cfg / "settings.toml").write_text(f'[default]\nprovider = "local"\nmodel = "m"\n'
                                           f'[providers.local]\nbase_url = "{srv.base_url}/v1"\n')
        with PtyApp(["run", "--root", str(tmp_path / "root")], env=app_env(tmp_path), cwd=ws, rows=30,
                    cols=100) as app:
            assert app.read_until(lambda b: "Enter send" in plain(b), 60), app.plain()[-2000:]
            mark = len(app.buf)
            app.write(b"hello\r")
            assert app.read_until(lambda b: "finish" in plain(b[mark:]), 60), app.plain()[-2000:]
            app.read(0.5)  # the frames after the answer
            app.write(b"\x11")  # Ctrl+Q
            assert app.wait_exit() == 0, app.plain()[-2000:]
    out = bytes(app.buf)
    assert b"]52;" not in out and b"PWNED-TITLE" not in out and b"C1-TITLE" not in out
    assert "\x9d".encode() not in out and "\x9c".encode() not in out
    shown = plain(out[mark:])
    assert "start middle" in shown.replace("  ", " ") or ("start" in shown and "middle" in shown)
    # the pieces, not one run: under load the answer is painted over several frames, and a later frame may
    # redraw only the cells that changed
    assert all(piece in shown for piece in ("\U0001f600", "lone:", "\ufffd", "finish")), shown[-2000:]
