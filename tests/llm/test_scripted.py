"""The scripted provider: helpers, delays, errors, hangs, JSON scripts."""

from __future__ import annotations

import asyncio

import pytest

from dsh_tui.llm import scripted as s
from dsh_tui.llm.protocol import LlmError


async def collect(p, req=None):
    return [c async for c in p.stream(req or {"messages": []})]


async def test_plays_responses_in_order_and_records_requests():
    p = s.ScriptedProvider([s.text("a"), s.call("c1", "echo", {"x": 1})])
    first = await collect(p, {"n": 1})
    second = await collect(p, {"n": 2})
    assert first[-1] == {"type": "finish", "reason": {"kind": "stop"}}
    assert second[2]["block"] == {"type": "tool-call", "id": "c1", "name": "echo", "arguments": '{"x":1}'}
    assert p.requests == [{"n": 1}, {"n": 2}]
    with pytest.raises(LlmError):
        await collect(p)


async def test_raise_hang_and_callable():
    p = s.ScriptedProvider(
        [
            [{"type": "block-start", "index": 0, "blockType": "text"}, s.Raise(LlmError("x", "SERVER"))],
            [s.Hang()],
            lambda req: s.text(f"echo {len(req['messages'])}"),
        ]
    )
    with pytest.raises(LlmError):
        await collect(p)
    task = asyncio.ensure_future(collect(p))
    await asyncio.sleep(0.01)
    assert not task.done() and p.active == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert p.active == 0
    out = await collect(p, {"messages": [1, 2]})
    assert out[2]["block"]["text"] == "echo 2"


async def test_json_script_with_reasoning_chunks_and_calls():
    p = s.ScriptedProvider.from_json(
        [
            {"text": "hello world", "reasoning": "thinking", "chunkSize": 4},
            {"calls": [{"id": "c1", "name": "read", "arguments": {"file_path": "a"}}], "text": "reading"},
            {"error": {"code": "RATE_LIMIT", "message": "busy", "status": 429}},
        ]
    )
    a = await collect(p)
    deltas = [c["text"] for c in a if c["type"] == "text-delta"]
    assert deltas == ["hell", "o wo", "rld"]
    assert a[0] == {"type": "block-start", "index": 0, "blockType": "reasoning"}
    b = await collect(p)
    assert b[-1]["reason"]["kind"] == "tool-calls" and b[0]["blockType"] == "text"
    c = await collect(p)
    assert c == [
        {
            "type": "finish",
            "reason": {"kind": "error", "failure": {"message": "busy", "code": "RATE_LIMIT", "status": 429}},
        }
    ]
