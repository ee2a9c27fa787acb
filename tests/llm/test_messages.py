"""The Anthropic Messages provider (``api = "messages"``, dsh 0.2's wire to DeepSeek) against a real
HTTP server on 127.0.0.1: the request body and headers, the event translation, replay of thinking
signatures, errors, and a headless run end to end."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from dsh_tui.config import Settings
from dsh_tui.llm.messages import MessagesProvider, messages_root
from dsh_tui.llm.registry import build_provider
from dsh_tui.runtime import Agent, AgentConfig
from dsh_tui.session.headers import make_header
from dsh_tui.session.log import Session
from tests.llm.sse_server import Reply, ScriptServer, json_reply, sse
from tests.llm.test_provider_harness import _env

KEY = "sk-messages-0123456789abcdefghij"
MODEL = "deepseek-v4-flash"


def ev(obj: dict) -> bytes:
    """One Messages SSE event, with its ``event:`` line as the API sends it."""
    return b"event: " + obj["type"].encode() + b"\n" + sse(obj)


def start(input_tokens: int = 50, cache_read: int = 0) -> dict:
    usage = {"input_tokens": input_tokens, "output_tokens": 1, "cache_read_input_tokens": cache_read}
    return {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                 "model": MODEL, "content": [], "usage": usage}}


def block(index: int, content: dict) -> dict:
    return {"type": "content_block_start", "index": index, "content_block": content}


def delta(index: int, d: dict) -> dict:
    return {"type": "content_block_delta", "index": index, "delta": d}


def stop(index: int) -> dict:
    return {"type": "content_block_stop", "index": index}


def end(reason: str, output_tokens: int = 7) -> list[dict]:
    return [{"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None},
             "usage": {"output_tokens": output_tokens}}, {"type": "message_stop"}]


def reply(*events: dict, ping: bool = True) -> Reply:
    steps: list[bytes | float] = [ev(e) for e in events]
    if ping:
        steps.insert(1, ev({"type": "ping"}))
    return Reply(headers={"content-type": "text/event-stream"}, steps=steps)


def text_reply(text: str, *, thinking: str | None = "Let me think.", signature: str = "sig-A") -> Reply:
    events = [start()]
    i = 0
    if thinking is not None:
        events += [block(0, {"type": "thinking", "thinking": "", "signature": ""}),
                   delta(0, {"type": "thinking_delta", "thinking": thinking}),
                   delta(0, {"type": "signature_delta", "signature": signature}), stop(0)]
        i = 1
    events += [block(i, {"type": "text", "text": ""}), delta(i, {"type": "text_delta", "text": text}), stop(i)]
    return reply(*events, *end("end_turn"))


def tool_reply(call_id: str, name: str, args: str, signature: str = "sig-T") -> Reply:
    half = len(args) // 2
    return reply(
        start(),
        block(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, {"type": "thinking_delta", "thinking": "I need a tool."}),
        delta(0, {"type": "signature_delta", "signature": signature}),
        stop(0),
        block(1, {"type": "tool_use", "id": call_id, "name": name, "input": {}}),
        delta(1, {"type": "input_json_delta", "partial_json": args[:half]}),
        delta(1, {"type": "input_json_delta", "partial_json": args[half:]}),
        stop(1),
        *end("tool_use"),
    )


def title(text: str = "Messages title") -> Reply:
    return text_reply(text, thinking=None)


@pytest.fixture
def server():
    with ScriptServer() as srv:
        srv._server.title_reply = title
        yield srv


def _settings(server: ScriptServer, **extra) -> Settings:
    table = {"base_url": server.base_url, "api": "messages",
             "retry": {"initial_delay_ms": 1, "max_delay_ms": 5, "jitter_ratio": 0.0}, **extra}
    return Settings({"providers": {"deepseek-official": table}})


async def _turns(server, prompts, tmp_path, monkeypatch, **extra) -> Session:
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    provider = build_provider(_settings(server, **extra))
    assert isinstance(provider, MessagesProvider)
    session = Session(make_header(str(uuid.uuid4()), cwd=str(tmp_path)))
    agent = Agent(session, provider, [],
                  config=AgentConfig(provider="deepseek-official", model=MODEL, cwd=str(tmp_path)))
    try:
        for prompt in prompts:
            agent.followup(prompt)
            await agent.wait_idle()
        await agent.dispose()
    finally:
        await provider.aclose()
    return session


def _of(session: Session, kind: str) -> list[dict]:
    return [e for e in session.events if e["type"] == kind]


def test_the_messages_root_adds_v1_once_and_maps_deepseeks_own_url():
    assert messages_root("http://127.0.0.1:9/") == "http://127.0.0.1:9/v1"
    assert messages_root("http://127.0.0.1:9/v1") == "http://127.0.0.1:9/v1"
    assert messages_root("https://api.deepseek.com") == "https://api.deepseek.com/anthropic/v1"
    assert messages_root("https://gw.example/anthropic") == "https://gw.example/anthropic/v1"


def test_an_unknown_api_is_a_settings_error_naming_the_key():
    from dsh_tui.config import SettingsError

    with pytest.raises(SettingsError, match=r"providers\.deepseek-official\.api must be one of chat, messages"):
        Settings({"providers": {"deepseek-official": {"api": "responses"}}}).provider()


async def test_a_turn_sends_the_messages_body_and_headers_and_logs_blocks_usage_and_replay(
        server, tmp_path, monkeypatch):
    server.push(text_reply("Hello there."))
    session = await _turns(server, ["say hi"], tmp_path, monkeypatch)
    (request,) = server.requests
    assert request["path"] == "/v1/messages"
    headers = {k.lower(): v for k, v in request["headers"].items()}
    assert headers["x-api-key"] == KEY and "authorization" not in headers
    assert headers["anthropic-version"] == "2023-06-01"
    assert headers["x-deepseek-harness-session-id"] == session.header["id"]
    body = request["body"]
    assert list(body)[:5] == ["model", "stream", "messages", "max_tokens", "thinking"]
    assert body["model"] == MODEL and body["stream"] is True and body["max_tokens"] == 256000
    assert body["thinking"] == {"type": "enabled"} and body["output_config"] == {"effort": "high"}
    (user,) = body["messages"]
    assert user["role"] == "user" and user["content"][0] == {"type": "text", "text": "say hi"}
    assert user["content"][1]["text"].startswith("Current runtime context.")  # its own block, as dsh 0.2 sends it
    assert "dsh_session_log" not in body and "dsh_plugin_packages" not in body
    (message,) = _of(session, "assistant/message")
    data = message["data"]
    assert data["message"]["content"] == [{"type": "reasoning", "text": "Let me think."},
                                          {"type": "text", "text": "Hello there."}]
    assert data["message"]["source"]["replayState"] == {
        "response": {"kind": "deepseek-messages", "version": 1, "model": MODEL},
        "blocks": [{"type": "reasoning", "signature": "sig-A"}, {"type": "text"}],
    }
    assert data["usage"] == {"inputTokens": 50, "outputTokens": 7, "cacheReadTokens": 0, "totalTokens": 57}
    assert _of(session, "turn/end")[-1]["data"]["reason"]["kind"] == "completed"


async def test_a_tool_round_trip_sends_tool_use_then_a_tool_result_and_the_signature_back(
        server, tmp_path, monkeypatch):
    (tmp_path / "notes.txt").write_text("alpha\n")
    from dsh_tui.tools import builtin_tools

    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    server.push(tool_reply("toolu_1", "read", '{"file_path": "notes.txt"}'), text_reply("It says alpha."))
    provider = build_provider(_settings(server))
    session = Session(make_header(str(uuid.uuid4()), cwd=str(tmp_path)))
    agent = Agent(session, provider, builtin_tools(),
                  config=AgentConfig(provider="deepseek-official", model=MODEL, cwd=str(tmp_path)))
    try:
        agent.followup("what is in notes.txt?")
        await agent.wait_idle()
        await agent.dispose()
    finally:
        await provider.aclose()
    assert len(server.requests) == 2
    first, second = (r["body"] for r in server.requests)
    assert any(t["name"] == "read" and "input_schema" in t for t in first["tools"])
    assistant, results = second["messages"][1], second["messages"][2]
    assert assistant == {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "I need a tool.", "signature": "sig-T"},
        {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"file_path": "notes.txt"}},
    ]}
    assert results["role"] == "user" and results["content"][0]["type"] == "tool_result"
    assert results["content"][0]["tool_use_id"] == "toolu_1"
    assert "alpha" in results["content"][0]["content"][0]["text"]
    calls = [e for e in _of(session, "assistant/message") if e["data"]["message"]["content"][-1]["type"] == "tool-call"]
    assert calls[0]["data"]["message"]["content"][-1]["arguments"] == '{"file_path": "notes.txt"}'


async def test_a_signature_from_another_model_is_not_sent_back(server, tmp_path, monkeypatch):
    server.push(text_reply("one", signature="sig-flash"))
    server.push(text_reply("two"))
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    provider = build_provider(_settings(server))
    session = Session(make_header(str(uuid.uuid4()), cwd=str(tmp_path)))
    agent = Agent(session, provider, [],
                  config=AgentConfig(provider="deepseek-official", model=MODEL, cwd=str(tmp_path)))
    try:
        agent.followup("first")
        await agent.wait_idle()
        agent.config.model = "deepseek-v4-pro"
        agent.followup("second")
        await agent.wait_idle()
        await agent.dispose()
    finally:
        await provider.aclose()
    second = server.requests[1]["body"]
    assert second["model"] == "deepseek-v4-pro"
    assert second["messages"][1]["content"][0] == {"type": "thinking", "thinking": "Let me think."}


async def test_effort_off_disables_thinking_and_max_is_sent(server, tmp_path, monkeypatch):
    server.push(text_reply("a", thinking=None), text_reply("b", thinking=None))
    await _turns(server, ["x"], tmp_path, monkeypatch, reasoning_effort="off")
    await _turns(server, ["y"], tmp_path, monkeypatch, reasoning_effort="max")
    off, mx = (r["body"] for r in server.requests)
    assert off["thinking"] == {"type": "disabled"} and "output_config" not in off
    assert mx["thinking"] == {"type": "enabled"} and mx["output_config"] == {"effort": "max"}


@pytest.mark.parametrize(
    ("status", "body", "code"),
    [
        (401, {"type": "error", "error": {"type": "authentication_error", "message": "bad key " + KEY}}, "AUTH"),
        (429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}, "RATE_LIMIT"),
        (400, {"type": "error", "error": {"type": "invalid_request_error",
                                          "message": "prompt is too long for the model's context window"}},
         "CONTEXT_WINDOW_EXCEEDED"),
        (529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "SERVER"),
    ],
)
async def test_http_errors_are_classified_and_the_key_is_redacted(server, tmp_path, monkeypatch, status, body, code):
    server.push(*[json_reply(status, body) for _ in range(8)])
    session = await _turns(server, ["x"], tmp_path, monkeypatch, retry={"max_retries": 0})
    error = _of(session, "turn/end")[-1]["data"]["reason"]["error"]
    assert error["code"] == code and error["status"] == status
    assert KEY not in str(session.events)


async def test_an_in_band_error_event_and_a_stream_without_message_stop_fail_clearly(
        server, tmp_path, monkeypatch):
    server.push(reply(start(), {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
    server.push(reply(start(), block(0, {"type": "text", "text": "par"})))
    a = await _turns(server, ["x"], tmp_path, monkeypatch, retry={"max_retries": 0})
    b = await _turns(server, ["y"], tmp_path, monkeypatch, retry={"max_retries": 0})
    ea = _of(a, "turn/end")[-1]["data"]["reason"]["error"]
    eb = _of(b, "turn/end")[-1]["data"]["reason"]["error"]
    assert (ea["code"], ea["message"]) == ("SERVER", "Overloaded")
    assert (eb["code"], eb["message"]) == ("STREAM_CLOSED", "DeepSeek Messages stream ended before message_stop")


async def test_max_tokens_drops_the_truncated_tool_call_and_its_replay_entry(server, tmp_path, monkeypatch):
    server.push(reply(
        start(),
        block(0, {"type": "thinking", "thinking": "hmm", "signature": "sig-M"}), stop(0),
        block(1, {"type": "tool_use", "id": "toolu_9", "name": "read", "input": {}}),
        delta(1, {"type": "input_json_delta", "partial_json": '{"file_'}), stop(1),
        *end("max_tokens"),
    ))
    session = await _turns(server, ["x"], tmp_path, monkeypatch)
    (message,) = _of(session, "assistant/message")
    msg = message["data"]["message"]
    assert msg["content"] == [{"type": "reasoning", "text": "hmm"}]
    assert msg["source"]["replayState"]["blocks"] == [{"type": "reasoning", "signature": "sig-M"}]
    assert not _of(session, "tool/call")


def test_headless_run_over_messages_end_to_end(server, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    conf = tmp_path / "config" / "dsh-tui"
    conf.mkdir(parents=True)
    (conf / "settings.toml").write_text('[providers.deepseek-official]\napi = "messages"\n')
    server.push(text_reply("Hi from Messages."))
    env = _env(tmp_path, DEEPSEEK_API_KEY=KEY, DEEPSEEK_BASE_URL=server.base_url)
    out = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "--cwd", str(work),
                          "--root", str(tmp_path / "s"), "say hi"],
                         env=env, cwd=work, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Hi from Messages."
    assert server.requests[0]["path"] == "/v1/messages"
    assert server.requests[0]["body"]["system"]
    for path in (tmp_path / "s").rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes()


async def test_a_route_without_a_thinking_format_sends_no_thinking_fields(server, tmp_path, monkeypatch):
    """Anthropic itself, or a Messages gateway: `[providers.x] api = "messages"` with api_key_env."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    settings = Settings({"default": {"provider": "claude", "model": "claude-sonnet-4-5"}, "providers": {"claude": {
        "base_url": server.base_url, "api": "messages", "api_key_env": "ANTHROPIC_API_KEY",
        "models": ["claude-sonnet-4-5"], "default_max_tokens": 32000}}})
    provider = build_provider(settings, "claude")
    assert provider.resolve_model("claude-sonnet-4-5").efforts == ()
    server.push(text_reply("Hi.", thinking=None))
    session = Session(make_header(str(uuid.uuid4()), cwd=str(tmp_path)))
    agent = Agent(session, provider, [],
                  config=AgentConfig(provider="claude", model="claude-sonnet-4-5", cwd=str(tmp_path)))
    try:
        agent.followup("hi")
        await agent.wait_idle()
        await agent.dispose()
    finally:
        await provider.aclose()
    body = server.requests[0]["body"]
    assert "thinking" not in body and "output_config" not in body and body["max_tokens"] == 32000
    assert {k.lower(): v for k, v in server.requests[0]["headers"].items()}["x-api-key"] == KEY
    assert _of(session, "turn/end")[-1]["data"]["reason"]["kind"] == "completed"
