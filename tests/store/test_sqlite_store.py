"""SQLite backend as a SessionStore: append, reads, listing, revisions, write traffic (§4.3, §8)."""

from __future__ import annotations

import sqlite3

import pytest

from dsh_tui.session.errors import DshError, SessionValidationError
from dsh_tui.session.headers import make_header
from dsh_tui.store import sqlite as sq
from tests.store.crash_child import EventList, build_log


def _store(tmp_path):
    return sq.SqliteSessionStore(tmp_path / "root")


def _header(sid="s1", **kw):
    return make_header(sid, cwd="/work/x", created_at=1_700_000_000_000, **kw)


def _streamed_turn(n_chunks: int) -> list[dict]:
    log = EventList()
    log.append("turn/start", {"turn": 1})
    log.append("step/start", {"turn": 1, "step": 1})
    for i in range(n_chunks):
        log.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": f"t{i} "}})
    log.append("step/end", {"turn": 1, "step": 1})
    log.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    return log.events


def _count_ops(store):
    c = store._conn
    c.execute("CREATE TEMP TABLE ops (kind TEXT PRIMARY KEY, n INTEGER NOT NULL)")
    c.executemany("INSERT INTO temp.ops VALUES (?, 0)", [("insert",), ("update",), ("delete",)])
    for kind in ("insert", "update", "delete"):
        c.execute(
            f"CREATE TEMP TRIGGER count_{kind} AFTER {kind.upper()} ON main.events "
            f"BEGIN UPDATE ops SET n = n + 1 WHERE kind = '{kind}'; END"
        )
    return lambda: dict(c.execute("SELECT kind, n FROM temp.ops").fetchall())


def test_append_then_read_back_is_identical(tmp_path):
    store = _store(tmp_path)
    events = build_log(turns=2, seed=3)
    store.create(_header())
    assert not store.exists("s1") and store.list() == []  # lazy: nothing until the first append
    for a, b in [(0, 1), (1, 8), (8, 60), (60, len(events))]:
        store.append("s1", events[a:b])
    assert store.exists("s1")
    assert store.read_from("s1", 0) == events
    for k in range(0, len(events) + 2, 7):
        assert store.read_from("s1", k) == events[k:]
    assert store.list() == [_header()]
    store.close()
    again = _store(tmp_path)  # reopen: the same rows decode the same
    assert again.read_from("s1", 0) == events


def test_rows_use_the_dsh_codec(tmp_path):
    store = _store(tmp_path)
    events = build_log(turns=1, seed=5, chunks=30)
    store.create(_header())
    store.append("s1", events)
    rows = store.physical_rows("s1")
    packed = [r for r in rows if r[6] == 0]
    assert packed and all(r[1] in sq.PACKED_TAGS and r[4] is None and r[5] is None for r in packed)
    msg = next(r for r in rows if r[1] == "assistant/message")
    assert msg[5] == '"append"'  # surface_op is JSON text
    ev = next(e for e in events if e["type"] == "assistant/message")
    assert sq.decode_seqs(msg[4]) == ev["sourceEventSeqs"]
    assert all(r[6] is None for r in rows if r[6] != 0)
    turn_start = next(r for r in rows if r[1] == "turn/start")
    assert turn_start[3] == '{"turn":1}'


def test_large_data_is_compressed_and_round_trips(tmp_path):
    store = _store(tmp_path)
    log = EventList()
    log.append("user/message", {"id": "u", "role": "user", "content": [{"type": "text", "text": "z" * 10000}],
                                "source": {"kind": "user"}}, surface_op="append")
    store.create(_header())
    store.append("s1", log.events)
    (row,) = store.physical_rows("s1")
    assert isinstance(row[3], bytes)
    assert store.read_from("s1", 0) == log.events


def test_ignorable_event_named_like_a_storage_tag_stays_scalar(tmp_path):
    store = _store(tmp_path)
    ev = {"type": "text-chunks", "seq": 0, "time": 5, "data": {"x": 1}, "ignorable": True}
    store.create(_header())
    store.append("s1", [ev])
    (row,) = store.physical_rows("s1")
    assert row[6] == 1
    assert store.read_from("s1", 0) == [ev]


def test_append_rejects_wrong_first_seq_gaps_and_non_json(tmp_path):
    store = _store(tmp_path)
    events = build_log(turns=1)
    store.create(_header())
    with pytest.raises(SessionValidationError, match="stored length is 0"):
        store.append("s1", events[1:3])
    store.append("s1", events[:3])
    with pytest.raises(SessionValidationError, match="gap"):
        store.append("s1", [events[3], events[5]])
    bad = dict(events[3], data={"x": float("nan")})
    with pytest.raises(DshError):
        store.append("s1", [bad])
    for odd in ([], {"a": 1}, 5, None):  # a type that is not a string (even unhashable) is named, not a crash
        with pytest.raises(SessionValidationError, match="type must be a string"):
            store.append("s1", [dict(events[3], type=odd)])
    with pytest.raises(SessionValidationError, match="stored length is 3"):
        store.append("s1", events[2:5])  # a stale writer
    assert store.read_from("s1", 0) == events[:3]
    with pytest.raises(DshError, match="already exists"):
        store.create(_header())


def test_revision_changes_per_append_and_not_on_reads(tmp_path):
    store = _store(tmp_path)
    events = build_log(turns=1)
    store.create(_header())
    store.append("s1", events[:5])
    r1 = store.list_snapshots()[0].revision
    store.read_from("s1", 0)
    assert store.list_snapshots()[0].revision == r1
    store.append("s1", events[5:9])
    r2 = store.list_snapshots()[0].revision
    assert r2 != r1 and r2.startswith(store.store_id + ":incarnation:")


def test_two_stores_on_one_database_see_each_other(tmp_path):
    a, b = _store(tmp_path), _store(tmp_path)
    events = build_log(turns=1)
    a.create(_header())
    a.append("s1", events[:4])
    with pytest.raises(SessionValidationError, match="stored length is 4"):
        b.append("s1", events[:2])  # b is a stale writer for this id
    b.append("s1", events[4:6])
    assert a.read_from("s1", 0) == events[:6]


def test_write_traffic_of_a_1000_chunk_turn_in_40_event_batches(tmp_path):
    store = _store(tmp_path)
    events = _streamed_turn(1000)
    store.create(_header())
    ops = _count_ops(store)
    for i in range(0, len(events), 40):
        store.append("s1", events[i : i + 40])
    rows = store.physical_rows("s1")
    # dsh's figure (sqlite.spec.ts): 31 rows. Batch 1 = 2 brackets + a 38-chunk row, 24 full 40-chunk rows,
    # the last batch = 2 chunks (a run < 3 stays scalar) + step/end + turn/end.
    assert len(rows) == 31
    assert ops() == {"insert": len(rows), "update": 0, "delete": 0}
    assert max(len(r[3]) for r in rows) <= 1 << 20
    assert store.read_from("s1", 0) == events


def test_packing_caps_rows_at_1024_members(tmp_path):
    store = _store(tmp_path)
    events = _streamed_turn(2500)
    store.create(_header())
    store.append("s1", events)
    sizes = [sq.decode_data(r[3]) for r in store.physical_rows("s1") if r[6] == 0]
    assert [len(d["texts"]) for d in sizes] == [1024, 1024, 452]
    assert store.read_from("s1", 0) == events


def test_sqlite_errors_surface_as_dsh_errors_and_leave_no_rows(tmp_path):
    store = _store(tmp_path)
    events = build_log(turns=1)
    store.create(_header())
    store.append("s1", events[:3])
    blocker = sqlite3.connect(store.path, timeout=0)
    blocker.execute("BEGIN IMMEDIATE")
    store._conn.execute("PRAGMA busy_timeout = 50")
    with pytest.raises(DshError, match="cannot append"):
        store.append("s1", events[3:6])
    blocker.rollback()
    blocker.close()
    store.append("s1", events[3:6])
    assert store.read_from("s1", 0) == events[:6]


def test_row_last_seq_matches_the_decoder_on_good_and_damaged_rows():
    from dsh_tui.session import rows

    def chunk(q, text="t"):
        return {"type": "assistant/chunk", "seq": q, "time": 100 + q,
                "data": {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": text}}}

    events = [{"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}}] + [chunk(q) for q in range(1, 8)]
    lines = rows.pack_batch(events)
    encoded = [sq.encode_line(line) for line in lines]
    assert [r[1] for r in encoded] == ["turn/start", "text-chunks"]
    damaged = [
        (1, "text-chunks", 101, '{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a","b","c"]}', None, None, 0),
        (1, "text-chunks", 101, '{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":[]}', None, None, 0),
        (1, "text-chunks", 101, "not json", None, None, 0),
        (1, "text-chunks", "101", '{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a","b","c"]}', None, None, 0),
        (1, "turn/start", 101, '{"turn":1}', None, None, 0),
        (1, "text-chunks", 101, '{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a","b","c"]}', b"\x01", None, 0),
        (1, "turn/start", 101, '{"turn":1}', None, None, 7),
    ]
    for row in encoded + damaged:
        try:
            want = sq.decode_row(row)[-1]["seq"]
        except Exception as err:  # noqa: BLE001 - the same failure must come out of both
            with pytest.raises(type(err)):
                sq.row_last_seq(row)
        else:
            assert sq.row_last_seq(row) == want
    assert sq.row_last_seq(encoded[-1]) == 7 and sq.row_last_seq(encoded[0]) == 0


def test_a_sessions_row_reads_back_as_the_header_make_header_builds():
    """One header builder: the SQLite row mapping gives the dict (key order too) that make_header gives."""
    from dsh_tui.session.headers import make_header

    for kw in ({}, {"cwd": "/w", "parent_session": "p", "seed_length": 3, "origin": "subagent",
                    "delegation_depth": 2, "agent_preset": "plan"}):
        h = make_header("s1", created_at=5, **kw)
        back = sq.row_to_header(sq.header_to_row(h))
        assert back == h and list(back) == list(h)
    assert sq.row_to_header(("s2", 7, 1, None, None, None, None, None, None))["version"] == 7  # kept for the refusal

