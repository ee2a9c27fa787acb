"""The durability contract of spec §8 (dsh's contract.ts), run for raw JSONL, zstd JSONL and SQLite alike."""

from __future__ import annotations

import random

import pytest

from dsh_tui.session import jsonutil
from dsh_tui.session.errors import DshError, SessionValidationError
from dsh_tui.session.headers import make_header
from tests.store import crash_child as cc

BACKENDS = ("none", "zstd", "sqlite")


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    s = cc.open_backend(str(tmp_path / "root"), request.param)
    yield s
    if hasattr(s, "close"):
        s.close()


def _header(sid="c1"):
    return make_header(sid, cwd="/work/contract", created_at=1_700_000_000_000)


def _write(store, events, sid="c1", batches=(5, 1, 40)):
    store.create(_header(sid))
    i = k = 0
    while i < len(events):
        n = batches[k % len(batches)]
        store.append(sid, events[i : i + n])
        i += n
        k += 1


def test_round_trip_is_exact_including_chunks(store):
    events = cc.build_log(turns=2, seed=2, chunks=80, tools=2)
    _write(store, events)
    back = store.inspect("c1").events
    assert [jsonutil.dumps(e) for e in back] == [jsonutil.dumps(e) for e in events]
    assert store.load("c1").events == events


def test_fractional_created_at_is_rejected(store):
    h = dict(_header())
    h["createdAt"] = 1.5
    with pytest.raises(DshError):
        store.create(h)
    assert store.list() == []


def test_zero_event_sessions_are_not_listed(store):
    store.create(_header("empty"))
    assert store.list() == [] and not store.exists("empty")
    store.append("empty", [])
    assert store.list() == []


def _open_turn_log(kind: str) -> list[dict]:
    log = cc.EventList()
    rng = random.Random(1)
    cc.scripted_turn(log, 1, rng, first=True, chunks=5)
    cc.begin_turn(log, 2, "second", rng)
    if kind == "unclosed":
        return log.events
    cc.stream(log, 2, 1, ["a", "b", "c"], [("k1", "bash", "{}"), ("k2", "read", "{}")])
    if kind == "outcome-unknown":
        cc.tool_call(log, 2, 1, "k1", "bash", "{}")
    return log.events


@pytest.mark.parametrize(
    "kind, expected",
    [
        ("unclosed", [("step/end", None), ("turn/end", None)]),
        ("not-started", [("tool/result", "TOOL_NOT_STARTED"), ("tool/result", "TOOL_NOT_STARTED"),
                         ("step/end", None), ("turn/end", None)]),
        ("outcome-unknown", [("tool/result", "TOOL_OUTCOME_UNKNOWN"), ("tool/result", "TOOL_NOT_STARTED"),
                             ("step/end", None), ("turn/end", None)]),
    ],
)
def test_crash_recovery_closes_the_open_turn(store, kind, expected):
    events = _open_turn_log(kind)
    _write(store, events)
    inspected = store.inspect("c1")
    assert inspected.events[: len(events)] == events
    got = [(c["type"], c["data"].get("error", {}).get("code")) for c in inspected.closers]
    assert got == expected
    assert inspected.closers[-1]["data"]["reason"] == {"kind": "interrupted"}
    assert store.read_from("c1", 0) == events  # inspect wrote nothing
    loaded = store.load("c1")
    assert loaded.events == events + inspected.closers and loaded.committed
    assert store.read_from("c1", 0) == loaded.events
    again = store.load("c1")
    assert again.closers == [] and not again.committed


def test_read_from_and_revisions(store):
    events = cc.build_log(turns=1, seed=4)
    _write(store, events[:20])
    rev = store.list_snapshots()[0].revision
    assert store.read_from("c1", 7) == events[7:20]
    assert store.read_from("c1", 20) == []
    store.append("c1", events[20:30])
    assert store.list_snapshots()[0].revision != rev


def test_append_rejects_wrong_first_seq_gaps_and_non_json(store):
    events = cc.build_log(turns=1, seed=4)
    _write(store, events[:10])
    with pytest.raises(SessionValidationError):
        store.append("c1", events[11:13])
    with pytest.raises(SessionValidationError):
        store.append("c1", [events[10], events[12]])
    for bad in (float("nan"), float("inf"), -0.0):
        with pytest.raises(DshError):
            store.append("c1", [dict(events[10], data={"x": bad})])
    assert store.read_from("c1", 0) == events[:10]
    store.append("c1", events[10:])
    assert store.inspect("c1").events == events
