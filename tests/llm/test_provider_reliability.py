"""Issue #15 (smaller items): a 2xx answer that is no event stream says what arrived; credentials in a base
URL are refused; header values and the provider settings are validated when they are loaded."""

from __future__ import annotations

import json

import pytest

from dsh_tui.config import SettingsError, load_credentials, load_settings, settings_path
from dsh_tui.llm import protocol as P
from dsh_tui.llm import registry
from dsh_tui.llm.openai import OpenAICompatProvider
from dsh_tui.llm.protocol import LlmError
from tests.llm.sse_server import Reply, ScriptServer
from tests.llm.test_openai_compat import KEY, fail, make


@pytest.fixture
def server():
    with ScriptServer() as srv:
        yield srv


@pytest.mark.parametrize("ctype, body, shown", [
    ("text/html; charset=utf-8", b"<html><body>Gateway login</body></html>", "text/html"),
    ("application/json", json.dumps({"id": "x", "object": "chat.completion", "choices": [
        {"message": {"role": "assistant", "content": "hi"}}]}).encode(), "application/json"),
    ("text/plain", b"not json at all", "text/plain"),
])
async def test_a_2xx_that_is_not_an_event_stream_names_what_arrived(server, ctype, body, shown):
    server.push(Reply(status=200, headers={"content-type": ctype}, body=body))
    err, got = await fail(make(server))
    assert got == []
    assert err.code == P.MALFORMED_RESPONSE
    assert f"answered HTTP 200 with {shown}, not an event stream" in err.message
    assert repr(body.decode()[:20])[:-1] in err.message  # the first bytes, quoted


async def test_first_bytes_are_redacted(server):
    server.push(Reply(status=200, headers={"content-type": "text/html"}, body=f"<p>bad key {KEY}</p>".encode()))
    err, _ = await fail(make(server))
    assert KEY not in err.message and "[REDACTED]" in err.message


def test_credentials_in_a_base_url_are_refused(monkeypatch):
    with pytest.raises(LlmError) as info:
        OpenAICompatProvider("gw", "http://user:sk-secret-1@127.0.0.1:9/v1", lambda: None)
    assert info.value.code == P.INVALID_CREDENTIAL and "sk-secret-1" not in info.value.message
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('[providers.gw]\nbase_url = "http://u:sk-secret-2@127.0.0.1:9/v1"\n')
    with pytest.raises(SettingsError) as err:
        load_settings().providers()
    assert "must not hold credentials" in str(err.value) and "sk-secret-2" not in str(err.value)
    path.write_text("")
    monkeypatch.setenv("DEEPSEEK_BASE_URL", "https://u:sk-secret-3@api.example.com")
    with pytest.raises(SettingsError) as err:
        load_settings().providers()
    assert "$DEEPSEEK_BASE_URL" in str(err.value) and "sk-secret-3" not in str(err.value)


@pytest.mark.parametrize("text, message", [
    ('[providers.gw]\nbase_url = "http://127.0.0.1:9"\nheaders = { x-team = "équipe" }\n', "printable ASCII"),
    ('[providers.gw]\nbase_url = "http://127.0.0.1:9"\n[providers.gw.models.m]\ncontext_window = 0\n',
     "context_window must be a positive integer"),
    ('[providers.gw]\nbase_url = "http://127.0.0.1:9"\ndefault_context_window = 0\n',
     "default_context_window must be a positive integer"),
])
def test_settings_problems_are_reported_at_load(text, message):
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    with pytest.raises(SettingsError, match=message):
        load_settings().providers()


@pytest.mark.parametrize("retry, message", [
    ("max_retries = -5", "max_retries must be a non-negative number"),
    ("initial_delay_ms = -1", "initial_delay_ms must be a non-negative number"),
    ("jitter_ratio = 2.0", "jitter_ratio must be between 0 and 1"),
])
def test_negative_retry_settings_are_refused(retry, message):
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[default]\nprovider = "gw"\n[providers.gw]\nbase_url = "http://127.0.0.1:9"\n'
                    f"[providers.gw.retry]\n{retry}\n")
    with pytest.raises(SettingsError, match=message):
        registry.build_provider(load_settings())


@pytest.mark.parametrize("text, message", [
    ("DEEPSEEK_API_KEY = 5\n", "DEEPSEEK_API_KEY must be a string \\(the key, in quotes\\), not an integer$"),
    ("DEEPSEEK_API_KEY = true\n", "DEEPSEEK_API_KEY must be a string \\(the key, in quotes\\), not a boolean$"),
    ("DEEPSEEK_API_KEY = [1]\n", "not an array$"),
    ("providers = 1\n", "providers must be a table"),
    ("[providers.gw]\napi_key = 7\n", "providers.gw.api_key must be a string"),
])
def test_wrong_typed_credentials_are_reported(tmp_path, text, message):
    p = tmp_path / "credentials.toml"
    p.write_text(text)
    p.chmod(0o600)
    with pytest.raises(SettingsError, match=message):
        load_credentials(p)


def test_a_credentials_directory_is_reported_as_one(tmp_path):
    d = tmp_path / "credentials.toml"
    d.mkdir()
    d.chmod(0o755)
    with pytest.raises(SettingsError, match="is not a file \\(it is a directory\\)"):
        load_credentials(d)


def test_a_settings_or_credentials_path_below_a_file_is_one_plain_reason(tmp_path):
    """``XDG_CONFIG_HOME=<a file>``: the reason is the system's words, not Python's ``[Errno 20] ...: '...'``."""
    from dsh_tui.config.files import read_settings_file

    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    for read in (read_settings_file, load_credentials):
        with pytest.raises(SettingsError) as err:
            read(a_file / "dsh-tui" / "x.toml")
        assert str(err.value) == f"cannot read {a_file / 'dsh-tui' / 'x.toml'}: Not a directory", read
