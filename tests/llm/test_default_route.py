"""DeepSeek's default route is the Messages wire with dsh 0.2's default request (issue #27): with no settings
file, ``dsh-tui run --headless`` sends what dsh 0.2's first headless request sends (path, model, thinking,
effort, output cap; ``tests/fixtures/dsh02-request.headless.json`` is that request, captured from the real
dsh 0.2). Chat completions stay selectable (``api = "chat"``, or ``DSH_TUI_DEEPSEEK_API=chat``)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dsh_tui.config import Settings
from dsh_tui.llm.registry import build_provider, default_route
from tests.conftest import REPO
from tests.llm.sse_server import ScriptServer, chunk, sse_reply
from tests.llm.test_messages import text_reply, title
from tests.llm.test_provider_harness import _env

DSH02_REQUEST = REPO / "tests" / "fixtures" / "dsh02-request.headless.json"
KEY = "sk-default-route-0123456789abcdef"
# the request fields dsh 0.2's default DeepSeek route sets (beside messages, system and tools)
DEFAULT_FIELDS = ("model", "stream", "max_tokens", "thinking", "output_config")


def _headless(server: ScriptServer, tmp_path, settings: str | None = None, **env: str) -> list[dict]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    environ = _env(tmp_path, DEEPSEEK_API_KEY=KEY, DEEPSEEK_BASE_URL=server.base_url, **env)
    if settings is not None:
        conf = tmp_path / "config" / "dsh-tui"
        conf.mkdir(parents=True, exist_ok=True)
        (conf / "settings.toml").write_text(settings)
    out = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "say hi"], env=environ, cwd=ws,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert KEY not in out.stdout + out.stderr
    return list(server.requests)


def test_with_no_settings_deepseek_is_reached_over_messages_with_dsh02s_default_request(
        tmp_path, monkeypatch, use_messages_default):
    monkeypatch.delenv("DSH_TUI_DEEPSEEK_API", raising=False)
    expected = json.loads(DSH02_REQUEST.read_text())
    with ScriptServer() as server:
        server._server.title_reply = title
        server.push(text_reply("Hi."))
        [first] = _headless(server, tmp_path)
    assert first["path"] == expected["path"] == "/v1/messages"
    headers = {k.lower(): v for k, v in first["headers"].items()}
    assert headers["x-api-key"] == KEY and "authorization" not in headers
    assert headers["anthropic-version"] == "2023-06-01"
    body = first["body"]
    assert {k: body[k] for k in DEFAULT_FIELDS} == {k: expected["body"][k] for k in DEFAULT_FIELDS}
    assert body["model"] == "deepseek-flash" and body["max_tokens"] == 256_000
    assert body["thinking"] == {"type": "enabled"} and body["output_config"] == {"effort": "high"}
    # the same order of fields as dsh 0.2 (its request extensions aside: see [privacy])
    dsh_only = ("dsh_session_log", "dsh_plugin_packages")
    assert list(body) == [k for k in expected["body"] if k not in dsh_only]


@pytest.mark.parametrize("how", ["settings", "environment"])
def test_chat_completions_stay_selectable(tmp_path, monkeypatch, how):
    monkeypatch.delenv("DSH_TUI_DEEPSEEK_API", raising=False)
    settings, env = (('[providers.deepseek-official]\napi = "chat"\n', {}) if how == "settings"
                     else (None, {"DSH_TUI_DEEPSEEK_API": "chat"}))
    with ScriptServer() as server:
        server.push(sse_reply(chunk("Hi.", role="assistant"), chunk(finish="stop")))
        requests = _headless(server, tmp_path, settings, **env)
    first = requests[0]
    assert first["path"] == "/chat/completions"
    assert {k.lower(): v for k, v in first["headers"].items()}["authorization"] == f"Bearer {KEY}"
    assert first["body"]["model"] == "deepseek-v4-flash"  # the chat route keeps its catalog and default


def test_the_builtin_routes_catalog_follows_its_wire(monkeypatch, use_messages_default):
    messages = Settings({})
    assert messages.provider().api == "messages"
    assert default_route(messages) == ("deepseek-official", "deepseek-flash")
    assert list(messages.provider().models) == ["deepseek-flash", "deepseek-v4-pro"]
    assert type(build_provider(messages)).__name__ == "MessagesProvider"
    chat = Settings({"providers": {"deepseek-official": {"api": "chat"}}})
    assert chat.provider().api == "chat"
    assert default_route(chat) == ("deepseek-official", "deepseek-v4-flash")
    assert type(build_provider(chat)).__name__ == "OpenAICompatProvider"
    monkeypatch.setenv("DSH_TUI_DEEPSEEK_API", "chat")
    assert Settings({}).provider().api == "chat"
    # a settings file wins over the environment
    assert Settings({"providers": {"deepseek-official": {"api": "messages"}}}).provider().api == "messages"
