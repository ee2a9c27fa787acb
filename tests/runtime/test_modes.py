"""Issue #32: dsh's ask_user_question, plan mode (/plan, exit_plan_mode, plan/mode) and goals (create_goal,
get_goal, update_goal, /goal, goal rounds), each a built-in plugin, driven by a scripted model on a local
OpenAI-compatible server through the agent host."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from dsh_tui.llm.openai import OpenAICompatProvider
from dsh_tui.llm.registry import ModelInfo
from dsh_tui.runtime.host import AgentHost, HostSpec
from dsh_tui.session.content import tool_result_block
from tests.llm.sse_server import ScriptServer, chunk, sse_reply, tool_call

USAGE = {"prompt_tokens": 3, "completion_tokens": 1}


def _provider(srv: ScriptServer) -> OpenAICompatProvider:
    return OpenAICompatProvider("deepseek-official", srv.base_url, lambda: "sk-test",
                                {"m": ModelInfo(context_window=100_000)})


def _text(text: str):
    return sse_reply(chunk(text), chunk(finish="stop", usage=USAGE))


def _call(name: str, args: dict, call_id: str = "c1"):
    return sse_reply(chunk(tool_calls=[tool_call(0, id=call_id, name=name, args=json.dumps(args))]),
                     chunk(finish="tool_calls", usage=USAGE))


async def _open(tmp_path: Path, srv: ScriptServer, **config: Any) -> AgentHost:
    (tmp_path / "ws").mkdir(exist_ok=True)
    plugin_config = {"session-title-llm": {"enabled": False}, **config}
    return await AgentHost.open(HostSpec(root=tmp_path / "root", cwd=tmp_path / "ws", provider=_provider(srv),
                                         model="m", plugin_config=plugin_config))


async def _reopen(tmp_path: Path, srv: ScriptServer, session_id: str) -> AgentHost:
    """Resume the session ``_open`` made (as ``dsh-tui resume ID`` does)."""
    return await AgentHost.open(HostSpec(root=tmp_path / "root", cwd=None, provider=_provider(srv), model="m",
                                         resume_id=session_id,
                                         plugin_config={"session-title-llm": {"enabled": False}}))


def _tool_names(body: dict) -> list[str]:
    return [t.get("function", t).get("name") for t in body.get("tools") or []]


def _results(host: AgentHost) -> list[dict]:
    return [e["data"] for e in host.session.events if e["type"] == "tool/result"]


def _result_text(result: dict) -> str:
    return "".join(b.get("text", "") for b in tool_result_block(result["message"])["content"])


async def _turn(host: AgentHost, prompt: str) -> None:
    host.agent.followup(prompt)
    await asyncio.sleep(0)
    await asyncio.wait_for(host.agent.wait_idle(), 30)


# -- the tool list --------------------------------------------------------------------------------


async def test_headless_offers_the_goal_and_plan_tools_but_not_the_question(tmp_path):
    with ScriptServer() as srv:
        srv.push(_text("hi"))
        host = await _open(tmp_path, srv)
        try:
            await _turn(host, "hello")
        finally:
            await host.close()
    names = _tool_names(srv.requests[0]["body"])
    assert {"create_goal", "get_goal", "update_goal", "exit_plan_mode"} <= set(names)
    assert "ask_user_question" not in names  # dsh's headless profile has no answerer, and no such tool
    tools = {t["function"]["name"]: t["function"] for t in srv.requests[0]["body"]["tools"]}
    assert tools["exit_plan_mode"]["description"].startswith("Use only in plan mode. Present your plan")
    assert tools["update_goal"]["parameters"]["properties"]["action"]["enum"] == \
        ["edit", "pause", "resume", "complete", "blocked"]
    system = srv.requests[0]["body"]["messages"][0]["content"]
    assert "create_goal may infer goal intent" in system and "You are in plan mode" not in system


async def test_each_feature_can_be_turned_off(tmp_path):
    with ScriptServer() as srv:
        srv.push(_text("hi"))
        host = await _open(tmp_path, srv, **{"plan-mode": {"enabled": False}, "goal": {"enabled": False}})
        try:
            await _turn(host, "hello")
            assert host.agent.commands.get("plan") is None and host.agent.commands.get("goal") is None
        finally:
            await host.close()
    names = _tool_names(srv.requests[0]["body"])
    assert not {"create_goal", "get_goal", "update_goal", "exit_plan_mode", "ralph"} & set(names)


# -- ask_user_question ----------------------------------------------------------------------------


async def test_a_question_is_answered_by_the_answerer_and_the_model_reads_the_answer(tmp_path):
    asked: list[dict] = []

    async def answer(payload: dict, _next: Any) -> dict:
        asked.append(payload["questions"])
        return {"answers": [{"id": "db", "selected": ["Postgres"]}]}

    question = {"questions": [{"id": "db", "question": "Which database?", "header": "Choose",
                               "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]}
    with ScriptServer() as srv:
        srv.push(_call("ask_user_question", question), _text("ok"))
        host = await _open(tmp_path, srv, **{"ask-user": {"interactive": True}})
        host.agent.on("user-questions/request", answer)
        try:
            await _turn(host, "set it up")
        finally:
            await host.close()
    assert "ask_user_question" in _tool_names(srv.requests[0]["body"])
    assert asked == [[{"id": "db", "question": "Which database?", "header": "Choose",
                       "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]]
    (result,) = _results(host)
    assert _result_text(result) == '{"answers":[{"id":"db","selected":["Postgres"]}]}'
    assert srv.requests[1]["body"]["messages"][-1]["content"] == '{"answers":[{"id":"db","selected":["Postgres"]}]}'


async def test_a_question_nobody_can_answer_is_refused_with_dsh_text(tmp_path):
    question = {"questions": [{"id": "q", "question": "Go?"}]}
    with ScriptServer() as srv:
        srv.push(_call("ask_user_question", question), _text("ok"))
        host = await _open(tmp_path, srv, **{"ask-user": {"interactive": True}})
        try:
            await _turn(host, "go")
        finally:
            await host.close()
    (result,) = _results(host)
    assert _result_text(result) == "Error: no user-questions answerer accepted the request"
    assert result["error"]["code"] == "NO_PROVIDER"


# -- plan mode ------------------------------------------------------------------------------------

PLAN = "# Add a cache\n\n1. Read the code.\n2. Add it."


async def test_plan_mode_review_keep_planning_then_approve(tmp_path):
    answers = [{"answers": [{"id": "plan-review", "selected": [], "custom": "add tests"}]},
               {"answers": [{"id": "plan-review", "selected": ["Approve"]}]}]
    reviews: list[dict] = []

    async def review(payload: dict, _next: Any) -> dict:
        reviews.append(payload["questions"][0])
        return answers.pop(0)

    with ScriptServer() as srv:
        srv.push(_call("write", {"path": "x.txt", "content": "x"}, "w1"),
                 _call("exit_plan_mode", {"plan": PLAN}, "p1"),
                 _call("exit_plan_mode", {"plan": PLAN + "\n3. Test it."}, "p2"),
                 _text("carrying it out"))
        host = await _open(tmp_path, srv, **{"ask-user": {"interactive": True}})
        host.agent.on("user-questions/request", review)
        try:
            done = await host.agent.commands.run(host.agent, "/plan")
            assert done.text == "Plan mode on. Use /plan off to leave."
            await _turn(host, "add a cache")
        finally:
            await host.close()
    modes = [e["data"] for e in host.session.events if e["type"] == "plan/mode"]
    assert modes == [{"active": True}, {"active": False}]
    bodies = [r["body"] for r in srv.requests]
    assert "You are in plan mode." in bodies[0]["messages"][0]["content"]
    assert "You are in plan mode." not in bodies[3]["messages"][0]["content"]  # approved: the next step
    write, keep, approved = _results(host)
    assert _result_text(write).startswith('Error: plan mode is active: "write" can change the workspace')
    assert not (tmp_path / "ws" / "x.txt").exists()
    assert _result_text(keep) == "Error: The user chose to keep planning; their feedback: add tests"
    assert _result_text(approved) == \
        "Plan approved — plan mode exited; carry out the plan starting with your next step."
    assert reviews[0]["detail"] == PLAN and reviews[0]["intent"]["kind"] == "plan-review"
    assert [o["label"] for o in reviews[0]["options"]] == ["Approve", "Keep planning"]


async def test_a_plan_approved_just_before_quitting_is_not_lost(tmp_path):
    """The user approves the plan, is asked to approve the reply's next call (``bash``) and quits instead: the
    app closes after the approval but before the next step, where dsh logs it (its pending transition, kept in
    memory and lost at exit). Here the approval is logged at close (the last ``plan/mode`` is inactive, after
    the aborted ``turn/end``), so the resumed session is out of plan mode."""
    asked = asyncio.Event()

    async def approve(payload: dict, _next: Any) -> dict:
        return {"answers": [{"id": "plan-review", "selected": ["Approve"]}]}

    async def never_answered(payload: dict, _next: Any) -> str:
        asked.set()
        await asyncio.Event().wait()  # the user quits instead
        return "rejected"

    calls = [tool_call(0, id="p1", name="exit_plan_mode", args=json.dumps({"plan": PLAN})),
             tool_call(1, id="b1", name="bash", args=json.dumps({"command": "echo started"}))]
    with ScriptServer() as srv:
        srv.push(sse_reply(chunk(tool_calls=calls), chunk(finish="tool_calls", usage=USAGE)))
        host = await _open(tmp_path, srv, **{"ask-user": {"interactive": True}})
        host.agent.on("user-questions/request", approve)
        host.agent.on("approval/request", never_answered)
        try:
            await host.agent.commands.run(host.agent, "/plan")
            host.agent.followup("plan it, then start")
            await asyncio.wait_for(asked.wait(), 30)
            assert _result_text(_results(host)[0]).startswith("Plan approved")
        finally:
            await host.close()  # the user quits
        ends = [(e["type"], e["data"]) for e in host.session.events if e["type"] in ("plan/mode", "turn/end")]
        assert [t for t, _ in ends] == ["plan/mode", "turn/end", "plan/mode"]
        assert ends[1][1]["reason"]["kind"] == "aborted" and ends[2][1] == {"active": False}
        srv.push(_text("resumed"))
        host2 = await _reopen(tmp_path, srv, host.session.id)
        try:
            await _turn(host2, "go on")
        finally:
            await host2.close()
    assert "You are in plan mode." in srv.requests[0]["body"]["messages"][0]["content"]
    assert "You are in plan mode." not in srv.requests[-1]["body"]["messages"][0]["content"]


async def test_plan_off_during_a_turn_then_quitting_is_not_lost(tmp_path):
    """``/plan off`` during a turn waits for the next step; the app quits first: it is logged at close with its
    notice queued for the model, as a ``/plan off`` between turns is."""
    with ScriptServer() as srv:
        srv.push(sse_reply(chunk("planning"), done=False, end="stall"))
        host = await _open(tmp_path, srv)
        try:
            await host.agent.commands.run(host.agent, "/plan")
            host.agent.followup("think")
            for _ in range(1500):
                await asyncio.sleep(0.02)
                if srv.requests:
                    break
            done = await host.agent.commands.run(host.agent, "/plan off")
            assert done.text == "Leaving plan mode (applies from the next step)."
        finally:
            await host.close()
        modes = [e["data"] for e in host.session.events if e["type"] == "plan/mode"]
        assert modes == [{"active": True}, {"active": False}]
        srv.push(_text("resumed"))
        host2 = await _reopen(tmp_path, srv, host.session.id)
        try:
            await _turn(host2, "now do it")
        finally:
            await host2.close()
    last = srv.requests[-1]["body"]["messages"]
    assert "You are in plan mode." not in last[0]["content"]
    assert "The user switched this session back to the default mode." in [m.get("content") for m in last]


async def test_exit_plan_mode_outside_plan_mode_is_refused(tmp_path):
    with ScriptServer() as srv:
        srv.push(_call("exit_plan_mode", {"plan": PLAN}), _text("ok"))
        host = await _open(tmp_path, srv)
        try:
            await _turn(host, "go")
        finally:
            await host.close()
    (result,) = _results(host)
    assert _result_text(result) == "Error: exit_plan_mode is only available in plan mode"


async def test_leaving_plan_mode_is_narrated_once_the_model_saw_it(tmp_path):
    with ScriptServer() as srv:
        srv.push(_text("planning"), _text("done"))
        host = await _open(tmp_path, srv)
        try:
            await host.agent.commands.run(host.agent, "/plan")
            await _turn(host, "think")
            done = await host.agent.commands.run(host.agent, "/plan off")
            assert done.text == "Plan mode off."
            await _turn(host, "now do it")
        finally:
            await host.close()
    last = srv.requests[1]["body"]["messages"]
    texts = [m.get("content") for m in last if m["role"] == "user"]
    assert "The user switched this session back to the default mode." in texts


# -- goals ----------------------------------------------------------------------------------------


async def test_a_goal_runs_rounds_until_the_model_marks_it_complete(tmp_path, monkeypatch):
    from dsh_tui.extensions.goals import service as goal_service

    monkeypatch.setattr(goal_service, "new_goal_id", lambda: "goal-1")
    with ScriptServer() as srv:
        srv.push(_call("create_goal", {"objective": "make the tests pass", "max_goal_rounds": 5}),
                 _text("goal set"),
                 _text("round one: progress"),  # round 1 ends with work left
                 _call("update_goal", {"goal_id": "goal-1", "revision": 1, "action": "complete"}, "g3"),
                 _text("All tests pass."))  # round 2 completes it and writes the closing message
        host = await _open(tmp_path, srv)
        try:
            await _turn(host, "keep going until the tests pass")
            for _ in range(500):
                await asyncio.sleep(0.02)
                if len(srv.requests) >= 5 and host.agent.status == "idle":
                    break
            await asyncio.sleep(0.1)
            await asyncio.wait_for(host.agent.wait_idle(), 30)
        finally:
            await host.close()
    changes = [e["data"] for e in host.session.events if e["type"] == "goal/change"]
    assert [c["operation"] for c in changes] == ["create", "complete"]
    assert changes[0]["goal"]["maxGoalRounds"] == 5 and changes[0]["version"] == 1
    rounds = [e["data"]["source"] for e in host.session.events
              if e["type"] == "user/message" and e["data"]["source"]["kind"] == "goal"]
    assert [r["round"] for r in rounds] == [1, 2]
    round1 = srv.requests[2]["body"]["messages"][-1]["content"]
    assert round1.startswith('<goal_round>\nObjective: "make the tests pass"\nRound: 1/5\n\nContinue working')
    # the completing round gets dsh's closing-message context, then no more rounds
    wrap = srv.requests[4]["body"]["messages"]
    assert any(str(m.get("content", "")).startswith("<goal_complete>") for m in wrap if m["role"] == "user")
    assert len(srv.requests) == 5


async def test_a_goal_stops_at_its_round_limit(tmp_path):
    with ScriptServer() as srv:
        srv.push(_call("create_goal", {"objective": "polish", "max_goal_rounds": 2}), _text("set"),
                 _text("r1"), _text("r2"))
        host = await _open(tmp_path, srv)
        try:
            await _turn(host, "polish it as a goal")
            for _ in range(400):
                await asyncio.sleep(0.02)
                if any(e["type"] == "goal/change" and e["data"]["operation"] == "block"
                       for e in host.session.events):
                    break
            await asyncio.wait_for(host.agent.wait_idle(), 30)
        finally:
            await host.close()
    (block,) = [e["data"] for e in host.session.events
                if e["type"] == "goal/change" and e["data"]["operation"] == "block"]
    assert block["goal"]["blockedReason"] == {"code": "round-limit",
                                              "message": "Goal reached its configured limit of 2 rounds."}
    assert block["roundsStarted"] == 2 and len(srv.requests) == 4


async def test_goal_command_creates_shows_edits_and_clears(tmp_path):
    with ScriptServer() as srv:
        srv.push(_text("round one done"))
        host = await _open(tmp_path, srv, goal={"default_max_goal_rounds": 1})
        agent = host.agent
        try:
            shown = await agent.commands.run(agent, "/goal")
            assert shown.text == ("No goal is currently set.\n"
                                  "Usage: /goal [<objective>|clear|edit <objective>|pause|resume]")
            created = await agent.commands.run(agent, "/goal ship the release")
            assert created.text == ("Goal created\nStatus: active\nObjective: ship the release\nRounds: 0/1\n"
                                    "Activation: armed\nCommands: /goal edit <objective>, /goal pause, /goal clear")
            for _ in range(400):  # round 1 runs, then the goal is blocked at its limit
                await asyncio.sleep(0.02)
                if any(e["type"] == "goal/change" and e["data"]["operation"] == "block"
                       for e in host.session.events):
                    break
            await asyncio.wait_for(agent.wait_idle(), 30)
            shown = await agent.commands.run(agent, "/goal")
            assert "Status: blocked\nBlocker: round-limit: Goal reached its configured limit of 1 rounds." in shown.text
            resumed = await agent.commands.run(agent, "/goal resume")
            assert resumed.kind == "error" and resumed.text == \
                "The goal command is not valid for the current state. Run /goal to view available commands."
            again = await agent.commands.run(agent, "/goal another")
            assert again.kind == "error" and again.text.startswith("A goal is already blocked.")
            cleared = await agent.commands.run(agent, "/goal clear")
            assert cleared.text == "Goal cleared."
        finally:
            await host.close()
    ops = [e["data"]["operation"] for e in host.session.events if e["type"] == "goal/change"]
    assert ops == ["create", "block", "clear"]
    assert len(srv.requests) == 1


async def test_goal_rounds_false_keeps_the_goal_tools_but_starts_no_round(tmp_path):
    """``[plugins.goal] rounds = false``: dsh's goal + tool-goal without goal-round-driver (its headless
    goal-tools composition): the goal is created, armed and active, and the agent stays idle."""
    with ScriptServer() as srv:
        host = await _open(tmp_path, srv, goal={"rounds": False})
        agent = host.agent
        try:
            created = await agent.commands.run(agent, "/goal ship the release")
            assert "Status: active" in created.text and "Activation: armed" in created.text
            await asyncio.sleep(0.3)
            assert agent.status == "idle"
        finally:
            await host.close()
        assert srv.requests == []
    assert [e["data"]["operation"] for e in host.session.events if e["type"] == "goal/change"] == ["create"]
    from dsh_tui.extensions.goals import _config
    from dsh_tui.session.errors import DshError

    with pytest.raises(DshError, match="rounds must be true or false"):
        _config({"rounds": "no"})


async def test_the_model_cannot_create_a_goal_without_a_human_turn(tmp_path):
    with ScriptServer() as srv:
        srv.push(_call("create_goal", {"objective": "x"}), _text("ok"))
        host = await _open(tmp_path, srv)
        try:
            host.agent.followup({"role": "user", "content": [{"type": "text", "text": "notice"}],
                                 "source": {"kind": "plugin", "plugin": "x", "form": "notice"}})
            await asyncio.sleep(0)
            await asyncio.wait_for(host.agent.wait_idle(), 30)
        finally:
            await host.close()
    (result,) = _results(host)
    assert _result_text(result) == "Error: this goal operation requires a direct human turn on a top-level agent"


def test_the_timeline_and_the_transcript_name_plan_mode_goal_changes_and_rounds():
    from dsh_tui.extensions.goals import describe_goal, fold_goal
    from dsh_tui.session.timeline import summarize
    from dsh_tui.session.transcript.items import context_producer

    goal = {"id": "goal-1", "revision": 2, "objective": "ship it", "phase": "blocked", "maxGoalRounds": 3,
            "blockedReason": {"code": "round-limit", "message": "Goal reached its configured limit of 3 rounds."}}
    change = {"type": "goal/change", "data": {"kind": "goal/change", "version": 1, "operation": "block", "goal": goal,
                                              "roundsStarted": 3, "createdAt": 1, "updatedAt": 2}}
    assert summarize(change) == ("block blocked 3/3: ship it [round-limit: Goal reached its configured limit of 3 "
                                 "rounds.]")
    assert summarize({"type": "plan/mode", "data": {"active": True}}) == "plan mode on"
    assert describe_goal(fold_goal([change])) == "goal blocked 3/3"
    assert context_producer({"kind": "goal", "goalId": "goal-1", "revision": 1, "round": 2}) == "goal · round 2"


# -- ralph ----------------------------------------------------------------------------------------


async def test_ralph_is_off_by_default_and_runs_fresh_rounds_when_turned_on(tmp_path):
    cont = {"status": "continue", "summary": "half done", "evidence": [], "nextSteps": ["finish it"], "blocker": ""}
    done = {"status": "complete", "summary": "done", "evidence": ["tests pass"], "nextSteps": [], "blocker": ""}
    with ScriptServer() as srv:
        srv.push(_call("ralph", {"objective": "finish the port", "maxRounds": 3}, "r1"),
                 _call("structured_output", cont, "s1"),  # round 1's fresh child
                 _call("structured_output", done, "s2"),  # round 2's fresh child
                 _text("Ralph finished."))
        host = await _open(tmp_path, srv, ralph={"enabled": True})
        try:
            await _turn(host, "use a ralph loop to finish the port")
        finally:
            await host.close()
    bodies = [r["body"] for r in srv.requests]
    assert "ralph" in _tool_names(bodies[0])
    round1 = bodies[1]["messages"]
    assert {m["role"] for m in round1} == {"system", "user"}  # a fresh child: no parent conversation
    assert "use a ralph loop" not in json.dumps(round1)
    assert round1[1]["content"].startswith("You are one fresh worker in a foreground Ralph loop.")
    assert "Ralph round: 1 of 3." in round1[1]["content"]
    assert "(none — this is the first round)" in round1[1]["content"]
    assert '"summary":"half done"' in bodies[2]["messages"][1]["content"]  # the handoff, and only it
    (result,) = _results(host)
    assert _result_text(result) == ("Ralph worker reported completion after 2 rounds.\nFinal report:\n"
                                    + json.dumps(done, indent=2))


async def test_ralph_is_not_offered_unless_turned_on(tmp_path):
    with ScriptServer() as srv:
        srv.push(_text("hi"))
        host = await _open(tmp_path, srv)
        try:
            await _turn(host, "hello")
        finally:
            await host.close()
    assert "ralph" not in _tool_names(srv.requests[0]["body"])


async def test_cancelling_a_goal_round_pauses_the_goal(tmp_path):
    with ScriptServer() as srv:
        srv.push(_call("create_goal", {"objective": "long work"}), _text("set"),
                 sse_reply(chunk("working"), done=False, end="stall"))  # round 1 never finishes on its own
        host = await _open(tmp_path, srv)
        try:
            host.agent.followup("do the long work as a goal")  # then round 1 starts at once: no wait for idle
            for _ in range(500):
                await asyncio.sleep(0.02)
                if len(srv.requests) >= 3:
                    break
            await asyncio.sleep(0.2)
            host.agent.cancel({"kind": "user"})  # Esc in the app
            await asyncio.wait_for(host.agent.wait_idle(), 30)
            await asyncio.sleep(0.1)
        finally:
            await host.close()
    ops = [(e["data"]["operation"], e["data"]["goal"]["phase"]) for e in host.session.events
           if e["type"] == "goal/change"]
    assert ops == [("create", "active"), ("pause", "paused")]
    assert len(srv.requests) == 3  # no round after the cancelled one


async def test_a_resumed_session_keeps_plan_mode_and_its_goal_disarmed(tmp_path):
    with ScriptServer() as srv:
        srv.push(_call("create_goal", {"objective": "later"}), _text("set"),
                 sse_reply(chunk("working"), done=False, end="stall"))
        host = await _open(tmp_path, srv)
        try:
            await host.agent.commands.run(host.agent, "/plan")
            host.agent.followup("plan a goal")
            for _ in range(500):
                await asyncio.sleep(0.02)
                if len(srv.requests) >= 3:
                    break
        finally:
            await host.close()  # closing mid-round: the goal stays active in the log
        sid = host.session.id
        srv.push(_text("resumed"))
        host2 = await _reopen(tmp_path, srv, sid)
        try:
            from dsh_tui.extensions.goals import GOALS

            view = GOALS[host2.agent.id].view()
            assert view["phase"] in ("active", "paused") and view["activation"] == "disarmed"
            shown = await host2.agent.commands.run(host2.agent, "/goal")
            assert "Activation: disarmed" in shown.text
            await _turn(host2, "what now?")
            await asyncio.sleep(0.2)
        finally:
            await host2.close()
    last = srv.requests[-1]["body"]
    assert "You are in plan mode." in last["messages"][0]["content"]  # plan mode came back from the log
    assert not [m for m in last["messages"] if "<goal_round>" in str(m.get("content"))][1:]  # no new round
    assert len(srv.requests) == 4


def test_the_goal_round_and_wrapup_texts_are_the_ones_dsh_recorded():
    """dsh 0.1.1-rc.2's recorded ``goal-wrapup`` scenario: its round prompt, its closing-message context (with its
    source) and its tool results are what this plugin writes."""
    from dsh_tui.extensions.goals import _goal_value, round_prompt, wrapup_text

    path = Path(__file__).parents[1] / "fixtures/dsh/examples/acp-agent/tests/goal-snapshots/goal-wrapup"
    events = [json.loads(line) for line in (path / "session.expected.jsonl").read_text().splitlines()]
    events = [e for e in events if "type" in e]
    (create,) = [e["data"] for e in events if e["type"] == "goal/change" and e["data"]["operation"] == "create"]
    goal = create["goal"]
    users = [e["data"] for e in events if e["type"] == "user/message"]
    (rnd,) = [u for u in users if u["source"]["kind"] == "goal"]
    assert rnd["content"] == [{"type": "text", "text": round_prompt(goal, 1)}]
    assert rnd["source"] == {"kind": "goal", "goalId": goal["id"], "revision": 1, "round": 1}
    (wrap,) = [u for u in users if u["source"].get("plugin") == "tool-goal"]
    assert wrap["content"] == [{"type": "text", "text": wrapup_text(goal["objective"])}]
    assert wrap["source"] == {"kind": "plugin", "plugin": "tool-goal", "form": "notice",
                              "summary": f"complete: {goal['objective']}"}
    results = [e["data"]["message"]["content"][0]["content"][0]["text"] for e in events if e["type"] == "tool/result"]
    view = {**goal, "roundsStarted": 0, "activation": "armed"}
    assert results[0] == json.dumps(_goal_value(view), separators=(",", ":"))


async def test_a_plan_review_logs_what_dsh_recorded(tmp_path):
    """dsh's recorded ``plan-review`` session (apps/web): ``/plan <message>`` logs ``plan/mode`` inside the
    command's run/done pair with dsh's text and steers the message; the approved review's result and the
    closing ``plan/mode`` are dsh's."""
    path = Path(__file__).parents[1] / "fixtures/dsh/apps/web/tests/snapshots/plan-review/session.jsonl"
    recorded = [json.loads(line) for line in path.read_text().splitlines()]
    keep = ("plan/mode", "command/run", "command/done", "tool/call", "tool/result")

    def shape(events: list[dict]) -> list[tuple]:
        out = []
        for e in events:
            d = e.get("data") or {}
            if e.get("type") == "command/done":
                out.append(("command/done", d["kind"], d.get("text")))
            elif e.get("type") == "tool/result":
                out.append(("tool/result", tool_result_block(d["message"])["content"][0]["text"]))
            elif e.get("type") == "tool/call":
                out.append(("tool/call", d["name"]))
            elif e.get("type") in keep:
                out.append((e["type"], d.get("active", d.get("name"))))
            elif e.get("type") == "user/message" and d["source"]["kind"] == "user":
                out.append(("user/message", d["content"][0]["text"]))
        return out

    (run,) = [e["data"] for e in recorded if e.get("type") == "command/run"]
    (call,) = [e["data"] for e in recorded if e.get("type") == "tool/call"]

    async def approve(payload: dict, _next: Any) -> dict:
        return {"answers": [{"id": "plan-review", "selected": ["Approve"]}]}

    with ScriptServer() as srv:
        srv.push(_call("exit_plan_mode", json.loads(call["arguments"]), call["callId"]), _text("DONE"))
        host = await _open(tmp_path, srv, **{"ask-user": {"interactive": True}})
        host.agent.on("user-questions/request", approve)
        try:
            await host.agent.commands.run(host.agent, "/plan" + run["args"])
            await asyncio.wait_for(host.agent.wait_idle(), 30)
        finally:
            await host.close()
    assert shape(host.session.events) == shape(recorded)


async def test_a_subagent_started_in_plan_mode_is_in_plan_mode_too(tmp_path):
    with ScriptServer() as srv:
        srv.push(_call("subagent", {"description": "try", "prompt": "write x.txt", "run_in_background": False}, "s1"),
                 _call("write", {"file_path": "x.txt", "content": "x"}, "w1"),  # the child tries to write
                 _text("I could not write."),  # the child's answer
                 _text("The child could not write either."))
        host = await _open(tmp_path, srv)
        try:
            await host.agent.commands.run(host.agent, "/plan")
            await _turn(host, "delegate the write")
        finally:
            await host.close()
    assert not (tmp_path / "ws" / "x.txt").exists()
    tool_messages = [m for r in srv.requests for m in r["body"]["messages"] if m["role"] == "tool"]
    assert any('plan mode is active: "write"' in m["content"] for m in tool_messages)
    assert "You are in plan mode." in srv.requests[1]["body"]["messages"][0]["content"]  # the child's request


def test_ralph_is_turned_on_in_the_settings():
    from dsh_tui.runtime.plugins import discover

    class Settings:
        def __init__(self, table: dict) -> None:
            self.table = table

        def get(self, key: str) -> Any:
            return self.table if key == "plugins" else None

    enabled = {s.id: s.enabled for s in discover(Settings({}))}
    assert enabled["ralph"] is False and enabled["goal"] and enabled["plan-mode"] and enabled["ask-user"]
    on = {s.id: (s.enabled, s.config) for s in discover(Settings({"ralph": {"enabled": True, "max_rounds": 5},
                                                                  "goal": {"enabled": False}}))}
    assert on["ralph"] == (True, {"max_rounds": 5}) and on["goal"][0] is False
