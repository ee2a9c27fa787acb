"""The JSONL scanner's float verdicts (``LineScanner.floats_checked``): the message sharers walk the whole data of
the events they share strings in and note those free of NaN, ±Infinity and -0, so the seed check skips its own
walk of them. A verdict must never be wrong, and a log with a bad float must be refused as before, naming the
same seq and path, whether or not the scanner's verdicts are used."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from dsh_tui.session import sharing
from dsh_tui.session.errors import DshError
from dsh_tui.session.jsonutil import _floats_ok
from dsh_tui.session.log import check_seed
from dsh_tui.store import jsonl
from tests.session.test_seed_fast_paths import HDR, _mutated_seeds
from tests.store.jsonl_helpers import fixture_events


def _verdict(fn: Any) -> tuple:
    try:
        fn()
        return ("ok",)
    except DshError as err:
        return ("error", type(err).__name__, str(err))


def _log_bytes(events: list[dict]) -> bytes:
    return jsonl.header_line(HDR) + b"".join(orjson.dumps(ev) + b"\n" for ev in events)


def test_a_sharers_clean_verdict_always_means_the_float_walk_finds_nothing():
    shared = set(sharing.SHARERS)
    verdicts = set()
    for name, seed in _mutated_seeds():
        for ev in seed:
            share = sharing.SHARERS.get(ev.get("type")) if type(ev) is dict else None
            if share is None or ev["type"] not in shared:
                continue
            mine = copy.deepcopy(ev)
            try:
                clean = share(mine, {})
            except (KeyError, TypeError, AttributeError):
                clean = None
            verdicts.add(bool(clean))
            if clean:
                assert type(mine.get("data")) is dict and _floats_ok(mine["data"]), (name, ev)
            assert mine == ev  # sharing never changes an event
    assert verdicts == {True, False}


@pytest.mark.parametrize("where", [
    ("user/message", ("data", "content", 0, "x")), ("user/message", ("data", "source", "x")),
    ("user/message", ("data", "x")), ("assistant/message", ("data", "usage", "inputTokens")),
    ("assistant/message", ("data", "message", "content", 0, "x")), ("assistant/message", ("data", "message", "x")),
    ("assistant/message", ("data", "message", "source", "x")), ("assistant/message", ("data", "x")),
    ("tool/result", ("data", "message", "content", 0, "content", 0, "x")), ("tool/result", ("data", "x")),
    ("agent/inbox/spliced", ("data", "inserted", 0, "content", 0, "x")), ("agent/inbox/spliced", ("data", "x")),
    ("agent/inbox/spliced", ("data", "inserted")), ("assistant/chunk", ("data", "chunk", "block", "x")),
    ("assistant/chunk", ("data", "chunk", "x")), ("assistant/chunk", ("data", "turn")),
])
@pytest.mark.parametrize("value", [-0.0, [1, -0.0], {"y": [{"z": -0.0}]}, 1.5])
def test_a_bad_float_in_a_shared_event_is_refused_as_by_the_walk(where, value):
    kind, path = where
    events = fixture_events("tool-call-turn")
    target = next(ev for ev in events if ev["type"] == kind
                  and (kind != "assistant/chunk" or ev["data"]["chunk"]["type"] == "block-end"))
    node = target
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = copy.deepcopy(value)
    prefix = jsonl.scan_buffer(_log_bytes(events), "none")
    assert prefix.torn is None and len(prefix.events) == len(events)
    scanned = _verdict(lambda: check_seed(prefix.header, prefix.events, packed_runs=prefix.runs,
                                          floats_checked=prefix.floats_checked))
    walked = _verdict(lambda: check_seed(HDR, orjson.loads(orjson.dumps(events))))
    assert scanned == walked
    if value != 1.5:
        assert scanned[0] == "error" and f"seq {target['seq']}: " in scanned[2], scanned
        assert "-0 is not lossless JSON" in scanned[2], scanned
    elif path[-1] == "x":  # a harmless extra field: accepted (and a message's own walk said so)
        assert scanned == ("ok",)
        assert (target["seq"] in set(prefix.floats_checked)) == (kind != "assistant/chunk" or "block" in path)


def test_every_single_event_edit_is_judged_alike_from_the_scanner_and_from_a_list():
    used = 0
    for name, seed in _mutated_seeds()[::2]:
        try:
            buf = _log_bytes(seed)
        except TypeError:
            continue  # not JSON (e.g. an integer beyond 64 bits)
        try:
            prefix = jsonl.scan_buffer(buf, "none")
        except DshError:
            continue  # the scanner itself refuses it (a seq edit): not the seed check's case
        if prefix.torn is not None or len(prefix.events) != len(seed):
            continue  # the scanner itself stops there (seq edits): not the seed check's case
        used += bool(prefix.floats_checked)
        scanned = _verdict(lambda prefix=prefix: check_seed(prefix.header, prefix.events, packed_runs=prefix.runs,
                                                            floats_checked=prefix.floats_checked))
        walked = _verdict(lambda seed=seed: check_seed(HDR, orjson.loads(orjson.dumps(seed))))
        assert scanned == walked, name
    assert used > 100


def test_a_store_inspect_refuses_negative_zero_in_a_message(tmp_path, session_format_v0):
    events = fixture_events("tool-call-turn")
    msg = next(ev for ev in events if ev["type"] == "assistant/message")
    msg["data"]["message"]["content"][0]["x"] = -0.0
    store = jsonl.JsonlStore(tmp_path, "none")
    path = store.locate(HDR)
    path.parent.mkdir(parents=True)
    path.write_bytes(_log_bytes(events))
    with pytest.raises(DshError) as err:
        store.inspect(HDR["id"])
    assert f"seq {msg['seq']}: data.message.content[0].x: -0 is not lossless JSON" in str(err.value)


def _v4_edited(tmp_path: Any, kind: str, edit: Any) -> tuple[Any, Any, str, list[dict]]:
    """A format-v4 log (dsh 0.2's, compact blocks on load) with one event of ``kind`` edited; returns the store,
    the edited event and the parsed events."""
    import zstandard

    from dsh_tui.store import zstdframes
    from tests.bench.bench_load_v4 import generate

    sessions = tmp_path / "sessions"
    path, sid, _ = generate(sessions, 400)
    with zstandard.ZstdDecompressor().stream_reader(path.open("rb")) as r:
        lines = r.read().splitlines()
    parsed = [orjson.loads(x) for x in lines[1:]]
    k = next(i for i, e in enumerate(parsed) if e["type"] == kind and i > 40)
    edit(parsed[k])
    lines[k + 1] = orjson.dumps(parsed[k])
    path.write_bytes(zstdframes.compress_frame(lines[0] + b"\n") + zstdframes.compress_frame(b"\n".join(lines[1:]) + b"\n"))
    return jsonl.JsonlStore(str(sessions)), parsed[k], sid, [orjson.loads(lines[0]), *parsed]


def _deep_set(value: Any) -> Any:
    def edit(ev: dict) -> None:
        m = ev["data"] if ev["type"] == "user/message" else ev["data"]["message"]
        m["content"][0]["x"] = {"y": [value]}
    return edit


@pytest.mark.parametrize("kind", ["user/message", "assistant/message", "tool/result"])
@pytest.mark.parametrize("edit", [
    _deep_set(-0.0), _deep_set(1.5), lambda ev: ev["data"].update(x=-0.0),
    lambda ev: (ev["data"] if ev["type"] == "user/message" else ev["data"]["message"]).update(content="text"),
])
def test_a_v4_log_is_judged_as_its_parsed_events_are(tmp_path, kind, edit):
    from dsh_tui.session.errors import SessionCorruptionError

    store, ev, sid, parsed = _v4_edited(tmp_path, kind, edit)
    expected = _verdict(lambda: check_seed(parsed[0], parsed[1:]))
    try:
        store.inspect(sid)
        got: tuple = ("ok",)
    except SessionCorruptionError as err:
        got = ("error", str(err))
    assert got[0] == expected[0]
    if expected[0] == "error":
        assert expected[2] in got[1] and f"seq {ev['seq']}" in got[1]
