"""Approval keys through a real terminal (issue #26.7): the user is typing a follow-up when the approval panel
appears; what they type lands in the composer and decides nothing, until they move to the panel (Tab) and
press its key. ``dsh-tui run`` in a pseudo-terminal against a model server on 127.0.0.1, the real grace period."""

from __future__ import annotations

import json
import time

from tests.llm.sse_server import chunk, tool_call
from tests.ui.browser_support import ModelServer
from tests.ui.pty_support import PtyApp, app_env, session_events, typed

TYPED = "yes and please also run the tests"


class AsksServer(ModelServer):
    """"run the command" gets a ``bash`` call (asked about under workspace-write); then the usual answer."""

    def reply(self, body):
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        prompts = json.dumps([m.get("content") for m in messages if m.get("role") == "user"])
        # the first turn only (the queued follow-up's turn gets the usual echo)
        if last.get("role") == "user" and "run the command" in prompts and TYPED not in prompts \
                and "concise" not in json.dumps(messages)[:2000]:
            call = tool_call(0, id="call_1", name="bash",
                             args=json.dumps({"command": "echo hi > approved.txt", "description": "write"}))
            usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
            return [chunk(role="assistant", tool_calls=[call]), chunk(finish="tool_calls"),
                    chunk(no_choices=True, usage=usage)]
        return super().reply(body)


def test_typing_when_the_approval_appears_decides_nothing(tmp_path):
    ws, root = tmp_path / "ws", tmp_path / "sessions"
    ws.mkdir()
    with AsksServer() as server, PtyApp(["run", "--root", str(root)], env=app_env(tmp_path, server.base_url),
                                        cwd=ws, rows=30, cols=100) as app:
        mark = app.after(0, "Enter send")
        app.write(b"run the command\r")
        for ch in TYPED:  # a follow-up typed at once, as the app invites ("Enter queue")
            app.write(ch.encode())
            app.read(0.04)
        mark = app.after(mark, "Tab answers it")
        app.read(1.0)  # past any grace period
        assert "Approve bash?" in app.plain()
        assert not (ws / "approved.txt").exists()  # nothing was decided by the typing
        app.write(b"\r")  # Enter in the composer queues the follow-up (it does not approve)
        mark = app.after(mark, "1 queued")
        assert not (ws / "approved.txt").exists()
        app.write(b"\t")  # Tab: to the panel (deliberate)
        app.read(0.3)
        app.write(b"a")
        mark = app.after(mark, "The file says")  # the tool ran, the model answered
        assert (ws / "approved.txt").read_text() == "hi\n"
        app.asked(server, TYPED)  # then the queued follow-up was sent
        end = time.monotonic() + 30  # and is in the log ("echo" on screen could be the tool card's command)
        while len(typed(session_events(root))) < 2 and time.monotonic() < end:
            app.read(0.2)
        app.write(b"\x11")  # Ctrl+Q
        assert app.wait_exit() == 0, app.plain()[-2000:]
    events = session_events(root)
    assert [e["data"]["outcome"] for e in events if e["type"] == "approval/decided"] == ["allowed-once"]
    users = typed(events)
    assert users == ["run the command", TYPED]  # the typed follow-up, whole, queued and sent after the turn
