"""Resume (§5.1) and fork (§5.2) at store level, for raw JSONL, zstd JSONL and SQLite; cross-process rules."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dsh_tui.session.errors import DshError
from dsh_tui.session.headers import make_header
from dsh_tui.store import lifecycle
from dsh_tui.store.lifecycle import ForkError
from dsh_tui.store.lock import SessionInUseError
from tests.store import crash_child as cc

BACKENDS = ("none", "zstd", "sqlite")
SID = "life-1"


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


def _store(tmp_path, backend):
    return cc.open_backend(str(tmp_path / "root"), backend)


def _fingerprint(store, tmp_path):
    """Bytes of every file of the root except lock files and SQLite's WAL side files, plus rows for SQLite."""
    out = {}
    for d, _, files in os.walk(tmp_path / "root"):
        for f in files:
            if f.endswith((".lock", "-wal", "-shm", ".sqlite")):
                continue
            p = os.path.join(d, f)
            out[os.path.relpath(p, tmp_path)] = Path(p).read_bytes()
    if hasattr(store, "physical_rows"):
        for h in store.list():
            out[h["id"]] = (store.physical_rows(h["id"]), store.revision(h["id"]))
    return out


def _parent_fingerprint(store, sid=SID):
    if hasattr(store, "physical_rows"):
        return store.physical_rows(sid), store.revision(sid)
    path = store.locate(store.inspect(sid).header)
    st = os.stat(path)
    return path.read_bytes(), st.st_mtime_ns, st.st_ino


def _write_session(store, turns=2, *, open_tail=False, sid=SID, seed=1):
    """A persisted session through the real writer; ``open_tail`` leaves turn N+1 open (a crash)."""
    header = make_header(sid, cwd="/work/life", created_at=1_700_000_000_000)
    session, writer = lifecycle.start(store, header, window_ms=60_000)
    rng = random.Random(seed)
    for t in range(1, turns + 1):
        cc.scripted_turn(session, t, rng, first=t == 1, chunks=12)
        session.append("session/title", {"title": f"after {t}", "messageSeqs": [], "source": {"kind": "user"}})
    if open_tail:
        cc.begin_turn(session, turns + 1, "unfinished", rng)
        cc.request(session, turns + 1, turns == 0)
        cc.stream(session, turns + 1, 1, ["par", "tial"], [("call-x", "bash", "{}")])
        cc.tool_call(session, turns + 1, 1, "call-x", "bash", "{}")
    writer.close()
    return list(session.events)


# ------------------------------------------------------------------------------------------- resume


def test_resume_repairs_then_persists_end_seed_first(tmp_path, backend):
    store = _store(tmp_path, backend)
    stored = _write_session(store, turns=1, open_tail=True)
    session, writer = lifecycle.resume(_store(tmp_path, backend), SID, clock=lambda: 42)
    facts = writer.resume_facts
    assert facts.repaired and facts.closers == 3 and facts.has_request_header
    closers = session.events[len(stored) : len(stored) + 3]
    assert [e["type"] for e in closers] == ["tool/result", "step/end", "turn/end"]
    assert closers[0]["data"]["error"]["code"] == "TOOL_OUTCOME_UNKNOWN"
    end_seed = session.events[len(stored) + 3]
    assert end_seed == {"type": "session/end-seed", "seq": len(stored) + 3, "time": 42, "data": {}}
    assert facts.stored_length == len(stored) + 3
    writer.close()
    loaded = _store(tmp_path, backend).load(SID)
    assert loaded.events == session.events and loaded.closers == []


def test_jsonl_resume_validates_the_log_once_and_uses_the_clock(tmp_path, monkeypatch):
    from dsh_tui.session.log import Session

    store = _store(tmp_path, "zstd")
    stored = _write_session(store, turns=2)
    seeds = []
    real = Session._load_seed

    def counting(self, seed, *a, **kw):
        seeds.append(len(seed))
        return real(self, seed, *a, **kw)

    monkeypatch.setattr(Session, "_load_seed", counting)
    session, writer = lifecycle.resume(_store(tmp_path, "zstd"), SID, clock=lambda: 7)
    assert seeds == [len(stored)]  # the store's validated Session is the resumed one
    assert session.events[-1] == {"type": "session/end-seed", "seq": len(stored), "time": 7, "data": {}}
    assert session.events[:-1] == stored and session.first_live_seq == len(stored)
    writer.close()
    assert _store(tmp_path, "zstd").load(SID).events == session.events


def test_resume_close_resume_is_byte_identical_the_second_time(tmp_path, backend):
    store = _store(tmp_path, backend)
    _write_session(store, turns=2)
    s1, w1 = lifecycle.resume(_store(tmp_path, backend), SID)
    assert s1.events[-1]["type"] == "session/end-seed"
    w1.close()
    fresh = _store(tmp_path, backend)
    before = _fingerprint(fresh, tmp_path)
    s2, w2 = lifecycle.resume(fresh, SID)
    assert s2.events == s1.events  # the log already ends with end-seed: no second one
    assert not w2.resume_facts.repaired
    w2.close()
    assert _fingerprint(_store(tmp_path, backend), tmp_path) == before


def test_resumed_session_continues_after_end_seed(tmp_path, backend):
    _write_session(_store(tmp_path, backend), turns=1)
    session, writer = lifecycle.resume(_store(tmp_path, backend), SID)
    cc.scripted_turn(session, 2, random.Random(2), first=False)
    writer.close()
    events = _store(tmp_path, backend).load(SID).events
    assert events == session.events
    types = [e["type"] for e in events]
    i = types.index("session/end-seed")
    assert types[i + 2] == "turn/start" and events[i + 2]["data"] == {"turn": 2}


class _Aliasing:
    """A store (a plugin's, say: its own lock files) whose ``load`` answers for ``alias`` with another
    session's log."""

    def __init__(self, inner, alias, target, locks_dir):
        self.inner, self.alias, self.target, self.locks_dir = inner, alias, target, locks_dir

    def load(self, session_id):
        return self.inner.load(self.target if session_id == self.alias else session_id)

    def lock_path(self, session_id):
        return self.locks_dir / f"{session_id}.lock"

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_resume_refuses_a_log_whose_header_names_another_session(tmp_path, backend):
    _write_session(_store(tmp_path, backend), turns=1)
    store = _Aliasing(_store(tmp_path, backend), "life-2", SID, tmp_path / "locks")
    for _ in range(2):  # the refusal releases the lock: the second try is refused the same way
        with pytest.raises(DshError) as err:
            lifecycle.resume(store, "life-2")
        assert str(err.value) == f"session life-2: stored header names {SID}"
        assert not isinstance(err.value, SessionInUseError)


def test_resume_through_a_store_whose_load_has_no_readable_signature(tmp_path):
    """A store is anything with the methods (a plugin's, one written in C, one serving loaded logs from
    memory): a ``load`` whose parameters cannot be read is called with the id alone, and the resumed
    Session is built here, with the caller's clock."""
    store = _store(tmp_path, "none")
    stored = _write_session(store, turns=1)

    class Preloaded:
        load = {SID: store.load(SID)}.__getitem__  # a C callable: inspect.signature cannot read it

        def lock_path(self, session_id):
            return tmp_path / "locks" / f"{session_id}.lock"

        def __getattr__(self, name):
            return getattr(store, name)

    session, writer = lifecycle.resume(Preloaded(), SID, clock=lambda: 9)
    assert session.events == [*stored, {"type": "session/end-seed", "seq": len(stored), "time": 9, "data": {}}]
    writer.close()
    assert _store(tmp_path, "none").load(SID).events == session.events


def test_a_second_process_cannot_resume_a_live_session(tmp_path, backend):
    _write_session(_store(tmp_path, backend), turns=1)
    script = textwrap.dedent(
        """
        import sys
        from tests.store import crash_child as cc
        from dsh_tui.store import lifecycle
        s, w = lifecycle.resume(cc.open_backend(sys.argv[1], sys.argv[2]), sys.argv[3])
        print("live", flush=True)
        sys.stdin.readline()
        w.close()
        """
    )
    p = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "root"), backend, SID],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=cc.CHILD_REPO)
    try:
        assert p.stdout.readline().strip() == "live"
        with pytest.raises(SessionInUseError, match=f"^session {SID} is in use by pid {p.pid}$"):
            lifecycle.resume(_store(tmp_path, backend), SID)
    finally:
        p.stdin.write("\n")
        p.stdin.close()
        assert p.wait(30) == 0
    s, w = lifecycle.resume(_store(tmp_path, backend), SID)  # free again
    w.close()


# --------------------------------------------------------------------------------------------- fork


def test_fork_at_turn_copies_the_prefix_and_leaves_the_parent_untouched(tmp_path, backend):
    store = _store(tmp_path, backend)
    parent = _write_session(store, turns=2)
    before = _parent_fingerprint(store)
    header = lifecycle.fork(store, SID, at_turn=1, clock=lambda: 77)
    end1 = next(i for i, e in enumerate(parent) if e["type"] == "turn/end")
    # after turn 1 the parent has standalone events (a title, the inbox insert of turn 2's prompt) before
    # turn/start 2: dsh's "after turn N" ends the seed at turn N's turn/end, so none of them is carried
    assert [e["type"] for e in parent[end1 + 1 : end1 + 4]] == ["session/title", "agent/inbox/spliced", "turn/start"]
    assert header["parentSession"] == SID and header["seedLength"] == end1 + 1
    assert header["cwd"] == "/work/life" and header["createdAt"] == 77
    assert re.fullmatch(r"session-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", header["id"])
    child = _store(tmp_path, backend).load(header["id"])
    assert child.header == header
    assert child.events[: end1 + 1] == parent[: end1 + 1]
    assert child.events[end1 + 1 :] == [{"type": "session/end-seed", "seq": end1 + 1, "time": 77, "data": {}}]
    assert not any(e["type"] == "agent/inbox/spliced" and e["data"].get("inserted") and e["seq"] > end1
                   for e in child.events)
    assert _parent_fingerprint(store) == before


def test_fork_boundaries(tmp_path, backend):
    store = _store(tmp_path, backend)
    parent = _write_session(store, turns=2, open_tail=True)
    before = _parent_fingerprint(store)
    starts = [i for i, e in enumerate(parent) if e["type"] == "turn/start"]
    ends = [i for i, e in enumerate(parent) if e["type"] == "turn/end"]
    with pytest.raises(ForkError) as err:
        lifecycle.fork(store, SID, at_seq=starts[0] + 2)
    assert err.value.code == "OPEN_TURN"  # the message alone (the CLI prints it as the error line)
    assert str(err.value) == f"seq {starts[0] + 2} is inside open turn 1; fork at a turn end"
    with pytest.raises(ForkError) as err:
        lifecycle.fork(store, SID, at_turn=3)
    assert err.value.code == "OPEN_TURN"
    with pytest.raises(ForkError) as err:
        lifecycle.fork(store, SID, at_seq=len(parent) + 5)
    assert err.value.code == "INVALID_BOUNDARY"
    with pytest.raises(ForkError) as err:
        lifecycle.fork(store, SID, at_turn=9)
    assert err.value.code == "INVALID_BOUNDARY"
    # default: after the last completed turn — its turn/end — (the crashed turn 3 is left out, and so are
    # the title and the inbox insert of turn 3's prompt after turn/end 2); the parent is not repaired
    header = lifecycle.fork(store, SID)
    assert header["seedLength"] == ends[1] + 1 < starts[2]
    assert lifecycle.fork(store, SID, at_turn=2)["seedLength"] == ends[1] + 1
    # an explicit seq may still take the standalone events after a turn (dsh's legal boundary)
    at_seq = lifecycle.fork(store, SID, at_seq=starts[1] - 1)
    assert at_seq["seedLength"] == starts[1]
    assert _store(tmp_path, backend).inspect(SID).closers  # still unrepaired on disk
    assert _parent_fingerprint(store) == before


def test_fork_refuses_bad_argument_combinations_with_a_clear_error(tmp_path, backend):
    store = _store(tmp_path, backend)
    parent = _write_session(store, turns=2)
    before = _fingerprint(store, tmp_path)
    end1 = next(i for i, e in enumerate(parent) if e["type"] == "turn/end")
    cases = [
        (dict(at_seq=end1, at_turn=1), "INVALID_BOUNDARY", "either a fork seq or a fork turn, not both"),
        (dict(at_seq=0, at_turn=2), "INVALID_BOUNDARY", "not both"),
        (dict(at_turn=3), "INVALID_BOUNDARY", "no turn 3 (the last completed turn is 2)"),
        (dict(at_turn=0), "INVALID_BOUNDARY", "fork turn must be a positive integer, got 0"),
        (dict(at_turn=-1), "INVALID_BOUNDARY", "fork turn must be a positive integer, got -1"),
        (dict(at_seq=-1), "INVALID_BOUNDARY", "fork seq must be a non-negative integer, got -1"),
        (dict(at_seq=True), "INVALID_BOUNDARY", "fork seq must be a non-negative integer, got True"),
        (dict(at_turn=1.0), "INVALID_BOUNDARY", "fork turn must be a positive integer, got 1.0"),
        (dict(at_seq=len(parent)), "INVALID_BOUNDARY", f"names no event (last seq {len(parent) - 1})"),
        (dict(at_turn=1, child_id=SID), "SESSION_ALREADY_EXISTS", f"session {SID} already exists"),
    ]
    for kwargs, code, text in cases:
        with pytest.raises(ForkError) as err:
            lifecycle.fork(store, SID, **kwargs)
        assert (err.value.code, text in str(err.value)) == (code, True), (kwargs, str(err.value))
        assert "\n" not in str(err.value)
    assert _fingerprint(store, tmp_path) == before  # nothing written, by any refusal
    child = lifecycle.fork(store, SID, at_turn=1, child_id="life-child")
    with pytest.raises(ForkError) as err:  # the same child id twice
        lifecycle.fork(store, SID, at_turn=2, child_id="life-child")
    assert err.value.code == "SESSION_ALREADY_EXISTS"
    assert _store(tmp_path, backend).load("life-child").header == child  # the first child is untouched


def test_fork_of_a_log_with_nothing_to_fork_after(tmp_path, backend):
    store = _store(tmp_path, backend)
    # only an open turn (a crash in turn 1): nothing completed to fork after
    _write_session(store, turns=0, open_tail=True, sid="only-open")
    with pytest.raises(ForkError, match="only turn is still open") as err:
        lifecycle.fork(store, "only-open")
    assert err.value.code == "OPEN_TURN"
    with pytest.raises(ForkError, match="turn 1 never ended") as err:
        lifecycle.fork(store, "only-open", at_turn=1)
    assert err.value.code == "OPEN_TURN"
    with pytest.raises(ForkError, match="inside open turn 1") as err:
        lifecycle.fork(store, "only-open", at_seq=1)
    assert err.value.code == "OPEN_TURN"
    if backend != "none":  # SQLite materializes a session with its first event: no empty log exists there
        return  # (and a zstd log whose only frame after the header is empty crashes the reader: reported)
    # an empty log: a header line and no event (dsh's header-only logs)
    from dsh_tui.store import layout
    from dsh_tui.store.jsonl import encode_materialization

    header = make_header("empty-1", cwd="/work/life", created_at=1_700_000_000_000)
    path = layout.log_path(tmp_path / "root", header["cwd"], "empty-1", backend)
    path.parent.mkdir(parents=True)
    path.write_bytes(encode_materialization(header, [], backend, True))
    assert _store(tmp_path, backend).inspect("empty-1").events == []
    for kwargs, code, text in [({}, "INVALID_BOUNDARY", "no events to fork"),
                               (dict(at_turn=1), "INVALID_BOUNDARY", "no turn 1 (no turn has completed)"),
                               (dict(at_seq=0), "INVALID_BOUNDARY", "fork seq 0 names no event (the log is empty)")]:
        with pytest.raises(ForkError) as err:
            lifecycle.fork(store, "empty-1", **kwargs)
        assert err.value.code == code and text in str(err.value), str(err.value)
    assert [h["id"] for h in _store(tmp_path, backend).list() if h.get("parentSession")] == []  # no child


def test_a_log_ending_with_a_turn_end_forks_whole_by_default(tmp_path, backend):
    """Nothing after the last ``turn/end``: "after the last completed turn" is the whole log."""
    store = _store(tmp_path, backend)
    header = make_header("ends-at-turn-end", cwd="/work/life", created_at=1_700_000_000_000)
    session, writer = lifecycle.start(store, header, window_ms=60_000)
    for t in (1, 2):
        cc.scripted_turn(session, t, random.Random(t), first=t == 1, chunks=3)
    writer.close()
    parent = list(session.events)
    assert parent[-1]["type"] == "turn/end"
    child_header = lifecycle.fork(store, "ends-at-turn-end", clock=lambda: 5)
    assert child_header["seedLength"] == len(parent)
    child = _store(tmp_path, backend).load(child_header["id"])
    assert child.events == [*parent, {"type": "session/end-seed", "seq": len(parent), "time": 5, "data": {}}]


def test_the_legal_boundary_looks_back_to_the_first_event_and_no_further(tmp_path, backend):
    """dsh's rule: the last ``turn/start``/``turn/end`` at or before the boundary must be a ``turn/end`` (or
    none). At seq 0 itself that is event 0; before it there is nothing (not the log's last event)."""
    store = _store(tmp_path, backend)
    # a log that begins with its turn (no queued prompt before it), crashed inside turn 1
    header = make_header("starts-with-turn", cwd="/work/life", created_at=1_700_000_000_000)
    session, writer = lifecycle.start(store, header, window_ms=60_000)
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    session.append("user/message", cc.user_msg("m-1", "hi"), surface_op="append")
    writer.close()
    for seq in (0, 2):
        with pytest.raises(ForkError) as err:
            lifecycle.fork(store, "starts-with-turn", at_seq=seq)
        assert (err.value.code, str(err.value)) == (
            "OPEN_TURN", f"seq {seq} is inside open turn 1; fork at a turn end")
    # a prompt queued, then a turn that crashed right after its turn/start: seq 0 precedes every turn
    header = make_header("crashed-at-start", cwd="/work/life", created_at=1_700_000_000_000)
    session, writer = lifecycle.start(store, header, window_ms=60_000)
    session.append("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [cc.user_msg("m-1", "hi")]})
    session.append("turn/start", {"turn": 1})
    writer.close()
    stored = _store(tmp_path, backend).inspect("crashed-at-start")
    committed = stored.events[: len(stored.events) - len(stored.closers)]
    assert [e["type"] for e in committed] == ["agent/inbox/spliced", "turn/start"]
    with pytest.raises(ForkError) as err:  # only its turn/start names turn 1, and it is open
        lifecycle.fork(store, "crashed-at-start", at_turn=1)
    assert (err.value.code, str(err.value)) == ("OPEN_TURN", "turn 1 never ended; cannot fork inside an open turn")
    child = lifecycle.fork(store, "crashed-at-start", at_seq=0, clock=lambda: 5)
    assert child["seedLength"] == 1
    assert _store(tmp_path, backend).load(child["id"]).events == [
        committed[0], {"type": "session/end-seed", "seq": 1, "time": 5, "data": {}}]


def test_start_with_a_seed_persists_the_seed_then_end_seed_first(tmp_path, backend):
    """A seed (a fork's prefix, a subagent's descriptor) is the new log's first events, seqs from 0, and the
    Session follows it with ``session/end-seed``: the first flush makes all of them durable."""
    store = _store(tmp_path, backend)
    seed = [
        {"type": "session/title", "seq": 0, "time": 1, "data": {"title": "t", "messageSeqs": [], "source": {"kind": "user"}}},
        {"type": "agent/inbox/spliced", "seq": 1, "time": 2,
         "data": {"target": "next-turn", "start": 0, "inserted": [cc.user_msg("m-1", "hi")]}},
    ]
    header = make_header("seeded", cwd="/work/life", created_at=1_700_000_000_000)
    session, writer = lifecycle.start(store, header, seed=seed, clock=lambda: 3)
    assert writer.flush() == 3
    writer.close()
    assert _store(tmp_path, backend).load("seeded").events == [
        *seed, {"type": "session/end-seed", "seq": 2, "time": 3, "data": {}}]


def test_a_log_without_any_turn_forks_whole(tmp_path, backend):
    """No turn ever started (a title, then a prompt queued for the next turn): no prefix ends inside a turn,
    so the default boundary is the last event (dsh ``Session.fork``'s default) and the seed is the whole log."""
    store = _store(tmp_path, backend)
    header = make_header("no-turn", cwd="/work/life", created_at=1_700_000_000_000)
    session, writer = lifecycle.start(store, header, window_ms=60_000)
    session.append("session/title", {"title": "draft", "messageSeqs": [], "source": {"kind": "user"}})
    session.append("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [cc.user_msg("m-1", "hi")]})
    session.append("session/title", {"title": "draft 2", "messageSeqs": [], "source": {"kind": "user"}})
    writer.close()
    parent = list(session.events)
    child_header = lifecycle.fork(store, "no-turn", clock=lambda: 5)
    assert child_header["seedLength"] == len(parent) == 3
    child = _store(tmp_path, backend).load(child_header["id"])
    assert child.events == [*parent, {"type": "session/end-seed", "seq": 3, "time": 5, "data": {}}]


def test_start_refusing_its_seed_raises_and_releases_the_lock(tmp_path, backend):
    from dsh_tui.session.errors import SessionValidationError
    from dsh_tui.store import lock as locks

    store = _store(tmp_path, backend)
    header = make_header("bad-seed", cwd="/work/life", created_at=1_700_000_000_000)
    # a turn/end with no turn/start before it: the Session refuses the seed
    bad = [{"type": "turn/end", "seq": 0, "time": 1, "data": {"turn": 1, "reason": {"kind": "completed"}}}]
    with pytest.raises(SessionValidationError):
        lifecycle.start(store, header, seed=bad)
    locks.acquire(store, "bad-seed", header).release()  # free: the failed start let go of its lock


def test_fork_without_a_clock_stamps_now_in_epoch_milliseconds(tmp_path, backend):
    """The child header's ``createdAt`` (and its end-seed's ``time``) is the fork's own time in epoch ms."""
    import time

    store = _store(tmp_path, backend)
    _write_session(store, turns=1)
    before = int(time.time() * 1000)
    header = lifecycle.fork(store, SID)
    after = int(time.time() * 1000)
    assert before <= header["createdAt"] <= after
    end_seed = _store(tmp_path, backend).load(header["id"]).events[-1]
    assert end_seed["type"] == "session/end-seed" and header["createdAt"] <= end_seed["time"] <= after


def test_fork_of_a_crashed_parent_seeds_from_the_committed_log_never_from_in_memory_closers(tmp_path, backend):
    store = _store(tmp_path, backend)
    parent = _write_session(store, turns=2, open_tail=True)  # turn 3 crashed with an unanswered tool call
    res = _store(tmp_path, backend).inspect(SID)
    assert [e["type"] for e in res.closers] == ["tool/result", "step/end", "turn/end"]  # in memory only
    committed = res.events[: len(res.events) - len(res.closers)]
    assert committed == parent
    for kwargs in ({}, {"at_turn": 2}):
        child = _store(tmp_path, backend).load(lifecycle.fork(store, SID, **kwargs)["id"])
        n = child.header["seedLength"]
        assert child.events[:n] == parent[:n] and child.events[n]["type"] == "session/end-seed"
        assert not any(e["type"] == "turn/end" and e["data"]["reason"]["kind"] == "interrupted" for e in child.events)
    with pytest.raises(ForkError, match="names no event") as err:  # the closer turn/end is not on disk
        lifecycle.fork(store, SID, at_seq=res.closers[-1]["seq"])
    assert err.value.code == "INVALID_BOUNDARY"
    with pytest.raises(ForkError, match="turn 3 never ended") as err:
        lifecycle.fork(store, SID, at_turn=3)
    assert err.value.code == "OPEN_TURN"
    # once a resume commits the closers (dsh's repair), turn 3 is a completed (interrupted) turn on disk
    session, writer = lifecycle.resume(_store(tmp_path, backend), SID)
    writer.close()
    repaired = _store(tmp_path, backend).inspect(SID).events
    child = _store(tmp_path, backend).load(lifecycle.fork(store, SID, at_turn=3)["id"])
    n = child.header["seedLength"]
    assert child.events[:n] == repaired[:n] == parent + res.closers
    assert child.events[n - 1]["data"] == {"turn": 3, "reason": {"kind": "interrupted"}}


def test_fork_after_turn_1_of_a_recorded_dsh_parent_seeds_what_dsh_s_recorded_child_holds(tmp_path):
    """The recorded in-process subagent fork: the parent queued turn 2's prompt right after turn/end 1 (seq 42);
    dsh's child has ``seedLength`` 42 — turn 1 through its turn/end, without that prompt — and end-seed at 42."""
    from dsh_tui.session.rows import expand_lines
    from dsh_tui.store.open import open_store
    from tests.store.test_catalog_support import load_fixture, write_session

    rec = "examples/acp-agent/tests/snapshots/subagent-fork-in-process/"
    header, rows = load_fixture(rec + "session.jsonl", session_id="rec-parent", cwd="/w")
    write_session(tmp_path / "root", header, rows, zstd=True, batches=[9, 4])
    child_header, child_rows = load_fixture(rec + "session.1.jsonl", session_id="rec-child", cwd="/w")
    recorded = expand_lines(child_rows)
    parent = expand_lines(rows)
    assert parent[42]["type"] == "agent/inbox/spliced" and parent[43]["type"] == "turn/start"
    store = open_store(tmp_path / "root")
    ours = lifecycle.fork(store, "rec-parent", at_turn=1)
    assert ours["seedLength"] == child_header["seedLength"] == 42
    child = store.load(ours["id"]).events
    assert child[:42] == recorded[:42]
    assert [e["type"] for e in child[42:]] == [recorded[42]["type"]] == ["session/end-seed"]


def test_two_processes_forking_one_parent_get_two_children(tmp_path, backend):
    _write_session(_store(tmp_path, backend), turns=2)
    script = textwrap.dedent(
        """
        import sys, time
        from tests.store import crash_child as cc
        from dsh_tui.store import lifecycle
        store = cc.open_backend(sys.argv[1], sys.argv[2])
        while time.time() < float(sys.argv[4]):
            pass
        print(lifecycle.fork(store, sys.argv[3], at_turn=1)["id"])
        """
    )
    import time

    go = str(time.time() + 1.0)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "root"), backend, SID, go],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cc.CHILD_REPO)
             for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1] for o in outs]
    ids = [o[0].strip() for o in outs]
    assert len(set(ids)) == 2
    store = _store(tmp_path, backend)
    for cid in ids:
        res = store.load(cid)
        assert res.header["parentSession"] == SID and res.events[-1]["type"] == "session/end-seed"
    assert sorted(h["id"] for h in store.list()) == sorted([SID, *ids])


def test_fork_command_prints_the_child_id(tmp_path, backend, capsys):
    from dsh_tui.cli import main

    store = _store(tmp_path, backend)
    _write_session(store, turns=2)
    args = ["fork", SID, "--at-turn", "1", "--root", str(tmp_path / "root")]
    if backend == "sqlite":
        args += ["--backend", "sqlite"]
    assert main(args) == 0
    child = capsys.readouterr().out.strip()
    child_header = _store(tmp_path, backend).load(child).header
    assert child_header["parentSession"] == SID
    if backend != "sqlite":  # the log tools report the lineage of the child file
        import json

        path = _store(tmp_path, backend).locate(child_header)
        assert main(["fork", str(path), "--at-seq", str(child_header["seedLength"])]) == 0
        grandchild = capsys.readouterr().out.strip()
        assert main(["log", "check", str(path)]) == 0
        row = json.loads(capsys.readouterr().out)
        assert row["ok"] and row["parent"] == SID and row["seed_length"] == child_header["seedLength"]
        assert _store(tmp_path, backend).load(grandchild).header["parentSession"] == child
    assert main(["fork", SID, "--at-seq", "3", "--root", str(tmp_path / "root")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("dsh-tui: ") and "open turn" in err and err.count("\n") == 1
