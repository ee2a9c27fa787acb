"""Providers built from settings and environment, exercised against the local scripted server."""

from __future__ import annotations

import os

import pytest

from dsh_tui.config import Settings, credentials_path, load_settings, save_credential
from dsh_tui.llm import protocol as P
from dsh_tui.llm.protocol import LlmError, Provider
from dsh_tui.llm.registry import (
    anonymous_id_notice,
    available_models,
    build_provider,
    configured_model,
    credential_problem,
    default_route,
    is_configured,
    is_deepseek_endpoint,
)
from tests.llm.sse_server import ScriptServer, chunk, json_reply, sse_reply

KEY = "sk-registry-abcdefghijklmnop"


def req(model="deepseek-v4-flash", provider="deepseek-official") -> dict:
    return {
        "config": {"provider": provider, "model": model},
        "system": None,
        "tools": [],
        "messages": [
            {
                "id": "u",
                "role": "user",
                "content": [{"type": "text", "text": "hi"}],
                "source": {"kind": "user"},
            }
        ],
        "sessionId": None,
        "purpose": "turn",
    }


async def run(provider, request) -> list[dict]:
    try:
        return [c async for c in provider.stream(request)]
    finally:
        await provider.aclose()


@pytest.fixture
def server():
    with ScriptServer() as srv:
        yield srv


async def test_env_only_deepseek_works_with_no_settings_file(server, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
    settings = load_settings()
    assert settings.data == {}
    assert is_configured(settings) and configured_model(settings) == (
        "deepseek-official",
        "deepseek-v4-flash",
    )
    provider = build_provider(settings)
    assert isinstance(provider, Provider) and provider.name == "deepseek-official"
    server.push(sse_reply(chunk("ok", finish="stop")), sse_reply(chunk("again", finish="stop")))
    chunks = await run(provider, req())
    assert chunks[-1] == {"type": "finish", "reason": {"kind": "stop"}}
    h1 = {k.lower(): v for k, v in server.requests[0]["headers"].items()}
    assert h1["authorization"] == f"Bearer {KEY}"
    # a DEEPSEEK_BASE_URL that is not DeepSeek's own API never gets the anonymous id (nor is it written)
    assert "x-deepseek-harness-user-id" not in h1
    assert not (credentials_path().parent / "anonymous-user-id").exists()


def test_anonymous_id_goes_only_to_deepseek_and_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    monkeypatch.delenv("DEEPSEEK_BASE_URL", raising=False)
    id_file = credentials_path().parent / "anonymous-user-id"
    settings = load_settings()
    assert not id_file.exists()
    notice = anonymous_id_notice(settings)  # the first run that will send it creates it and says so
    assert id_file.exists() and str(id_file) in notice and "send_anonymous_user_id = false" in notice
    assert anonymous_id_notice(settings) == ""  # said once
    h1 = build_provider(settings)._headers(KEY, req())
    h2 = build_provider(load_settings())._headers(KEY, req())
    # random but stable across providers and runs, and the one in the file
    assert h1["x-deepseek-harness-user-id"] == h2["x-deepseek-harness-user-id"] == id_file.read_text().strip()
    assert len(h1["x-deepseek-harness-user-id"]) == 36
    off = Settings({"privacy": {"send_anonymous_user_id": False}})
    assert "x-deepseek-harness-user-id" not in build_provider(off)._headers(KEY, req())
    local = Settings({"default": {"provider": "vllm", "model": "m"},
                      "providers": {"vllm": {"base_url": "http://127.0.0.1:8000/v1", "models": ["m"]},
                                    "fake": {"base_url": "https://deepseek.com.example.org/v1", "models": ["m"]}}})
    assert "x-deepseek-harness-user-id" not in build_provider(local)._headers(None, req())
    assert "x-deepseek-harness-user-id" not in build_provider(local, "fake")._headers(None, req())
    assert is_deepseek_endpoint("https://api.deepseek.com") and is_deepseek_endpoint("https://api.deepseek.com/v1")
    assert not is_deepseek_endpoint("http://api.deepseek.com") and not is_deepseek_endpoint("https://evil-deepseek.com")


async def test_missing_key_is_a_clear_error_not_a_traceback(server, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
    settings = load_settings()
    assert not is_configured(settings)
    assert configured_model(settings) is None
    assert default_route(settings) == ("deepseek-official", "deepseek-v4-flash")
    problem = credential_problem(settings)
    assert "DEEPSEEK_API_KEY" in problem and str(credentials_path()) in problem
    provider = build_provider(settings)
    with pytest.raises(LlmError) as info:
        provider.check_credential()
    assert info.value.code == P.MISSING_CREDENTIAL
    assert info.value.message == problem
    assert "export DEEPSEEK_API_KEY=<your key>" in info.value.message
    with pytest.raises(LlmError) as info2:
        await run(provider, req())
    assert info2.value.code == P.MISSING_CREDENTIAL
    assert server.requests == []


async def test_key_added_later_reaches_the_next_request(server, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
    provider = build_provider(load_settings())
    with pytest.raises(LlmError):
        provider.check_credential()
    save_credential("deepseek-official", KEY)
    server.push(sse_reply(chunk("ok", finish="stop")))
    await run(provider, req())
    assert {k.lower(): v for k, v in server.requests[0]["headers"].items()}[
        "authorization"
    ] == f"Bearer {KEY}"


async def test_world_readable_credentials_are_refused(server, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
    save_credential("deepseek-official", KEY)
    os.chmod(credentials_path(), 0o640)
    settings = load_settings()
    assert not is_configured(settings)
    assert "chmod 600" in credential_problem(settings)
    with pytest.raises(LlmError) as info:
        await run(build_provider(settings), req())
    assert info.value.code == "INVALID_CREDENTIAL" and "chmod 600" in info.value.message
    assert KEY not in info.value.message
    assert server.requests == []


async def test_custom_openai_compatible_provider(server):
    settings = Settings(
        {
            "default": {"provider": "local", "model": "qwen3:8b"},
            "providers": {
                "local": {
                    "base_url": server.base_url + "/v1",
                    "idle_timeout_s": 2,
                    "models": {
                        "qwen3:8b": {
                            "context_window": 40960,
                            "max_tokens": 8192,
                            "price_input": 0.1,
                            "price_cache_hit": 0.01,
                            "price_output": 0.4,
                        }
                    },
                    "retry": {"max_retries": 2, "initial_delay_ms": 100},
                }
            },
        }
    )
    assert is_configured(settings)  # no key needed: the provider names no api_key_env
    assert configured_model(settings) == ("local", "qwen3:8b")
    assert available_models(settings)[0] == ("local", "qwen3:8b")
    assert ("deepseek-official", "deepseek-v4-pro") in available_models(settings)
    provider = build_provider(settings)
    info = provider.resolve_model("qwen3:8b")
    assert (info.context_window, info.default_max_tokens) == (40960, 8192)
    assert (info.price_input, info.price_cache_hit, info.price_output) == (0.1, 0.01, 0.4)
    assert info.efforts == ()  # thinking_format "none": no effort knob on the wire
    policy = provider.retry_policy()
    assert (policy.max_retries, policy.initial_delay_ms, policy.max_delay_ms) == (2, 100, 10_000)
    server.push(
        sse_reply({"choices": [{"index": 0, "delta": {"reasoning": "hm"}}]}, chunk("yo", finish="stop"))
    )
    chunks = await run(provider, req("qwen3:8b", "local"))
    assert [c["type"] for c in chunks if c["type"] == "block-start"] == ["block-start", "block-start"]
    r = server.requests[0]
    assert r["path"] == "/v1/chat/completions"
    assert "authorization" not in {k.lower() for k in r["headers"]}
    assert "thinking" not in r["body"]


async def test_configured_default_effort_reaches_the_wire(server, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
    server.push(sse_reply(chunk("a", finish="stop")), sse_reply(chunk("b", finish="stop")))
    await run(build_provider(Settings({"default": {"reasoning_effort": "low"}})), req())
    await run(build_provider(Settings()), req())
    assert server.requests[0]["body"]["reasoning_effort"] == "low"
    assert server.requests[0]["body"]["thinking"] == {"type": "enabled"}
    # Nothing configured: no thinking fields at all (the API's own default applies).
    assert (
        "thinking" not in server.requests[1]["body"] and "reasoning_effort" not in server.requests[1]["body"]
    )


async def test_gateway_headers_are_sent_and_redacted(server):
    secret = "azure-key-0123456789abcdef"
    settings = Settings(
        {
            "providers": {
                "azure": {"base_url": server.base_url, "headers": {"api-key": secret, "X-Title": "dsh-tui"}}
            }
        }
    )
    server.push(json_reply(401, {"error": {"message": f"bad api-key {secret}"}}))
    with pytest.raises(LlmError) as info:
        await run(build_provider(settings, "azure"), req("gpt-x", "azure"))
    h = {k.lower(): v for k, v in server.requests[0]["headers"].items()}
    assert h["api-key"] == secret and h["x-title"] == "dsh-tui"
    assert "authorization" not in h
    assert secret not in info.value.message and info.value.code == P.AUTH
    from dsh_tui.config import SettingsError

    with pytest.raises(SettingsError, match="headers must be a table"):
        Settings({"providers": {"bad": {"base_url": "http://h", "headers": {"bad header": "x"}}}}).provider(
            "bad"
        )


def test_deepseek_defaults_for_resolve_model(monkeypatch):
    settings = Settings({"default": {"reasoning_effort": "max"}})
    provider = build_provider(settings)
    info = provider.resolve_model("deepseek-v4-pro")
    assert info.context_window == 1_000_000 and info.default_max_tokens == 256_000
    assert info.efforts == ("off", "low", "high", "max") and info.default_effort == "max"
    assert provider.resolve_model("deepseek-reasoner").context_window == 1_000_000


def test_unknown_provider_is_a_settings_error():
    from dsh_tui.config import SettingsError

    with pytest.raises(SettingsError, match='unknown provider "ghost"'):
        build_provider(Settings(), "ghost")
