"""The real provider driven by the real harness (dsh_tui.runtime) and by ``dsh-tui run --headless``,
against the scripted server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from dsh_tui.config import Settings
from dsh_tui.llm.registry import build_provider
from dsh_tui.runtime import Agent, AgentConfig
from dsh_tui.session.headers import make_header
from dsh_tui.session.log import Session
from tests.conftest import REPO
from tests.llm.sse_server import Reply, ScriptServer, chunk, json_reply, sse, sse_reply, tool_call

KEY = "sk-harness-0123456789abcdefghij"
USAGE = {"prompt_tokens": 120, "completion_tokens": 9, "prompt_cache_hit_tokens": 100}


@pytest.fixture
def server():
    with ScriptServer() as srv:
        yield srv


def _settings(server: ScriptServer) -> Settings:
    return Settings(
        {
            "providers": {
                "deepseek-official": {
                    "base_url": server.base_url,
                    "retry": {"initial_delay_ms": 1, "max_delay_ms": 5, "jitter_ratio": 0.0},
                }
            }
        }
    )


async def _turn(server: ScriptServer, prompt: str, tmp_path) -> Session:
    provider = build_provider(_settings(server))
    session = Session(make_header(str(uuid.uuid4()), cwd=str(tmp_path)))
    agent = Agent(
        session,
        provider,
        [],
        config=AgentConfig(provider="deepseek-official", model="deepseek-v4-flash", cwd=str(tmp_path)),
    )
    try:
        agent.followup(prompt)
        await agent.wait_idle()
        await agent.dispose()
    finally:
        await provider.aclose()
    return session


def _of(session: Session, kind: str) -> list[dict]:
    return [e for e in session.events if e["type"] == kind]


async def test_server_error_is_retried_and_logged(server, tmp_path, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    server.push(
        json_reply(503, {"error": {"message": "Server busy"}}, headers={"x-request-id": "r-1"}),
        sse_reply(chunk("Hello"), chunk("", finish="stop", usage=USAGE)),
    )
    session = await _turn(server, "hi", tmp_path)
    (retry,) = _of(session, "llm/retry")
    assert retry["data"]["failure"] == {
        "message": "Server busy",
        "code": "SERVER",
        "status": 503,
        "requestId": "r-1",
    }
    assert retry["data"]["provider"] == "deepseek-official" and retry["data"]["retry"] == 1
    assert len(_of(session, "llm/retry-started")) == 1
    (msg,) = _of(session, "assistant/message")
    assert msg["data"]["message"]["content"] == [{"type": "text", "text": "Hello"}]
    assert msg["data"]["usage"] == {"inputTokens": 20, "outputTokens": 9, "cacheReadTokens": 100}
    assert _of(session, "turn/end")[-1]["data"]["reason"] == {"kind": "completed"}
    assert len(server.requests) == 2


async def test_a_clean_end_without_done_is_stream_closed_and_not_retried(server, tmp_path, monkeypatch):
    # runtime spec 6.2/6.3 (dsh llm-retry "exposes a clean partial EOF as non-default-retryable
    # STREAM_CLOSED"): the default retryable codes are EMPTY_RESPONSE, RATE_LIMIT, SERVER, TIMEOUT, TRANSPORT
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    server.push(sse_reply(chunk("This answer will be cut"), done=False),
                sse_reply(chunk("never asked for"), chunk("", finish="stop", usage=USAGE)))
    session = await _turn(server, "hi", tmp_path)
    assert len(server.requests) == 1 and _of(session, "llm/retry") == []
    assert _of(session, "assistant/message") == []
    end = _of(session, "turn/end")[-1]["data"]["reason"]
    assert end == {"kind": "error", "error": {"message": "SSE stream ended without [DONE]", "code": "STREAM_CLOSED"}}


async def test_a_connection_lost_mid_stream_is_transport_and_retried(server, tmp_path, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    server.push(Reply(steps=[sse(chunk("discard ")), sse(chunk("me"))], end="drop"),
                sse_reply(chunk("recovered"), chunk("", finish="stop", usage=USAGE)))
    session = await _turn(server, "hi", tmp_path)
    (retry,) = _of(session, "llm/retry")
    assert retry["data"]["failure"]["code"] == "TRANSPORT"
    assert retry["data"]["failure"]["message"].startswith(f"DeepSeek API stream from {server.base_url} failed")
    assert len(server.requests) == 2
    (msg,) = _of(session, "assistant/message")
    assert msg["data"]["message"]["content"] == [{"type": "text", "text": "recovered"}]
    assert _of(session, "turn/end")[-1]["data"]["reason"] == {"kind": "completed"}


async def test_auth_error_ends_the_turn_and_the_key_is_nowhere_in_the_log(server, tmp_path, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    server.push(json_reply(401, {"error": {"message": f"Authentication Fails ({KEY})"}}))
    session = await _turn(server, "hi", tmp_path)
    assert _of(session, "llm/retry") == []  # AUTH is not retryable
    end = _of(session, "turn/end")[-1]["data"]["reason"]
    assert end["kind"] == "error"
    assert end["error"]["code"] == "AUTH" and end["error"]["status"] == 401
    finish = _of(session, "assistant/chunk")[-1]["data"]["chunk"]
    assert finish["type"] == "finish" and finish["reason"]["kind"] == "error"
    text = json.dumps(session.events)
    assert KEY not in text and KEY[:12] not in text
    assert "[REDACTED]" in text


async def test_missing_key_ends_the_turn_with_missing_credential(server, tmp_path):
    session = await _turn(server, "hi", tmp_path)
    end = _of(session, "turn/end")[-1]["data"]["reason"]
    assert end["kind"] == "error" and end["error"]["code"] == "MISSING_CREDENTIAL"
    assert "DEEPSEEK_API_KEY" in end["error"]["message"]
    assert server.requests == []


def _cli(args: list[str], env: dict[str, str], cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dsh_tui", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _env(tmp_path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEEPSEEK_")}
    env.update(
        {
            "DSH_HOME": str(tmp_path / "dsh-home"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "XDG_DATA_HOME": str(tmp_path / "data"),
            "PYTHONPATH": str(REPO),
        }
    )
    env.update(extra)
    return env


def test_headless_run_round_trips_a_real_read_tool(server, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("alpha\nbeta\n")
    server.push(
        sse_reply(
            chunk(None, reasoning="I need to read the file."),
            chunk(None, tool_calls=[tool_call(0, id="call_r1", name="read", args="")]),
            chunk(None, tool_calls=[tool_call(0, args='{"file_path":')]),
            chunk(None, tool_calls=[tool_call(0, args=' "notes.txt"}')]),
            chunk(None, finish="tool_calls", usage=USAGE),
        ),
        sse_reply(chunk("The file says alpha and beta."), chunk("", finish="stop", usage=USAGE)),
    )
    root = tmp_path / "sessions"
    env = _env(tmp_path, DEEPSEEK_API_KEY=KEY, DEEPSEEK_BASE_URL=server.base_url)
    out = _cli(
        ["run", "--headless", "--cwd", str(work), "--root", str(root), "What is in notes.txt?"], env, work
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "The file says alpha and beta."
    assert len(server.requests) == 2
    first, second = (r["body"] for r in server.requests)
    assert first["messages"][0]["role"] == "system"
    assert any(t["function"]["name"] == "read" for t in first["tools"])
    headers = {k.lower(): v for k, v in server.requests[1]["headers"].items()}
    assert headers["authorization"] == f"Bearer {KEY}" and headers["x-deepseek-harness-session-id"]
    # The second request carries the assistant turn with its reasoning passed back, then the tool result.
    assistant = next(m for m in second["messages"] if m["role"] == "assistant")
    assert assistant == {
        "role": "assistant",
        "content": "",
        "reasoning_content": "I need to read the file.",
        "tool_calls": [
            {
                "id": "call_r1",
                "type": "function",
                "function": {"name": "read", "arguments": '{"file_path": "notes.txt"}'},
            }
        ],
    }
    tool_msgs = [m for m in second["messages"] if m["role"] == "tool"]
    assert len(tool_msgs) == 1 and tool_msgs[0]["tool_call_id"] == "call_r1"
    assert "1: alpha\n2: beta" in tool_msgs[0]["content"]
    assert second["messages"].index(assistant) < second["messages"].index(tool_msgs[0])
    # The session was persisted and holds no trace of the key.
    logs = [p for p in root.rglob("*") if p.is_file()]
    assert logs
    for p in logs:
        assert KEY.encode() not in p.read_bytes()


def test_headless_run_without_a_key_is_one_clear_line(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    out = _cli(
        ["run", "--headless", "--cwd", str(work), "--root", str(tmp_path / "s"), "hi"], _env(tmp_path), work
    )
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('dsh-tui: no API key for provider "deepseek-official"')
    assert "DEEPSEEK_API_KEY" in lines[0] and "Traceback" not in out.stderr
