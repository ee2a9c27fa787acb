"""Format v4 as the default for new sessions (issue #27): the runtime's view of a v4 log and the transcript of a v4
fork, on dsh 0.2's own sessions (tests/fixtures/dsh02)."""

from __future__ import annotations

import shutil
from pathlib import Path

from dsh_tui.session.log import v4_runtime_message
from dsh_tui.session.transcript.fold import TranscriptFold
from dsh_tui.store import lifecycle
from dsh_tui.store.jsonl import JsonlStore

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "dsh02"


def test_a_v4_tool_result_keeps_is_error_false_for_the_provider():
    """dsh 0.2 sends ``is_error: false`` for a successful result: the runtime's v0 view keeps the v4 message's
    ``isError`` as it is, false included (it used to drop it, so the Messages wire sent none)."""
    ok = {"type": "tool/result", "data": {"message": {"id": "r", "role": "tool", "toolCallId": "c1", "isError": False,
                                                       "source": {"kind": "tool", "callId": "c1"},
                                                       "content": [{"type": "text", "text": "fine"}]}}}
    (block,) = v4_runtime_message(ok)["content"]
    assert block == {"type": "tool-result", "toolCallId": "c1", "content": [{"type": "text", "text": "fine"}],
                     "isError": False}
    bad = {**ok, "data": {"message": {**ok["data"]["message"], "isError": True}}}
    assert v4_runtime_message(bad)["content"][0]["isError"] is True


def _dividers(store: JsonlStore, sid: str) -> list[str]:
    res = store.inspect(sid)
    fold = TranscriptFold(res.header)
    fold.apply_all(list(res.events))
    return [item.text for item in fold.items if getattr(item, "kind", "") == "divider"]


def test_a_v4_fork_is_divided_at_its_inherited_end_seed_not_at_the_parents_resume(tmp_path):
    """dsh 0.2's ``two-turns`` session was resumed once by dsh (a ``session/end-seed {}`` inside it). A fork after
    its second turn copies that marker; the child's transcript calls it the parent's history and puts "forked from"
    only at the ``{inherited: true}`` cut (a v4 header has no seedLength to tell them apart)."""
    shutil.copytree(CORPUS / "two-turns" / "sessions", tmp_path / "sessions")
    store = JsonlStore(tmp_path / "sessions")
    (log,) = (tmp_path / "sessions").rglob("session.v4.jsonl.zstd")
    parent = log.parent.name
    assert _dividers(store, parent) == ["resumed here"]
    child = lifecycle.fork(store, parent, at_turn=2)
    assert child["version"] == 4 and child["isSeeded"] is True
    assert _dividers(store, child["id"]) == [f"forked or resumed here in the history of {parent}",
                                             f"forked from {parent} here"]


def test_new_sessions_are_v4_on_jsonl_v0_by_setting_and_always_v0_on_sqlite(tmp_path, monkeypatch):
    from dsh_tui.runtime.host import new_session_format
    from dsh_tui.store.open import open_store

    jsonl = JsonlStore(tmp_path / "j")
    sqlite = open_store(tmp_path / "s", default_backend="sqlite")
    assert new_session_format(jsonl) == "v4"  # no setting: dsh 0.2's format
    assert new_session_format(sqlite) == "v0"  # dsh's SQLite schema holds format 0
    (tmp_path / "cfg" / "dsh-tui").mkdir(parents=True)
    (tmp_path / "cfg" / "dsh-tui" / "settings.toml").write_text('[storage]\nformat = "v0"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert new_session_format(jsonl) == "v0"
    assert new_session_format(jsonl, "v4") == "v4"  # an explicit choice wins
    monkeypatch.setenv("DSH_TUI_SESSION_FORMAT", "v4")
    assert new_session_format(jsonl) == "v4"
