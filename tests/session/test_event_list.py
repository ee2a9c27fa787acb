"""Compact packed rows (``rows.PackedRun``) and the lazy ``rows.EventList``: every read equals the eager
expansion, validation equals ``validate_row``, a Session seeded with one keeps it compact and behaves the same."""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_tui.session import jsonutil, legacy, repair, rows
from dsh_tui.session.errors import SessionCorruptionError, SessionValidationError
from dsh_tui.session.headers import make_header
from dsh_tui.session.log import Session
from tests.session.test_rows import GOOD_ROW, MAX, chunk, chunk_batches


def lazy_list(lines: list) -> rows.EventList:
    """What the JSONL scanner builds: one PackedRun slot per member of each well-formed row."""
    items: list = []
    for obj in lines:
        run = rows.lazy_row(obj) if rows.is_packed_row(obj) else None
        if run is not None and run.seq0 == len(items):
            items.extend([run] * len(run))
        else:
            items.extend(rows.expand_line(obj))
    return rows.EventList(items)


def check_same(lazy: rows.EventList, eager: list) -> None:
    assert len(lazy) == len(eager)
    assert list(lazy) == eager and lazy.to_list() == eager and lazy == eager and eager == lazy
    # key order too (the standard library's encoder: a lone surrogate, which dsh's JSON allows, is escaped)
    assert json.dumps(lazy.to_list()) == json.dumps(eager)
    assert jsonutil.dumps(lazy) == jsonutil.dumps(eager)
    assert list(reversed(lazy)) == eager[::-1]
    for i in range(len(eager)):
        assert lazy[i] == eager[i] and lazy[i - len(eager)] == eager[i]
    n = len(eager)
    for a, b in ((0, n), (1, n - 1), (n // 3, 2 * n // 3), (2, 3), (n, n), (5, 2)):
        assert lazy[a:b] == eager[a:b]
    assert lazy[::2] == eager[::2] and lazy[::-1] == eager[::-1]
    # packed members are fresh on every read; every other event is the stored object itself
    for i, slot in enumerate(lazy._items):
        if slot.__class__ is rows.PackedRun:
            assert lazy[i] is not lazy[i]
        else:
            assert lazy[i] is slot


@settings(max_examples=150, deadline=None)
@given(chunk_batches(), st.sampled_from([None, 3, 4]), st.sampled_from([None, 300]))
def test_lazy_rows_read_exactly_as_the_eager_expansion(batch, max_members, max_bytes):
    # re-number the batch contiguously from 0 so its index is its seq (as in a stored log)
    evs = [dict(e, seq=i) for i, e in enumerate(batch)]
    lines = rows.pack_batch(evs, max_members=max_members, max_bytes=max_bytes)
    parsed = [jsonutil.loads(jsonutil.dumps(o)) for o in lines]
    eager = rows.expand_lines(parsed)
    assert eager == evs
    lazy = lazy_list(parsed)
    check_same(lazy, eager)


def test_a_mixed_log_reads_like_its_eager_list_and_its_plain_events_skip_the_members():
    evs = [{"type": "turn/start", "seq": 0, "time": 5, "data": {"turn": 1}},
           {"type": "step/start", "seq": 1, "time": 6, "data": {"turn": 1, "step": 1}}]
    evs += [chunk(i, 10 + i * (-1) ** i, text=f"t{i}") for i in range(2, 9)]
    evs += [chunk(i, 20, kind="tool-call-delta", text=f"a{i}", name="bash") for i in range(9, 13)]
    evs += [chunk(i, 30 + i, kind="tool-call-delta", text=f"b{i}", index=1, cid="c2") for i in range(13, 17)]
    evs += [chunk(i, 40, kind="reasoning-delta", text="r") for i in range(17, 20)]
    evs += [{"type": "step/end", "seq": 20, "time": 50, "data": {"turn": 1, "step": 1}}]
    lines = rows.pack_batch(evs)
    assert sum(rows.is_packed_row(o) for o in lines) == 4
    lazy = lazy_list(lines)
    assert lazy.packed_count() == 18
    check_same(lazy, evs)
    assert lazy.plain() == [evs[0], evs[1], evs[20]]
    assert lazy.plain_indexed() == [(0, evs[0]), (1, evs[1]), (20, evs[20])]
    assert rows.plain_events(lazy) == lazy.plain() and rows.plain_events(evs) is evs
    assert evs[3] in lazy and {"x": 1} not in lazy and lazy.index(evs[15]) == 15 and lazy.count(evs[4]) == 1
    both = lazy + [{"type": "turn/end", "seq": 21, "time": 60, "data": {"turn": 1, "reason": {"kind": "done"}}}]
    assert type(both) is rows.EventList and both == evs + [both[-1]] and len(lazy) == 21
    assert [0] + lazy == [0, *evs] and lazy != evs[:-1] and lazy != "x"
    assert pickle.loads(pickle.dumps(lazy)) == evs and copy.copy(lazy) == evs
    assert isinstance(lazy, Sequence) and not isinstance(lazy, list)


def test_the_event_list_cannot_be_mutated():
    lazy = lazy_list(rows.pack_batch([chunk(i, i) for i in range(5)]))
    with pytest.raises(TypeError):
        lazy[0] = {}
    with pytest.raises(TypeError):
        del lazy[0]
    with pytest.raises(AttributeError):
        lazy.append({})  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        lazy.extend([])  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        hash(lazy)
    with pytest.raises(TypeError):
        json.dumps(lazy)  # a Sequence, not a list: to_list() for json/orjson
    # editing a member read does not change the log (members are read fresh)
    lazy[2]["data"]["chunk"]["text"] = "changed"
    assert lazy[2]["data"]["chunk"]["text"] == "x"
    with pytest.raises(IndexError):
        lazy[5]
    with pytest.raises(IndexError):
        lazy[-6]


MUTATIONS = [
    lambda r: r.update(seq=1), lambda r: r.update(seq0=-1), lambda r: r.update(seq0=1.0),
    lambda r: r.update(time0=2**53), lambda r: r["data"].update(dt=[1]), lambda r: r["data"].update(dt=[1, 0.5]),
    lambda r: r["data"].update(texts=[]), lambda r: r["data"].update(texts=["a", 1, "c"]),
    lambda r: r["data"].update(extra=1), lambda r: r["data"].pop("index"), lambda r: r["data"].update(turn=None),
    lambda r: r.update(data=[]), lambda r: r.update(time0=MAX - 1), lambda r: r.update(seq0=MAX - 1),
    lambda r: r.update(type="tool-call-chunks"), lambda r: r["data"].update(dt=[-MAX, -5], texts=["a", "b", "c"]),
    lambda r: r.update(time0=-MAX + 1) or r["data"].update(dt=[0, -2]), lambda r: r["data"].update(dt=[2**53, 0]),
    lambda r: r["data"].update(dt="ab"), lambda r: r["data"].update(texts="abc"),
    lambda r: r["data"].update(turn=1.5), lambda r: r["data"].update(index=-0.0),
    lambda r: r.update(type="tool-call-chunks", data={"turn": 1, "step": 1, "index": 0, "id": 3, "dt": [1],
                                                    "args": ["a", "b"]}),
    lambda r: r.update(type="tool-call-chunks", data={"turn": 1, "step": 1, "index": 0, "id": "c", "name": None,
                                                    "dt": [1], "args": ["a", "b"]}),
    lambda r: r.update(type="tool-call-chunks", data={"turn": 1, "step": 1, "index": 0, "id": "c", "name": "n",
                                                    "dt": [1], "args": ["a", "b"]}),
    lambda r: r.update(type="reasoning-chunks"), lambda r: r.update(ignorable=True),
    # dt gaps inside and outside 0..255 (bytes(dt) takes the first), bools that pass for ints
    lambda r: r["data"].update(dt=[0, 255]), lambda r: r["data"].update(dt=[256, 0]),
    lambda r: r["data"].update(dt=[1, True]), lambda r: r["data"].update(dt=[False, 0]),
    lambda r: r.update(time0=MAX - 300) or r["data"].update(dt=[255, 44]),
    lambda r: r.update(time0=MAX - 300) or r["data"].update(dt=[255, 46]),
    lambda r: r["data"].update(texts=["a", None, "c"]), lambda r: r["data"].update(texts=[b"a", "b", "c"]),
    # member lengths past one byte, a lone member, empty and non-ASCII members
    lambda r: r["data"].update(texts=["a" * 300, "", "c" * 255]), lambda r: r["data"].update(texts=["x"], dt=[]),
    lambda r: r["data"].update(texts=["é😀", "", "\u2028"]),
    lambda r: r.update(extra=1) or r.pop("time0"), lambda r: r["data"].update(extra=1) or r["data"].pop("dt"),
    lambda r: None,
]


@pytest.mark.parametrize("mutate", MUTATIONS)
def test_lazy_row_accepts_exactly_what_the_reference_decoder_expands(mutate):
    r = copy.deepcopy(GOOD_ROW)
    mutate(r)
    run = rows.lazy_row(r)
    try:
        expected = rows.expand_row(r) if rows.is_packed_row(r) else None
    except SessionCorruptionError:
        expected = None
    if expected is None:
        assert run is None
    else:
        assert run is not None and run.events() == expected
        assert [run.event(k) for k in range(len(run))] == expected


def _seed_lines() -> list:
    evs = [{"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}},
           {"type": "step/start", "seq": 1, "time": 2, "data": {"turn": 1, "step": 1}}]
    evs += [chunk(i, 3 + i, text=f"w{i}") for i in range(2, 12)]
    evs.append({"type": "assistant/message", "seq": 12, "time": 30, "data": {
        "turn": 1, "step": 1, "message": {"id": "a1", "role": "assistant", "content": [{"type": "text", "text": "w"}],
                                          "source": {"kind": "model", "provider": "p", "model": "m"}}},
        "surfaceOp": "append", "sourceEventSeqs": []})
    evs += [{"type": "step/end", "seq": 13, "time": 31, "data": {"turn": 1, "step": 1}},
            {"type": "turn/end", "seq": 14, "time": 32, "data": {"turn": 1, "reason": {"kind": "done"}}}]
    return evs


def test_a_session_seeded_with_compact_rows_keeps_them_and_equals_the_eager_session():
    evs = _seed_lines()
    lazy = lazy_list(rows.pack_batch(evs))
    assert lazy.packed_count() == 10
    h = make_header("s1", cwd="/w", created_at=1)
    s = Session(h, lazy, clock=lambda: 99)
    eager = Session(h, list(evs), clock=lambda: 99)
    assert type(s.events) is rows.EventList and type(eager.events) is list
    assert s.events._items[2].__class__ is rows.PackedRun  # still compact
    assert s.events == eager.events and len(s) == len(eager) == 16
    assert s.derive_messages() == eager.derive_messages() and s.last_turn == eager.last_turn == 1
    assert s.append_origin_events() == eager.append_origin_events()
    s.append("turn/start", {"turn": 2})
    eager.append("turn/start", {"turn": 2})
    assert s.events == eager.events and s.events[-1]["seq"] == 16
    # the rest of the load path reads it without expanding it
    assert legacy.import_legacy(lazy, "s1") is lazy and repair.interrupted_turn_closers(lazy) == []
    legacy.check_refusals(lazy)
    open_log = lazy_list(rows.pack_batch(evs[:12]))
    assert repair.interrupted_turn_closers(open_log) == repair.interrupted_turn_closers(evs[:12])


def test_a_compact_row_outside_the_open_step_fails_like_its_eager_members():
    evs = _seed_lines()
    bad = evs[:1] + evs[2:]  # the chunks come before any step/start
    bad = [dict(e, seq=i) for i, e in enumerate(bad)]
    lazy = lazy_list(rows.pack_batch(bad))
    assert lazy.packed_count() == 10
    h = make_header("s1", cwd="/w", created_at=1)
    with pytest.raises(SessionValidationError) as eager_err:
        Session(h, list(bad))
    with pytest.raises(SessionValidationError) as lazy_err:
        Session(h, lazy)
    assert str(lazy_err.value) == str(eager_err.value)
    # a row of another turn than the open one: the same error as member by member
    wrong = [dict(e, data={**e["data"], "turn": 2}) if e["type"] == "assistant/chunk" else e for e in evs]
    with pytest.raises(SessionValidationError) as eager_err:
        Session(h, list(wrong))
    with pytest.raises(SessionValidationError) as lazy_err:
        Session(h, lazy_list(rows.pack_batch(wrong)))
    assert str(lazy_err.value) == str(eager_err.value)


def test_a_session_seeded_without_compact_rows_has_a_plain_list():
    evs = _seed_lines()
    h = make_header("s1", cwd="/w", created_at=1)
    s = Session(h, rows.EventList(list(evs)))
    assert type(s.events) is list and s.events[:15] == evs
