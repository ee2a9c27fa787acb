"""Turn control below the UI: permission modes logged as dsh logs them, a rejection's reason reaching the model,
/retry, /model with an effort, and a resumed session keeping its model and mode (real store, real host)."""

from __future__ import annotations

import json

from dsh_tui.llm import scripted
from dsh_tui.llm.scripted import ScriptedProvider
from dsh_tui.runtime import permissions
from dsh_tui.runtime.host import AgentHost, HostSpec
from dsh_tui.runtime.turns import failed_prompt, fork_before_turn, prompts
from dsh_tui.store.open import open_store
from dsh_tui.tools import builtin_tools
from tests.runtime.helpers import make_agent, of_type


def _shapes(agent, start=0):
    return [(e["type"], e["data"]) for e in agent.session.events[start:]
            if e["type"] in ("permission/preset", "sandbox/mode", "approval/policy")]


async def test_permission_logs_dsh_event_shapes_and_tools_honour_it_at_once(tmp_path):
    """dsh's /permission appends permission/preset, sandbox/mode, approval/policy with its names (the
    headless-profile and turn-tail-actions fixtures); the next call is decided under the new mode."""
    agent = make_agent([scripted.call("c1", "write", {"file_path": "a.txt", "content": "x"}), scripted.text("done")],
                       builtin_tools(), tmp_path=tmp_path, preset="full-access")
    res = await agent.commands.run(agent, "/permission read-only")
    assert res.kind == "success"
    assert _shapes(agent) == [("permission/preset", {"preset": "read-only"}), ("sandbox/mode", {"mode": "read-only"}),
                              ("approval/policy", {"policy": "ask"})]
    n = len(agent.session.events)
    await agent.commands.run(agent, "/permission danger-full-access")
    assert _shapes(agent, n) == [("permission/preset", {"preset": "danger-full-access"}),
                                 ("sandbox/mode", {"mode": "danger-full-access"}),
                                 ("approval/policy", {"policy": "never"})]
    assert agent.config.approval_policy == "never"
    await agent.commands.run(agent, "/permission workspace-write")
    assert agent.config.preset == "workspace-write" and agent.config.approval_policy == "ask"
    await agent.commands.run(agent, "/permission read-only")
    agent.followup("write a")  # read-only: the write asks; nobody answers -> unavailable, nothing written
    await agent.wait_idle()
    assert of_type(agent, "approval/asked") and not (tmp_path / "a.txt").exists()
    # the fold dsh applies (last sandbox/mode, last approval/policy)
    assert permissions.logged_mode(agent.session.events) == ("read-only", "ask")


async def test_a_rejection_reason_reaches_the_model_in_the_tool_result(tmp_path):
    agent = make_agent([scripted.call("c1", "bash", {"command": "rm -rf build", "description": "clean"}),
                        scripted.text("ok")], builtin_tools(), tmp_path=tmp_path, preset="workspace-write")
    agent.on("approval/request", lambda p, _n=None: {"outcome": "rejected", "reason": "use make clean instead"})
    agent.followup("clean up")
    await agent.wait_idle()
    assert [e["data"]["outcome"] for e in of_type(agent, "approval/decided")] == ["rejected"]
    assert set(of_type(agent, "approval/decided")[0]["data"]) == {"id", "outcome"}  # dsh's shape
    result = of_type(agent, "tool/result")[0]["data"]["message"]["content"][0]
    assert result["isError"] and result["content"][0]["text"] == (
        'Error: the user rejected tool "bash". The user\'s reason: use make clean instead')
    # the next request carries it
    second = agent.provider.requests[-1]
    assert "use make clean instead" in json.dumps(second["messages"])
    # without a reason: dsh's exact text
    assert permissions.rejection_text("bash", "  ") == 'the user rejected tool "bash"'


def test_allowances_cover_the_exact_bash_command_or_the_exact_arguments():
    allow = permissions.SessionAllowances()
    allow.add("bash", json.dumps({"command": "make test", "description": "run the tests"}))
    assert allow.covers("bash", json.dumps({"command": "make test", "description": "again"}))
    assert not allow.covers("bash", json.dumps({"command": "make test; rm -rf /", "description": "x"}))
    allow.add("write", json.dumps({"file_path": "/tmp/x", "content": "a"}))
    assert allow.covers("write", json.dumps({"content": "a", "file_path": "/tmp/x"}))
    assert not allow.covers("write", json.dumps({"file_path": "/tmp/x", "content": "b"}))
    assert permissions.allowance_label("bash", '{"command": "ls"}') == "this command"


async def test_retry_resends_the_failed_prompt_and_refuses_otherwise(tmp_path):
    agent = make_agent([scripted.finish_error("SERVER", "boom", status=500), scripted.text("second time lucky")],
                       tmp_path=tmp_path, retry=False)
    assert (await agent.commands.run(agent, "/retry")).kind == "error"  # nothing failed yet
    agent.followup("fix the bug")
    await agent.wait_idle()
    assert failed_prompt(agent.session.events) == "fix the bug"
    res = await agent.commands.run(agent, "/retry")
    assert res.kind == "success" and res.action == {"kind": "retry"}
    await agent.wait_idle()
    ps = prompts(agent.session.events)
    assert [(p.turn, p.text, p.ended) for p in ps] == [(1, "fix the bug", "error"), (2, "fix the bug", "completed")]
    assert failed_prompt(agent.session.events) is None
    assert (await agent.commands.run(agent, "/retry")).kind == "error"


async def test_model_with_effort_is_checked_and_logged_in_the_next_request_header(tmp_path):
    from dsh_tui.llm.protocol import ModelInfo

    class Provider(ScriptedProvider):
        def resolve_model(self, model):
            return ModelInfo(context_window=100_000, efforts=("off", "high", "max"), default_effort="high")

    agent = make_agent([scripted.text("a"), scripted.text("b")], tmp_path=tmp_path,
                       provider=Provider([scripted.text("a"), scripted.text("b")], name="mock"))
    assert (await agent.commands.run(agent, "/model other medium")).kind == "error"
    assert agent.config.model == "mock-model"
    agent.followup("one")
    await agent.wait_idle()
    res = await agent.commands.run(agent, "/model other max")
    assert res.action == {"kind": "model", "model": "other", "effort": "max"}
    assert (await agent.commands.run(agent, "/model off")).action["effort"] == "off"  # effort alone
    agent.followup("two")
    await agent.wait_idle()
    headers = [e["data"] for e in of_type(agent, "request/header")]
    assert headers[-1]["reason"] == "change"
    assert headers[-1]["header"]["config"]["model"] == "other"
    assert headers[-1]["header"]["config"]["reasoningEffort"] == "off"


async def test_a_resumed_session_keeps_its_model_and_mode(tmp_path):
    root = tmp_path / "root"
    host = await AgentHost.open(HostSpec(root=root, cwd=tmp_path, provider=ScriptedProvider(
        [scripted.text("a")], name="mock"), model="default-model"))
    await host.agent.commands.run(host.agent, "/model picked-model")
    await host.agent.commands.run(host.agent, "/permission read-only")
    result = await host.run_turn("hi")
    await host.close()
    again = await AgentHost.open(HostSpec(root=root, cwd=None, provider=ScriptedProvider([], name="mock"),
                                          model="default-model", resume_id=result.session_id))
    try:
        assert again.agent.config.model == "picked-model"
        assert again.agent.config.preset == "read-only"
    finally:
        await again.close()
    explicit = await AgentHost.open(HostSpec(root=root, cwd=None, provider=ScriptedProvider([], name="mock"),
                                             model="chosen", resume_id=result.session_id, keep_model=False))
    try:
        assert explicit.agent.config.model == "chosen"
    finally:
        await explicit.close()


async def test_fork_before_a_turn_carries_the_turns_before_it_and_never_its_prompt(tmp_path):
    root = tmp_path / "root"
    host = await AgentHost.open(HostSpec(root=root, cwd=tmp_path, provider=ScriptedProvider(
        [scripted.text("one"), scripted.text("two"), scripted.text("three")], name="mock"), model="m"))
    for p in ("first", "second", "third"):
        result = await host.run_turn(p)
    await host.close()
    store = open_store(root)
    sid = result.session_id
    before = store.inspect(sid).events
    child = fork_before_turn(store, sid, 3)
    events = store.inspect(child["id"]).events
    assert child["parentSession"] == sid
    assert [p.text for p in prompts(events)] == ["first", "second"]
    # the seed ends at turn 2's end (v0: the header's seedLength; v4: the inherited session/end-seed there)
    cut = child["seedLength"] if "seedLength" in child else \
        next(i for i, e in enumerate(events) if e["type"] == "session/end-seed")
    assert events[cut - 1]["type"] == "turn/end"
    assert not any("third" in json.dumps(e) for e in events)
    first = fork_before_turn(store, sid, 1)  # nothing came before the first prompt: an empty seed
    assert first.get("seedLength", 0) == 0 and first.get("isSeeded", True) and first["parentSession"] == sid
    assert first["version"] == child["version"] == store.inspect(sid).header["version"]  # the parent's format
    assert prompts(store.inspect(first["id"]).events) == []
    assert store.inspect(sid).events == before  # the parent is untouched
