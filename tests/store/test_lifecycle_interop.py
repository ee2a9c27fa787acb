"""Real dsh checks the durability layer (JSONL only: dsh's SQLite has no published build):
logs left by the SIGKILL crash suite and forked children load in dsh; dsh repairs a crashed log exactly
as dsh-tui does; a session dsh wrote can be resumed and forked by dsh-tui."""

from __future__ import annotations

import random
import shutil

import pytest

from dsh_tui.store import lifecycle
from tests.conftest import FIXTURES
from tests.interop.conftest import dsh_peer  # noqa: F401 - the session-scoped peer fixture
from tests.store import crash_child as cc
from tests.store.test_crash import check_trial, run_trial

pytestmark = pytest.mark.interop

SNAP = FIXTURES / "examples" / "acp-agent" / "tests" / "snapshots"


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_crash_logs_repair_identically_in_dsh_and_load_there(dsh_peer, tmp_path, compression):  # noqa: F811
    rng = random.Random(77)
    kinds = [("request 1", "request:1"), ("tool", "tool:"), (None, None), (None, None)]
    for i, (kill_at, hang) in enumerate(kinds):
        root = tmp_path / f"ours{i}"
        trial = run_trial(root, compression, rng.randrange(1 << 30) if kill_at is None else 3,
                          kill_at=kill_at, hang=hang)
        theirs = tmp_path / f"theirs{i}"
        if root.exists():
            shutil.copytree(root, theirs)
        res = check_trial(trial)  # dsh-tui repairs (commits) its copy
        if res is None:
            continue
        report = dsh_peer.load(theirs, dump=True)  # real dsh repairs the untouched copy, its own way
        assert report.returncode == 0, report.sessions
        assert report.events[trial.session_id] == res.events, "dsh and dsh-tui repaired differently"
        ours_report = dsh_peer.load(root, inspect=True, dump=True)  # and dsh reads our repaired log
        assert ours_report.returncode == 0 and ours_report.sessions[0]["ok"], ours_report.sessions
        assert ours_report.events[trial.session_id] == res.events
        assert not ours_report.sessions[0]["repaired"]


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_dsh_written_session_resumes_and_forks_in_dsh_tui_and_loads_back_in_dsh(dsh_peer, tmp_path,  # noqa: F811
                                                                                compression):
    root = tmp_path / "root"
    dsh_peer.write(root, SNAP / "multi-turn" / "session.jsonl", compression=compression, batch="7,40,3",
                   realize=True, session_id="from-dsh", cwd="/tmp/dsh-interop-cwd")
    store = cc.open_backend(str(root), compression)
    before = store.inspect("from-dsh").events
    session, writer = lifecycle.resume(store, "from-dsh")
    assert session.events[-1]["type"] == "session/end-seed" and writer.resume_facts.has_request_header
    cc.scripted_turn(session, session.last_turn + 1, random.Random(4), first=False)
    writer.close()
    child = lifecycle.fork(cc.open_backend(str(root), compression), "from-dsh", at_turn=1)
    report = dsh_peer.load(root, inspect=True, dump=True)
    assert report.returncode == 0, report.sessions
    assert {s["id"] for s in report.sessions} == {"from-dsh", child["id"]}
    resumed = report.events["from-dsh"]
    assert resumed[: len(before)] == before and resumed == session.events
    forked = report.events[child["id"]]
    assert forked[:-1] == before[: child["seedLength"]]
    assert forked[-1]["type"] == "session/end-seed" and forked[-1]["seq"] == child["seedLength"]
    header = next(s["header"] for s in report.sessions if s["id"] == child["id"])
    assert header["parentSession"] == "from-dsh" and header["seedLength"] == child["seedLength"]
