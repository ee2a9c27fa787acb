"""SQLite reads and repair (§4.3): torn tail vs corruption, repair in one BEGIN IMMEDIATE, refusals."""

from __future__ import annotations

import random
import sqlite3

import pytest

from dsh_tui.session.errors import SessionCorruptionError, SessionFormatUnsupportedError
from dsh_tui.session.headers import make_header
from dsh_tui.store.sqlite import SqliteSessionStore
from tests.store import crash_child as cc


def _setup(tmp_path, events, sid="r1"):
    store = SqliteSessionStore(tmp_path / "root")
    store.create(make_header(sid, cwd="/work/r", created_at=1))
    store.append(sid, events)
    return store


def _raw(store):
    conn = sqlite3.connect(store.path)
    return conn


def _open_log():
    log = cc.EventList()
    rng = random.Random(3)
    cc.scripted_turn(log, 1, rng, first=True, chunks=10)
    cc.begin_turn(log, 2, "two", rng)
    cc.stream(log, 2, 1, ["x", "y", "z", "w"])
    return log.events


def test_undecodable_tail_rows_are_a_torn_tail_cut_in_one_transaction(tmp_path):
    events = _open_log()
    store = _setup(tmp_path, events)
    rows_before = store.physical_rows("r1")
    last_end = max(i for i, e in enumerate(events) if e["type"] == "turn/end")
    torn_seq = events[last_end + 5]["seq"]  # the user/message after step/start 1 of turn 2
    assert events[torn_seq - 1]["type"] == "step/start"
    raw = _raw(store)
    raw.execute("UPDATE events SET data = X'00ff' WHERE session_id = 'r1' AND seq = ?", (torn_seq,))
    raw.commit()
    raw.close()
    inspected = store.inspect("r1")
    assert inspected.events[: torn_seq] == events[:torn_seq]
    assert [c["type"] for c in inspected.closers] == ["step/end", "turn/end"]
    assert inspected.truncated_bytes > 0
    rev = store.revision("r1")
    loaded = store.load("r1")
    assert loaded.committed and loaded.events == events[:torn_seq] + inspected.closers
    assert store.revision("r1") != rev
    rows = store.physical_rows("r1")
    kept = [r for r in rows_before if r[0] < torn_seq]
    assert rows[: len(kept)] == kept  # committed rows untouched
    assert store.load("r1").closers == [] and store.read_from("r1", 0) == loaded.events


def test_damage_before_a_later_turn_end_is_corruption(tmp_path):
    events = cc.build_log(turns=2, seed=1)
    store = _setup(tmp_path, events)
    raw = _raw(store)
    raw.execute("DELETE FROM events WHERE session_id = 'r1' AND seq = 3")
    raw.commit()
    raw.close()
    with pytest.raises(SessionCorruptionError, match="seq gap"):
        store.inspect("r1")
    with pytest.raises(SessionCorruptionError):
        store.load("r1")
    assert len(store.physical_rows("r1")) > 10  # nothing was deleted


def test_malformed_packed_row_in_the_committed_region_is_corruption(tmp_path):
    events = cc.build_log(turns=2, seed=1)
    store = _setup(tmp_path, events)
    raw = _raw(store)
    seq = raw.execute("SELECT min(seq) FROM events WHERE ignorable = 0").fetchone()[0]
    raw.execute("UPDATE events SET data = '{\"turn\":1}' WHERE session_id = 'r1' AND seq = ?", (seq,))
    raw.commit()
    raw.close()
    with pytest.raises(SessionCorruptionError):
        store.inspect("r1")


def test_newer_header_version_and_unknown_required_types_are_refused(tmp_path):
    events = cc.build_log(turns=1, seed=1)
    store = _setup(tmp_path, events)
    raw = _raw(store)
    raw.execute("UPDATE sessions SET version = 1 WHERE id = 'r1'")
    raw.commit()
    with pytest.raises(SessionFormatUnsupportedError, match="newer harness"):
        store.inspect("r1")
    raw.execute("UPDATE sessions SET version = 0 WHERE id = 'r1'")
    raw.execute("UPDATE events SET type = 'x-future/required' WHERE session_id = 'r1' AND seq = 0")
    raw.commit()
    raw.close()
    with pytest.raises(SessionFormatUnsupportedError):
        store.load("r1")
    assert store.physical_rows("r1")[0][1] == "x-future/required"  # no repair, no write
