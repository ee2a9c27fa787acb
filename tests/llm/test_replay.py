"""The replay provider: attempts derived from a recorded log, override patches, synthetic summaries."""

from __future__ import annotations

import asyncio
import json

import pytest

from dsh_tui.llm.protocol import LlmError
from dsh_tui.llm.replay import ReplayProvider, attempts_from_events, read_log_events
from tests.conftest import FIXTURES

SNAP = FIXTURES / "examples" / "acp-agent" / "tests" / "snapshots"


async def collect(provider, purpose="turn"):
    return [c async for c in provider.stream({"purpose": purpose, "messages": []})]


def test_attempts_split_by_step_and_finish():
    _, events = read_log_events(SNAP / "tool-call-turn" / "session.jsonl")
    attempts = attempts_from_events(events)
    assert [(a["turn"], a["step"]) for a in attempts] == [(1, 1), (1, 2)]
    assert [a["chunks"][-1]["reason"]["kind"] for a in attempts] == ["tool-calls", "stop"]
    # packed reasoning/tool-call rows are expanded back into chunks
    n_chunks = sum(1 for e in events if e["type"] == "assistant/chunk")
    assert sum(len(a["chunks"]) for a in attempts) == n_chunks


def test_retry_attempts_are_separate():
    _, events = read_log_events(SNAP / "empty-response-retry" / "session.jsonl")
    attempts = attempts_from_events(events)
    assert [a["chunks"][-1]["reason"]["kind"] for a in attempts] == ["error", "stop"]
    assert attempts[0]["step"] == attempts[1]["step"] == 1


async def test_override_throw_and_hang(tmp_path):
    p = ReplayProvider.from_file(SNAP / "error-finish" / "session.jsonl")
    with pytest.raises(LlmError) as err:
        await collect(p)
    assert err.value.code == "AUTH" and err.value.message == "simulated provider error (HTTP 401)"

    p = ReplayProvider.from_file(SNAP / "cancel" / "session.jsonl", cwd=tmp_path)
    got = []

    async def run():
        async for c in p.stream({"purpose": "turn"}):
            got.append(c)

    task = asyncio.ensure_future(run())
    while not (tmp_path / ".dsh-snapshot-stream-ready").exists():
        await asyncio.sleep(0.001)
    assert [c["type"] for c in got] == ["block-start", "text-delta"]
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_title_slots_are_skipped_and_compaction_summaries_are_streams():
    p = ReplayProvider.from_file(SNAP / "session-title-after-turn" / "session.jsonl")
    chunks = await collect(p)
    assert chunks[-3]["block"]["text"] == "TITLE_DONE"
    cr = (
        FIXTURES
        / "examples"
        / "headless-agent"
        / "tests"
        / "snapshots"
        / "compaction-recovery"
        / "session.jsonl"
    )
    p = ReplayProvider.from_file(cr)
    assert p.name == "deepseek-official"
    summary = await collect(p, "compaction")
    assert [c["type"] for c in summary] == ["block-start", "text-delta", "block-end", "usage", "finish"]
    assert summary[1]["text"] == "The request established a durable compaction premise."
    turn = await collect(p)  # the next turn slot after the summary
    assert turn[-1]["reason"]["kind"] == "stop"
    with pytest.raises(LlmError):
        await collect(p)


def test_runtime_form_log_with_seq(tmp_path):
    f = tmp_path / "s.jsonl"
    lines = [
        {"type": "session", "version": 0, "id": "x", "createdAt": 1, "delegationDepth": 0},
        {
            "type": "assistant/chunk",
            "seq": 0,
            "time": 5,
            "data": {"turn": 1, "step": 1, "chunk": {"type": "finish", "reason": {"kind": "stop"}}},
        },
    ]
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    header, events = read_log_events(f)
    assert header["id"] == "x" and events[0]["time"] == 5
    assert attempts_from_events(events)[0]["chunks"] == [{"type": "finish", "reason": {"kind": "stop"}}]


def test_a_file_that_is_not_a_jsonl_log_is_a_one_line_llm_error(tmp_path):
    not_jsonl = tmp_path / "input.json"
    not_jsonl.write_text('{\n  "steps": []\n}\n')
    with pytest.raises(LlmError, match=r"^replay log .*input\.json: line 1 is not a JSON object"):
        read_log_events(not_jsonl)
    bad_line = tmp_path / "session.jsonl"
    bad_line.write_text('{"type":"session","version":0,"id":"s"}\n\n[1,2]\n')
    with pytest.raises(LlmError, match=r"session\.jsonl: line 3 is not a JSON object"):
        read_log_events(bad_line)
    bad_line.write_text('{"type":"session","version":0,"id":"s"}\n' + "[" * 100_000 + "\n")
    with pytest.raises(LlmError, match=r"session\.jsonl: line 2 is not a JSON object"):
        read_log_events(bad_line)  # too deep for Python's parser: named like any other bad line
    compressed = tmp_path / "session.jsonl.zstd"
    compressed.write_bytes(b"\x28\xb5\x2f\xfd\x00\xff\xfe")
    with pytest.raises(LlmError, match=r"is not UTF-8 JSONL"):
        ReplayProvider.from_file(compressed)


async def test_a_scripted_from_request_placeholder_takes_the_last_match_in_the_live_request():
    """dsh-llm-replay's ``{{fromRequest:<regex>}}`` (dsh's goal scenarios echo a minted goal id): the last match
    among the request messages' strings, its first group if it has one; no match is a loud error."""
    call = {"type": "tool-call-delta", "index": 0, "id": "c1", "name": "update_goal",
            "argumentsDelta": '{"goal_id":"{{fromRequest:goal-[0-9a-f]{4}}}","r":"{{fromRequest:rev=(\\d+)}}"}'}
    p = ReplayProvider([], override=[{"kind": "chunks", "chunks": [call]}] * 2)
    messages = [{"role": "tool", "content": [{"type": "text", "text": "goal-aaaa rev=1"}]},
                {"role": "tool", "content": [{"type": "text", "text": "goal-beef rev=2"}]}]
    (chunk,) = [c async for c in p.stream({"purpose": "turn", "messages": messages})]
    assert chunk["argumentsDelta"] == '{"goal_id":"goal-beef","r":"2"}'
    with pytest.raises(LlmError, match="matches nothing"):
        [c async for c in p.stream({"purpose": "turn", "messages": []})]


async def test_from_request_reads_the_frozen_messages_the_agent_hands_providers():
    """Read-only mappings and tuples: the placeholder still finds the id (dsh-tui run --replay of dsh's
    goal-wrapup)."""
    from types import MappingProxyType

    call = {"type": "text-delta", "index": 0, "text": "{{fromRequest:goal-[0-9a-f]+}}"}
    p = ReplayProvider([], override=[{"kind": "chunks", "chunks": [call]}])
    message = MappingProxyType({"role": "tool", "content": (MappingProxyType({"type": "text", "text": "goal-abc1"}),)})
    (chunk,) = [c async for c in p.stream({"purpose": "turn", "messages": (message,)})]
    assert chunk["text"] == "goal-abc1"
