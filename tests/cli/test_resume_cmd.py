"""``dsh-tui resume``: id / --last resolution (real subprocess for the errors) and a headless turn with
the real harness and a scripted model (in process: the CLI's provider comes from the settings)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from dsh_tui.cli.resume_cmd import find_session, resume_headless
from dsh_tui.llm import scripted
from dsh_tui.llm.scripted import ScriptedProvider
from dsh_tui.session.errors import DshError
from dsh_tui.store.open import open_store
from tests.store.test_catalog_support import make_header, user_turn, write_session


def run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "dsh_tui", *args], capture_output=True, text=True,
                          cwd=cwd, env=os.environ.copy(), timeout=60)


def test_last_picks_the_most_recent_session_here(tmp_path):
    root = tmp_path / "r"
    write_session(root, make_header("old", "/ws"), user_turn(0, 1, "old", "x", t=1_000))
    write_session(root, make_header("new", "/ws"), user_turn(0, 1, "new", "y", t=9_000))
    write_session(root, make_header("other", "/else"), user_turn(0, 1, "z", "z", t=99_000))
    assert find_session(None, True, [str(root)], "/ws").id == "new"
    assert find_session("ol", False, [str(root)], "/ws").id == "old"
    with pytest.raises(DshError, match="no session to resume"):
        find_session(None, True, [str(root)], "/nowhere")
    with pytest.raises(DshError, match="session id or --last"):
        find_session(None, False, [str(root)], "/ws")


def test_cli_errors_are_one_line(tmp_path):
    p = run_cli("resume", "--last", "--root", str(tmp_path), cwd=tmp_path)
    assert p.returncode == 1 and p.stderr.startswith("dsh-tui: no session to resume in") and "Traceback" not in p.stderr
    p = run_cli("resume", "missing", "--headless", "hi", "--root", str(tmp_path), cwd=tmp_path)
    assert p.returncode == 1 and p.stderr.startswith("dsh-tui: no session 'missing'")


def test_headless_resume_runs_one_turn_and_appends_after_end_seed(tmp_path):
    root = tmp_path / "r"
    path = write_session(root, make_header("s1", str(tmp_path)), user_turn(0, 1, "hello", "world"))
    before = path.read_bytes()
    provider = ScriptedProvider([scripted.text("second answer")], name="mock", context_window=100_000)
    answer, reason = asyncio.run(resume_headless(open_store(root), "s1", provider, "mock-model", "again?"))
    assert (answer, reason) == ("second answer", "completed")
    after = path.read_bytes()
    assert after.startswith(before)
    res = open_store(root).inspect("s1")
    types = [e["type"] for e in res.events]
    n = len(user_turn(0, 1, "hello", "world"))
    assert types[n] == "session/end-seed" and types[-1] == "turn/end"
    sent = provider.requests[-1]["messages"]
    assert any(b.get("text") == "again?" for m in sent for b in m["content"])
    assert any(b.get("text") == "world" for m in sent for b in m["content"])  # the resumed history


def test_resume_takes_a_preset_as_run_does(tmp_path):
    """Issue #26 item 22: ``run`` had ``--preset``, ``resume`` had not. Under ``read-only`` a resumed
    headless turn's write is refused (nothing is written)."""
    p = run_cli("resume", "--help")
    assert p.returncode == 0 and "--preset" in p.stdout and "read-only" in p.stdout
    p = run_cli("resume", "s1", "--preset", "bogus", "--root", str(tmp_path / "r"))
    assert p.returncode == 2 and "invalid choice" in p.stderr and "Traceback" not in p.stderr
    root = tmp_path / "r"
    write_session(root, make_header("s1", str(tmp_path)), user_turn(0, 1, "hello", "world"))
    target = tmp_path / "made.txt"
    provider = ScriptedProvider([scripted.call("c1", "write", {"file_path": str(target), "content": "x\n"}),
                                 scripted.text("tried")], name="mock", context_window=100_000)
    answer, reason = asyncio.run(resume_headless(open_store(root), "s1", provider, "mock-model", "write it",
                                                 cwd=str(tmp_path), preset="read-only"))
    assert reason == "completed" and not target.exists()
    decided = [e["data"] for e in open_store(root).inspect("s1").events if e["type"] == "approval/decided"]
    assert [d["outcome"] for d in decided] == ["unavailable"]  # workspace-write would have written it
