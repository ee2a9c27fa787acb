"""The notes of files dsh-tui skipped in a hostile repository (``agent-instructions/skipped``,
``skills/skipped``, ignorable) leave a log the real dsh loads, event for event."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from dsh_tui.store.fixture import open_log_file
from tests.runtime.test_workspace_reads import _hostile_repo, _settings, _skill

# the peer is dsh 0.1 (npm 0.1.0-rc.8): it reads only format v0, so the sessions dsh-tui starts here are v0
# ([storage] format = "v0"); dsh 0.2 and format v4, the default, are tests/interop/test_dsh02_*.py
pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("session_format_v0")]


def test_dsh_loads_a_log_with_skipped_file_notes(dsh_peer, tmp_path):
    from tests.llm.sse_server import ScriptServer, chunk, sse_reply

    repo = _hostile_repo(tmp_path)
    _skill(repo / ".dsh" / "skills" / "deep", "deep", front="meta: " + "[" * 200 + "]" * 200 + "\n")
    root = tmp_path / "root"
    with ScriptServer() as srv:
        srv.push(sse_reply(chunk("hello"), chunk(finish="stop", usage={"prompt_tokens": 3, "completion_tokens": 1})))
        _settings(srv.base_url)
        p = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "hi", "--preset", "read-only",
                            "--root", str(root)], cwd=repo, capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, HOME=str(tmp_path / "home")))
    assert p.returncode == 0, p.stderr
    events = open_log_file(next(root.rglob("session*.jsonl*"))).events
    types = {e["type"] for e in events}
    assert {"agent-instructions/skipped", "skills/skipped"} <= types
    report = dsh_peer.load(root, inspect=True, dump=True)
    assert report.returncode == 0, report.sessions
    (session,) = report.sessions
    assert session["ok"], session
    assert report.events[session["id"]] == events


def test_dsh_loads_a_log_with_workspace_changes_and_undo(dsh_peer, tmp_path):
    """The ``workspace-changes`` events (dsh 0.2's ``workspace/changes`` marker, our ``workspace-changes/turn``
    and ``/undo``, ignorable) leave a log the real dsh loads, event for event (issue #31)."""
    from tests.runtime.test_undo import two_turns

    ws, root, sid = two_turns(tmp_path)
    undo = subprocess.run([sys.executable, "-m", "dsh_tui", "undo", sid, "--root", str(root)], cwd=ws,
                          capture_output=True, text=True, timeout=120)
    assert undo.returncode == 0, undo.stderr
    events = open_log_file(next(root.rglob("session.jsonl*"))).events
    assert {"workspace/changes", "workspace-changes/turn", "workspace-changes/undo"} <= {e["type"] for e in events}
    report = dsh_peer.load(root, inspect=True, dump=True)
    assert report.returncode == 0, report.sessions
    (session,) = report.sessions
    assert session["ok"], session
    assert report.events[session["id"]] == events
