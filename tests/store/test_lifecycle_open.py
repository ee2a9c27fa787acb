"""Which backend a root uses: argument, environment, an existing sessions.sqlite, the storage settings."""

from __future__ import annotations

import pytest

from dsh_tui.config import load_settings, save_settings
from dsh_tui.runtime.host import open_session_store
from dsh_tui.session.errors import DshError
from dsh_tui.session.headers import make_header
from dsh_tui.store.jsonl import JsonlStore
from dsh_tui.store.open import open_store
from dsh_tui.store.sqlite import SqliteSessionStore
from tests.store.crash_child import build_log


def _kind(store):
    return "sqlite" if isinstance(store, SqliteSessionStore) else f"jsonl-{store.compression}"


def test_default_is_zstd_jsonl_and_the_root_encoding_is_kept(tmp_path, monkeypatch):
    monkeypatch.delenv("DSH_TUI_BACKEND", raising=False)
    monkeypatch.delenv("DSH_TUI_COMPRESSION", raising=False)
    assert _kind(open_store(tmp_path / "a")) == "jsonl-zstd"
    raw = JsonlStore(tmp_path / "b", "none")
    raw.create(make_header("s", cwd="/w", created_at=1))
    raw.append("s", build_log(turns=1)[:3])
    assert _kind(open_store(tmp_path / "b")) == "jsonl-none"


def test_explicit_environment_settings_and_existing_database(tmp_path, monkeypatch):
    monkeypatch.delenv("DSH_TUI_BACKEND", raising=False)
    monkeypatch.delenv("DSH_TUI_COMPRESSION", raising=False)
    assert _kind(open_store(tmp_path / "x", backend="sqlite")) == "sqlite"
    assert _kind(open_store(tmp_path / "x")) == "sqlite"  # sessions.sqlite exists now
    monkeypatch.setenv("DSH_TUI_BACKEND", "jsonl")
    monkeypatch.setenv("DSH_TUI_COMPRESSION", "none")
    assert _kind(open_store(tmp_path / "y")) == "jsonl-none"
    monkeypatch.delenv("DSH_TUI_BACKEND")
    monkeypatch.delenv("DSH_TUI_COMPRESSION")
    settings = load_settings()
    settings.set("storage.backend", "sqlite")
    save_settings(settings)
    assert _kind(open_store(tmp_path / "s")) == "jsonl-zstd"  # the store layer reads no settings file
    assert _kind(open_store(tmp_path / "s2", default_backend="sqlite")) == "sqlite"
    assert _kind(open_session_store(tmp_path / "z")) == "sqlite"  # the host passes the setting down
    settings.set("storage", {"compression": "none"})
    save_settings(settings)
    assert _kind(open_session_store(tmp_path / "n")) == "jsonl-none"
    settings.set("storage.backend", 5)
    save_settings(settings)
    with pytest.raises(DshError, match="storage.backend must be a string, not 5"):
        open_session_store(tmp_path / "bad")
    with pytest.raises(DshError, match="unknown session backend"):
        open_store(tmp_path / "w", backend="mysql")
