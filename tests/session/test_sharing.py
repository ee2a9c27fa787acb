"""``sharing.SHARERS``: the JSONL scanner makes the strings dsh stores several times over one object, and must
never change what an event says (as JSON) or fail on an event of an unexpected shape."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from dsh_tui.session.sharing import SHARERS
from dsh_tui.store import jsonl
from tests.session.test_seed_fast_paths import _mutated_seeds
from tests.store.jsonl_helpers import fixture_events, header, session_logs, write_log

_EXPECTED = (KeyError, TypeError, AttributeError)  # the shape is not the expected one: the scanner goes on


def _share_all(events: list[Any]) -> None:
    pool: dict[str, str] = {}
    for ev in events:
        share = SHARERS.get(ev.get("type")) if type(ev) is dict and type(ev.get("type")) is str else None
        if share is not None:
            try:
                share(ev, pool)
            except _EXPECTED:
                pass


def _json(events: list[Any]) -> list[bytes]:
    return [orjson.dumps(ev) for ev in events]


def test_sharing_leaves_every_recorded_event_as_it_was():
    objects_before = objects_after = 0
    for path in session_logs():
        events = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
        before = _json(events)
        ids = {id(s) for ev in events for s in _strings(ev)}
        _share_all(events)
        assert _json(events) == before, path
        after = {id(s) for ev in events for s in _strings(ev)}
        assert after <= ids, path  # the first occurrence is the one kept: no new objects
        objects_before += len(ids)
        objects_after += len(after)
    assert objects_after < 0.9 * objects_before  # and the recordings do repeat themselves


def test_sharing_leaves_every_dsh02_v4_event_as_it_was_and_shares_its_stream_and_inbox_texts():
    import zstandard

    from tests.conftest import REPO

    logs = sorted((REPO / "tests" / "fixtures" / "dsh02").rglob("session.v4.jsonl.zstd"))
    assert logs
    for path in logs:
        with zstandard.ZstdDecompressor().stream_reader(path.open("rb")) as r:
            events = [orjson.loads(line) for line in r.read().splitlines()[1:]]
        before = _json(events)
        _share_all(events)
        assert _json(events) == before, path
        for ev in events:
            if ev["type"] == "assistant/message" and ev["data"].get("stream"):
                text = next((b["text"] for b in ev["data"]["message"]["content"] if b["type"] == "text"), None)
                ends = [c["chunk"]["block"] for c in ev["data"]["stream"]
                        if c["type"] == "chunk" and c["chunk"]["type"] == "block-end"]
                if text is not None:
                    assert any(b.get("text") is text for b in ends), path  # one object, not two


def test_sharing_leaves_every_edited_event_as_it_was():
    """Edits of a recorded tool round (every data path removed or set to -0.0, True, None, containers ...)."""
    for name, seed in _mutated_seeds():
        events = copy.deepcopy(seed)
        before = _json(events)
        _share_all(events)
        assert _json(events) == before, name


@pytest.mark.parametrize("first, second", [(True, 1), (1, True), (0, False), (1.0, 1), ("1", 1), (None, "None")])
def test_values_that_compare_equal_across_types_are_never_swapped(first, second):
    def call(v: Any) -> dict:
        return {"type": "tool/call", "seq": 0, "time": 0,
                "data": {"turn": 1, "step": 1, "callId": v, "name": "n", "arguments": v}}

    events = [call(first), call(second), {"type": "assistant/message", "data": {"message": {"content": [
        {"type": "text", "text": second}], "source": {"kind": first}, "id": second}}, "surfaceOp": first}]
    before = _json(events)
    _share_all(events)
    assert _json(events) == before


def _strings(value: Any) -> list[str]:
    if type(value) is str:
        return [value]
    if type(value) is dict:
        return [s for v in value.values() for s in _strings(v)]
    if type(value) is list:
        return [s for v in value for s in _strings(v)]
    return []


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_a_loaded_log_holds_each_repeated_text_once(compression, tmp_path):
    store = jsonl.JsonlStore(tmp_path, compression)
    hdr = header()
    events = fixture_events("tool-call-turn")
    write_log(store, hdr, events, [40, 7])
    loaded = store.inspect(hdr["id"]).events
    assert loaded == events
    plain = loaded.plain()
    by_type: dict[str, list[dict]] = {}
    for ev in plain:
        by_type.setdefault(ev["type"], []).append(ev)
    ends = [ev["data"]["chunk"]["block"] for ev in by_type["assistant/chunk"]
            if ev["data"]["chunk"]["type"] == "block-end"]
    message = by_type["assistant/message"][0]["data"]["message"]
    reasoning = next(b for b in message["content"] if b["type"] == "reasoning")
    call_block = next(b for b in message["content"] if b["type"] == "tool-call")
    assert any(b.get("text") is reasoning["text"] for b in ends)
    end_call = next(b for b in ends if b["type"] == "tool-call")
    assert end_call["id"] is call_block["id"] and end_call["arguments"] is call_block["arguments"]
    call = by_type["tool/call"][0]["data"]
    assert call["callId"] is call_block["id"] and call["arguments"] is call_block["arguments"]
    result = by_type["tool/result"][0]["data"]["message"]
    assert result["source"]["callId"] is call_block["id"]
    assert result["content"][0]["toolCallId"] is call_block["id"]
    ops = [ev["surfaceOp"] for ev in plain if ev["type"] in ("assistant/message", "tool/result")]
    assert len(ops) > 1 and all(op is ops[0] for op in ops)
