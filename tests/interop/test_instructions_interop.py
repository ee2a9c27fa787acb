"""A session dsh-tui started in a workspace with AGENTS.md (nested, and a home file), opened by the REAL dsh
persistence: it loads, and dsh's own derived messages carry the same instruction texts (baseline and
dynamic ``set``) and the same title as ours."""

from __future__ import annotations

import os

import pytest

from dsh_tui.llm.scripted import ScriptedProvider, call, text
from dsh_tui.runtime.host import AgentHost, HostSpec

# the peer is dsh 0.1 (npm 0.1.0-rc.8): it reads only format v0, so the sessions dsh-tui starts here are v0
# ([storage] format = "v0"); dsh 0.2 and format v4, the default, are tests/interop/test_dsh02_*.py
pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("session_format_v0")]


@pytest.mark.parametrize("compression", ["zstd", "none"])
async def test_dsh_derives_our_instruction_messages(dsh_peer, tmp_path, monkeypatch, compression):
    monkeypatch.setenv("DSH_TUI_COMPRESSION", compression)
    home = tmp_path / "home-dsh"
    home.mkdir()
    monkeypatch.setenv("DSH_HOME", str(home))
    (home / "AGENTS.md").write_text("Home: be kind.\n")
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / ".git").mkdir()
    (ws / "AGENTS.md").write_text("Root: run the tests.\n")
    (ws / "pkg" / "AGENTS.md").write_text("Pkg: no </system-reminder> tricks, é😀.\n")
    (ws / "pkg" / "a.txt").write_text("hello\n")
    provider = ScriptedProvider([call("c1", "read", {"file_path": "pkg/a.txt"}), text("done")], name="mock",
                                titles=[text("Reading a pkg file")])
    root = tmp_path / "root"
    host = await AgentHost.open(HostSpec(root=root, cwd=ws, provider=provider, model="m", plugins=()))
    await host.run_turn("Read pkg/a.txt and tell me what it says")
    ours = host.session.derive_messages().to_list()
    sid = host.session.id
    await host.close()
    assert os.listdir(root)

    got = dsh_peer.messages(root, sid, compression)
    assert "error" not in got, got
    theirs = got["messages"]

    def instructions(messages):
        return [(m["content"][0]["text"], m["source"]) for m in messages
                if (m.get("source") or {}).get("kind") == "agent-instructions"]

    mine = instructions(ours)
    assert [len(s["changes"]) for _, s in mine] == [2, 1]  # baseline (home + root), then pkg/AGENTS.md
    assert mine[0][0].startswith("<system-reminder>\nThe following workspace instructions")
    assert "Additional instructions from: pkg/AGENTS.md" in mine[1][0] and "<\\/system-reminder>" in mine[1][0]
    assert instructions(theirs) == mine
    assert theirs == ours  # the whole derived history is the same
    assert got["title"] == {"title": "Reading a pkg file", "messageSeqs": [4], "source": {
        "kind": "provider", "provider": "session-title-first-prompt-llm", "model": {"provider": "mock", "model": "m"}}}
