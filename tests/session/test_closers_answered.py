"""Crash closers for a step whose first tool call was answered and whose second was not: one closer, for the
second (§3.8 / invariant 12), and a log never gets two results for one call (a duplicate closer is refused).

The recorded ``parallel-tool-calls`` scenario asks for two reads in one step (call_read_a, call_read_b); its
prefixes are the crash points.
"""

from __future__ import annotations

import pytest

from dsh_tui.session import repair
from dsh_tui.session.errors import SessionValidationError
from dsh_tui.session.invariants import check_relations
from dsh_tui.session.log import Session
from tests.session.helpers import tool_msg
from tests.store.jsonl_helpers import fixture_events, header


@pytest.fixture(scope="module")
def events() -> list[dict]:
    return fixture_events("parallel-tool-calls")


def at(events, type_, call_id):
    for i, e in enumerate(events):
        d = e["data"]
        cid = d.get("callId") if type_ == "tool/call" else d.get("message", {}).get("source", {}).get("callId")
        if e["type"] == type_ and cid == call_id:
            return i
    raise AssertionError((type_, call_id))


def summary(closers):
    """(type, callId, error code, sourceEventSeqs, seq) per closer: written out by hand in the tests."""
    out = []
    for c in closers:
        d = c["data"]
        if c["type"] == "tool/result":
            out.append((c["type"], d["message"]["source"]["callId"], d["error"]["code"], c.get("sourceEventSeqs"),
                        c["seq"]))
        else:
            out.append((c["type"], None, None, None, c["seq"]))
    return out


def test_fixture_shape(events):
    # the test below relies on: both calls recorded (seqs 18, 19), a answered (20), b answered (21), step/end (22)
    assert (at(events, "tool/call", "call_read_a"), at(events, "tool/call", "call_read_b")) == (18, 19)
    assert (at(events, "tool/result", "call_read_a"), at(events, "tool/result", "call_read_b")) == (20, 21)
    assert events[22]["type"] == "step/end"


def test_first_answered_second_running_gets_one_closer_for_the_second(events):
    prefix = events[:21]  # crash while call_read_b runs, after call_read_a's result
    closers = repair.interrupted_turn_closers(prefix)
    assert summary(closers) == [
        ("tool/result", "call_read_b", "TOOL_OUTCOME_UNKNOWN", [19], 21),
        ("step/end", None, None, None, 22),
        ("turn/end", None, None, None, 23),
    ]
    assert closers[0]["data"]["message"]["id"] == "interrupted-tool-result-call_read_b-21"
    assert closers[0]["data"]["error"] == {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}
    assert closers[0]["data"]["step"] == 1 and closers[-1]["data"]["reason"] == {"kind": "interrupted"}
    s = Session(header(), prefix + closers, clock=lambda: 0)
    assert s.open_turn is None
    results = [m for m in s.derive_messages() if m["source"]["kind"] == "tool"]
    assert [m["source"]["callId"] for m in results] == ["call_read_a", "call_read_b"]


def test_first_answered_second_never_started_gets_one_not_started_closer(events):
    # call_read_b was asked for but never recorded as started; call_read_a ran and answered
    result_a = dict(events[20], seq=19)
    prefix = events[:19] + [result_a]
    closers = repair.interrupted_turn_closers(prefix)
    assert summary(closers) == [
        ("tool/result", "call_read_b", "TOOL_NOT_STARTED", None, 20),
        ("step/end", None, None, None, 21),
        ("turn/end", None, None, None, 22),
    ]
    assert closers[0]["data"]["error"] == {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}
    assert closers[0]["data"]["message"]["content"][0]["content"][0]["text"] == repair.NOT_STARTED_TEXT
    Session(header(), prefix + closers, clock=lambda: 0)


def test_both_answered_gets_no_tool_closer(events):
    closers = repair.interrupted_turn_closers(events[:22])
    assert summary(closers) == [("step/end", None, None, None, 22), ("turn/end", None, None, None, 23)]


def test_none_answered_gets_two_closers_in_call_order(events):
    closers = repair.interrupted_turn_closers(events[:20])
    assert summary(closers)[:2] == [
        ("tool/result", "call_read_a", "TOOL_OUTCOME_UNKNOWN", [18], 20),
        ("tool/result", "call_read_b", "TOOL_OUTCOME_UNKNOWN", [19], 21),
    ]


def test_a_duplicate_result_is_refused_by_the_session_and_the_relations(events):
    prefix = events[:21]
    dup = {"type": "tool/result", "seq": 21, "time": 0, "surfaceOp": "append",
           "data": {"turn": 1, "step": 1, "message": tool_msg("call_read_a", mid="again")}}
    with pytest.raises(SessionValidationError, match="already answered"):
        check_relations(prefix + [dup])
    with pytest.raises(SessionValidationError, match="already answered"):
        Session(header(), prefix + [dup], clock=lambda: 0)
    s = Session(header(), prefix, clock=lambda: 0)
    n = len(s.events)
    with pytest.raises(SessionValidationError, match="already answered"):
        s.append("tool/result", dup["data"], surface_op="append")
    assert len(s.events) == n
    # the unanswered call can still be answered, once
    s.append("tool/result", {"turn": 1, "step": 1, "message": tool_msg("call_read_b", mid="b")}, surface_op="append")
    with pytest.raises(SessionValidationError, match="already answered"):
        s.append("tool/result", {"turn": 1, "step": 1, "message": tool_msg("call_read_b", mid="b2")},
                 surface_op="append")


def test_same_call_id_in_a_later_step_is_a_new_call(events):
    s = Session(header(), events[:22], clock=lambda: 0)  # both answered, step 1 still open
    s.append("step/end", {"turn": 1, "step": 1})
    s.append("step/start", {"turn": 1, "step": 2})
    s.append("tool/call", {"turn": 1, "step": 2, "callId": "call_read_a", "name": "read", "arguments": "{}"})
    s.append("tool/result", {"turn": 1, "step": 2, "message": tool_msg("call_read_a", mid="a2")}, surface_op="append")
