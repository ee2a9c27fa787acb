"""Runtime spec 3.9 + correction C1: what each cancellation window records."""

from __future__ import annotations

import asyncio

from dsh_tui.llm import scripted as s
from dsh_tui.llm.protocol import RetryPolicy
from tests.runtime.helpers import boundaries, make_agent, make_tool, of_type, run_followup, types, user_texts


async def test_cancel_from_running_status_listener_drops_the_turn():  # C1, window before turn/start
    agent = make_agent([s.text("never")])
    agent.on("agent/status", lambda p: agent.cancel() if p["status"] == "running" else None)
    agent.followup("hi")
    await agent.wait_idle()
    assert "turn/start" not in types(agent) and "turn/end" not in types(agent)
    spliced = [e["data"] for e in of_type(agent, "agent/inbox/spliced")]
    assert spliced[-1]["outcome"] == "canceled" and spliced[-1]["removedCount"] == 1
    assert agent.statuses == ["running", "idle"]
    assert agent.inbox.pending() is False and agent.provider.requests == []


async def test_cancel_after_waking_send_closes_the_synchronously_opened_turn():  # pre-step window
    agent = make_agent([s.text("never")])
    agent.followup("hi")
    assert types(agent)[-1] == "agent/inbox/spliced" and "turn/start" in types(agent)  # synchronous prefix
    agent.cancel()
    await agent.wait_idle()
    assert boundaries(agent) == [("turn/start", 1), ("turn/end", 1, "aborted")]
    assert user_texts(agent) == []  # the claimed message is lost


async def test_cancel_from_step_start_observer_keeps_entered_messages():
    agent = make_agent([s.text("never")])
    agent.session.subscribe(lambda sess, ev: agent.cancel() if ev["type"] == "step/start" else None)
    await run_followup(agent, "hi")
    assert types(agent)[-4:] == ["step/start", "user/message", "step/end", "turn/end"]
    assert agent.provider.requests == []
    assert of_type(agent, "turn/end")[0]["data"]["reason"] == {"kind": "aborted", "reason": {"kind": "user"}}


async def test_cancel_during_retry_backoff():
    policy = RetryPolicy(max_retries=3, initial_delay_ms=500, jitter_ratio=0)
    provider = s.ScriptedProvider([s.finish_error("SERVER", "down"), s.text("never")], name="mock",
                                  retry_policy=policy)
    agent = make_agent(provider=provider)
    agent.sleep.gate = asyncio.Event()  # the backoff never finishes by itself
    agent.followup("hi")
    while not of_type(agent, "llm/retry"):
        await asyncio.sleep(0)
    agent.cancel()
    await agent.wait_idle()
    assert not of_type(agent, "llm/retry-started") and not of_type(agent, "assistant/message")
    assert of_type(agent, "turn/end")[0]["data"]["reason"]["kind"] == "aborted"


async def test_mid_tool_cancel_keeps_a_throwing_body_error():
    gate = asyncio.Event()

    async def body(args, ctx):
        await gate.wait()
        raise RuntimeError("body failed on its own")

    agent = make_agent([s.call("c1", "t", {})], [make_tool("t", body)])
    agent.followup("go")
    while not of_type(agent, "tool/call"):
        await asyncio.sleep(0)
    agent.cancel()
    gate.set()
    await agent.wait_idle()
    res = of_type(agent, "tool/result")[0]["data"]
    assert res["message"]["content"][0]["content"][0]["text"] == "Error: body failed on its own"
    assert "error" not in res


async def test_body_sees_cancellation_event():
    seen = []

    async def body(args, ctx):
        await ctx.cancelled.wait()
        seen.append("cancelled")
        return "finished anyway"

    agent = make_agent([s.call("c1", "t", {})], [make_tool("t", body)])
    agent.followup("go")
    while not of_type(agent, "tool/call"):
        await asyncio.sleep(0)
    await asyncio.sleep(0)
    agent.cancel()
    await agent.wait_idle()
    assert seen == ["cancelled"]
    res = of_type(agent, "tool/result")[0]["data"]
    assert res["error"] == {"name": "AbortError", "code": "ABORTED"}
    assert res["message"]["content"][0]["content"][0]["text"] == "Error: tool call aborted"


async def test_disposal_mid_turn():
    agent = make_agent([[{"type": "block-start", "index": 0, "blockType": "text"}, s.Hang()]])
    agent.followup("go")
    while not of_type(agent, "assistant/chunk"):
        await asyncio.sleep(0)
    await agent.dispose()
    assert of_type(agent, "turn/end")[0]["data"]["reason"] == {"kind": "aborted", "reason": {"kind": "disposed"}}
    agent.followup("ignored after disposal")
    await asyncio.sleep(0)
    assert len(of_type(agent, "turn/start")) == 1


async def test_waking_send_after_abort_is_latched_and_replayed():
    agent = make_agent([[{"type": "block-start", "index": 0, "blockType": "text"}, s.Hang()], s.text("second")])
    agent.followup("first")
    while not of_type(agent, "assistant/chunk"):
        await asyncio.sleep(0)
    agent.cancel()
    agent.steer("after the cancel")  # retargeted to next-turn and latched
    assert agent.inbox.next_turn and not agent.inbox.next_step
    await agent.wait_idle()
    assert [e["data"]["reason"]["kind"] for e in of_type(agent, "turn/end")] == ["aborted", "completed"]
    assert user_texts(agent) == ["first", "after the cancel"]


async def test_idle_cancel_aborts_nothing_but_clears_the_inbox():
    agent = make_agent([s.text("x")])
    agent.inject("pending context")
    agent.cancel()
    assert not agent.inbox.pending()
    assert of_type(agent, "agent/inbox/spliced")[-1]["data"]["outcome"] == "canceled"
    assert "turn/start" not in types(agent)


async def test_keep_inbox_cancel_leaves_queued_input():
    agent = make_agent([[{"type": "block-start", "index": 0, "blockType": "text"}, s.Hang()], s.text("b")])
    agent.followup("a")
    agent.followup("b")
    while not of_type(agent, "assistant/chunk"):
        await asyncio.sleep(0)
    agent.cancel(keep_inbox=True)
    await agent.wait_idle()
    assert [m["content"][0]["text"] for m in agent.inbox.next_turn] == ["b"]
    assert len(of_type(agent, "turn/start")) == 1  # parked until another wake


async def test_approval_wait_cancelled_gives_aborted_before_dispatch():
    agent = make_agent([s.call("c1", "sh", {})], [make_tool("sh", access="exec")], preset="workspace-write")
    waiting = asyncio.Event()

    async def answer(p, nxt):
        waiting.set()
        await asyncio.Event().wait()

    agent.on("approval/request", answer)
    agent.followup("go")
    await waiting.wait()
    agent.cancel()
    await agent.wait_idle()
    res = of_type(agent, "tool/result")[0]["data"]
    assert res["error"]["code"] == "ABORTED_BEFORE_DISPATCH"
    assert [e["data"]["outcome"] for e in of_type(agent, "approval/decided")] == ["cancelled"]


async def test_a_body_that_ignores_cancellation_is_cancelled_after_the_grace():
    async def stubborn(args, ctx):
        await asyncio.sleep(3600)

    agent = make_agent([s.call("c1", "t", {})], [make_tool("t", stubborn)], tool_grace_s=0.01)
    agent.followup("go")
    while not of_type(agent, "tool/call"):
        await asyncio.sleep(0)
    await asyncio.sleep(0)
    agent.cancel()
    await asyncio.wait_for(agent.wait_idle(), 5)
    assert of_type(agent, "tool/result")[0]["data"]["error"]["code"] == "ABORTED"
