"""Packed chunk rows (§3.3): eligibility, runs, caps, validation, and the fixture canonical re-render."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_tui.session import jsonutil, rows
from dsh_tui.session.errors import SessionCorruptionError
from tests.fixture_logs import (
    fixture_id,
    load_fixture,
    project,
    raw_body_lines,
    session_fixture_paths,
)

MAX = 2**53 - 1


def chunk(seq, time=0, *, kind="text-delta", text="x", turn=1, step=1, index=0, cid="c1", name=None, extra=None):
    if kind == "tool-call-delta":
        c = {"type": kind, "index": index, "id": cid}
        if name is not None:
            c["name"] = name
        c["argumentsDelta"] = text
    else:
        c = {"type": kind, "index": index, "text": text}
    ev = {"type": "assistant/chunk", "seq": seq, "time": time, "data": {"turn": turn, "step": step, "chunk": c}}
    if extra:
        ev.update(extra)
    return ev


def kinds(lines):
    return [o["type"] for o in lines]


def test_runs_shorter_than_three_stay_verbatim():
    batch = [chunk(0), chunk(1)]
    out = rows.pack_batch(batch)
    assert out == batch and all(a is b for a, b in zip(out, batch))
    out = rows.pack_batch([chunk(0), chunk(1), chunk(2)])
    assert out == [{"type": "text-chunks", "seq0": 0, "time0": 0,
                    "data": {"turn": 1, "step": 1, "index": 0, "dt": [0, 0], "texts": ["x", "x", "x"]}}]


def test_row_shapes_and_key_order_match_dsh():
    batch = [chunk(5 + i, 100 + i * 7, kind="tool-call-delta", text=f"a{i}", name="bash") for i in range(3)]
    row = rows.pack_batch(batch)[0]
    assert jsonutil.dumps(row) == (
        '{"type":"tool-call-chunks","seq0":5,"time0":100,"data":{"turn":1,"step":1,"index":0,"dt":[7,7],'
        '"id":"c1","name":"bash","args":["a0","a1","a2"]}}'
    )
    assert rows.expand_line(row) == batch
    r = rows.pack_batch([chunk(i, kind="reasoning-delta") for i in range(4)])[0]
    assert r["type"] == "reasoning-chunks" and rows.row_length(r) == 4


def test_tool_call_runs_break_on_id_or_name_change():
    batch = [chunk(i, kind="tool-call-delta", cid="a") for i in range(3)]
    batch += [chunk(i + 3, kind="tool-call-delta", cid="b") for i in range(3)]
    assert kinds(rows.pack_batch(batch)) == ["tool-call-chunks", "tool-call-chunks"]
    # name presence differs: named,named,unnamed,unnamed,unnamed
    batch = [chunk(0, kind="tool-call-delta", name="n"), chunk(1, kind="tool-call-delta", name="n")]
    batch += [chunk(i, kind="tool-call-delta") for i in range(2, 5)]
    assert kinds(rows.pack_batch(batch)) == ["assistant/chunk", "assistant/chunk", "tool-call-chunks"]
    batch = [chunk(i, kind="tool-call-delta", name="n" if i < 2 else "m") for i in range(4)]
    assert kinds(rows.pack_batch(batch)) == ["assistant/chunk"] * 4


def test_runs_break_on_kind_turn_step_index_and_seq_gap():
    assert kinds(rows.pack_batch([chunk(0), chunk(1), chunk(2, kind="reasoning-delta")])) == ["assistant/chunk"] * 3
    assert kinds(rows.pack_batch([chunk(0), chunk(1), chunk(2, index=1)])) == ["assistant/chunk"] * 3
    assert kinds(rows.pack_batch([chunk(0), chunk(1), chunk(2, step=2)])) == ["assistant/chunk"] * 3
    assert kinds(rows.pack_batch([chunk(0), chunk(1), chunk(3)])) == ["assistant/chunk"] * 3


@pytest.mark.parametrize(
    "mutate",
    [
        lambda e: e.update(extra=1),  # extra envelope key
        lambda e: e.update(time=1.5),  # fractional time
        lambda e: e.update(seq=True),
        lambda e: e["data"].update(x=1),
        lambda e: e["data"]["chunk"].update(x=1),
        lambda e: e["data"]["chunk"].update(text=3),
        lambda e: e["data"].update(turn="1"),
        lambda e: e.update(ignorable=True),
        lambda e: e.update(surfaceOp="append"),
    ],
)
def test_off_whitelist_shapes_stay_verbatim(mutate):
    batch = [chunk(i) for i in range(5)]
    mutate(batch[2])
    out = rows.pack_batch(batch)
    assert kinds(out) == ["assistant/chunk"] * 5
    assert out[2] is batch[2]


def test_block_start_end_usage_finish_never_pack():
    batch = [{"type": "assistant/chunk", "seq": i, "time": 0,
              "data": {"turn": 1, "step": 1, "chunk": {"type": "block-start", "index": 0, "blockType": "text"}}}
             for i in range(4)]
    assert rows.pack_batch(batch) == batch


def test_negative_dt_round_trips_and_gaps_beyond_safe_integers_break_runs():
    batch = [chunk(0, 100), chunk(1, 50), chunk(2, -7)]
    out = rows.pack_batch(batch)
    assert out[0]["data"]["dt"] == [-50, -57]
    assert rows.expand_lines(out) == batch
    batch = [chunk(0, MAX), chunk(1, -MAX), chunk(2, -MAX), chunk(3, -MAX), chunk(4, -MAX)]
    out = rows.pack_batch(batch)
    assert kinds(out) == ["assistant/chunk", "text-chunks"]
    assert rows.expand_lines(out) == batch


def test_runs_split_by_batch_boundaries_stay_split():
    evs = [chunk(i) for i in range(6)]
    assert kinds(rows.pack_batch(evs[:2]) + rows.pack_batch(evs[2:])) == ["assistant/chunk"] * 2 + ["text-chunks"]


def test_member_cap_splits_rows():
    evs = [chunk(i) for i in range(1024 * 2 + 2)]
    out = rows.pack_batch(evs, max_members=1024, max_bytes=rows.SQLITE_MAX_BYTES)
    assert kinds(out) == ["text-chunks", "text-chunks", "assistant/chunk", "assistant/chunk"]
    assert [rows.row_length(r) for r in out[:2]] == [1024, 1024]
    assert rows.expand_lines(out) == evs
    out = rows.pack_batch([chunk(i) for i in range(1027)], max_members=1024)
    assert kinds(out) == ["text-chunks", "text-chunks"]


def test_byte_cap_is_exact_and_oversized_first_member_stays_scalar():
    evs = [chunk(i, i * 3, text="é" * 10) for i in range(40)]
    for cap in (60, 150, 200, 333, 1000):
        out = rows.pack_batch(evs, max_bytes=cap)
        assert rows.expand_lines(out) == evs
        for r in out:
            if rows.is_packed_row(r):
                assert len(jsonutil.dumps(r["data"]).encode()) <= cap
                # greedy: one more member would not have fit
                nxt = r["seq0"] + rows.row_length(r)
                if nxt < len(evs):
                    bigger = rows.pack_batch(evs[r["seq0"]: nxt + 1])[0]
                    assert len(jsonutil.dumps(bigger["data"]).encode()) > cap
    big = [chunk(0, text="y" * 500), chunk(1, text="a"), chunk(2, text="b"), chunk(3, text="c")]
    out = rows.pack_batch(big, max_bytes=200)
    assert kinds(out) == ["assistant/chunk", "text-chunks"]


def test_storage_tag_named_ignorable_event_stays_logical():
    ev = {"type": "text-chunks", "seq": 0, "time": 0, "data": {"anything": 1}, "ignorable": True}
    assert not rows.is_packed_row(ev)
    assert rows.expand_line(ev) == [ev]


GOOD_ROW = {"type": "text-chunks", "seq0": 3, "time0": 10,
            "data": {"turn": 1, "step": 1, "index": 0, "dt": [1, 2], "texts": ["a", "", "c"]}}


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda r: r.update(seq=1), "envelope"),
        (lambda r: r.update(seq0=-1), "seq0"),
        (lambda r: r.update(seq0=1.0), "seq0"),
        (lambda r: r.update(time0=2**53), "time0"),
        (lambda r: r["data"].update(dt=[1]), "dt length"),
        (lambda r: r["data"].update(dt=[1, 0.5]), "dt must be"),
        (lambda r: r["data"].update(texts=[]), "non-empty"),
        (lambda r: r["data"].update(texts=["a", 1, "c"]), "non-empty"),
        (lambda r: r["data"].update(extra=1), "exactly"),
        (lambda r: r["data"].pop("index"), "exactly"),
        (lambda r: r["data"].update(turn=None), "numbers"),
        (lambda r: r.update(data=[]), "object"),
        (lambda r: r.update(time0=MAX - 1), "member times"),
        (lambda r: r.update(seq0=MAX - 1), "member seqs"),
        (lambda r: r.update(type="tool-call-chunks"), "exactly"),
    ],
)
def test_malformed_rows_are_corruption(mutate, needle):
    r = copy.deepcopy(GOOD_ROW)
    rows.expand_line(r)
    mutate(r)
    with pytest.raises(SessionCorruptionError, match=needle):
        rows.expand_line(r)


texts = st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(["\ud800", "é"]), max_size=4)
times = st.integers(-MAX, MAX) | st.integers(-3, 3)


member = st.tuples(
    st.sampled_from(["text-delta", "text-delta", "reasoning-delta", "tool-call-delta", "other"]),
    st.sampled_from([1, 1, 1, 1, 2]),  # seq step
    st.sampled_from([0, 0, 1, -2, None]) ,  # time step (None = jump anywhere)
    times,
    texts,
    st.sampled_from([1, 1, 2]),  # turn
    st.sampled_from([0, 0, 1]),  # index
    st.sampled_from(["a", "a", "b"]),  # id
    st.sampled_from([None, None, "n", "m"]),  # name
    st.integers(0, 20),  # 0 = off-whitelist extra key
)


@st.composite
def chunk_batches(draw):
    seq = draw(st.integers(0, 5))
    t = draw(times)
    out = []
    for kind, ds, dt, jump, text, turn, index, cid, name, extra in draw(st.lists(member, max_size=30)):
        seq += ds
        t = jump if dt is None else t + dt
        if not -MAX <= t <= MAX:
            t = 0
        if kind == "other":
            out.append({"type": "step/start", "seq": seq, "time": t, "data": {"turn": 1, "step": 1}})
            continue
        ev = chunk(seq, t, kind=kind, text=text, turn=turn, index=index, cid=cid, name=name)
        if extra == 0:
            ev["extra"] = 1
        out.append(ev)
    return out


@settings(max_examples=150, deadline=None)
@given(chunk_batches(), st.sampled_from([None, 3, 4, 1024]), st.sampled_from([None, 80, 300]))
def test_pack_then_expand_reproduces_every_batch_exactly(batch, max_members, max_bytes):
    out = rows.pack_batch(batch, max_members=max_members, max_bytes=max_bytes)
    assert rows.expand_lines(out) == batch
    text = "\n".join(jsonutil.dumps(o) for o in out)
    assert rows.expand_lines([jsonutil.loads(line) for line in text.split("\n")] if text else []) == batch
    for o in out:
        if rows.is_packed_row(o):
            assert rows.row_length(o) >= 3
            if max_members is not None:
                assert rows.row_length(o) <= max_members
            if max_bytes is not None:
                assert len(jsonutil.dumps(o["data"]).encode()) <= max_bytes
        else:
            assert any(o is e for e in batch)


@pytest.mark.parametrize("path", session_fixture_paths(), ids=fixture_id)
def test_fixtures_re_render_byte_identically(path):
    _, events = load_fixture(path)
    packed = rows.pack_batch(events)
    assert [jsonutil.dumps(project(o)) for o in packed] == raw_body_lines(path)
    assert rows.expand_lines(packed) == events


# bytes / logical events from the spec's fixture inventory (§6.1)
SPEC_INVENTORY = {
    "apps/web/tests/snapshots/plan-review/session.jsonl": (13143, 343),
    "apps/web/tests/snapshots/steering/session.jsonl": (7114, 143),
    "examples/acp-agent/tests/snapshots/code-mode-turn/session.jsonl": (12650, 255),
    "examples/acp-agent/tests/snapshots/text-turn/session.jsonl": (4257, 40),
    "examples/acp-agent/tests/snapshots/subagent-fork-in-process/session.jsonl": (12295, 200),
}


@pytest.mark.parametrize(("name", "figures"), SPEC_INVENTORY.items())
def test_fixture_sizes_match_the_spec_inventory(name, figures):
    from tests.conftest import FIXTURES

    path = FIXTURES / name
    _, events = load_fixture(path)
    assert (path.stat().st_size, len(events)) == figures


# ---------------------------------------------------------------- the fused packer equals the plain definition

def reference_pack(events, max_members=None, max_bytes=None):
    """pack_batch by its definition: a run continues while ``classify`` gives the run's kind and
    ``_continues`` holds; byte sizes measured with ``jsonutil.dumps`` (the fused packer inlines all this)."""
    out, run, kind = [], [], None

    def emit():
        n = len(run)
        if n < rows.MIN_RUN:
            out.extend(run)
            return
        cap = max_members if max_members is not None else n
        i = 0
        while n - i >= rows.MIN_RUN and cap >= rows.MIN_RUN:
            m = min(cap, n - i)
            if max_bytes is not None:
                while m >= rows.MIN_RUN and len(jsonutil.dumps(rows._build_row(kind, run[i:i + m])["data"])
                                                .encode("utf-8")) > max_bytes:
                    m -= 1
            if m >= rows.MIN_RUN:
                out.append(rows._build_row(kind, run[i:i + m]))
                i += m
            else:
                out.append(run[i])
                i += 1
        out.extend(run[i:])

    for ev in events:
        k = rows.classify(ev)
        if k is not None and k == kind and run and rows._continues(run[-1], ev, k):
            run.append(ev)
            continue
        if run:
            emit()
        run, kind = ([ev], k) if k is not None else ([], None)
        if k is None:
            out.append(ev)
    if run:
        emit()
    return out


MUTATIONS = [
    lambda e: e["data"].__setitem__("turn", 1.0),
    lambda e: e["data"].__setitem__("step", True),
    lambda e: e["data"]["chunk"].__setitem__("index", 0.0),
    lambda e: e["data"]["chunk"].__setitem__("text", 5),
    lambda e: e["data"]["chunk"].__setitem__("type", "reasoning-delta"),
    lambda e: e["data"]["chunk"].pop("text"),
    lambda e: e["data"]["chunk"].__setitem__("extra", "x"),
    lambda e: e["data"]["chunk"].update({"index": 0}) or e["data"]["chunk"].pop("type"),
    lambda e: e["data"].pop("step"),
    lambda e: e["data"].__setitem__("x", 1),
    lambda e: e.__setitem__("data", ["not", "a", "dict"]),
    lambda e: e.__setitem__("data", {"turn": 1, "step": 1, "chunk": "str"}),
    lambda e: e.pop("time"),
    lambda e: e.__setitem__("time", 1.0),
    lambda e: e.__setitem__("time", MAX),
    lambda e: e.__setitem__("seq", float(e["seq"])),
    lambda e: e.__setitem__("seq", MAX + 1),
    lambda e: e.__setitem__("type", "assistant/chunk2"),
    lambda e: e.__setitem__("surfaceOp", "append"),
    lambda e: e.pop("type") and e.__setitem__("kind", "assistant/chunk"),
    lambda e: None,
]


@st.composite
def near_miss_batches(draw):
    n = draw(st.integers(0, 14))
    t0 = draw(st.sampled_from([0, -MAX, MAX - 20, 1_700_000_000_000]))
    seq0 = draw(st.sampled_from([0, 7, MAX - 20]))
    kind = draw(st.sampled_from(["text-delta", "reasoning-delta", "tool-call-delta"]))
    texts = st.text(alphabet=st.sampled_from(["a", "é", "\U0001f600", "\ud800", "\udc00", '"', "\n"]), max_size=6)
    batch = [chunk(seq0 + i, t0 + i, kind=kind, text=draw(texts), name=draw(st.sampled_from([None, "n"])))
             for i in range(n)]
    for i in draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=3)) if n else []:
        try:
            MUTATIONS[draw(st.integers(0, len(MUTATIONS) - 1))](batch[i])
        except (KeyError, TypeError, AttributeError):
            pass  # an earlier mutation of the same event removed what this one edits
    return batch


@settings(max_examples=300, deadline=None)
@given(st.one_of(near_miss_batches(), chunk_batches()), st.sampled_from([None, 3, 1024]),
       st.sampled_from([None, 60, 90, 1 << 20]))
def test_pack_batch_equals_the_reference_definition(batch, max_members, max_bytes):
    got = rows.pack_batch(batch, max_members=max_members, max_bytes=max_bytes)
    want = reference_pack(batch, max_members, max_bytes)
    assert jsonutil.dumps(got) == jsonutil.dumps(want)
    assert [type(x) for x in got] == [type(x) for x in want]
    for g, w in zip(got, want, strict=True):
        assert rows.is_packed_row(g) == rows.is_packed_row(w)
        if not rows.is_packed_row(g):
            assert g is w  # verbatim events pass through as the same object
