"""Backend differential (spec §8, invariant 9): the same logs written through raw JSONL, zstd JSONL and
SQLite under random batch partitions read back identical: inspect, read_from(k) for every k, list()."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from dsh_tui.session.headers import make_header
from dsh_tui.store.jsonl import JsonlStore
from dsh_tui.store.sqlite import SqliteSessionStore
from tests.store.crash_child import EventList, build_log

MAX_SAFE = 2**53 - 1
SID = "diff-1"


def _stores(base: Path):
    return {
        "none": JsonlStore(base / "raw", "none"),
        "zstd": JsonlStore(base / "zstd", "zstd"),
        "sqlite": SqliteSessionStore(base / "sqlite"),
    }


def _partition(n: int, sizes: list[int]) -> list[tuple[int, int]]:
    out, i, k = [], 0, 0
    while i < n:
        size = max(1, sizes[k % len(sizes)])
        out.append((i, min(n, i + size)))
        i += size
        k += 1
    return out


def check_same_everywhere(events: list[dict], sizes: list[int]) -> None:
    header = make_header(SID, cwd="/work/diff", created_at=1_700_000_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        stores = _stores(Path(tmp))
        for store in stores.values():
            store.create(header)
            for a, b in _partition(len(events), sizes):
                store.append(SID, events[a:b])
        for name, store in stores.items():
            res = store.inspect(SID)
            assert res.events == events, name
            assert res.closers == []
            rev = store.list_snapshots()[0].revision
            for k in range(len(events) + 1):
                assert store.read_from(SID, k) == events[k:], (name, k)
            assert store.list() == [header], name
            assert store.list_snapshots()[0].revision == rev, "reads changed the revision"
        stores["sqlite"].close()
        reopened = _stores(Path(tmp))
        for name, store in reopened.items():
            assert store.load(SID).events == events, name
        reopened["sqlite"].close()


# ------------------------------------------------------------------------------------- the matrix


def _matrix_log() -> list[dict]:
    """All three row kinds, named and unnamed tool calls, short runs, an ignorable scalar (also one named
    like a storage tag), a backwards clock."""
    log = EventList()
    log.append("turn/start", {"turn": 1})
    log.append("step/start", {"turn": 1, "step": 1})

    def chunk(c):
        log.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": c})

    for t in ["a", "b", "c", "d"]:
        chunk({"type": "text-delta", "index": 0, "text": t})
    for t in ["r1", "r2"]:  # a short run stays verbatim
        chunk({"type": "reasoning-delta", "index": 1, "text": t})
    for part in ['{"x"', ":", "1}"]:
        chunk({"type": "tool-call-delta", "index": 2, "id": "c1", "name": "read", "argumentsDelta": part})
    for part in ["[", "", "]"]:
        chunk({"type": "tool-call-delta", "index": 3, "id": "c2", "argumentsDelta": part})
    log.events.append({"type": "x-future/note", "seq": len(log.events), "time": 5, "data": {"n": 1}, "ignorable": True})
    log.events.append({"type": "text-chunks", "seq": len(log.events), "time": 6, "data": {"texts": ["q"]},
                       "ignorable": True})
    log._t -= 1000  # the clock steps back
    for t in ["é", "😀", "x"]:
        chunk({"type": "reasoning-delta", "index": 4, "text": t})
    log.append("step/end", {"turn": 1, "step": 1})
    log.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    return log.events


def test_packing_matrix_under_fixed_partitions():
    events = _matrix_log()
    for sizes in ([len(events)], [1], [2, 1, 5, 3]):
        check_same_everywhere(events, sizes)


def test_realistic_two_turn_log_with_tools():
    check_same_everywhere(build_log(turns=2, seed=9, chunks=60, tools=2), [7, 40, 3])


# ------------------------------------------------------------------------------------ random logs

_texts = st.text(alphabet=st.sampled_from(list("ab \n\"\\é😀") + ["\u2028"]), max_size=4)
_chunk = st.one_of(
    st.tuples(st.just("text-delta"), st.integers(0, 1), _texts),
    st.tuples(st.just("reasoning-delta"), st.integers(0, 1), _texts),
    st.tuples(st.just("tool-call-delta"), st.integers(0, 1), st.tuples(st.sampled_from(["c1", "c2"]),
                                                                       st.sampled_from([None, "f"]), _texts)),
)
_time = st.one_of(st.integers(-3, 50), st.integers(-MAX_SAFE, MAX_SAFE))


@st.composite
def chunk_logs(draw):
    log = EventList()
    specs = draw(st.lists(st.tuples(_chunk, st.integers(0, 3), _time), min_size=0, max_size=40))
    start = draw(st.integers(-MAX_SAFE // 2, MAX_SAFE // 2))
    t = start

    def add(type_, data, time_):
        log.events.append({"type": type_, "seq": len(log.events), "time": time_, "data": data})

    add("turn/start", {"turn": 1}, t)
    add("step/start", {"turn": 1, "step": 1}, t)
    for (kind, index, payload), repeat, dt in specs:
        for _ in range(repeat + 1):
            if kind == "tool-call-delta":
                cid, name, text = payload
                c = {"type": kind, "index": index, "id": cid}
                if name is not None:
                    c["name"] = name
                c["argumentsDelta"] = text
            else:
                c = {"type": kind, "index": index, "text": payload}
            t = dt if abs(dt) > 1000 else max(-MAX_SAFE, min(MAX_SAFE, t + dt))
            add("assistant/chunk", {"turn": 1, "step": 1, "chunk": c}, t)
    add("step/end", {"turn": 1, "step": 1}, t)
    add("turn/end", {"turn": 1, "reason": {"kind": "completed"}}, t)
    return log.events


@seed(0x5A17E)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunk_logs(), st.lists(st.integers(1, 12), min_size=1, max_size=6))
def test_random_chunk_logs_and_partitions(events, sizes):
    check_same_everywhere(events, sizes)
