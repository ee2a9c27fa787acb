"""Approvals, presets, prompt assembly, runtime context, timeouts, spill, checkpoints, extra scenarios."""

from __future__ import annotations

import asyncio
from pathlib import Path

from dsh_tui.llm import scripted as s
from dsh_tui.runtime.prompt import CLEARED_TEXT, HARNESS_IDENTITY, SNAPSHOT_PREFIX
from tests.runtime.helpers import boundaries, make_agent, make_tool, of_type, run_followup, texts, types


def result_text(ev: dict) -> str:
    return texts(ev["data"]["message"]["content"][0])


# ---- approvals -------------------------------------------------------------------------------------------
async def test_no_approval_listener_fails_closed():
    ran = []

    async def body(args, ctx):
        ran.append(1)
        return "ran"

    agent = make_agent([s.call("c1", "sh", {}), s.text("ok")], [make_tool("sh", body, access="exec")],
                       preset="workspace-write")
    await run_followup(agent, "go")
    assert ran == []
    res = of_type(agent, "tool/result")[0]
    assert result_text(res) == 'Error: tool "sh" requires approval, but no approval channel is available'
    assert "error" not in res["data"]
    asked = of_type(agent, "approval/asked")[0]["data"]
    assert asked["toolName"] == "sh" and asked["callId"] == "c1"
    assert of_type(agent, "approval/decided")[0]["data"] == {"id": asked["id"], "outcome": "unavailable"}


async def test_approval_outcomes():
    for outcome, expected in [("rejected", 'Error: the user rejected tool "sh"'),
                              ("cancelled", 'Error: approval for tool "sh" was cancelled'),
                              ("allowed-once", "sh: ")]:
        agent = make_agent([s.call("c1", "sh", {}), s.text("ok")], [make_tool("sh", access="exec")],
                           preset="workspace-write")

        async def answer(p, nxt, outcome=outcome):
            fut = asyncio.get_running_loop().create_future()
            asyncio.get_running_loop().call_soon(fut.set_result, outcome)
            return await fut

        agent.on("approval/request", answer)
        await run_followup(agent, "go")
        assert result_text(of_type(agent, "tool/result")[0]) == expected
        assert of_type(agent, "approval/decided")[0]["data"]["outcome"] == outcome


async def test_policy_never_rejects_without_asking():
    agent = make_agent([s.call("c1", "sh", {}), s.text("ok")], [make_tool("sh", access="exec")],
                       preset="workspace-write", approval_policy="never")
    asked = []
    agent.on("approval/request", lambda p, nxt: asked.append(p) or "allowed-once")
    await run_followup(agent, "go")
    assert asked == []
    assert result_text(of_type(agent, "tool/result")[0]) == 'Error: the user rejected tool "sh"'


async def test_policy_is_read_from_the_config_at_each_request():
    # Like the preset, the approval policy is live: a host switching it between turns is obeyed.
    agent = make_agent([s.call("c1", "sh", {}), s.text("ok"), s.call("c2", "sh", {}), s.text("ok")],
                       [make_tool("sh", access="exec")], preset="workspace-write")
    asked = []
    agent.on("approval/request", lambda p, nxt: asked.append(p["callId"]) or "allowed-once")
    await run_followup(agent, "go")
    agent.config.approval_policy = "never"
    await run_followup(agent, "again")
    assert asked == ["c1"]
    assert [e["data"]["outcome"] for e in of_type(agent, "approval/decided")] == ["allowed-once", "rejected"]


async def test_presets(tmp_path):
    tools = [make_tool("w", access="write", params={"type": "object", "properties": {"file_path": {"type": "string"}}}),
             make_tool("r", access="read", params={"type": "object", "properties": {"file_path": {"type": "string"}}})]
    script = [s.calls([("1", "w", {"file_path": "inside.txt"}), ("2", "w", {"file_path": "/elsewhere/x"}),
                       ("3", "r", {"file_path": "a.txt"})]), s.text("ok")]
    agent = make_agent(list(script), tools, preset="workspace-write", tmp_path=tmp_path)
    await run_followup(agent, "go")
    assert [e["data"]["callId"] for e in of_type(agent, "approval/asked")] == ["2"]
    agent2 = make_agent(list(script), tools, preset="read-only", tmp_path=tmp_path)
    await run_followup(agent2, "go")
    assert [e["data"]["callId"] for e in of_type(agent2, "approval/asked")] == ["1", "2"]
    agent3 = make_agent(list(script), tools, preset="full-access", tmp_path=tmp_path)
    await run_followup(agent3, "go")
    assert of_type(agent3, "approval/asked") == []


async def test_pre_execute_deny_and_post_execute_block():
    agent = make_agent([s.calls([("1", "t", {}), ("2", "t", {})]), s.text("ok")], [make_tool("t")])
    agent.on("tools/pre-execute", lambda p, nxt: {"kind": "deny", "reason": "not today"} if p["callId"] == "1"
             else nxt())
    agent.on("tools/post-execute", lambda p, nxt: {"kind": "block", "feedback": [{"type": "text", "text": "nope"}]}
             if p["callId"] == "2" else nxt())
    await run_followup(agent, "go")
    r1, r2 = of_type(agent, "tool/result")
    assert result_text(r1) == "Error: not today" and "error" not in r1["data"]
    assert result_text(r2) == "nope" and r2["data"]["message"]["content"][0]["isError"] is True


# ---- tool service details --------------------------------------------------------------------------------
async def test_tool_timeout():
    async def slow(args, ctx):
        await asyncio.sleep(30)

    agent = make_agent([s.call("c1", "slow", {}), s.text("ok")], [make_tool("slow", slow, timeout_ms=20)],
                       tool_grace_s=0.01)
    await run_followup(agent, "go")
    res = of_type(agent, "tool/result")[0]
    assert result_text(res) == "Error: tool call timed out after 20ms"
    assert res["data"]["error"] == {"name": "ToolTimeoutError", "code": "TOOL_TIMEOUT"}


async def test_spill_large_output(tmp_path):
    big = "A" * 3000 + "B" * 3000

    async def body(args, ctx):
        return big

    agent = make_agent([s.call("c1", "big", {}), s.text("ok")], [make_tool("big", body)], max_inline_bytes=800,
                       tmp_path=tmp_path)
    await run_followup(agent, "go")
    text = result_text(of_type(agent, "tool/result")[0])
    assert len(text.encode()) <= 800
    assert text.startswith("AAA") and "B\n\n(Omitted " in text
    path = text.split("stored at: ")[1].split(". Use read")[0]
    assert Path(path).read_text() == big
    assert Path(path).stat().st_mode & 0o777 == 0o600  # the tools' spill store: owner-only
    assert Path(path).parent == tmp_path / "spill"
    omitted = int(text.split("(Omitted ")[1].split(" bytes")[0])
    assert omitted == len(big) - len(text.split("\n\n(Omitted")[0])


async def test_tool_owned_events_and_meta():
    async def body(args, ctx):
        ctx.emit_event("todo/write", {"todos": [{"content": "x", "status": "pending"}]})
        return {"n": 1}

    tool = make_tool("todo", body)
    tool.render = lambda a, v: [{"type": "text", "text": f"n={v['n']}"}]
    tool.presentation_meta = lambda a, v: {"count": v["n"]}
    agent = make_agent([s.call("c1", "todo", {}), s.text("ok")], [tool])
    await run_followup(agent, "go")
    assert types(agent).index("todo/write") < types(agent).index("tool/result")
    assert of_type(agent, "tool/result")[0]["data"]["meta"] == {"count": 1}
    assert agent.session.todos() == [{"content": "x", "status": "pending"}]


async def test_schema_violation_texts():
    params = {"type": "object", "additionalProperties": False, "required": ["a"],
              "properties": {"a": {"type": "integer"}, "b": {"type": "array", "items": {"type": "string"}},
                             "c": {"enum": ["x", "y"]}}}
    agent = make_agent([s.call("c1", "t", {"a": 1.5, "b": ["ok", 3], "c": "z", "zz": 1}), s.text("ok")],
                       [make_tool("t", params=params)])
    await run_followup(agent, "go")
    assert result_text(of_type(agent, "tool/result")[0]) == (
        'Error: invalid arguments: "a" must be an integer; "b[1]" must be a string; '
        '"c" must be one of ["x","y"]; "zz" is not a declared property (additionalProperties: false)')


# ---- prompt assembly and runtime context -----------------------------------------------------------------
async def test_system_prompt_sections_and_strict_variables():
    agent = make_agent([s.text("ok")], persona="Persona for {{model}} in {{cwd}}",
                       system_sections=[{"name": "tool:guide", "order": 100, "text": "Use tools."}])
    await run_followup(agent, "hi")
    header = of_type(agent, "request/header")[0]["data"]["header"]
    assert header["system"] == f"{HARNESS_IDENTITY}\n\nPersona for mock-model in /work\n\nUse tools."
    assert agent.provider.requests[0]["system"] == header["system"]

    bad = make_agent([s.text("never")], persona="Hi {{nothing}}")
    await run_followup(bad, "hi")
    # C11: system sections render after step/start and the entered user/message
    assert types(bad)[-4:] == ["step/start", "user/message", "step/end", "turn/end"]
    err = of_type(bad, "turn/end")[0]["data"]["reason"]["error"]
    assert err == {"message": 'prompt variable "{{nothing}}" has no value for this assembly '
                              '(section "deployment:persona")', "code": "UNKNOWN"}


async def test_runtime_context_snapshot_only_when_changed():
    ctx = [{"name": "env:cwd", "text": "cwd=/a"}]
    agent = make_agent([s.text("1"), s.text("2"), s.text("3"), s.text("4")], runtime_context=True,
                       context_sections=ctx)
    await run_followup(agent, "one")
    await run_followup(agent, "two")
    snaps = [e["data"] for e in of_type(agent, "user/message") if e["data"]["source"]["kind"] == "plugin"]
    assert len(snaps) == 1
    assert snaps[0]["content"][0]["text"] == SNAPSHOT_PREFIX + "cwd=/a"
    assert snaps[0]["source"] == {"kind": "plugin", "plugin": "@deepseek-ai/dsh-system-prompt", "form": "snapshot",
                                  "sections": [{"name": "env:cwd", "text": "cwd=/a"}]}
    ctx[0]["text"] = "cwd=/b"
    await run_followup(agent, "three")
    ctx.clear()
    await run_followup(agent, "four")
    plugin_texts = [texts(e["data"]) for e in of_type(agent, "user/message") if e["data"]["source"]["kind"] == "plugin"]
    assert plugin_texts == [SNAPSHOT_PREFIX + "cwd=/a", SNAPSHOT_PREFIX + "cwd=/b", CLEARED_TEXT]
    # the user's prompt precedes the snapshot of the same step
    ums = [texts(e["data"]) for e in of_type(agent, "user/message")]
    assert ums[:2] == ["one", SNAPSHOT_PREFIX + "cwd=/a"]


async def test_default_runtime_context_has_cwd_platform_date(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/feature-x\n")
    agent = make_agent([s.text("1"), s.text("2"), s.text("3")], runtime_context=True, tmp_path=tmp_path)
    await run_followup(agent, "hi")
    snap = [e["data"] for e in of_type(agent, "user/message") if e["data"]["source"]["kind"] == "plugin"][0]
    names = [x["name"] for x in snap["source"]["sections"]]
    assert names == ["environment:cwd", "environment:platform", "environment:date", "environment:git",
                     "permission:preset"]
    assert "Permission preset: full-access." in texts(snap)
    assert f"Working directory: {tmp_path}" in texts(snap) and "Git branch: feature-x" in texts(snap)
    await run_followup(agent, "same context")
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    await run_followup(agent, "after checkout")
    snaps = [texts(e["data"]) for e in of_type(agent, "user/message") if e["data"]["source"]["kind"] == "plugin"]
    assert len(snaps) == 2 and "Git branch: main" in snaps[1]


# ---- request derivation ----------------------------------------------------------------------------------
async def test_request_header_reasons_and_context():
    agent = make_agent([s.text("1"), s.text("2"), s.text("3")], context_window=1000)
    await run_followup(agent, "a")
    await run_followup(agent, "b")
    agent.config.temperature = 0.5
    await run_followup(agent, "c")
    reasons = [e["data"]["reason"] for e in of_type(agent, "request/header")]
    assert reasons == ["initial", "change"]  # a host-side settings change (model switch) is a header change
    assert of_type(agent, "request/header")[1]["data"]["header"]["config"] == {
        "provider": "mock", "model": "mock-model", "temperature": 0.5}
    assert [e["data"] for e in of_type(agent, "request/context")] == [
        {"provider": "mock", "model": "mock-model", "contextWindow": 1000}]

    # a new loop instance over the same log: reason resume; a model switch via agent/request: change
    from dsh_tui.runtime import Agent, AgentConfig
    agent2 = Agent(agent.session, s.ScriptedProvider([s.text("4"), s.text("5")], name="mock"), [],
                   config=AgentConfig(model="mock-model", runtime_context=False, check_requests=True))
    await run_followup(agent2, "d")
    agent2.on("agent/request", lambda p, nxt: {"provider": "mock", "model": "other"})
    await run_followup(agent2, "e")
    reasons = [e["data"]["reason"] for e in of_type(agent2, "request/header")]
    assert reasons == ["initial", "change", "resume", "change"]
    assert of_type(agent2, "request/context")[-1]["data"] == {"provider": "mock", "model": "other"}
    assert [e["data"]["turn"] for e in of_type(agent2, "turn/start")] == [1, 2, 3, 4, 5]


async def test_inbox_rebuilt_from_the_log():
    from dsh_tui.runtime import Agent, AgentConfig
    agent = make_agent([])
    agent.inject("ctx 1")
    agent.inject("ctx 2")
    agent.cancel()
    agent.inject("ctx 3")
    agent2 = Agent(agent.session, s.ScriptedProvider([s.text("ok")], name="mock"), [],
                   config=AgentConfig(model="m", runtime_context=False))
    assert [texts(m) for m in agent2.inbox.next_step] == ["ctx 3"]


# ---- checkpoints -----------------------------------------------------------------------------------------
async def test_checkpoint_reasons_and_fail_closed():
    reasons = []

    async def checkpoint(reason):
        reasons.append(reason)

    agent = make_agent([s.call("c1", "t", {}), s.text("ok")], [make_tool("t")])
    agent.checkpoint = checkpoint
    await run_followup(agent, "go")
    assert reasons == ["pre-step", "request", "tool", "pre-step", "request"]

    async def broken(reason):
        raise OSError("disk full")

    agent2 = make_agent([s.text("never")])
    agent2.checkpoint = broken
    await run_followup(agent2, "go")
    assert agent2.provider.requests == []
    assert of_type(agent2, "turn/end")[0]["data"]["reason"] == {
        "kind": "error", "error": {"message": "disk full", "code": "UNKNOWN"}}


async def test_cancel_while_flushing_before_a_tool_body():
    ran = []
    gate = asyncio.Event()

    async def checkpoint(reason):
        if reason == "tool":
            await gate.wait()

    async def body(args, ctx):
        ran.append(1)
        return "x"

    agent = make_agent([s.call("c1", "t", {})], [make_tool("t", body)])
    agent.checkpoint = checkpoint
    agent.followup("go")
    while not of_type(agent, "tool/call"):
        await asyncio.sleep(0)
    await asyncio.sleep(0)
    agent.cancel()
    await agent.wait_idle()
    assert ran == []
    assert of_type(agent, "tool/result")[0]["data"]["error"]["code"] == "ABORTED_BEFORE_DISPATCH"


# ---- extra scenarios of section 9 ------------------------------------------------------------------------
async def test_throwing_pre_step_listener_fails_the_turn_and_parks_the_next_prompt():
    agent = make_agent([s.text("x")])

    def boom(p, nxt):
        raise RuntimeError("listener exploded")

    off = agent.on("agent/pre-step", boom)
    agent.followup("one")
    agent.followup("two")
    await agent.wait_idle()
    assert boundaries(agent) == [("turn/start", 1), ("turn/end", 1, "error")]
    assert of_type(agent, "turn/end")[0]["data"]["reason"]["error"] == {"message": "listener exploded",
                                                                          "code": "UNKNOWN"}
    assert [texts(m) for m in agent.inbox.next_turn] == ["two"]
    off()
    await run_followup(agent, "three")
    assert [texts(e["data"]) for e in of_type(agent, "user/message")] == ["two", "three"]


async def test_no_step_turn_when_the_waking_message_is_dropped():
    agent = make_agent([s.text("x")])
    agent.on("agent/pre-step", lambda p, nxt: {"kind": "enter", "messages": []})
    await run_followup(agent, "dropped")
    assert boundaries(agent) == [("turn/start", 1), ("turn/end", 1, "completed")]


async def test_events_and_phase_for_the_status_bar():
    agent = make_agent([s.text("ok")])
    seen = []
    agent.on("agent/phase", lambda p: seen.append(p["phase"]["kind"]))
    inserted = []
    agent.on("agent/inbox/inserted", lambda p: inserted.append(p["message"]["content"][0]["text"]))
    claimed = []
    agent.on("agent/inbox/claimed", lambda p: claimed.append(p["turn"]))
    await run_followup(agent, "hi")
    assert seen == ["running", "idle"] and inserted == ["hi"] and claimed == [1]
    assert agent.phase["kind"] == "idle" and agent.phase["lastTurn"] == 1


async def test_capability_waterfalls_wrap_stream_prompt_and_execute():
    agent = make_agent([s.call("c1", "t", {}), s.text("ok")], [make_tool("t")])
    seen = {"stream": 0, "exec": []}

    async def wrap_stream(p, nxt):
        seen["stream"] += 1
        inner = await nxt()

        async def gen():
            async for chunk in inner:
                yield chunk
        return gen()

    async def wrap_exec(p, nxt):
        seen["exec"].append(p["callId"])
        result = await nxt()
        return {**result, "content": [{"type": "text", "text": "wrapped"}]}

    async def assemble(p, nxt):
        assembly = await nxt()
        assembly.sections = [sec for sec in assembly.sections if sec.name != "harness:identity"]
        return assembly

    agent.on("llm/stream", wrap_stream)
    agent.on("tools/execute", wrap_exec)
    agent.on("system-prompt/assemble", assemble)
    await run_followup(agent, "go")
    assert seen == {"stream": 2, "exec": ["c1"]}
    assert result_text(of_type(agent, "tool/result")[0]) == "wrapped"
    assert "system" not in of_type(agent, "request/header")[0]["data"]["header"]


async def test_missing_model_fails_the_step():
    agent = make_agent([s.text("x")], model="")
    await run_followup(agent, "hi")
    err = of_type(agent, "turn/end")[0]["data"]["reason"]["error"]
    assert err["code"] == "UNKNOWN" and "has no provider/model" in err["message"]
    assert types(agent)[-3:] == ["user/message", "step/end", "turn/end"]


async def test_emit_listener_failures_are_contained():
    agent = make_agent([s.text("ok")])

    def bad(p):
        raise RuntimeError("observer bug")

    async def bad_async(p):
        raise RuntimeError("async observer bug")

    agent.on("agent/status", bad)
    agent.on("agent/status", bad_async)
    got = []
    agent.on("agent/status", lambda p: got.append(p["status"]))
    await run_followup(agent, "hi")
    assert got == ["running", "idle"]
    assert boundaries(agent)[-1] == ("turn/end", 1, "completed")


async def test_global_and_scoped_listeners():
    from dsh_tui.runtime import EventBus
    bus = EventBus()
    a1 = make_agent([s.text("1")])
    a1.bus = bus
    seen = []
    bus.on("agent/status", lambda p: seen.append(("global", p["agent"].id)))
    bus.on("agent/status", lambda p: seen.append(("scoped-other", p["agent"].id)), scope="someone-else")
    bus.on("agent/status", lambda p: seen.append(("scoped", p["agent"].id)), scope=a1.id)
    await run_followup(a1, "hi")
    assert seen == [("global", a1.id), ("scoped", a1.id)] * 2


async def test_resume_continues_turn_numbers_and_logs_a_resume_header():
    from dsh_tui.runtime import Agent, AgentConfig
    from dsh_tui.session.log import Session

    agent = make_agent([s.text("one")])
    await run_followup(agent, "first")
    agent.inject("parked context")
    seeded = Session(agent.session.header, seed=list(agent.session.events))
    assert seeded.events[-1]["type"] == "session/end-seed"
    provider = s.ScriptedProvider([s.text("two")], name="mock")
    resumed = Agent(seeded, provider, [], config=AgentConfig(model="mock-model", runtime_context=False,
                                                             check_requests=True))
    assert [texts(m) for m in resumed.inbox.next_step] == ["parked context"]
    await run_followup(resumed, "second")
    assert [e["data"]["turn"] for e in of_type(resumed, "turn/start")] == [1, 2]
    assert [e["data"]["reason"] for e in of_type(resumed, "request/header")] == ["initial", "resume"]
    sent = [texts(m) for m in provider.requests[0]["messages"]]
    assert sent == ["first", "one", "parked context", "second"]


async def test_context_section_render_failure_is_a_no_step_error_turn():  # C11
    agent = make_agent([s.text("never")], runtime_context=True,
                       context_sections=[{"name": "env:x", "text": "value {{nowhere}}"}])
    await run_followup(agent, "hi")
    assert boundaries(agent) == [("turn/start", 1), ("turn/end", 1, "error")]
    assert "user/message" not in types(agent)


async def test_creation_events_on_a_shared_bus():
    from dsh_tui.runtime import Agent, AgentConfig, EventBus
    from dsh_tui.session.log import Session

    bus = EventBus()
    seen = []
    bus.on("agent/created", lambda p: seen.append(("created", p["agent"].id)))

    def seed_context(p):
        seen.append(("session-start", p["source"]))
        p["agent"].inject("AGENTS.md says hi")

    bus.on("agent/session-start", seed_context)
    agent = make_agent([s.text("ok")])
    a = Agent(agent.session, s.ScriptedProvider([s.text("ok")], name="mock"), [],
              config=AgentConfig(model="m", runtime_context=False), bus=bus)
    await run_followup(a, "hi")
    assert seen == [("created", a.id), ("session-start", "startup")]
    assert [texts(e["data"]) for e in of_type(a, "user/message")] == ["AGENTS.md says hi", "hi"]
    resumed = Session(a.session.header, seed=list(a.session.events))
    Agent(resumed, None, [], config=AgentConfig(model="m"), bus=bus)
    assert seen[-1] == ("session-start", "resume")


async def test_invalid_tool_output_is_a_result_not_a_crash():
    tool = make_tool("bad")
    tool.render = lambda a, v: [{"type": "text", "text": "x", "n": float("nan")}]
    agent = make_agent([s.call("c1", "bad", {}), s.text("ok")], [tool])
    await run_followup(agent, "go")
    res = of_type(agent, "tool/result")[0]
    assert result_text(res).startswith('Error: tool "bad" returned invalid output: ')
    assert res["data"]["error"] == {"name": "ToolOutputError", "code": "INVALID_TOOL_OUTPUT"}
    assert boundaries(agent)[-1] == ("turn/end", 1, "completed")


async def test_failing_checkpoint_before_a_tool_body_does_not_run_it():
    ran = []

    async def checkpoint(reason):
        if reason == "tool":
            raise OSError("disk full")

    async def body(args, ctx):
        ran.append(1)
        return "ran"

    agent = make_agent([s.call("c1", "t", {}), s.text("ok")], [make_tool("t", body)])
    agent.checkpoint = checkpoint
    await run_followup(agent, "go")
    assert ran == []
    assert result_text(of_type(agent, "tool/result")[0]) == "Error: disk full"


async def test_default_persona_and_tool_guidance_render_like_dsh():
    from dsh_tui.runtime.prompt import DEFAULT_PERSONA, TOOL_GUIDANCE
    from tests.conftest import FIXTURES

    tools = [make_tool(n) for n in ("bash", "edit", "read", "write", "zzz")]
    agent = make_agent([s.text("ok")], tools, persona=DEFAULT_PERSONA, model="deepseek-v4-flash")
    await run_followup(agent, "hi")
    system = of_type(agent, "request/header")[0]["data"]["header"]["system"]
    assert system.startswith(HARNESS_IDENTITY + "\n\nYou are a coding assistant powered by the deepseek-v4-flash "
                                                "model. Your working directory is /work.")
    expected = (FIXTURES / "examples/acp-agent/tests/snapshots/text-turn/system-prompt.expected.md").read_text()
    for name in ("read", "write", "edit", "bash"):
        assert TOOL_GUIDANCE[name][1] in expected and TOOL_GUIDANCE[name][1] in system
    order = [system.index(TOOL_GUIDANCE[n][1]) for n in ("read", "write", "edit", "bash")]
    assert order == sorted(order)


async def test_a_result_with_a_lone_surrogate_is_committed_not_a_turn_error(tmp_path):
    # A non-UTF-8 file name reaches a tool result as a lone surrogate (os.fsdecode); measuring the
    # result for spilling must not raise out of the pipeline and end the turn with an error.
    name = "caf\udce9.txt"

    async def body(args, ctx):
        return name

    agent = make_agent([s.call("c1", "ls", {}), s.text("ok")], [make_tool("ls", body)], tmp_path=tmp_path)
    await run_followup(agent, "go")
    res = of_type(agent, "tool/result")[0]["data"]
    assert res["message"]["content"][0]["content"] == [{"type": "text", "text": name}]
    assert of_type(agent, "turn/end")[-1]["data"]["reason"] == {"kind": "completed"}


async def test_a_spilled_result_with_a_lone_surrogate_counts_it_as_three_bytes(tmp_path):
    big = "\udce9" * 400 + "B" * 600  # Buffer.byteLength: a lone surrogate is U+FFFD, 3 bytes

    async def body(args, ctx):
        return big

    agent = make_agent([s.call("c1", "big", {}), s.text("ok")], [make_tool("big", body)], max_inline_bytes=800,
                       tmp_path=tmp_path)
    await run_followup(agent, "go")
    text = result_text(of_type(agent, "tool/result")[0])
    assert text.startswith("\ufffd") and "B\n\n(Omitted " in text
    assert len(text.encode()) <= 800
    path = text.split("stored at: ")[1].split(". Use read")[0]
    assert Path(path).read_text() == "\ufffd" * 400 + "B" * 600
    omitted = int(text.split("(Omitted ")[1].split(" bytes")[0])
    assert omitted == 400 * 3 + 600 - len(text.split("\n\n(Omitted")[0].encode())


async def test_a_deferred_message_without_id_or_source_is_completed_not_a_turn_error():
    async def body(args, ctx):
        ctx.defer_context({"role": "user", "content": [{"type": "text", "text": "relayed"}]})
        return "done"

    agent = make_agent([s.call("c1", "t", {}), s.text("ok")], [make_tool("t", body)])
    await run_followup(agent, "go")
    assert of_type(agent, "turn/end")[-1]["data"]["reason"] == {"kind": "completed"}
    relayed = [e["data"] for e in of_type(agent, "user/message") if texts(e["data"]) == "relayed"]
    assert len(relayed) == 1 and relayed[0]["id"]
    assert relayed[0]["source"] == {"kind": "plugin", "plugin": "tool", "form": "relay"}
