"""A long paste shows collapsed (issue #26.14): 401 pasted lines show as ``[Pasted text #1 +401 lines]`` in the
composer and the model gets all of them. Through a real terminal (bracketed paste), against a model server on
127.0.0.1; F2 (expand) is checked with the app's pilot."""

from __future__ import annotations

from textual import events

from dsh_tui.llm import scripted
from tests.ui.browser_support import ModelServer
from tests.ui.conftest import scripted_app, wait_for
from tests.ui.pty_support import PtyApp, app_env, user_texts

LOG = "\n".join(f"log line {i}" for i in range(401))


def test_a_long_paste_is_collapsed_and_sent_whole(tmp_path):
    ws, root = tmp_path / "ws", tmp_path / "sessions"
    ws.mkdir()
    with ModelServer() as server, PtyApp(["run", "--root", str(root)], env=app_env(tmp_path, server.base_url),
                                         cwd=ws, rows=24, cols=80) as app:
        mark = app.after(0, "Enter send")
        app.write(b"look at this: ")
        app.write(f"\x1b[200~{LOG}\x1b[201~".encode())
        mark = app.after(mark, "[Pasted text #1 +401 lines]")
        assert "log line 5" not in app.plain(mark - 2000)
        app.write(b"\r")
        request = app.request(server, lambda r: LOG in "".join(user_texts(r)), what="with the paste whole")
        assert user_texts(request)[0] == "look at this: " + LOG
        app.write(b"\x11")
        assert app.wait_exit() == 0


async def test_f2_expands_a_collapsed_paste_and_a_short_paste_stays_as_it_is(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("ok")])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        composer = app.chat.composer
        app.post_message(events.Paste("one\ntwo"))
        await wait_for(pilot, lambda: composer.text == "one\ntwo")
        app.post_message(events.Paste(LOG))
        await wait_for(pilot, lambda: composer.text == "one\ntwo[Pasted text #1 +401 lines]")
        await pilot.press("f2")
        assert composer.text == "one\ntwo" + LOG
