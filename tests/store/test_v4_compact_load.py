"""A loaded format-v4 log keeps its events compact (their stored lines, zstd-compressed in blocks) and reads
exactly as the eagerly parsed events (issue #27: the 1M-event load bar's memory half, docs/performance.md
"Cold load v4"). Real files: a v4 log written the way dsh 0.2 writes one (the bench's generator, from the
dsh 0.2 corpus), loaded through the JSONL store."""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path

import orjson
import pytest
import zstandard

from dsh_tui.session import folds, jsonutil
from dsh_tui.session.errors import SessionCorruptionError
from dsh_tui.session.rows import EventList, plain_events
from dsh_tui.store import zstdframes
from dsh_tui.store.jsonl import JsonlStore
from tests.bench.bench_load_v4 import generate

N = 3000


def _lines(path: Path) -> list[bytes]:
    with zstandard.ZstdDecompressor().stream_reader(path.open("rb")) as r:
        return r.read().splitlines()


def _frames(lines: list[bytes]) -> bytes:
    """A v4 zstd log of these lines: the header line alone in the first frame (dsh's layout)."""
    return zstdframes.compress_frame(lines[0] + b"\n") + zstdframes.compress_frame(b"\n".join(lines[1:]) + b"\n")


@pytest.fixture()
def v4log(tmp_path):
    sessions = tmp_path / "sessions"
    path, sid, n = generate(sessions, N)
    eager = [orjson.loads(x) for x in _lines(path)[1:]]
    assert len(eager) == n
    return sessions, path, sid, eager


def test_loaded_v4_events_read_as_parsed(v4log):
    sessions, _path, sid, eager = v4log
    res = JsonlStore(str(sessions)).load(sid)
    events = res.session.events
    n = len(eager)
    assert type(events) is EventList
    assert len(events) == n + 1  # the session's own session/end-seed
    assert events[n]["type"] == "session/end-seed"
    assert list(events)[:n] == eager
    assert events[:n] == eager
    assert [events[i] for i in range(0, n, 7)] == eager[::7]
    assert events[-2] == eager[-1] and events[-(n + 1)] == eager[0]
    assert list(reversed(events))[1:] == eager[::-1]
    assert events[5:40:3] == eager[5:40:3]
    assert events.to_list()[:n] == eager
    assert list(plain_events(events))[:n] == eager  # v4 has no packed chunk rows: every event is plain
    assert plain_events(events)[-2] == eager[-1]
    assert [e for _i, e in events.plain_indexed()][:n] == eager
    assert json.loads(jsonutil.dumps(events))[:n] == eager
    assert res.events[:n] == eager  # the LoadResult's own list too
    # every read is a fresh dict: a reader's change never reaches the log
    ev = events[3]
    ev["data"] = "changed"
    assert events[3] == eager[3]
    # folds that look for the last event of a type find it without decoding the log (and find the right one)
    assert folds.fold_request_header(events) == folds.fold_request_header(eager)
    assert folds.fold_plan_mode(events) == folds.fold_plan_mode(eager)
    # scans for a few types decode only those, and find the same
    from dsh_tui.extensions.workdir import recorded_directory
    from dsh_tui.runtime.permissions import logged_allowances, logged_mode
    from dsh_tui.session.rows import events_of

    for types in ({"user/message"}, {"tool/call", "approval/asked"}, {"session/end-seed"}, {"no/such-type"}):
        assert list(events_of(events, types))[: len(list(events_of(eager, types)))] == list(events_of(eager, types))
    assert logged_mode(events) == logged_mode(eager)
    assert logged_allowances(events) == logged_allowances(eager)
    assert recorded_directory(events) == recorded_directory(eager)
    snap = events.snapshot()  # what the UI attaches: compact, and the events as of now
    assert snap.has_blocks() and snap[:n] == eager and len(snap) == len(events)
    # the session's derived model messages are the same as from the parsed events
    msgs = res.session.derive_messages().to_list()
    from dsh_tui.session.log import Session

    again = Session(res.header, eager)
    assert msgs == again.derive_messages().to_list()
    assert res.session.system_head() == again.system_head()
    assert res.session.surface_nodes == again.surface_nodes


def test_loaded_v4_session_is_compact(v4log):
    """Its events cost a fraction of their parsed form (a parsed event of this log is ~2.4 KB of objects)."""
    sessions, _path, sid, eager = v4log
    store = JsonlStore(str(sessions))
    parsed = len(orjson.dumps(eager))  # the log's text: parsed dicts take several times this
    store.inspect(sid)  # warm: the modules a load imports are not the session's memory
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        res = store.load(sid)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(res.session.events) == len(eager) + 1
    # less than the log's own JSON text (the parsed dicts took ~5 times it; compact, about half, a few decoded
    # blocks' lines cached included)
    assert held < parsed, f"{held:,} bytes held for a {parsed:,}-byte log"


def test_a_bad_v4_event_is_still_reported_at_load(tmp_path):
    sessions = tmp_path / "sessions"
    path, sid, n = generate(sessions, 400)
    lines = _lines(path)
    bad = orjson.loads(lines[200])
    bad["data"] = {"nonsense": True} if bad["type"] != "session/end-seed" else bad["data"]
    bad["type"] = "tool/result"
    lines[200] = orjson.dumps(bad)
    path.write_bytes(_frames(lines))
    with pytest.raises(SessionCorruptionError, match="seq 199"):
        JsonlStore(str(sessions)).load(sid)


def test_crash_closers_of_a_compact_v4_log(tmp_path):
    """A v4 log cut inside a turn's tool round gets the same closers as from its parsed events."""
    from dsh_tui.session.repair import interrupted_turn_closers_v4
    from dsh_tui.store.jsonl.decode import scan_buffer

    sessions = tmp_path / "sessions"
    path, sid, n = generate(sessions, 600)
    lines = _lines(path)
    parsed = [orjson.loads(x) for x in lines[1:]]
    cut = max(i for i, e in enumerate(parsed) if e["type"] == "tool/call") + 1  # a call without its result
    prefix = scan_buffer(_frames(lines[: cut + 1]), None)
    assert type(prefix.events) is EventList and prefix.events.has_blocks()
    closers = interrupted_turn_closers_v4(prefix.events, sid)
    assert closers and closers == interrupted_turn_closers_v4(parsed[:cut], sid)
    path.write_bytes(_frames(lines[: cut + 1]))
    res = JsonlStore(str(sessions)).load(sid)
    assert res.closers == closers
    assert res.session.open_turn is None
