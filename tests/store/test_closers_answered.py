"""Store repair of a log that crashed after the first of two tool calls in a step was answered: exactly one
closer (for the second call), durably, in JSONL (raw and zstd) and SQLite; a second load adds nothing."""

from __future__ import annotations

import pytest

from dsh_tui.session.log import Session
from dsh_tui.store import jsonl
from dsh_tui.store.sqlite import SqliteSessionStore
from tests.store.jsonl_helpers import fixture_events, header, write_log

STORES = ["jsonl-none", "jsonl-zstd", "sqlite"]


def make_store(kind, tmp_path):
    if kind == "sqlite":
        return SqliteSessionStore(tmp_path / "root")
    return jsonl.JsonlStore(tmp_path, kind.split("-")[1])


def crashed_log() -> list[dict]:
    events = fixture_events("parallel-tool-calls")
    assert [events[i]["type"] for i in (18, 19, 20)] == ["tool/call", "tool/call", "tool/result"]
    assert events[20]["data"]["message"]["source"]["callId"] == "call_read_a"
    return events[:21]  # call_read_a answered; call_read_b recorded as started, no result


@pytest.mark.parametrize("kind", STORES)
def test_one_closer_for_the_unanswered_second_call(tmp_path, kind):
    events = crashed_log()
    hdr = header()
    store = make_store(kind, tmp_path)
    if kind == "sqlite":
        store.create(hdr)
        store.append(hdr["id"], events)
    else:
        write_log(store, hdr, events, [10, len(events) - 10])
    loaded = make_store(kind, tmp_path).load(hdr["id"])
    got = [(c["type"], c["seq"], c["data"].get("message", {}).get("source", {}).get("callId"),
            (c["data"].get("error") or {}).get("code"), c.get("sourceEventSeqs")) for c in loaded.closers]
    assert got == [
        ("tool/result", 21, "call_read_b", "TOOL_OUTCOME_UNKNOWN", [19]),
        ("step/end", 22, None, None, None),
        ("turn/end", 23, None, None, None),
    ]
    assert loaded.events == events + loaded.closers
    results = [e["data"]["message"]["source"]["callId"] for e in loaded.events if e["type"] == "tool/result"]
    assert results == ["call_read_a", "call_read_b"]
    Session(hdr, loaded.events, clock=lambda: 0)  # balanced, one result per call
    again = make_store(kind, tmp_path).load(hdr["id"])
    assert again.closers == [] and again.events == loaded.events
