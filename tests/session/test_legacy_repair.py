"""§3.6 legacy import + refusals, §3.8 crash closers."""

from __future__ import annotations

import copy

import pytest

from dsh_tui.session import jsonutil, legacy, repair
from dsh_tui.session.errors import SessionFormatUnsupportedError
from tests.conftest import FIXTURES
from tests.fixture_logs import fixture_id, load_fixture, project, session_fixture_paths

WEB = sorted(p for p in session_fixture_paths() if "apps/web/tests/snapshots" in str(p))


def ev(seq, type_, data, **extra):
    return {"type": type_, "seq": seq, "time": 0, "data": data, **extra}


def test_turn_start_trigger_is_dropped():
    e = ev(0, "turn/start", {"turn": 1, "trigger": {"kind": "message", "source": {"kind": "user"}}})
    orig = copy.deepcopy(e)
    out = legacy.import_legacy([e], "S")
    assert out[0]["data"] == {"turn": 1}
    assert e == orig  # input untouched
    # malformed: left alone for validation to reject
    for bad in ({"turn": 0, "trigger": {"kind": "message"}}, {"turn": 1, "trigger": {"kind": ""}},
                {"turn": 1, "trigger": {"kind": "m"}, "x": 1}):
        e = ev(0, "turn/start", bad)
        assert legacy.import_legacy([e], "S")[0] is e


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ({"kind": "aborted"}, {"kind": "aborted", "reason": {"kind": "legacy"}}),
        ({"kind": "disposed"}, {"kind": "aborted", "reason": {"kind": "disposed"}}),
        ({"kind": "error", "step": 2, "failure": {"message": "m", "code": "AUTH"}},
         {"kind": "error", "error": {"message": "m", "code": "AUTH"}}),
        ({"kind": "error", "step": 2, "message": "boom"}, {"kind": "error", "error": {"message": "boom", "code": "UNKNOWN"}}),
        ({"kind": "error", "step": 2, "message": "boom", "code": "X"},
         {"kind": "error", "error": {"message": "boom", "code": "X"}}),
        ({"kind": "completed"}, {"kind": "completed"}),
        ({"kind": "aborted", "reason": {"kind": "user"}}, {"kind": "aborted", "reason": {"kind": "user"}}),
    ],
)
def test_turn_end_reasons(reason, expected):
    out = legacy.import_legacy([ev(3, "turn/end", {"turn": 1, "reason": reason})], "S")
    assert out[0]["data"] == {"turn": 1, "reason": expected}


def test_steering_messages_become_user_messages():
    msg = {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}, "role": "user", "id": "m1"}
    out = legacy.import_legacy([ev(4, "steering/message", {"turn": 1, "message": msg}),
                                ev(5, "steering/message", {"turn": 1, "content": msg["content"],
                                                            "source": {"kind": "user"}})], "S")
    assert out[0] == {"type": "user/message", "seq": 4, "time": 0, "data": msg, "surfaceOp": "append"}
    assert out[1]["data"] == {"content": msg["content"], "source": {"kind": "user"},
                              "id": "legacy-message:S:5", "role": "user"}


def test_pre_identity_messages_gain_ids():
    user = ev(1, "user/message", {"content": [], "source": {"kind": "user"}}, surfaceOp="append")
    asst = ev(2, "assistant/message", {"turn": 1, "step": 1, "content": [{"type": "text", "text": "a"}],
                                       "provenance": {"provider": "p", "model": "m"}, "usage": {"inputTokens": 1}},
              surfaceOp="append", sourceEventSeqs=[1])
    tres = ev(3, "tool/result", {"turn": 1, "step": 1, "callId": "c", "content": [{"type": "text", "text": "r"}],
                                 "isError": False}, surfaceOp="append")
    repl = ev(4, "tool/result", {"turn": 1, "step": 1, "callId": "c", "content": [], "isError": False},
              surfaceOp={"op": "replace", "start": 3, "end": 3}, sourceEventSeqs=[3])
    out = legacy.import_legacy([user, asst, tres, repl], "sid")
    assert out[0]["data"]["id"] == "legacy-message:sid:1" and out[0]["data"]["role"] == "user"
    assert out[1]["data"] == {"turn": 1, "step": 1, "message": {
        "id": "legacy-message:sid:2", "role": "assistant", "content": [{"type": "text", "text": "a"}],
        "source": {"provider": "p", "model": "m", "kind": "model"}}, "usage": {"inputTokens": 1}}
    assert out[1]["sourceEventSeqs"] == [1]
    assert out[2]["data"] == {"turn": 1, "step": 1, "message": {
        "id": "legacy-message:sid:3", "role": "user",
        "content": [{"type": "tool-result", "toolCallId": "c", "content": [{"type": "text", "text": "r"}],
                     "isError": False}],
        "source": {"kind": "tool", "callId": "c"}}}
    assert out[3]["data"]["message"]["id"] == "legacy-message:sid:3"  # inherits the shadowed id


def test_current_logs_are_returned_unchanged():
    for p in session_fixture_paths():
        if "apps/web" in str(p):
            continue
        _, events = load_fixture(p)
        assert legacy.import_legacy(events, "x") is events, fixture_id(p)


@pytest.mark.parametrize("path", WEB, ids=fixture_id)
def test_web_fixtures_import_to_current_shapes(path):
    _, events = load_fixture(path)
    before = copy.deepcopy(events)
    out = legacy.import_legacy(events, "web")
    assert events == before
    assert len(out) == len(events)
    legacy.check_refusals(out)
    for e in out:
        d = e["data"]
        if e["type"] == "turn/start":
            assert set(d) == {"turn"}
        elif e["type"] == "user/message":
            assert isinstance(d["id"], str) and d["role"] == "user"
        elif e["type"] in ("assistant/message", "tool/result"):
            assert {"id", "role", "content", "source"} <= set(d["message"])
            assert "provenance" not in d and "callId" not in d


@pytest.mark.parametrize(
    ("event", "needle"),
    [
        (ev(0, "request/header-delta", {}), "request/header-delta"),
        (ev(0, "mode/set", {}), "mode/set"),
        (ev(0, "request/header", {"header": {"config": {"provider": "p", "model": "m"}}, "reason": "fallback"}),
         "fallback"),
        (ev(0, "brand/new", {}), "not marked ignorable"),
        (ev(0, "assistant/attempt", {}), "not marked ignorable"),
    ],
)
def test_refusals(event, needle):
    with pytest.raises(SessionFormatUnsupportedError, match=needle):
        legacy.check_refusals([event], where="/x/session.jsonl")


def test_unknown_ignorable_types_are_accepted():
    legacy.check_refusals([ev(0, "brand/new", {"x": 1}, ignorable=True)])


TOU = FIXTURES / "examples/headless-agent/tests/semantic-checkpoint-snapshots/tool-outcome-unknown/session.expected.jsonl"


def test_tool_outcome_unknown_closers_reproduced_exactly():
    _, events = load_fixture(TOU)
    first = next(i for i, e in enumerate(events) if e["type"] == "tool/result")
    closers = repair.interrupted_turn_closers(events[:first])
    assert [jsonutil.dumps(project(c)) for c in closers] == [jsonutil.dumps(project(e)) for e in events[first:first + 3]]
    assert [list(c) for c in closers] == [list(e) for e in events[first:first + 3]]
    assert repair.interrupted_turn_closers(events[: first + 3]) == []


def test_closers_not_started_and_open_step_and_time():
    msg = {"id": "a", "role": "assistant", "source": {"kind": "model", "provider": "p", "model": "m"},
           "content": [{"type": "tool-call", "id": "k1", "name": "x", "arguments": "{}"},
                       {"type": "tool-call", "id": "k2", "name": "y", "arguments": "{}"}]}
    log = [ev(0, "turn/start", {"turn": 3}), ev(1, "step/start", {"turn": 3, "step": 2}),
           ev(2, "assistant/message", {"turn": 3, "step": 2, "message": msg}, surfaceOp="append"),
           {**ev(3, "tool/call", {"turn": 3, "step": 2, "callId": "k2", "name": "y", "arguments": "{}"}), "time": 77}]
    c = repair.interrupted_turn_closers(log)
    assert [x["type"] for x in c] == ["tool/result", "tool/result", "step/end", "turn/end"]
    assert [x["seq"] for x in c] == [4, 5, 6, 7] and {x["time"] for x in c} == {77}
    assert c[0]["data"]["error"]["code"] == "TOOL_NOT_STARTED" and "sourceEventSeqs" not in c[0]
    assert c[0]["data"]["message"]["id"] == "interrupted-tool-result-k1-4"
    assert c[0]["data"]["message"]["content"][0]["content"][0]["text"] == repair.NOT_STARTED_TEXT
    assert c[1]["data"]["error"]["code"] == "TOOL_OUTCOME_UNKNOWN" and c[1]["sourceEventSeqs"] == [3]
    assert c[1]["data"]["message"]["content"][0]["content"][0]["text"].endswith("Do not retry blindly.")
    assert c[2]["data"] == {"turn": 3, "step": 2}
    assert c[3]["data"] == {"turn": 3, "reason": {"kind": "interrupted"}}
    # after step/end pending calls are forgotten
    c = repair.interrupted_turn_closers([*log, ev(4, "step/end", {"turn": 3, "step": 2})])
    assert [x["type"] for x in c] == ["turn/end"]
    assert repair.interrupted_turn_closers([]) == []
