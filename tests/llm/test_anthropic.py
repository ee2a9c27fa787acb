"""The built-in ``anthropic`` provider: Claude models over the Messages wire with ``ANTHROPIC_API_KEY``
(issue #27), against a scripted Messages server on 127.0.0.1 standing in for https://api.anthropic.com
(``ANTHROPIC_BASE_URL`` points there, as Anthropic's own SDK reads it)."""

from __future__ import annotations

import subprocess
import sys

from dsh_tui.config import Settings
from dsh_tui.llm.registry import available_models, build_provider, default_route
from tests.llm.sse_server import ScriptServer, json_reply
from tests.llm.test_messages import text_reply, title
from tests.llm.test_provider_harness import _env

KEY = "sk-ant-api03-0123456789abcdefghijklmnop"
SETTINGS = '[default]\nprovider = "anthropic"\n[storage]\ncompression = "none"\n'


def _run(server: ScriptServer | None, tmp_path, *, key: str | None = KEY) -> subprocess.CompletedProcess:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    extra = {"ANTHROPIC_BASE_URL": server.base_url if server else "http://127.0.0.1:9"}
    if key is not None:
        extra["ANTHROPIC_API_KEY"] = key
    env = {k: v for k, v in _env(tmp_path, **extra).items() if key is not None or k != "ANTHROPIC_API_KEY"}
    conf = tmp_path / "config" / "dsh-tui"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "settings.toml").write_text(SETTINGS)
    return subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "say hi"], env=env, cwd=ws,
                          capture_output=True, text=True, timeout=120)


def _written(tmp_path) -> bytes:
    """Every byte dsh-tui wrote under its home, config, cache and data folders and the workspace."""
    return b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())


def test_claude_answers_with_the_key_in_x_api_key_only(tmp_path):
    with ScriptServer() as server:
        server._server.title_reply = title
        server.push(text_reply("Hello from Claude.", thinking=None))
        out = _run(server, tmp_path)
        requests = list(server.requests) + list(server.title_requests)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Hello from Claude."
    first = requests[0]
    assert first["path"] == "/v1/messages"
    headers = {k.lower(): v for k, v in first["headers"].items()}
    assert headers["x-api-key"] == KEY
    assert headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers
    assert not [h for h in headers if h.startswith("x-deepseek-harness-")]  # dsh's own headers stay with DeepSeek
    body = first["body"]
    assert body["model"] == "claude-sonnet-4-5" and body["max_tokens"] == 64_000 and body["stream"] is True
    # no DeepSeek fields: Anthropic's thinking needs a budget, and dsh's request extensions are DeepSeek's
    assert not {"thinking", "output_config", "dsh_session_log", "dsh_plugin_packages"} & set(body)
    for r in requests:  # the key is never in a URL, and only ever in x-api-key
        assert KEY not in r["path"]
        assert [k for k, v in r["headers"].items() if KEY in v] == ["x-api-key"]
    assert KEY.encode() not in _written(tmp_path)  # nor in the session log, nor any file
    assert KEY not in out.stdout + out.stderr


def test_a_rejected_key_is_one_redacted_line(tmp_path):
    with ScriptServer() as server:
        # the server echoes the key back in its error, as a misbehaving proxy might
        server.push(json_reply(401, {"type": "error", "error": {"type": "authentication_error",
                                                                "message": f"invalid x-api-key {KEY}"}}))
        out = _run(server, tmp_path)
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    assert "AUTH" in out.stderr and KEY not in out.stderr + out.stdout
    assert KEY.encode() not in _written(tmp_path)


def test_without_a_key_the_user_is_told_what_to_set(tmp_path):
    out = _run(None, tmp_path, key=None)
    assert out.returncode == 1
    [line] = out.stderr.strip().splitlines()
    assert line.startswith('dsh-tui: no API key for provider "anthropic": export ANTHROPIC_API_KEY=<your key>')


def test_the_route_is_listed_when_a_key_is_set_or_the_settings_name_it(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert "anthropic" not in Settings({}).providers()
    assert default_route(Settings({"default": {"provider": "anthropic"}})) == ("anthropic", "claude-sonnet-4-5")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert ("anthropic", "claude-opus-4-1") in available_models(Settings({}))
    ps = Settings({"providers": {"anthropic": {"models": {"claude-sonnet-4-5": {"max_tokens": 8000}}}}}).provider(
        "anthropic")
    assert ps.api == "messages" and ps.base_url == "https://api.anthropic.com"
    assert ps.models["claude-sonnet-4-5"].max_tokens == 8000  # a user's table is merged over the built-in one
    provider = build_provider(Settings({"default": {"provider": "anthropic"}}))
    assert provider.endpoint == "https://api.anthropic.com/v1/messages"
