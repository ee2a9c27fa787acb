"""Runtime spec section 9: the behavioural scenarios, each asserting the exact event sequence."""

from __future__ import annotations

import asyncio

from dsh_tui.llm import scripted as s
from dsh_tui.llm.protocol import RetryPolicy
from tests.runtime.helpers import (
    boundaries,
    compact_types,
    echo_tool,
    make_agent,
    make_tool,
    of_type,
    run_followup,
    texts,
    types,
    user_texts,
)


async def test_1_simple_turn():
    agent = make_agent([s.text("hello there")])
    await run_followup(agent, "hi")
    assert compact_types(agent) == [
        "agent/inbox/spliced", "turn/start", "agent/inbox/spliced", "step/start", "user/message",
        "request/header", "request/context", "chunks", "assistant/message", "step/end", "turn/end",
    ]
    assert boundaries(agent) == [("turn/start", 1), ("step/start", 1, 1), ("step/end", 1, 1),
                                 ("turn/end", 1, "completed")]
    am = of_type(agent, "assistant/message")[0]
    assert am["data"]["usage"] == s.DEFAULT_USAGE
    chunk_seqs = [e["seq"] for e in of_type(agent, "assistant/chunk")]
    assert am["sourceEventSeqs"] == chunk_seqs
    derived = agent.session.derive_messages()
    assert [m["role"] for m in derived] == ["user", "assistant"]
    assert texts(derived[1]) == "hello there"
    assert agent.statuses == ["running", "idle"]
    assert of_type(agent, "request/header")[0]["data"]["reason"] == "initial"


async def test_2_tool_round_trip():
    agent = make_agent([s.call("c1", "echo", {"text": "ping"}), s.text("done")], [echo_tool()])
    await run_followup(agent, "go")
    assert len(agent.provider.requests) == 2
    second = agent.provider.requests[1]["messages"]
    result = second[-1]["content"][0]
    assert result == {"type": "tool-result", "toolCallId": "c1", "isError": False,
                      "content": [{"type": "text", "text": "echo: ping"}]}
    t = compact_types(agent)
    assert t[t.index("assistant/message"):] == [
        "assistant/message", "tool/call", "tool/result", "step/end", "step/start", "chunks", "assistant/message",
        "step/end", "turn/end"]
    call = of_type(agent, "tool/call")[0]
    res = of_type(agent, "tool/result")[0]
    assert res["sourceEventSeqs"] == [call["seq"]]
    assert call["data"] == {"turn": 1, "step": 1, "callId": "c1", "name": "echo", "arguments": '{"text":"ping"}'}


async def test_3_pre_step_reject_parks_the_next_prompt():
    agent = make_agent([s.text("never")])
    agent.on("agent/pre-step", lambda p, nxt: {"kind": "reject"})
    agent.followup("one")
    agent.followup("two")
    await agent.wait_idle()
    assert agent.provider.requests == []
    assert boundaries(agent) == [("turn/start", 1), ("turn/end", 1, "blocked")]
    assert "user/message" not in types(agent)
    assert [m["content"][0]["text"] for m in agent.inbox.next_turn] == ["two"]


async def test_4_pre_step_rewrite_and_add():
    agent = make_agent([s.text("ok")])

    async def rewrite(p, nxt):
        decision = await nxt()
        msgs = [{**m, "content": [{"type": "text", "text": "REWRITTEN"}]} for m in decision["messages"]]
        extra = {"id": "ctx-1", "role": "user", "content": [{"type": "text", "text": "added context"}],
                 "source": {"kind": "plugin", "plugin": "test-plugin"}}
        return {"kind": "enter", "messages": msgs + [extra]}

    agent.on("agent/pre-step", rewrite)
    await run_followup(agent, "original")
    ums = of_type(agent, "user/message")
    assert [texts(e["data"]) for e in ums] == ["REWRITTEN", "added context"]
    assert ums[1]["data"]["source"] == {"kind": "plugin", "plugin": "test-plugin"}
    sent = agent.provider.requests[0]["messages"]
    assert "original" not in str(sent) and "REWRITTEN" in str(sent)


async def test_5_idle_inject_does_not_wake():
    agent = make_agent([s.text("ok")])
    agent.inject("context from a plugin")
    await asyncio.sleep(0)
    assert types(agent) == ["agent/inbox/spliced"]
    assert agent.status == "idle" and agent.provider.requests == []
    await run_followup(agent, "question")
    first = agent.provider.requests[0]["messages"]
    # C2: next-step input (the injected context) enters before the prompt
    assert [texts(m) for m in first] == ["context from a plugin", "question"]


async def test_6_steering_between_steps():
    agent_ref = {}

    async def body(args, ctx):
        agent_ref["a"].steer("change of plans")
        return "echo: x"

    agent = make_agent([s.call("c1", "echo", {"text": "x"}), s.text("ok")], [make_tool("echo", body)])
    agent_ref["a"] = agent
    await run_followup(agent, "go")
    steps = [e for e in of_type(agent, "step/start")]
    steer = [e for e in of_type(agent, "user/message") if texts(e["data"]) == "change of plans"][0]
    assert steer["seq"] > steps[1]["seq"]
    assert "change of plans" in [texts(m) for m in agent.provider.requests[1]["messages"]]
    assert len(of_type(agent, "turn/start")) == 1


async def test_7_turn_stopping_steer():
    agent = make_agent([s.text("a"), s.text("b"), s.text("c"), s.text("d")])
    count = {"n": 0}

    def stopping(p):
        if count["n"] < 3:
            count["n"] += 1
            agent.steer(f"continue {count['n']}")

    agent.on("agent/turn-stopping", stopping)
    await run_followup(agent, "loop")
    assert len(agent.provider.requests) == 4
    assert [b for b in boundaries(agent) if b[0] == "step/start"] == [("step/start", 1, s_) for s_ in (1, 2, 3, 4)]
    assert len(of_type(agent, "turn/start")) == 1


async def test_8_tool_concludes_turn():
    async def body(args, ctx):
        ctx.conclude_turn()
        return "concluded"

    agent = make_agent([s.call("c1", "fin", {})], [make_tool("fin", body)])
    await run_followup(agent, "go")
    assert len(agent.provider.requests) == 1
    assert of_type(agent, "tool/result")
    assert boundaries(agent)[-1] == ("turn/end", 1, "completed")

    # steering that arrived during the concluding step still runs a second step
    holder = {}

    async def body2(args, ctx):
        ctx.conclude_turn()
        holder["a"].steer("one more thing")
        return "concluded"

    agent2 = make_agent([s.call("c1", "fin", {}), s.text("ok")], [make_tool("fin", body2)])
    holder["a"] = agent2
    await run_followup(agent2, "go")
    assert len(agent2.provider.requests) == 2
    assert len(of_type(agent2, "step/start")) == 2


async def test_9_max_tokens():
    ran = []

    async def body(args, ctx):
        ran.append(args)
        return "x"

    agent = make_agent([s.max_tokens(partial_call=("c1", "echo", '{"te'))], [make_tool("echo", body)])
    await run_followup(agent, "go")
    assert ran == [] and not of_type(agent, "tool/call")
    am = of_type(agent, "assistant/message")[0]
    assert am["data"]["message"]["content"] == [] and am["data"]["usage"] == s.DEFAULT_USAGE
    assert [m["role"] for m in agent.session.derive_messages()] == ["user"]
    assert boundaries(agent)[-1] == ("turn/end", 1, "max-tokens")

    # sticky: a forced later step that completes keeps max-tokens; C5: tool results wait for the next turn
    agent2 = make_agent([s.max_tokens("partial"), s.call("c2", "echo", {}), s.text("never")], [make_tool("echo")])
    agent2.on("agent/turn-stopping", lambda p: agent2.steer("go on") if len(of_type(agent2, "step/start")) == 1
              else None)
    await run_followup(agent2, "go")
    assert len(agent2.provider.requests) == 2
    assert of_type(agent2, "tool/result")
    assert boundaries(agent2)[-1] == ("turn/end", 1, "max-tokens")


async def test_10_terminal_provider_error():
    agent = make_agent([s.finish_error("AUTH", "invalid api key", status=401)])
    errors = []
    agent.on("agent/error", lambda p: errors.append({k: p[k] for k in ("turn", "step", "error")}))
    await run_followup(agent, "hi")
    assert "assistant/message" not in types(agent)
    failure = {"message": "invalid api key", "code": "AUTH", "status": 401}
    assert errors == [{"turn": 1, "step": 1, "error": failure}]
    assert of_type(agent, "turn/end")[0]["data"] == {"turn": 1, "reason": {"kind": "error", "error": failure}}
    # agent/error before turn/end is implied by the emit order; the provider abort without a cancel:
    agent2 = make_agent([s.finish_error("ABORTED", "stream aborted", kind="aborted")])
    await run_followup(agent2, "hi")
    reason = of_type(agent2, "turn/end")[0]["data"]["reason"]
    assert reason["kind"] == "error" and reason["error"]["code"] == "ABORTED"


async def test_11_recovery_retry_stays_in_the_step():
    agent = make_agent([s.finish_error("SERVER", "a"), s.finish_error("SERVER", "b"), s.text("ok")], retry=False)
    seen = []

    def on_error(p, nxt):
        seen.append((p["turn"], p["step"]))
        return {"kind": "retry"}

    agent.on("agent/request-error", on_error)
    await run_followup(agent, "hi")
    assert seen == [(1, 1), (1, 1)]
    assert len(of_type(agent, "turn/start")) == 1 and len(of_type(agent, "step/start")) == 1
    assert agent.statuses == ["running", "idle"]
    assert boundaries(agent)[-1] == ("turn/end", 1, "completed")

    agent2 = make_agent([s.finish_error("SERVER", "a"), s.text("ok")], retry=False)

    def boom(p, nxt):
        raise RuntimeError("listener broke")

    agent2.on("agent/request-error", boom)
    await run_followup(agent2, "hi")
    reason = of_type(agent2, "turn/end")[0]["data"]["reason"]
    assert reason == {"kind": "error", "error": {"message": "listener broke", "code": "UNKNOWN"}}
    assert len(agent2.provider.requests) == 1


async def test_12_failed_attempt_discarded():
    partial = [{"type": "block-start", "index": 0, "blockType": "text"},
               {"type": "text-delta", "index": 0, "text": "parti"}] + s.finish_error("SERVER", "dropped")
    agent = make_agent([partial, s.text("recovered")], retry=False)
    agent.on("agent/request-error", lambda p, nxt: {"kind": "retry"})
    await run_followup(agent, "hi")
    ams = of_type(agent, "assistant/message")
    assert len(ams) == 1 and texts(ams[0]["data"]["message"]) == "recovered"
    chunks = of_type(agent, "assistant/chunk")
    assert set(ams[0]["sourceEventSeqs"]) == {c["seq"] for c in chunks[3:]}
    assert not set(ams[0]["sourceEventSeqs"]) & {c["seq"] for c in chunks[:3]}


async def test_13_empty_response_retry():
    policy = RetryPolicy(mode="normal", max_retries=2, initial_delay_ms=500, jitter_ratio=0)
    provider = s.ScriptedProvider([s.empty(), s.text("ok")], name="mock", retry_policy=policy)
    agent = make_agent(provider=provider)
    await run_followup(agent, "hi")
    retry = of_type(agent, "llm/retry")
    assert len(retry) == 1
    d = retry[0]["data"]
    assert {k: d[k] for k in ("turn", "step", "provider", "mode", "retry", "maxRetries", "delayMs")} == {
        "turn": 1, "step": 1, "provider": "mock", "mode": "normal", "retry": 1, "maxRetries": 2, "delayMs": 500}
    assert d["failure"] == {"code": "EMPTY_RESPONSE", "message": "model returned a completed response with no content"}
    assert d["policyKey"] == '["normal",2,["EMPTY_RESPONSE","RATE_LIMIT","SERVER","TIMEOUT","TRANSPORT"],500,10000,0]'
    started = of_type(agent, "llm/retry-started")
    assert [e["data"] for e in started] == [{"retryId": d["retryId"], "turn": 1, "step": 1, "retry": 1}]
    assert agent.sleep.delays == [0.5]
    assert len(provider.requests) == 2
    ams = of_type(agent, "assistant/message")
    assert len(ams) == 1 and (ams[0]["data"]["turn"], ams[0]["data"]["step"]) == (1, 1)
    assert len(of_type(agent, "step/start")) == 1


async def test_14_cancel_mid_stream():
    stream = [{"type": "block-start", "index": 0, "blockType": "text"},
              {"type": "text-delta", "index": 0, "text": "partial"},
              {"type": "block-start", "index": 1, "blockType": "tool-call"},
              {"type": "tool-call-delta", "index": 1, "id": "c1", "name": "echo", "argumentsDelta": "{"},
              s.Hang()]
    agent = make_agent([stream, s.text("next")])
    agent.followup("go")
    while len(of_type(agent, "assistant/chunk")) < 4:
        await asyncio.sleep(0)
    agent.cancel()
    await agent.wait_idle()
    am = of_type(agent, "assistant/message")[0]
    assert am["data"]["interrupted"] is True
    assert am["data"]["message"]["content"] == [{"type": "text", "text": "partial"}]
    assert am["sourceEventSeqs"] == [e["seq"] for e in of_type(agent, "assistant/chunk")]
    assert compact_types(agent)[-4:] == ["chunks", "assistant/message", "step/end", "turn/end"]
    assert of_type(agent, "turn/end")[0]["data"]["reason"] == {"kind": "aborted", "reason": {"kind": "user"}}
    assert agent.provider.active == 0
    await run_followup(agent, "again")
    assert texts(agent.provider.requests[1]["messages"][1]) == "partial"

    # tool-call-only stream: no assistant/message
    agent2 = make_agent([[{"type": "block-start", "index": 0, "blockType": "tool-call"}, s.Hang()]])
    agent2.followup("go")
    while not of_type(agent2, "assistant/chunk"):
        await asyncio.sleep(0)
    agent2.cancel()
    await agent2.wait_idle()
    assert not of_type(agent2, "assistant/message")


async def test_15_cancel_after_assistant_message():
    ran = []

    async def body(args, ctx):
        ran.append(1)
        return "x"

    agent = make_agent([s.call("c1", "echo", {"text": "a"}), s.text("later")], [make_tool("echo", body)])
    agent.session.subscribe(lambda sess, ev: agent.cancel() if ev["type"] == "assistant/message" else None)
    await run_followup(agent, "go")
    assert ran == []
    res = of_type(agent, "tool/result")[0]
    assert res["data"]["error"] == {"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"}
    assert res["data"]["message"]["content"][0]["isError"] is True
    assert texts(res["data"]["message"]["content"][0]) == "Error: tool call aborted before dispatch"
    assert compact_types(agent)[-5:] == ["assistant/message", "tool/call", "tool/result", "step/end", "turn/end"]
    assert of_type(agent, "turn/end")[0]["data"]["reason"]["kind"] == "aborted"


async def test_16_parallel_pool_barrier_and_order():
    started, events = [], []
    gates = {n: asyncio.Event() for n in ("a", "b", "c")}

    def body_for(name):
        async def body(args, ctx):
            started.append(name)
            events.append(("start", name))
            await gates[name].wait()
            events.append(("end", name))
            return name
        return body

    tools = [make_tool(n, body_for(n), parallel=True) for n in ("a", "b", "c")]
    agent = make_agent([s.calls([("1", "a", {}), ("2", "b", {}), ("3", "c", {})]), s.text("ok")], tools)
    agent.followup("go")
    while len(started) < 3:
        await asyncio.sleep(0)
    assert events == [("start", "a"), ("start", "b"), ("start", "c")]
    gates["c"].set()
    await asyncio.sleep(0.01)
    assert of_type(agent, "tool/result") == []  # c settled first but commits wait for model order
    gates["a"].set()
    gates["b"].set()
    await agent.wait_idle()
    assert [e["data"]["message"]["source"]["callId"] for e in of_type(agent, "tool/result")] == ["1", "2", "3"]

    # r, w, r with w exclusive: strictly in order
    order = []

    def rec(name):
        async def body(args, ctx):
            order.append(("start", name))
            await asyncio.sleep(0.001)
            order.append(("end", name))
            return name
        return body

    tools2 = [make_tool("r", rec("r"), parallel=True), make_tool("w", rec("w"))]
    agent2 = make_agent([s.calls([("1", "r", {}), ("2", "w", {}), ("3", "r", {})]), s.text("ok")], tools2)
    await run_followup(agent2, "go")
    assert order == [("start", "r"), ("end", "r"), ("start", "w"), ("end", "w"), ("start", "r"), ("end", "r")]

    # cap 1: serial
    order.clear()
    tools3 = [make_tool("r", rec("r"), parallel=True)]
    agent3 = make_agent([s.calls([("1", "r", {}), ("2", "r", {})]), s.text("ok")], tools3, max_parallel_tool_calls=1)
    await run_followup(agent3, "go")
    assert order == [("start", "r"), ("end", "r"), ("start", "r"), ("end", "r")]


async def test_17_abort_mid_pool():
    started = []
    release = asyncio.Event()

    async def body(args, ctx):
        started.append(ctx.call_id)
        ctx.defer_context(f"context from {ctx.call_id}")
        await release.wait()
        return "done"

    agent = make_agent([s.calls([(f"c{i}", "p", {}) for i in range(1, 5)]), s.text("later")],
                       [make_tool("p", body, parallel=True)], max_parallel_tool_calls=2)
    agent.followup("go")
    while len(started) < 2:
        await asyncio.sleep(0)
    agent.cancel()
    release.set()
    await agent.wait_idle()
    assert started == ["c1", "c2"]
    assert len(of_type(agent, "tool/call")) == 4 and len(of_type(agent, "tool/result")) == 4
    codes = [e["data"].get("error", {}).get("code") for e in of_type(agent, "tool/result")]
    assert codes == ["ABORTED", "ABORTED", "ABORTED_BEFORE_DISPATCH", "ABORTED_BEFORE_DISPATCH"]
    assert [texts(m) for m in agent.inbox.next_step] == ["context from c1", "context from c2"]
    assert of_type(agent, "turn/end")[0]["data"]["reason"]["kind"] == "aborted"
    await run_followup(agent, "next")
    assert user_texts(agent)[-3:] == ["context from c1", "context from c2", "next"]


async def test_18_bad_arguments_and_unknown_tool():
    read = make_tool("read", params={"type": "object", "properties": {"path": {"type": "string"}},
                                     "required": ["path"]})
    agent = make_agent([s.calls([("c1", "read", {}), ("c2", "read", "not json"), ("c3", "nope", {})]),
                        s.text("ok")], [read])
    await run_followup(agent, "go")
    results = of_type(agent, "tool/result")
    got = [(texts(r["data"]["message"]["content"][0]), r["data"].get("error")) for r in results]
    assert got == [
        ('Error: invalid arguments: missing required property "path"', {"name": "ToolArgsError", "code": "INVALID_ARGS"}),
        ('Error: invalid arguments: "arguments" must be an object', {"name": "ToolArgsError", "code": "INVALID_ARGS"}),
        ('Error: unknown tool "nope"', {"name": "ToolNotFoundError", "code": "UNKNOWN_TOOL"}),
    ]
    assert of_type(agent, "tool/call")[1]["data"]["arguments"] == "not json"
    assert boundaries(agent)[-1] == ("turn/end", 1, "completed")


async def test_19_burst_followups():
    n = 5
    agent = make_agent([s.text(f"r{i}") for i in range(n)])
    for i in range(n):
        agent.followup(f"m{i}")
    await agent.wait_idle()
    assert user_texts(agent) == [f"m{i}" for i in range(n)]
    assert [e["data"]["turn"] for e in of_type(agent, "turn/start")] == list(range(1, n + 1))
    assert [e["data"]["turn"] for e in of_type(agent, "turn/end")] == list(range(1, n + 1))
    assert agent.statuses == ["running", "idle"]
    agent2 = make_agent([s.text(f"r{i}") for i in range(n)])
    for i in range(n):
        await run_followup(agent2, f"m{i}")
    assert [e["data"]["turn"] for e in of_type(agent2, "turn/start")] == list(range(1, n + 1))


async def test_idle_steer_starts_a_turn_synchronously_and_a_same_tick_steer_enters_the_next_step():
    agent = make_agent([s.text("a"), s.text("b")])
    agent.steer("first")
    assert types(agent)[-3:] == ["agent/inbox/spliced", "turn/start", "agent/inbox/spliced"]
    agent.steer("second")
    await agent.wait_idle()
    ums = of_type(agent, "user/message")
    steps = of_type(agent, "step/start")
    assert [texts(e["data"]) for e in ums] == ["first", "second"]
    assert len(steps) == 2 and steps[0]["seq"] < ums[0]["seq"] < steps[1]["seq"] < ums[1]["seq"]
    assert len(of_type(agent, "turn/start")) == 1
