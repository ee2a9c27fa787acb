"""Issue #32: the question panel through a real terminal. The user is typing a follow-up when the model's
``ask_user_question`` appears: what they type lands in the composer and answers nothing, until they move to the
panel (Tab) and choose. Then a plan review: F8 enters plan mode, the plan is approved with 1 + Enter.
``dsh-tui run`` in a pseudo-terminal against a model server on 127.0.0.1, the real grace period."""

from __future__ import annotations

import json

from dsh_tui.session.content import tool_result_block
from tests.llm.sse_server import chunk, tool_call
from tests.ui.browser_support import ModelServer
from tests.ui.pty_support import PtyApp, app_env, session_events

TYPED = "and also the cache"
USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
ASK = {"questions": [{"id": "db", "header": "Database", "question": "Which database?",
                      "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]}
PLAN = "# Cache plan\n\n1. Add the cache."


class AsksServer(ModelServer):
    def reply(self, body):
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        humans = [m for m in messages if m.get("role") == "user" and "runtime context" not in json.dumps(m)[:80]]
        prompt = json.dumps(humans[-1].get("content")) if humans else ""
        if "concise" in json.dumps(messages)[:2000]:
            return super().reply(body)
        for word, name, args in (("pick a database", "ask_user_question", ASK),
                                 ("make a plan", "exit_plan_mode", {"plan": PLAN})):
            if last.get("role") == "user" and word in prompt and TYPED not in prompt:
                call = tool_call(0, id=f"call_{name}", name=name, args=json.dumps(args))
                return [chunk(role="assistant", tool_calls=[call]), chunk(finish="tool_calls"),
                        chunk(no_choices=True, usage=USAGE)]
        if last.get("role") == "tool":
            return [chunk(role="assistant", content="Answer: " + str(last.get("content"))[:80]),
                    chunk(finish="stop"), chunk(no_choices=True, usage=USAGE)]
        return super().reply(body)


def _results(root) -> list[str]:
    return ["".join(b.get("text", "") for b in tool_result_block(e["data"]["message"])["content"])
            for e in session_events(root) if e["type"] == "tool/result"]


def test_typing_when_a_question_appears_answers_nothing_then_a_plan_review(tmp_path):
    ws, root = tmp_path / "ws", tmp_path / "sessions"
    ws.mkdir()
    with AsksServer() as server, PtyApp(["run", "--root", str(root)], env=app_env(tmp_path, server.base_url),
                                        cwd=ws, rows=30, cols=100) as app:
        mark = app.after(0, "Enter send")
        app.write(b"pick a database\r")
        for ch in TYPED:  # typed at once, for the composer
            app.write(ch.encode())
            app.read(0.04)
        mark = app.after(mark, "Which database?")
        app.read(1.0)  # past the grace period
        assert "Tab answers it" in app.plain() and TYPED in app.plain()  # the typing stayed in the composer
        assert "Answer: " not in app.plain()  # and answered nothing
        app.write(b"\t")  # deliberate: to the panel
        app.read(0.3)
        app.write(b"2")
        app.read(0.2)
        app.write(b"\r")
        mark = app.after(mark, "Answer: ")
        app.write(b"\x15")  # Ctrl+U: clear what was typed
        app.read(0.3)
        app.write(b"\x1b[19~")  # F8: plan mode on
        mark = app.after(mark, "plan mode")
        app.write(b"make a plan\r")
        mark = app.after(mark, "Keep planning")
        app.read(1.0)
        app.write(b"1")
        app.read(0.2)
        app.write(b"\r")
        mark = app.after(mark, "Plan approved")
        # plan mode is left at the next step's boundary (dsh's pending transition): the next step's answer
        # quotes the approval (text never drawn before: a redraw of the first "Answer: " is no proof)
        app.after(mark, "Answer: Plan approved")
        app.write(b"\x11")  # Ctrl+Q
        assert app.wait_exit() == 0, app.plain()[-2000:]
    results = _results(root)
    assert json.loads(results[0]) == {"answers": [{"id": "db", "selected": ["SQLite"]}]}
    assert results[1].startswith("Plan approved")
    events = session_events(root)
    modes = [e["data"] for e in events if e["type"] == "plan/mode"]
    assert modes == [{"active": True}, {"active": False}]
    # logged at the boundary: after the approval's step, before the next step's request
    order = [(e["type"], e["data"]) for e in events if e["type"] in ("plan/mode", "step/start", "step/end")]
    leave = order.index(("plan/mode", {"active": False}))
    assert order[leave - 1:leave + 2:2] == [("step/end", {"turn": 2, "step": 1}), ("step/start", {"turn": 2, "step": 2})]
