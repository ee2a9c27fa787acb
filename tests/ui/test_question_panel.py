"""Issue #32: the question panel (ask_user_question, the plan review of exit_plan_mode) and the plan-mode key,
driven through the app with a scripted model; the panel keeps the approval panel's guard (keys typed for the
composer decide nothing)."""

from __future__ import annotations

import json

from dsh_tui.llm import scripted
from dsh_tui.session.content import tool_result_block
from dsh_tui.ui.widgets import question
from tests.ui.conftest import scripted_app, submit, wait_for

ASK = {"questions": [{"id": "db", "question": "Which database?", "header": "Choose",
                      "options": [{"label": "Postgres", "description": "the server"}, {"label": "SQLite"}]}]}
PLAN = "# Add a cache\n\n1. Read the code.\n2. Add it."


def _results(app) -> list[str]:
    return ["".join(b.get("text", "") for b in tool_result_block(e["data"]["message"])["content"])
            for e in app.bridge.harness.session.events if e["type"] == "tool/result"]


async def test_a_question_is_answered_in_the_panel(tmp_path):
    app = scripted_app(tmp_path, [scripted.call("c1", "ask_user_question", ASK), scripted.text("ok")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "set it up")
        await wait_for(pilot, lambda: app.chat.question.request is not None and app.chat.question.has_focus)
        assert not app.chat.composer.display
        assert "Which database?" in str(app.chat.question._question.render())
        await pilot.press("2", "enter")
        await wait_for(pilot, lambda: _results(app) != [])
        assert json.loads(_results(app)[0]) == {"answers": [{"id": "db", "selected": ["SQLite"]}]}
        await wait_for(pilot, lambda: app.chat.composer.display and app.chat.composer.has_focus)


async def test_typed_text_is_the_other_answer_and_esc_dismisses(tmp_path):
    app = scripted_app(tmp_path, [scripted.call("c1", "ask_user_question", ASK),
                                  scripted.call("c2", "ask_user_question", ASK), scripted.text("ok")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "set it up")
        await wait_for(pilot, lambda: app.chat.question.request is not None and app.chat.question.has_focus)
        await pilot.press(*"duckdb", "enter")
        await wait_for(pilot, lambda: len(_results(app)) == 1)
        assert json.loads(_results(app)[0]) == {"answers": [{"id": "db", "selected": [], "custom": "duckdb"}]}
        await wait_for(pilot, lambda: app.chat.question.request is not None)
        await pilot.press("escape")
        await wait_for(pilot, lambda: len(_results(app)) == 2)
        assert _results(app)[1] == "Error: the user cancelled ask_user_question"
        assert app.bridge.harness.agent.status != "aborted"


async def test_keys_typed_for_the_composer_decide_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(question, "GRACE_S", 30.0)  # every key here is "just after the panel appeared"
    app = scripted_app(tmp_path, [scripted.call("c1", "ask_user_question", ASK), scripted.text("ok")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "set it up")
        await wait_for(pilot, lambda: app.chat.question.request is not None and app.chat.question.has_focus)
        await pilot.press(*"1 and 2")
        await pilot.pause(0.1)
        assert _results(app) == [] and app.chat.question.request is not None
        assert app.chat.composer.display and app.chat.composer.has_focus
        assert app.chat.composer.text == "1 and 2"
        assert "Tab answers it" in str(app.chat.question._help.render())
        await pilot.press("tab", "1", "enter")  # deliberate: Tab to the panel, then its keys
        await wait_for(pilot, lambda: _results(app) != [])
        assert json.loads(_results(app)[0]) == {"answers": [{"id": "db", "selected": ["Postgres"]}]}


async def test_plan_mode_key_and_plan_review(tmp_path):
    app = scripted_app(tmp_path, [scripted.call("p1", "exit_plan_mode", {"plan": PLAN}),
                                  scripted.call("p2", "exit_plan_mode", {"plan": PLAN}), scripted.text("doing it")])
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await pilot.press("f8")
        await wait_for(pilot, lambda: "plan mode" in str(app.chat.status.build(200)))
        await submit(pilot, "add a cache")
        await wait_for(pilot, lambda: app.chat.question.request is not None and app.chat.question.has_focus)
        assert app.chat.question.plan_review
        await pilot.press(*"add tests", "enter")  # feedback: keep planning
        await wait_for(pilot, lambda: len(_results(app)) == 1)
        assert _results(app)[0] == "Error: The user chose to keep planning; their feedback: add tests"
        await wait_for(pilot, lambda: app.chat.question.request is not None)
        await pilot.press("1", "enter")  # approve
        await wait_for(pilot, lambda: len(_results(app)) == 2)
        assert _results(app)[1].startswith("Plan approved")
        await wait_for(pilot, lambda: "plan mode" not in str(app.chat.status.build(200)))
    modes = [e["data"] for e in app.bridge.harness.session.events if e["type"] == "plan/mode"]
    assert modes == [{"active": True}, {"active": False}]


async def test_the_goal_is_in_the_status_bar(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("round one done")])
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "/goal write the docs")
        await wait_for(pilot, lambda: "goal active" in str(app.chat.status.build(200)))
        await wait_for(pilot, lambda: any(e["type"] == "turn/end" and e["data"]["turn"] == 2
                                          for e in app.bridge.harness.session.events))  # round 1 (then 2)
        await wait_for(pilot, lambda: app.bridge.harness.agent.status == "idle")
        assert any(f"goal active {n}/256" in str(app.chat.status.build(200)) for n in (1, 2))
        await submit(pilot, "/goal clear")
        await wait_for(pilot, lambda: "goal" not in str(app.chat.status.build(200)))


async def test_a_multi_select_answer_with_a_note_is_what_dsh_recorded(tmp_path):
    """dsh's recorded ``question-composer`` session (apps/web): a multi-select question answered with one option
    and a typed note gives exactly that tool result."""
    from pathlib import Path

    path = Path(__file__).parents[1] / "fixtures/dsh/apps/web/tests/snapshots/question-composer/session.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines()]
    (call,) = [e["data"] for e in events if e.get("type") == "tool/call"]
    (result,) = [e["data"] for e in events if e.get("type") == "tool/result"]
    app = scripted_app(tmp_path, [scripted.call(call["callId"], "ask_user_question", json.loads(call["arguments"])),
                                  scripted.text("DONE")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "ask me")
        await wait_for(pilot, lambda: app.chat.question.request is not None and app.chat.question.has_focus)
        assert "[ ] 1. Blue" in str(app.chat.question._options.render())
        await pilot.press("1", *"Include accessibility notes", "enter")
        await wait_for(pilot, lambda: _results(app) != [])
    assert _results(app)[0] == result["content"][0]["text"]


async def test_a_paste_into_the_panel_is_the_typed_answer(tmp_path):
    from textual import events

    app = scripted_app(tmp_path, [scripted.call("c1", "ask_user_question", ASK), scripted.text("ok")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "set it up")
        await wait_for(pilot, lambda: app.chat.question.request is not None and app.chat.question.has_focus)
        app.chat.question.post_message(events.Paste("duck\ndb"))
        await pilot.pause(0.1)
        assert app.chat.question._other.value == "duck db" and app.chat.composer.text == ""
        await pilot.press("enter")
        await wait_for(pilot, lambda: _results(app) != [])
    assert json.loads(_results(app)[0]) == {"answers": [{"id": "db", "selected": [], "custom": "duck db"}]}
