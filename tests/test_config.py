"""Settings file (settings.toml) and credentials file (credentials.toml)."""

from __future__ import annotations

import math
import os
import tomllib

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dsh_tui.config import (
    DEEPSEEK_PROVIDER,
    Settings,
    SettingsError,
    config_dir,
    credentials_path,
    dumps_toml,
    find_api_key,
    load_credentials,
    load_settings,
    save_credential,
    save_settings,
    settings_path,
)


def test_location_follows_xdg_config_home():
    assert settings_path() == config_dir() / "settings.toml"
    assert str(settings_path()).startswith(os.environ["XDG_CONFIG_HOME"])
    assert credentials_path().name == "credentials.toml"


def test_missing_file_gives_builtin_defaults():
    s = load_settings()
    assert s.data == {}
    assert s.default_provider == DEEPSEEK_PROVIDER
    assert s.default_model == "deepseek-v4-flash"
    assert s.default_reasoning_effort is None
    p = s.provider()
    assert p.base_url == "https://api.deepseek.com"
    assert p.api_key_env == "DEEPSEEK_API_KEY"
    assert p.thinking_format == "deepseek"
    assert set(p.models) == {"deepseek-v4-flash", "deepseek-v4-pro"}
    assert p.models["deepseek-v4-pro"].context_window == 1_000_000
    assert p.models["deepseek-v4-flash"].price_input is None  # prices unknown unless configured
    assert s.get("providers.deepseek-official.base_url") == "https://api.deepseek.com"


def test_deepseek_base_url_env(monkeypatch):
    monkeypatch.setenv("DEEPSEEK_BASE_URL", "http://127.0.0.1:9999/v1")
    assert load_settings().provider().base_url == "http://127.0.0.1:9999/v1"
    s = Settings({"providers": {DEEPSEEK_PROVIDER: {"base_url": "https://gw.example/v1"}}})
    assert s.provider().base_url == "https://gw.example/v1"  # an explicit setting beats the variable


def test_set_get_save_load_round_trip(tmp_path):
    s = load_settings()
    s.set("ui.theme", "dsh-light")
    s.set("keymap.chat.cards", "ctrl+k")
    s.set("storage.backend", "sqlite")
    s.set("default.model", "deepseek-v4-pro")
    s.set("default.reasoning_effort", "max")
    s.set("providers.ollama.base_url", "http://127.0.0.1:11434/v1")
    s.set("providers.ollama.models", {"qwen2.5:7b": {"context_window": 32768, "price_input": 0.0}})
    s.set("ui.show_time", False)
    path = save_settings(s)
    assert path == settings_path()
    again = load_settings()
    assert again.data == s.data
    assert again.get("ui.theme") == "dsh-light"
    assert again.get("keymap.chat.cards") == "ctrl+k"
    assert again.get("keymap") == {"chat": {"cards": "ctrl+k"}}
    assert again.get("ui.show_time") is False
    assert again.get("nope.nothing", 7) == 7
    assert again.default_model == "deepseek-v4-pro" and again.default_reasoning_effort == "max"
    ollama = again.provider("ollama")
    assert ollama.thinking_format == "none" and ollama.api_key_env is None
    assert ollama.models["qwen2.5:7b"].context_window == 32768
    assert ollama.models["qwen2.5:7b"].price_input == 0.0
    again.set("ui.theme", None)
    assert again.get("ui.theme") is None


def test_set_refuses_bad_shapes():
    s = Settings()
    s.set("ui.theme", "x")
    with pytest.raises(SettingsError, match="ui.theme is not a table"):
        s.set("ui.theme.color", "red")
    with pytest.raises(SettingsError):
        s.set("a..b", 1)
    with pytest.raises(SettingsError):
        s.set("a.b", object())


def test_broken_toml_is_a_one_line_error():
    settings_path().parent.mkdir(parents=True, exist_ok=True)
    settings_path().write_text("[ui\ntheme = 1\n")
    with pytest.raises(SettingsError, match="is not valid TOML"):
        load_settings()


def test_provider_validation_names_the_key():
    with pytest.raises(SettingsError, match=r"providers\.vllm\.base_url is required"):
        Settings({"providers": {"vllm": {"api_key_env": "X"}}}).provider("vllm")
    with pytest.raises(SettingsError, match=r"thinking_format must be one of"):
        Settings({"providers": {"v": {"base_url": "http://h", "thinking_format": "magic"}}}).provider("v")
    with pytest.raises(SettingsError, match=r"context_window must be an integer"):
        Settings(
            {"providers": {"v": {"base_url": "http://h", "models": {"m": {"context_window": "big"}}}}}
        ).provider("v")
    with pytest.raises(SettingsError, match='unknown provider "nope"'):
        Settings().provider("nope")


def test_credentials_file_must_be_private():
    p = credentials_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text('DEEPSEEK_API_KEY = "sk-from-file"\n')
    os.chmod(p, 0o644)
    with pytest.raises(SettingsError, match=r"mode is 0644; run: chmod 600"):
        load_credentials()
    os.chmod(p, 0o600)
    assert load_credentials() == {"DEEPSEEK_API_KEY": "sk-from-file"}
    assert find_api_key(Settings().provider()) == "sk-from-file"


def test_env_beats_credentials_file_and_per_provider_entries(monkeypatch):
    path = save_credential("my-gw", "gw-key-123")
    assert (os.stat(path).st_mode & 0o777) == 0o600
    s = Settings({"providers": {"my-gw": {"base_url": "https://gw.example/v1", "api_key_env": "GW_KEY"}}})
    assert find_api_key(s.provider("my-gw")) == "gw-key-123"
    monkeypatch.setenv("GW_KEY", "env-key")
    assert find_api_key(s.provider("my-gw")) == "env-key"
    assert find_api_key(Settings().provider()) is None


SCALAR = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12),
)
KEY = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8)
VALUE = st.recursive(
    SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEY, inner, max_size=3)),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(KEY, VALUE, max_size=5))
@example({"0\n": {}})  # "$" in a bare-key regex would also match before a trailing newline
@example({"a b": [{"x.y": "q\"\\\u0001"}], "": 1.5e300, "ok-key": {"t": {"u": -0.0}}})
def test_toml_writer_round_trips_through_tomllib(doc):
    text = dumps_toml(doc)
    back = tomllib.loads(text)
    assert _norm(back) == _norm(doc)


def _norm(v):
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    if isinstance(v, float) and math.isinf(v):
        return ("inf", v > 0)
    return v


def test_save_edits_the_file_in_place(tmp_path):
    text = (
        "# top comment\n"
        "[ui]\n"
        'theme = "dsh-dark"  # mine\n'
        "cursor_blink = false\n"
        "\n"
        "[mystery]  # a table this version does not know\n"
        "answer = 42\n"
    )
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    s = load_settings()
    s.set("ui.cursor_blink", None)  # removed: only its line goes
    s.set("ui.show_time", False)  # added to the [ui] table
    s.set("storage.backend", "sqlite")  # a new table, at the end
    save_settings(s)
    got = path.read_text()
    assert got.startswith('# top comment\n[ui]\ntheme = "dsh-dark"  # mine\nshow_time = false\n')
    assert "[mystery]  # a table this version does not know\nanswer = 42\n" in got
    assert "cursor_blink" not in got and got.rstrip().endswith('[storage]\nbackend = "sqlite"')
    assert tomllib.loads(got) == s.data
    again = Settings(tomllib.loads(got), path)  # saving an unchanged document changes no byte
    save_settings(again)
    assert path.read_text() == got


def test_a_file_that_is_not_toml_is_replaced_whole_on_save():
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[ui\nbroken")
    s = Settings({"ui": {"theme": "dsh-light"}})
    save_settings(s)
    assert tomllib.loads(path.read_text()) == {"ui": {"theme": "dsh-light"}}
    assert [p.name for p in path.parent.iterdir()] == ["settings.toml"]  # no temporary file left


def test_save_credential_keeps_comments_and_mode():
    p = credentials_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text('# keys, private\nDEEPSEEK_API_KEY = "sk-1"  # work account\n')
    p.chmod(0o600)
    save_credential("gw", "gw-key")
    got = p.read_text()
    assert got.startswith('# keys, private\nDEEPSEEK_API_KEY = "sk-1"  # work account\n')
    assert load_credentials() == {"DEEPSEEK_API_KEY": "sk-1", "providers": {"gw": {"api_key": "gw-key"}}}
    assert (os.stat(p).st_mode & 0o777) == 0o600


def test_saving_refuses_values_toml_cannot_hold():
    s = Settings({"ui": {"theme": "a\ud800"}})
    with pytest.raises(SettingsError, match="lone surrogates"):
        save_settings(s)
    assert not settings_path().exists()
