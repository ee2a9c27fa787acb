"""JsonlStore read path: load/inspect with repair (§3.8), refusals, read_from/read_raw, revisions."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_tui.session.errors import SessionCorruptionError, SessionFormatUnsupportedError
from dsh_tui.store import base, jsonl, zstdframes
from dsh_tui.store.fixture import open_log_file
from tests.conftest import FIXTURES
from tests.store.jsonl_helpers import fixture_events, header, write_log

COMPRESSIONS = ["none", "zstd"]


def test_store_satisfies_the_protocol(tmp_path):
    assert isinstance(jsonl.JsonlStore(tmp_path), base.SessionStore)


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_round_trip_read_from_raw_and_revisions(tmp_path, compression):
    events = fixture_events()
    store = jsonl.JsonlStore(tmp_path, compression)
    hdr = header()
    write_log(store, hdr, events, [2, 1, 5, 3])
    snap1 = store.list_snapshots()[0]
    res = store.inspect(hdr["id"])
    assert res.events == events and not res.repaired and not res.committed
    assert res.header == hdr
    assert res.session is None  # inspect validates without keeping a Session
    kept = store.load(hdr["id"]).session
    assert kept.events[:-1] == events and kept.events[-1]["type"] == "session/end-seed"
    for k in range(len(events) + 1):
        assert store.read_from(hdr["id"], k) == events[k:]
    raw = store.read_raw(hdr["id"])
    assert raw.filename == "session.jsonl"
    plain = store.locate(hdr).read_bytes()
    if compression == "zstd":
        plain = jsonl.decode_raw_text(plain, "zstd")
    assert raw.content.encode() == plain
    assert store.list_snapshots()[0].revision == snap1.revision  # reads never change it
    loaded = store.load(hdr["id"])
    assert loaded.events == events and not loaded.committed
    assert store.list_snapshots()[0].revision == snap1.revision  # a balanced load writes nothing
    more = dict(events[-1], seq=len(events))
    more["type"] = "session/title"
    more["data"] = {"title": "again", "messageSeqs": [], "source": {"kind": "fallback"}}
    store.append(hdr["id"], [more])
    assert store.list_snapshots()[0].revision != snap1.revision
    assert jsonl.JsonlStore(tmp_path, compression).inspect(hdr["id"]).events == events + [more]


def _open_turn_events() -> list[dict]:
    events = fixture_events()
    call = next(i for i, e in enumerate(events) if e["type"] == "tool/call")
    return events[: call + 1]  # the tool is running: assistant message + tool/call recorded


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_load_repairs_torn_tail_and_open_turn(tmp_path, compression):
    events = _open_turn_events()
    store = jsonl.JsonlStore(tmp_path, compression)
    hdr = header()
    path = write_log(store, hdr, events, [len(events) - 3, 3])
    data = path.read_bytes()
    # tear the last batch: raw = a partial line; zstd = the last frame without its checksum
    if compression == "none":
        torn = data + b'{"type":"tool/result","seq":'
        expect_events = events
        expect_recovered = 0
    else:
        s, e = zstdframes.scan_frames(data).frames[-1]
        torn = data[: e - 3]
        expect_events = events
        expect_recovered = 3
    path.write_bytes(torn)

    inspected = jsonl.JsonlStore(tmp_path, compression).inspect(hdr["id"])
    assert path.read_bytes() == torn  # inspect never writes
    assert [c["type"] for c in inspected.closers] == ["tool/result", "step/end", "turn/end"]
    closer = inspected.closers[0]
    assert closer["data"]["message"]["source"]["callId"] == events[-1]["data"]["callId"]
    assert closer["data"]["message"]["content"][0]["content"][0]["text"].endswith("Do not retry blindly.")
    assert closer["sourceEventSeqs"] == [len(events) - 1]
    assert closer["time"] == events[-1]["time"]
    assert len(inspected.recovered_events) == expect_recovered

    loaded = jsonl.JsonlStore(tmp_path, compression).load(hdr["id"])
    assert loaded.committed and loaded.repaired
    assert loaded.events == expect_events + inspected.closers
    assert loaded.truncated_bytes == len(torn) - (len(data) if compression == "none" else s)
    assert len(loaded.recovered_events) == expect_recovered
    # the repair is durable: a cold read sees a balanced, untorn log
    again = jsonl.JsonlStore(tmp_path, compression).inspect(hdr["id"])
    assert again.events == loaded.events and not again.repaired
    if compression == "zstd":
        frames = zstdframes.scan_frames(path.read_bytes()).frames
        last = zstdframes.decode_frame(path.read_bytes()[frames[-1][0] : frames[-1][1]])
        assert last.count(b"\n") == 3 + 3  # recovered events + closers in ONE new frame
    # and appending continues at the repaired length
    store2 = jsonl.JsonlStore(tmp_path, compression)
    n = len(loaded.events)
    store2.load(hdr["id"])
    with pytest.raises(Exception, match="seq mismatch"):
        store2.append(hdr["id"], [dict(events[0], seq=n - 1)])


def test_tool_not_started_closer(tmp_path):
    events = _open_turn_events()[:-1]  # assistant asked for a tool; no tool/call recorded
    store = jsonl.JsonlStore(tmp_path, "none")
    write_log(store, header(), events, [100])
    res = store.load("sess-1")
    result = res.closers[0]
    assert result["data"]["message"]["content"][0]["content"][0]["text"] == (
        "The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed."
    )
    assert "sourceEventSeqs" not in result
    assert res.closers[-1]["data"] == {"turn": 1, "reason": {"kind": "interrupted"}}


def test_refusals_are_not_corruption_and_write_nothing(tmp_path):
    store = jsonl.JsonlStore(tmp_path, "none")
    events = fixture_events()
    hdr = header()
    path = write_log(store, hdr, events[:5], [5])
    unknown = {"type": "brand/new", "seq": 5, "time": 1, "data": {}}
    store.append(hdr["id"], [unknown])
    data = path.read_bytes()
    with pytest.raises(SessionFormatUnsupportedError, match="not marked ignorable") as info:
        jsonl.JsonlStore(tmp_path, "none").load(hdr["id"])
    assert str(path) in str(info.value)
    assert path.read_bytes() == data
    newer = tmp_path / "--v--" / "v1" / "session.jsonl"
    newer.parent.mkdir(parents=True)
    newer.write_bytes(b'{"type":"session","version":5,"id":"v1","createdAt":1,"cwd":"/v","delegationDepth":0}\n')
    fresh = jsonl.JsonlStore(tmp_path, "none")
    assert "v1" in [h["id"] for h in fresh.list()]  # listed like dsh does; only loading refuses
    with pytest.raises(SessionFormatUnsupportedError, match="newer"):
        fresh.load("v1")
    with pytest.raises(SessionFormatUnsupportedError):
        fresh.read_from(hdr["id"], 0)


def test_invalid_committed_event_is_corruption(tmp_path):
    store = jsonl.JsonlStore(tmp_path, "none")
    events = fixture_events()
    hdr = header()
    path = write_log(store, hdr, events, [len(events)])
    text = path.read_bytes().replace(b'"type":"step/start"', b'"type":"step/start","extra":1', 1)
    path.write_bytes(text)
    with pytest.raises(SessionCorruptionError, match="failed validation"):
        jsonl.JsonlStore(tmp_path, "none").inspect(hdr["id"])


def test_legacy_seed_written_through_the_store_is_imported_on_load(tmp_path):
    """The web ``seed.jsonl`` files are realized and written through the real backend, then cold-opened:
    the §3.6 import happens on load and the file is never rewritten."""
    seed = open_log_file(FIXTURES / "apps/web/tests/snapshots/navigation-panes/seed.jsonl")
    events = []
    for i, ev in enumerate(seed.events):
        ev = dict(ev)
        ev["time"] = 1_000 + i
        events.append(ev)
    import orjson

    text = orjson.dumps(events).decode().replace("{{sessionId}}", "seeded").replace("{{cwd}}", "/seeded")
    events = orjson.loads(text)
    store = jsonl.JsonlStore(tmp_path, "zstd")
    hdr = header("seeded", cwd="/seeded")
    path = write_log(store, hdr, events, [50])
    data = path.read_bytes()
    res = jsonl.JsonlStore(tmp_path, "zstd").load("seeded")
    assert not res.repaired and path.read_bytes() == data
    assert res.events != events  # imported
    assert all("trigger" not in e["data"] for e in res.events if e["type"] == "turn/start")
    assert any(e["data"].get("id", "").startswith("legacy-message:seeded:") for e in res.events
               if e["type"] == "user/message")
    assert res.session.derive_messages()


def test_zero_event_sessions_are_not_listed_and_pending_creates_conflict(tmp_path):
    store = jsonl.JsonlStore(tmp_path, "zstd")
    store.create(header("blank"))
    assert store.list() == [] and not store.exists("blank")
    with pytest.raises(jsonl.StoreError):
        store.create(header("blank"))
    with pytest.raises(jsonl.StoreError, match="not found"):
        store.load("missing")
    assert store.read_raw("missing") is None
    assert os.listdir(tmp_path) == []


_EVENTS = fixture_events()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    compression=st.sampled_from(COMPRESSIONS),
    pack=st.booleans(),
    sizes=st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=8),
    k=st.integers(min_value=0, max_value=len(_EVENTS)),
)
def test_any_batch_partition_round_trips(tmp_path_factory, compression, pack, sizes, k):
    """Layout-blind reads: packed or not, any partition into batches, both encodings → the same events."""
    root = tmp_path_factory.mktemp("prop")
    store = jsonl.JsonlStore(root, compression, pack_chunks=pack)
    hdr = header()
    write_log(store, hdr, _EVENTS, sizes)
    fresh = jsonl.JsonlStore(root, compression)
    rev = fresh.list_snapshots()[0].revision
    assert fresh.list() == [hdr]
    assert fresh.inspect(hdr["id"]).events == _EVENTS
    assert fresh.read_from(hdr["id"], k) == _EVENTS[k:]
    assert fresh.list_snapshots()[0].revision == rev
    data = store.locate(hdr).read_bytes()
    if compression == "zstd":
        frames = zstdframes.scan_frames(data).frames
        n_batches = 0
        i = j = 0
        while i < len(_EVENTS):
            i += sizes[j % len(sizes)]
            j += 1
            n_batches += 1
        assert len(frames) == 1 + n_batches


def test_find_returns_the_stored_log_and_the_lock_sits_beside_it(tmp_path):
    from dsh_tui.store import lock as lk

    store = jsonl.JsonlStore(tmp_path, "zstd")
    assert store.find("s1") is None
    h = header("s1")
    store.create(h)
    assert store.find("s1") is None  # created, nothing appended: no file yet
    path = write_log(jsonl.JsonlStore(tmp_path, "zstd"), header("s2", cwd="/elsewhere"), fixture_events()[:5], [5])
    assert store.find("s2") == path == store.locate(header("s2", cwd="/elsewhere"))
    assert lk.lock_path_for(store, "s2") == path.parent / lk.LOCK_NAME  # no header needed: found on disk
    # the same id in two project directories is refused, as every lookup by id is
    dup = store.locate(header("s2", cwd="/third"))
    dup.parent.mkdir(parents=True)
    dup.write_bytes(path.read_bytes())
    with pytest.raises(jsonl.StoreError, match="duplicate"):
        store.find("s2")
    # a log of the other compression is a mismatch, not "not found"
    raw = jsonl.JsonlStore(tmp_path / "raw", "none")
    write_log(raw, header("s3"), fixture_events()[:3], [3])
    with pytest.raises(jsonl.StoreError):
        jsonl.JsonlStore(tmp_path / "raw", "zstd").find("s3")


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_packed_rows_are_trusted_only_for_what_the_row_decoder_checked(tmp_path, compression):
    """The scanner hands its decoded row spans to Session validation (packed_runs); a row that decodes fine
    but breaks the session rules (chunks outside the open step, a float that is not lossless) is still refused."""
    def log(row_turn, row_step=1, index=0):
        return [{"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}},
                {"type": "step/start", "seq": 1, "time": 2, "data": {"turn": 1, "step": 1}},
                {"type": "text-chunks", "seq0": 2, "time0": 3,
                 "data": {"turn": row_turn, "step": row_step, "index": index, "dt": [1, 1], "texts": ["a", "b", "c"]}},
                {"type": "step/end", "seq": 5, "time": 9, "data": {"turn": 1, "step": 1}},
                {"type": "turn/end", "seq": 6, "time": 9, "data": {"turn": 1, "reason": {"kind": "completed"}}}]

    def store_with(name, lines):
        store = jsonl.JsonlStore(tmp_path / name, compression)
        h = header(name)
        path = store.locate(h)
        path.parent.mkdir(parents=True)
        from dsh_tui.session import jsonutil

        head = jsonutil.dumps_bytes(h) + b"\n"
        body = b"".join(jsonutil.dumps_bytes(x) + b"\n" for x in lines).replace(b'"index":-1', b'"index":-0.0')
        path.write_bytes(zstdframes.compress_frame(head) + zstdframes.compress_frame(body) if compression == "zstd"
                         else head + body)
        return store

    good = store_with("good", log(1))
    res = good.inspect("good")
    assert [e["seq"] for e in res.events] == list(range(7)) and good.load("good").session is not None
    assert [e["data"]["chunk"]["text"] for e in res.events[2:5]] == ["a", "b", "c"]
    for name, lines, needle in (("turn", log(2), "turn"), ("step", log(1, 2), "step"),
                                ("negzero", log(1, 1, -1), "-0")):
        with pytest.raises(SessionCorruptionError, match=needle):
            store_with(name, lines).inspect(name)


def test_bulk_load_freezes_what_a_big_load_created_and_only_then():
    import gc

    assert gc.isenabled()
    before = gc.get_freeze_count()
    with jsonl.bulk_load():
        assert not gc.isenabled()
        small = [[i] for i in range(100)]
    assert gc.isenabled() and gc.get_freeze_count() == before
    with jsonl.bulk_load():
        with jsonl.bulk_load():
            big = [[i] for i in range(jsonl.FREEZE_AFTER + 10)]
        assert not gc.isenabled()  # only the outermost block re-enables (and freezes)
    assert gc.isenabled() and gc.get_freeze_count() >= before + jsonl.FREEZE_AFTER
    frozen = gc.get_freeze_count()
    del big  # reference counting still frees frozen objects
    assert gc.get_freeze_count() <= frozen - jsonl.FREEZE_AFTER
    assert small[99] == [99]
