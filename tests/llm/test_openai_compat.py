"""The chat-completions adapter against a real HTTP server on 127.0.0.1 (tests/llm/sse_server.py)."""

from __future__ import annotations

import asyncio
import email.utils
import socket
import threading
import types

import httpx
import pytest

from dsh_tui.llm import protocol as P
from dsh_tui.llm.openai import OpenAICompatProvider, parse_retry_after
from dsh_tui.llm.openai import errors as openai_errors
from dsh_tui.llm.protocol import LlmError, ModelInfo, Provider
from tests.llm.sse_server import DONE, Reply, ScriptServer, chunk, json_reply, sse, sse_reply, tool_call

KEY = "sk-test-0123456789abcdef0123456789abcdef"


@pytest.fixture
def server():
    with ScriptServer() as srv:
        yield srv


def make(server: ScriptServer, **kw) -> OpenAICompatProvider:
    kw.setdefault("idle_timeout_s", 5)
    return OpenAICompatProvider(
        "deepseek-official",
        server.base_url,
        lambda: KEY,
        {"deepseek-v4-flash": ModelInfo(context_window=1_000_000, default_max_tokens=256_000)},
        **kw,
    )


def req(text: str = "hi", **config) -> dict:
    return {
        "config": {"provider": "deepseek-official", "model": "deepseek-v4-flash", **config},
        "system": "You are terse.",
        "tools": [],
        "messages": [
            {
                "id": "m1",
                "role": "user",
                "content": [{"type": "text", "text": text}],
                "source": {"kind": "user"},
            }
        ],
        "sessionId": "sess-1",
        "purpose": "turn",
    }


async def collect(provider, request=None) -> list[dict]:
    out = []
    try:
        async for c in provider.stream(request or req()):
            out.append(c)
    finally:
        await provider.aclose()
    return out


async def fail(provider, request=None) -> tuple[LlmError, list[dict]]:
    got: list[dict] = []
    with pytest.raises(LlmError) as info:
        try:
            async for c in provider.stream(request or req()):
                got.append(c)
        finally:
            await provider.aclose()
    return info.value, got


USAGE = {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107}


async def test_plain_text_stream(server):
    server.push(
        sse_reply(
            chunk("", role="assistant"),
            chunk("Hel"),
            b": keep-alive\n\n",
            chunk("lo"),
            chunk("", finish="stop", usage=USAGE),
        )
    )
    p = make(server)
    assert isinstance(p, Provider)
    chunks = await collect(p)
    assert chunks == [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "Hel"},
        {"type": "text-delta", "index": 0, "text": "lo"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Hello"}},
        {"type": "usage", "usage": {"inputTokens": 100, "outputTokens": 7}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]
    (r,) = server.requests
    assert r["path"] == "/chat/completions"
    h = {k.lower(): v for k, v in r["headers"].items()}
    assert h["authorization"] == f"Bearer {KEY}"
    assert h["accept"] == "text/event-stream"
    assert h["content-type"] == "application/json"
    assert h["user-agent"].startswith("deepseek-harness/")
    assert "(+https://github.com/deepseek-ai/deepseek-harness)" in h["user-agent"]
    assert h["x-deepseek-harness-session-id"] == "sess-1"
    assert "x-deepseek-harness-compact" not in h
    assert r["body"] == {
        "model": "deepseek-v4-flash",
        "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def test_reasoning_then_text_with_effort_and_cache_hits(server):
    usage = {
        "prompt_tokens": 2878,
        "completion_tokens": 83,
        "prompt_cache_hit_tokens": 2816,
        "prompt_cache_miss_tokens": 62,
        "completion_tokens_details": {"reasoning_tokens": 17},
    }
    server.push(
        sse_reply(
            chunk(None, reasoning="", role="assistant"),  # the empty first thinking chunk opens nothing
            chunk(None, reasoning="Think"),
            chunk(None, reasoning="ing."),
            chunk("Answer"),
            chunk("", finish="stop"),
            chunk(None, no_choices=True, usage=usage),  # trailing usage-only chunk
        )
    )
    chunks = await collect(
        make(server), req(reasoningEffort="max", maxTokens=1000, temperature=0.5, stop=["X"])
    )
    assert chunks == [
        {"type": "block-start", "index": 0, "blockType": "reasoning"},
        {"type": "reasoning-delta", "index": 0, "text": "Think"},
        {"type": "reasoning-delta", "index": 0, "text": "ing."},
        {"type": "block-start", "index": 1, "blockType": "text"},
        {"type": "text-delta", "index": 1, "text": "Answer"},
        {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "Thinking."}},
        {"type": "block-end", "index": 1, "block": {"type": "text", "text": "Answer"}},
        {
            "type": "usage",
            "usage": {"inputTokens": 62, "outputTokens": 83, "cacheReadTokens": 2816, "reasoningTokens": 17},
        },
        {"type": "finish", "reason": {"kind": "stop"}},
    ]
    body = server.requests[0]["body"]
    assert body["thinking"] == {"type": "enabled"}
    assert body["reasoning_effort"] == "max"
    assert body["max_tokens"] == 1000 and body["temperature"] == 0.5 and body["stop"] == ["X"]


async def test_openai_style_cached_tokens_win_over_deepseek_field(server):
    usage = {
        "prompt_tokens": 50,
        "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 40},
        "prompt_cache_hit_tokens": 1,
    }
    server.push(sse_reply(chunk("ok", finish="stop", usage=usage)))
    chunks = await collect(make(server))
    assert chunks[-2] == {
        "type": "usage",
        "usage": {"inputTokens": 10, "outputTokens": 5, "cacheReadTokens": 40},
    }


async def test_parallel_tool_calls_with_fragmented_arguments(server):
    server.push(
        sse_reply(
            chunk(None, reasoning="Two reads."),
            chunk(None, tool_calls=[tool_call(0, id="call_a", name="read", args="")]),
            chunk(None, tool_calls=[tool_call(0, args='{"file_')]),
            chunk(None, tool_calls=[tool_call(1, id="call_b", name="glob", args='{"pat')]),
            chunk(None, tool_calls=[tool_call(0, args='path":"a.txt"}')]),
            chunk(None, tool_calls=[tool_call(1, args='tern":"*.py"}')]),
            chunk(None, finish="tool_calls", usage=USAGE),
        )
    )
    chunks = await collect(make(server))
    assert chunks == [
        {"type": "block-start", "index": 0, "blockType": "reasoning"},
        {"type": "reasoning-delta", "index": 0, "text": "Two reads."},
        {"type": "block-start", "index": 1, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": 1, "id": "call_a", "name": "read", "argumentsDelta": ""},
        {"type": "tool-call-delta", "index": 1, "id": "call_a", "name": "read", "argumentsDelta": '{"file_'},
        {"type": "block-start", "index": 2, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": 2, "id": "call_b", "name": "glob", "argumentsDelta": '{"pat'},
        {
            "type": "tool-call-delta",
            "index": 1,
            "id": "call_a",
            "name": "read",
            "argumentsDelta": 'path":"a.txt"}',
        },
        {
            "type": "tool-call-delta",
            "index": 2,
            "id": "call_b",
            "name": "glob",
            "argumentsDelta": 'tern":"*.py"}',
        },
        {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "Two reads."}},
        {
            "type": "block-end",
            "index": 1,
            "block": {
                "type": "tool-call",
                "id": "call_a",
                "name": "read",
                "arguments": '{"file_path":"a.txt"}',
            },
        },
        {
            "type": "block-end",
            "index": 2,
            "block": {"type": "tool-call", "id": "call_b", "name": "glob", "arguments": '{"pattern":"*.py"}'},
        },
        {"type": "usage", "usage": {"inputTokens": 100, "outputTokens": 7}},
        {"type": "finish", "reason": {"kind": "tool-calls"}},
    ]


async def test_length_finish_with_half_tool_call(server):
    server.push(
        sse_reply(
            chunk("Let me"),
            chunk(None, tool_calls=[tool_call(0, id="call_x", name="write", args='{"file_path":"a","con')]),
            chunk(None, finish="length", usage=USAGE),
        )
    )
    chunks = await collect(make(server))
    assert [c["type"] for c in chunks] == [
        "block-start",
        "text-delta",
        "block-start",
        "tool-call-delta",
        "block-end",
        "block-end",
        "usage",
        "finish",
    ]
    assert chunks[5] == {
        "type": "block-end",
        "index": 1,
        "block": {"type": "tool-call", "id": "call_x", "name": "write", "arguments": '{"file_path":"a","con'},
    }
    assert chunks[-1] == {"type": "finish", "reason": {"kind": "max-tokens"}}


async def test_content_filter_finish_is_an_error_finish(server):
    server.push(sse_reply(chunk("Par"), chunk(None, finish="content_filter")))
    chunks = await collect(make(server))
    assert chunks[-1] == {
        "type": "finish",
        "reason": {
            "kind": "error",
            "failure": {"message": "model stopped: content_filter", "code": "CONTENT_FILTER"},
        },
    }
    assert chunks[-2] == {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Par"}}


async def test_empty_completion_is_empty_response(server):
    server.push(sse_reply(chunk("", role="assistant"), chunk("", finish="stop", usage=USAGE)))
    chunks = await collect(make(server))
    assert chunks == [
        {"type": "usage", "usage": {"inputTokens": 100, "outputTokens": 7}},
        {
            "type": "finish",
            "reason": {
                "kind": "error",
                "failure": {
                    "message": "model returned a completed response with no content",
                    "code": "EMPTY_RESPONSE",
                },
            },
        },
    ]


async def test_reasoning_only_stream_counts_as_content(server):
    server.push(sse_reply(chunk(None, reasoning="hmm"), chunk("", finish="stop")))
    chunks = await collect(make(server))
    assert chunks[-1] == {"type": "finish", "reason": {"kind": "stop"}}


async def test_malformed_json_payload(server):
    server.push(sse_reply(chunk("a"), b"data: {not json\n\n", chunk("b")))
    err, got = await fail(make(server))
    assert err.code == P.MALFORMED_RESPONSE
    assert err.message == "malformed SSE payload: {not json"
    assert got == [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "a"},
    ]


async def test_malformed_payload_in_the_same_read_as_good_ones(server):
    # One write: the adapter still delivers the deltas before the bad payload, then fails.
    server.push(Reply(steps=[sse(chunk("a")) + sse(chunk("b")) + b"data: [1,\n\n" + sse(chunk("c"))]))
    err, got = await fail(make(server))
    assert err.code == P.MALFORMED_RESPONSE
    assert [c.get("text") for c in got if c["type"] == "text-delta"] == ["a", "b"]


async def test_stream_without_done_is_stream_closed(server):
    server.push(sse_reply(chunk("a"), chunk("", finish="stop"), done=False))
    err, got = await fail(make(server))
    assert err.code == P.STREAM_CLOSED
    assert err.message == "SSE stream ended without [DONE]"
    assert [c["type"] for c in got] == ["block-start", "text-delta"]


async def test_unterminated_done_event_is_stream_closed(server):
    # "data: [DONE]" without its blank line is never dispatched (eventsource-parser semantics).
    server.push(Reply(steps=[sse(chunk("a", finish="stop")), b"data: [DONE]\n"]))
    err, _ = await fail(make(server))
    assert err.code == P.STREAM_CLOSED


async def test_connection_dropped_mid_stream_is_transport(server):
    server.push(Reply(steps=[sse(chunk("a")), sse(chunk("b"))], end="drop"))
    err, got = await fail(make(server))
    assert err.code == P.TRANSPORT
    assert err.message.startswith(f"DeepSeek API stream from {server.base_url} failed")
    assert [c.get("text") for c in got if c["type"] == "text-delta"] == ["a", "b"]


async def test_connection_refused_is_transport_naming_endpoint():
    with ScriptServer() as srv:
        url = srv.base_url
    p = OpenAICompatProvider("deepseek-official", url, lambda: KEY, idle_timeout_s=5)
    err, _ = await fail(p)
    assert err.code == P.TRANSPORT
    assert err.message.startswith(f"DeepSeek API request to {url} failed")
    assert KEY not in err.message


async def test_stall_past_idle_timeout_mid_stream(server):
    reply = Reply(steps=[sse(chunk("a"))], end="stall")
    server.push(reply)
    err, got = await fail(make(server, idle_timeout_s=1.0))
    assert err.code == P.TIMEOUT
    assert err.message == "DeepSeek stream idle timeout after 1000ms"
    assert [c["type"] for c in got] == ["block-start", "text-delta"]
    assert reply.client_closed.wait(5)


async def test_stall_before_response_headers_times_out():
    # A server that accepts the request and never answers: the initial fetch is bounded too.
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(1)
    port = lsock.getsockname()[1]
    closed = threading.Event()

    def silent():
        conn, _ = lsock.accept()
        conn.settimeout(10)
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass
        closed.set()
        conn.close()

    threading.Thread(target=silent, daemon=True).start()
    p = OpenAICompatProvider("deepseek-official", f"http://127.0.0.1:{port}", lambda: KEY, idle_timeout_s=0.3)
    err, got = await fail(p)
    assert err.code == P.TIMEOUT and got == []
    assert closed.wait(5)
    lsock.close()


async def test_cancellation_while_waiting_for_the_response_closes_the_connection():
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(1)
    got_request, closed = threading.Event(), threading.Event()

    def silent():
        conn, _ = lsock.accept()
        conn.settimeout(20)
        try:
            while data := conn.recv(65536):
                if b"\r\n\r\n" in data or got_request.is_set():
                    got_request.set()
        except OSError:
            pass
        closed.set()
        conn.close()

    threading.Thread(target=silent, daemon=True).start()
    p = OpenAICompatProvider("deepseek-official", f"http://127.0.0.1:{lsock.getsockname()[1]}", lambda: KEY)

    async def consume():
        async for _ in p.stream(req()):
            pass

    task = asyncio.create_task(consume())
    assert await asyncio.to_thread(got_request.wait, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(closed.wait, 10)
    await p.aclose()
    lsock.close()


async def test_comments_keep_a_slow_stream_alive(server):
    # At least 1.2 s of stream in all (the server's sleeps never end early), longer than the 1 s idle
    # timeout, but every gap is a tenth of it, bridged by a keep-alive comment (comments count as activity).
    steps: list = [sse(chunk("a"))]
    for _ in range(12):
        steps += [0.1, b": keep-alive\n\n"]
    steps += [sse(chunk("b", finish="stop")), DONE]
    server.push(Reply(steps=steps))
    chunks = await collect(make(server, idle_timeout_s=1.0))
    assert chunks[-1] == {"type": "finish", "reason": {"kind": "stop"}}
    assert chunks[-2] == {"type": "block-end", "index": 0, "block": {"type": "text", "text": "ab"}}


async def test_cancellation_mid_stream_closes_the_connection(server):
    reply = Reply(steps=[sse(chunk("a")), sse(chunk("b"))], end="stall")
    server.push(reply)
    p = make(server, idle_timeout_s=30)
    seen: list[dict] = []
    two = asyncio.Event()

    async def consume():
        async for c in p.stream(req()):
            seen.append(c)
            if len(seen) == 3:
                two.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(two.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(reply.client_closed.wait, 10)
    assert [c.get("text") for c in seen if c["type"] == "text-delta"] == ["a", "b"]
    await p.aclose()


async def test_aclose_of_the_generator_closes_the_connection(server):
    reply = Reply(steps=[sse(chunk("a"))], end="stall")
    server.push(reply)
    p = make(server, idle_timeout_s=30)
    gen = p.stream(req())
    first = await gen.__anext__()
    assert first == {"type": "block-start", "index": 0, "blockType": "text"}
    await gen.aclose()
    assert await asyncio.to_thread(reply.client_closed.wait, 10)
    await p.aclose()


# -- HTTP errors ---------------------------------------------------------------------------------


async def test_401_is_auth_and_never_echoes_the_key(server):
    server.push(
        json_reply(
            401,
            {
                "error": {
                    "message": f"Authentication Fails, Your api key: {KEY} is invalid",
                    "type": "authentication_error",
                }
            },
            headers={"x-request-id": "req-123"},
        )
    )
    err, _ = await fail(make(server))
    assert err.code == P.AUTH and err.status == 401 and err.request_id == "req-123"
    assert KEY not in err.message and KEY[:12] not in err.message
    assert err.message == "Authentication Fails, Your api key: [REDACTED] is invalid"
    assert err.failure() == {"message": err.message, "code": "AUTH", "status": 401, "requestId": "req-123"}


async def test_truncated_key_echo_is_redacted(server):
    server.push(
        json_reply(401, {"error": {"message": f"Incorrect API key provided: {KEY[:14]}****{KEY[-4:]}"}})
    )
    err, _ = await fail(make(server))
    assert KEY[:14] not in err.message
    assert "[REDACTED]" in err.message


async def test_402_insufficient_balance_is_quota(server):
    server.push(json_reply(402, {"error": {"message": "Insufficient Balance", "type": "unknown_error"}}))
    err, _ = await fail(make(server))
    assert (err.code, err.status, err.message) == (P.QUOTA, 402, "Insufficient Balance")


async def test_429_quota_wording_outranks_rate_limit(server):
    server.push(
        json_reply(
            429, {"error": {"message": "You exceeded your current quota", "code": "insufficient_quota"}}
        )
    )
    err, _ = await fail(make(server))
    assert err.code == P.QUOTA


async def test_429_with_retry_after_seconds(server):
    server.push(
        json_reply(
            429,
            {"error": {"message": "Rate limit reached"}},
            headers={"retry-after": "7", "x-deepseek-request-id": "d-1"},
        )
    )
    err, _ = await fail(make(server))
    assert (err.code, err.status, err.retry_after_ms, err.request_id) == (P.RATE_LIMIT, 429, 7000, "d-1")
    assert err.failure()["providerRetryAfterMs"] == 7000


def frozen_wall_clock(monkeypatch, now: float) -> None:
    """The provider's wall clock (only ``time.time`` is read there: Retry-After dates) fixed at ``now``."""
    monkeypatch.setattr(openai_errors, "time", types.SimpleNamespace(time=lambda: now))


async def test_429_with_retry_after_http_date(server, monkeypatch):
    when = 1_780_000_120  # an HTTP date has whole seconds
    frozen_wall_clock(monkeypatch, when - 119.7504)
    server.push(
        json_reply(
            429,
            {"error": {"message": "slow down"}},
            headers={"retry-after": email.utils.formatdate(when, usegmt=True)},
        )
    )
    err, _ = await fail(make(server))
    assert err.code == P.RATE_LIMIT
    assert err.retry_after_ms == 119_750  # measured from the parse, rounded to the millisecond


def test_parse_retry_after_forms():
    now = 1_780_000_000.0
    assert parse_retry_after("3", now=now) == 3000
    assert parse_retry_after(" 12 ", now=now) == 12000
    assert parse_retry_after(email.utils.formatdate(now + 90, usegmt=True), now=now) == 90_000
    assert parse_retry_after("Thu, 01 Jan 1970 00:00:00 GMT", now=now) is None
    for bad in (None, "", "soon", "1.5", "-4", "0"):
        assert parse_retry_after(bad, now=now) is None


async def test_retry_after_in_the_past_or_zero_is_ignored(server, monkeypatch):
    frozen_wall_clock(monkeypatch, 1_780_000_000.5)
    past = email.utils.formatdate(1_780_000_000, usegmt=True)
    server.push(json_reply(429, {"error": {"message": "x"}}, headers={"retry-after": past}))
    server.push(json_reply(429, {"error": {"message": "x"}}, headers={"retry-after": "0"}))
    e1, _ = await fail(make(server))
    e2, _ = await fail(make(server))
    assert e1.retry_after_ms is None and e2.retry_after_ms is None


async def test_500_is_server_with_default_message_for_non_json(server):
    server.push(Reply(status=500, headers={"content-type": "text/html"}, body=b"<html>oops</html>"))
    err, _ = await fail(make(server))
    assert (err.code, err.status, err.message) == (P.SERVER, 500, "DeepSeek API error (HTTP 500)")


async def test_400_context_overflow_wording(server):
    msg = "This model's maximum context length is 1000000 tokens. However, you requested 1200000 tokens."
    server.push(json_reply(400, {"error": {"message": msg, "type": "invalid_request_error"}}))
    err, _ = await fail(make(server))
    assert (err.code, err.status, err.message) == (P.CONTEXT_WINDOW_EXCEEDED, 400, msg)


async def test_400_other_and_413_are_invalid_request(server):
    server.push(json_reply(400, {"error": {"message": "bad field"}}))
    server.push(json_reply(413, {"error": {"message": "Insufficient balance, and the prompt is too large"}}))
    e1, _ = await fail(make(server))
    e2, _ = await fail(make(server))
    assert e1.code == P.INVALID_REQUEST and e2.code == P.INVALID_REQUEST


async def test_other_status_is_http_n(server):
    server.push(json_reply(404, {"error": {"message": "no such route"}}))
    err, _ = await fail(make(server))
    assert (err.code, err.message) == ("HTTP_404", "no such route")


# -- credentials and request shape ---------------------------------------------------------------


async def test_missing_credential_raises_before_any_request(server):
    def resolver():
        raise LlmError("no API key: set DEEPSEEK_API_KEY", P.MISSING_CREDENTIAL)

    p = OpenAICompatProvider("deepseek-official", server.base_url, resolver)
    err, _ = await fail(p)
    assert err.code == P.MISSING_CREDENTIAL
    assert server.requests == []


async def test_blank_or_unsafe_key_is_invalid_credential(server):
    p = OpenAICompatProvider("deepseek-official", server.base_url, lambda: "sk bad\nkey")
    err, _ = await fail(p)
    assert err.code == "INVALID_CREDENTIAL"
    assert "sk bad" not in err.message
    assert server.requests == []


async def test_no_auth_endpoint_sends_no_authorization(server):
    server.push(sse_reply(chunk("ok", finish="stop")))
    p = OpenAICompatProvider("ollama", server.base_url + "/v1/", lambda: None, thinking_format="none")
    chunks = await collect(p)
    assert chunks[-1]["reason"] == {"kind": "stop"}
    r = server.requests[0]
    assert r["path"] == "/v1/chat/completions"
    assert "authorization" not in {k.lower() for k in r["headers"]}
    assert "thinking" not in r["body"] and "reasoning_effort" not in r["body"]


async def test_tool_round_trip_request_shape(server):
    server.push(sse_reply(chunk("done", finish="stop")))
    request = {
        "config": {"provider": "deepseek-official", "model": "deepseek-v4-pro", "reasoningEffort": "off"},
        "system": "sys",
        "tools": [{"name": "read", "description": "Read a file", "parameters": {"type": "object"}}],
        "messages": [
            {
                "id": "u1",
                "role": "user",
                "source": {"kind": "user"},
                "content": [{"type": "text", "text": "read "}, {"type": "text", "text": "a.txt"}],
            },
            {
                "id": "a1",
                "role": "assistant",
                "source": {"kind": "model", "provider": "p", "model": "m"},
                "content": [
                    {"type": "reasoning", "text": "I should "},
                    {"type": "reasoning", "text": "read it."},
                    {
                        "type": "tool-call",
                        "id": "call_1",
                        "name": "read",
                        "arguments": '{"file_path":"a.txt"}',
                    },
                ],
            },
            {
                "id": "t1",
                "role": "user",
                "source": {"kind": "tool", "callId": "call_1"},
                "content": [
                    {
                        "type": "tool-result",
                        "toolCallId": "call_1",
                        "content": [{"type": "text", "text": "1: hello"}],
                    }
                ],
            },
            {
                "id": "t2",
                "role": "user",
                "source": {"kind": "tool", "callId": "call_2"},
                "content": [{"type": "tool-result", "toolCallId": "call_2", "content": [], "isError": True}],
            },
            {"id": "u2", "role": "user", "source": {"kind": "user"}, "content": []},
        ],
        "sessionId": None,
        "purpose": "compaction",
    }
    await collect(make(server), request)
    r = server.requests[0]
    assert {k.lower(): v for k, v in r["headers"].items()}["x-deepseek-harness-compact"] == "1"
    assert "x-deepseek-harness-session-id" not in {k.lower() for k in r["headers"]}
    assert r["body"] == {
        "model": "deepseek-v4-pro",
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "read a.txt"},
            {
                "role": "assistant",
                "content": "",
                "reasoning_content": "I should read it.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{"file_path":"a.txt"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "1: hello"},
            {"role": "tool", "tool_call_id": "call_2", "content": "(no output)"},
            {"role": "user", "content": ""},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "thinking": {"type": "disabled"},
        "tools": [
            {
                "type": "function",
                "function": {"name": "read", "description": "Read a file", "parameters": {"type": "object"}},
            }
        ],
    }


async def test_session_title_forces_thinking_off(server):
    server.push(sse_reply(chunk("Title", finish="stop")))
    r = req(reasoningEffort="high")
    r["purpose"] = "session-title"
    await collect(make(server), r)
    body = server.requests[0]["body"]
    assert body["thinking"] == {"type": "disabled"} and "reasoning_effort" not in body


async def test_unsupported_effort_is_refused_before_sending(server):
    err, _ = await fail(make(server), req(reasoningEffort="medium"))
    assert err.code == "UNSUPPORTED_REASONING_EFFORT"
    assert server.requests == []


async def test_in_band_error_object(server):
    server.push(
        sse_reply(chunk("a"), {"error": {"message": "prompt is too long for the model", "code": 400}})
    )
    err, _ = await fail(make(server))
    assert err.code == P.CONTEXT_WINDOW_EXCEEDED and err.status == 400


async def test_keep_alive_connection_is_reused_across_calls(server):
    server.push(sse_reply(chunk("1", finish="stop")), sse_reply(chunk("2", finish="stop")))
    p = make(server)
    a = [c async for c in p.stream(req())]
    b = [c async for c in p.stream(req())]
    await p.aclose()
    assert a[-2]["block"]["text"] == "1" and b[-2]["block"]["text"] == "2"
    assert len(server.requests) == 2
    assert server.requests[0]["client"] == server.requests[1]["client"]


async def test_ollama_and_llama_cpp_shaped_streams(server):
    ollama = {
        "id": "chatcmpl-7",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "qwen3:8b",
        "system_fingerprint": "fp_ollama",
    }

    def o(delta, finish=None):
        return dict(ollama, choices=[{"index": 0, "delta": delta, "finish_reason": finish}])

    server.push(
        sse_reply(
            o({"role": "assistant", "content": "", "reasoning": "Hm"}),
            o({"role": "assistant", "content": "Hi"}),
            o({"role": "assistant", "content": " there"}),
            o({"role": "assistant", "content": ""}, "stop"),
            dict(ollama, choices=[], usage={"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}),
        ),
        # llama.cpp puts "choices" first and the head after it
        sse_reply(
            {
                "choices": [{"finish_reason": None, "index": 0, "delta": {"content": "A"}}],
                "created": 1,
                "id": "x",
            },
            {
                "choices": [{"finish_reason": None, "index": 0, "delta": {"content": "B"}}],
                "created": 1,
                "id": "x",
            },
            {"choices": [{"finish_reason": "stop", "index": 0, "delta": {}}], "created": 1, "id": "x"},
        ),
    )
    p = OpenAICompatProvider(
        "ollama", server.base_url + "/v1/chat/completions", lambda: None, thinking_format="none"
    )
    a = [c async for c in p.stream(req())]
    b = [c async for c in p.stream(req())]
    await p.aclose()
    assert server.requests[0]["path"] == "/v1/chat/completions"
    assert a == [
        {"type": "block-start", "index": 0, "blockType": "reasoning"},
        {"type": "reasoning-delta", "index": 0, "text": "Hm"},
        {"type": "block-start", "index": 1, "blockType": "text"},
        {"type": "text-delta", "index": 1, "text": "Hi"},
        {"type": "text-delta", "index": 1, "text": " there"},
        {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "Hm"}},
        {"type": "block-end", "index": 1, "block": {"type": "text", "text": "Hi there"}},
        {"type": "usage", "usage": {"inputTokens": 5, "outputTokens": 3}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]
    assert [c.get("text") for c in b if c["type"] == "text-delta"] == ["A", "B"]
    assert b[-1] == {"type": "finish", "reason": {"kind": "stop"}}


async def test_byte_by_byte_delivery_gives_the_same_chunks(server):
    import random

    body = b"".join(
        [
            sse(chunk("", role="assistant", reasoning="")),
            sse(chunk(None, reasoning="Plan: ")),
            sse(chunk(None, reasoning="read → write ü")),
            b": keep-alive\r\n\r\n",
            sse(chunk("Text \u2603 ")),
            sse(chunk("more")),
            sse(chunk(None, tool_calls=[tool_call(0, id="call_1", name="read", args='{"file_path"')])),
            sse(chunk(None, tool_calls=[tool_call(1, id="call_2", name="glob", args='{"pattern":"*"}')])),
            sse(chunk(None, tool_calls=[tool_call(0, args=':"a"}')])),
            sse(chunk(None, finish="tool_calls")),
            sse(
                chunk(
                    None,
                    no_choices=True,
                    usage={"prompt_tokens": 9, "completion_tokens": 4, "prompt_cache_hit_tokens": 8},
                )
            ),
            DONE,
        ]
    )
    rng = random.Random(7)
    pieces, i = [], 0
    while i < len(body):
        n = rng.randint(1, 9)
        pieces.append(body[i : i + n])
        i += n
    server.push(Reply(steps=[body]), Reply(steps=pieces))
    p = make(server)
    whole = [c async for c in p.stream(req())]
    split = [c async for c in p.stream(req())]
    await p.aclose()
    assert split == whole
    assert [c["type"] for c in whole].count("block-start") == 4
    assert whole[-1] == {"type": "finish", "reason": {"kind": "tool-calls"}}
    assert {
        "type": "block-end",
        "index": 0,
        "block": {"type": "reasoning", "text": "Plan: read → write ü"},
    } in whole


async def test_server_holding_the_stream_open_after_done(server):
    # Nothing follows [DONE]: the stream still ends (the bounded drain gives up) and the connection closes.
    reply = sse_reply(chunk("ok", finish="stop"), end="stall")
    server.push(reply)
    chunks = await collect(make(server, idle_timeout_s=30))
    assert chunks[-1] == {"type": "finish", "reason": {"kind": "stop"}}
    assert await asyncio.to_thread(reply.client_closed.wait, 10)


def test_resolve_model_defaults():
    p = OpenAICompatProvider(
        "deepseek-official",
        "http://127.0.0.1:9",
        lambda: KEY,
        {"deepseek-v4-flash": ModelInfo(context_window=1_000_000, price_input=0.5)},
        default_model=ModelInfo(context_window=1_000_000, default_max_tokens=256_000),
    )
    info = p.resolve_model("deepseek-v4-flash")
    assert info.context_window == 1_000_000 and info.default_max_tokens == 256_000 and info.price_input == 0.5
    assert info.efforts == ("off", "low", "high", "max") and info.default_effort == "high"
    other = p.resolve_model("deepseek-chat")
    assert other.context_window == 1_000_000 and other.price_input is None
    off = OpenAICompatProvider("x", "http://127.0.0.1:9", lambda: None, thinking="disabled")
    assert off.resolve_model("m").efforts == ("off",)
    none = OpenAICompatProvider("x", "http://127.0.0.1:9", lambda: None, thinking_format="none")
    assert none.resolve_model("m").efforts == () and none.resolve_model("m").default_effort is None
    assert p.retry_policy().max_retries == 5


async def test_the_http_client_is_built_off_the_event_loop_and_reused(server, monkeypatch):
    # Building an httpx client loads the TLS trust store (tens of ms): not on the loop's thread.
    built: list[str] = []

    class SpyClient(httpx.AsyncClient):
        def __init__(self, *args, **kwargs):
            built.append(threading.current_thread().name)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(httpx, "AsyncClient", SpyClient)
    server.push(sse_reply(chunk("a"), chunk(finish="stop")), sse_reply(chunk("b"), chunk(finish="stop")))
    p = make(server)
    try:
        chunks = [c for _ in range(2) async for c in p.stream(req())]
    finally:
        await p.aclose()
    assert [c["text"] for c in chunks if c["type"] == "text-delta"] == ["a", "b"]
    assert len(built) == 1 and built[0] != threading.current_thread().name
