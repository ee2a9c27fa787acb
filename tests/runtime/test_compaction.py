"""Compaction (runtime spec 7 + C15): overflow recovery, pruning, pressure, failures."""

from __future__ import annotations

import asyncio

from dsh_tui.extensions.compaction import PREAMBLE, PRUNE_MARKER
from dsh_tui.llm import scripted as s
from tests.runtime.helpers import boundaries, make_agent, make_tool, of_type, run_followup, texts, types

LONG_PROMPT = "Record every part of this historical evidence. " * 60


async def test_overflow_compacts_a_balanced_head_and_retries_in_the_same_step():
    agent = make_agent([s.call("c1", "t", {}), s.finish_error("CONTEXT_WINDOW_EXCEEDED", "too long", status=400),
                        s.text("The request established a premise."), s.text("COMPACTION RECOVERED")],
                       [make_tool("t")])
    await run_followup(agent, LONG_PROMPT)
    t = types(agent)
    i = t.index("compaction/start")
    assert t[i - 1] == "assistant/chunk"  # the failed attempt's finish chunk
    assert t[i:i + 4] == ["compaction/start", "compaction/summary", "user/message", "compaction/end"]
    start, summary, checkpoint, end = agent.session.events[i:i + 4]
    prompt_seq = of_type(agent, "user/message")[0]["seq"]
    # the newest indivisible unit (assistant tool call + result) stays verbatim; only the prompt is shadowed
    assert checkpoint["surfaceOp"] == {"op": "replace", "start": prompt_seq, "end": prompt_seq}
    assert checkpoint["sourceEventSeqs"] == [start["seq"], summary["seq"], prompt_seq]
    assert checkpoint["data"]["source"] == {"kind": "plugin", "plugin": "compact",
                                            "compactionId": start["data"]["compactionId"]}
    assert checkpoint["data"]["content"] == [
        {"type": "text", "text": f"{PREAMBLE}\n\n<compacted-summary>"},
        {"type": "text", "text": "The request established a premise."},
        {"type": "text", "text": "</compacted-summary>"}]
    assert summary["data"]["shadowedSeqs"] == [prompt_seq] and summary["data"]["maxTokens"] == 8192
    assert end["data"] == {"compactionId": start["data"]["compactionId"], "turn": 1}
    assert agent.provider.requests[2]["purpose"] == "compaction"
    retried = agent.provider.requests[3]["messages"]
    assert retried[0]["source"]["kind"] == "plugin" and [m["role"] for m in retried] == ["user", "assistant", "user"]
    assert boundaries(agent)[-1] == ("turn/end", 1, "completed")
    assert len(of_type(agent, "step/start")) == 2


async def test_overflow_without_a_replacement_keeps_the_original_error():
    agent = make_agent([s.finish_error("CONTEXT_WINDOW_EXCEEDED", "too long", status=400)])
    await run_followup(agent, "short")
    end = of_type(agent, "compaction/end")[0]["data"]
    assert end["error"] == "nothing to compact"
    reason = of_type(agent, "turn/end")[0]["data"]["reason"]
    assert reason["kind"] == "error" and reason["error"]["code"] == "CONTEXT_WINDOW_EXCEEDED"
    assert len(agent.provider.requests) == 1


async def test_pruning_alone_clears_pressure_and_skips_the_summarizer():
    big = "x" * 20_000

    async def body(args, ctx):
        return big

    agent = make_agent([s.call("c1", "t", {}), s.text("ok")], [make_tool("t", body)], context_window=3000,
                       max_inline_bytes=None)
    await run_followup(agent, "go")
    t = types(agent)
    i = t.index("compaction/start")
    assert t[i:i + 4] == ["compaction/start", "compaction/prune", "tool/result", "compaction/end"]
    assert t[i + 4] == "step/start"  # pressure runs in the pre-step, before the step opens
    original = of_type(agent, "tool/result")[0]
    pruned = agent.session.events[i + 2]
    assert pruned["surfaceOp"] == {"op": "replace", "start": original["seq"], "end": original["seq"]}
    assert pruned["sourceEventSeqs"] == [original["seq"]]
    text = texts(pruned["data"]["message"]["content"][0])
    assert text == "x" * 4096 + PRUNE_MARKER + "x" * 1024
    assert len(agent.provider.requests) == 2
    sent = agent.provider.requests[1]["messages"][-1]["content"][0]
    assert texts(sent) == text


async def test_failed_summary_leaves_the_surface_untouched_and_the_turn_continues():
    agent = make_agent([s.text("first answer " * 200), s.finish_error("SERVER", "summarizer down"),
                        s.finish_error("SERVER", "summarizer down"), s.text("second answer")],
                       context_window=400, retry=False)
    await run_followup(agent, LONG_PROMPT)
    before = agent.session.derive_messages()
    await run_followup(agent, "next")
    ends = of_type(agent, "compaction/end")
    assert [e["data"].get("error") for e in ends] == ["summarizer down", "summarizer down"]  # 1 + 1 retry
    assert not [e for e in agent.session.events if isinstance(e.get("surfaceOp"), dict)]
    assert agent.session.derive_messages()[:2] == before
    assert boundaries(agent)[-1] == ("turn/end", 2, "completed")


async def test_manual_compaction_runs_as_maintenance_between_turns():
    agent = make_agent([s.text("answer one " * 100), s.text("answer two " * 100), s.text("summary of it"),
                        s.text("three")], context_window=100_000)
    await run_followup(agent, LONG_PROMPT)
    await run_followup(agent, "second question " * 50)
    statuses = list(agent.statuses)
    assert await agent.compact_now() is True
    assert agent.statuses == statuses  # maintenance reports idle
    start = of_type(agent, "compaction/start")[0]
    assert start["data"]["turn"] is None
    checkpoint = [e for e in of_type(agent, "user/message") if isinstance(e.get("surfaceOp"), dict)][0]
    assert checkpoint["data"]["source"]["plugin"] == "compact"
    await run_followup(agent, "after")
    first = agent.provider.requests[-1]["messages"][0]
    assert first["source"]["plugin"] == "compact"


async def test_meter_is_incremental_and_anchored_to_provider_usage():
    from dsh_tui.extensions.compaction import Compactor, header_price, message_price

    big_usage = {"inputTokens": 5000, "outputTokens": 10, "cacheReadTokens": 1000}
    agent = make_agent([s.text("one", usage=big_usage), s.text("two", usage={"inputTokens": 1, "outputTokens": 1})],
                       compaction=False)
    await run_followup(agent, "first")
    meter = Compactor(agent)
    header = agent.session.request_header()
    heuristic = header_price(header.get("system"), header.get("tools")) + sum(
        message_price(m) for m in agent.session.derive_messages())
    assert heuristic < 6010
    assert meter.measure() == 6010  # provider total wins when it is above the estimate at the anchor
    agent.inject("more context " * 10)
    await run_followup(agent, "second")
    # the second answer's usage (2 tokens) is below the heuristic: the heuristic baseline is used
    heuristic = header_price(header.get("system"), header.get("tools")) + sum(
        message_price(m) for m in agent.session.derive_messages())
    assert meter.measure() == heuristic
    assert Compactor(agent).measure() == heuristic  # incremental == from scratch


async def test_manual_compaction_of_a_v4_session_keeps_the_system_head_and_writes_v4_shapes():
    """Format v4 (the default for new sessions): the checkpoint's replacement is ``{op, startSeq, endSeq}``, it
    never shadows the ``system/message`` head (the system prompt stays the log's first surface node), and the next
    request carries the summary first."""
    from dsh_tui.session.headers import make_header
    from dsh_tui.session.log import Session

    counter = iter(range(1, 10**9))
    session = Session(make_header("sess-v4", cwd="/work", created_at=1, version=4), clock=lambda: next(counter))
    agent = make_agent([s.text("answer one " * 100), s.text("answer two " * 100), s.text("summary of it"),
                        s.text("three")], session=session, context_window=100_000, persona="You are a test.")
    await run_followup(agent, LONG_PROMPT)
    await run_followup(agent, "second question " * 50)
    assert await agent.compact_now() is True
    (head,) = of_type(agent, "system/message")
    checkpoint = [e for e in of_type(agent, "user/message") if isinstance(e.get("surfaceOp"), dict)][0]
    op = checkpoint["surfaceOp"]
    assert set(op) == {"op", "startSeq", "endSeq"} and op["startSeq"] > head["seq"]
    assert checkpoint["data"]["source"]["kind"] == "compact-checkpoint"
    assert session.surface_nodes[0] == head["seq"]
    assert head["seq"] not in of_type(agent, "compaction/summary")[0]["data"]["shadowedSeqs"]
    await run_followup(agent, "after")
    assert "<compacted-summary>" in texts(agent.provider.requests[-1]["messages"][0])


async def test_a_steer_during_maintenance_stays_next_step_and_its_latched_wake_claims_it_first():
    """dsh's wake rules: a waking send during maintenance is latched, not retargeted (only one after an abort
    goes to the next turn); the turn the latch opens claims the next-step message before one next-turn
    message (dsh's subagent-report recording: a child's report, then its settlement, one parent turn)."""
    agent = make_agent([s.text("one"), s.text("both seen")])
    await run_followup(agent, "first")
    release = asyncio.Event()

    async def hold(_signal):
        agent.steer("the report")
        agent.followup("the settlement")
        await release.wait()

    job = asyncio.ensure_future(agent.run_maintenance(hold))
    await asyncio.sleep(0)
    assert not of_type(agent, "turn/start")[1:]  # latched while maintenance runs
    release.set()
    await job
    await agent.wait_idle()
    splices = [(e["data"]["target"], e["data"].get("removedCount")) for e in of_type(agent, "agent/inbox/spliced")][2:]
    assert splices == [("next-step", None), ("next-turn", None), ("next-step", 1), ("next-turn", 1)]
    assert [b["text"] for m in agent.provider.requests[-1]["messages"][-2:] for b in m["content"]] == [
        "the report", "the settlement"]
