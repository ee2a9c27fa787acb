"""The UI-free timeline fold on real dsh recordings: lanes, parallel tools, retries, compaction, tokens."""

from __future__ import annotations

from dsh_tui.session.rows import expand_lines
from dsh_tui.session.timeline import (
    TimelineFold,
    dispatch_seq,
    fold_timeline,
    request_header_at,
    summarize,
)
from tests.store.test_catalog_support import current_fixtures, load_fixture, user_turn

PARALLEL = "examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl"
RETRY = "examples/acp-agent/tests/snapshots/empty-response-retry/session.jsonl"
COMPACTION = "examples/headless-agent/tests/snapshots/compaction-recovery/session.jsonl"
UNKNOWN = "examples/headless-agent/tests/semantic-checkpoint-snapshots/tool-outcome-unknown/session.expected.jsonl"


def events_of(rel, **kw):
    _, rows = load_fixture(rel, **kw)
    return expand_lines(rows)


def test_parallel_tools_are_side_by_side_and_steps_marked():
    ev = events_of(PARALLEL)
    tl = fold_timeline(ev)
    assert [lane.turn for lane in tl.turns] == [1]
    lane = tl.turns[0]
    assert lane.reason == "completed" and lane.end_seq == len(ev) - 1
    assert [(s.step, s.seq) for s in lane.steps] == [
        (e["data"]["step"], e["seq"]) for e in ev if e["type"] == "step/start"
    ]
    tools = lane.of_kind("tool")
    assert [t.label for t in tools] == ["read", "read"]
    assert sorted(t.slot for t in tools) == [0, 1]  # overlapping calls -> two slots
    assert all(t.state == "ok" and t.end is not None and t.end >= t.start for t in tools)
    reqs = lane.of_kind("request")
    assert len(reqs) == 2 and all(r.state == "ok" for r in reqs)
    for r in reqs:
        assert r.first_token is not None and r.waiting_ms >= 0 and r.decoding_ms >= 0
    # per-step and per-turn tokens from the usage chunks
    assert [(s.usage.input, s.usage.output) for s in lane.steps] == [(10, 5), (10, 1)]
    assert (lane.usage.input, lane.usage.output) == (20, 6)
    assert len(tl.turn_of) == len(ev)
    assert tl.turn_of[0] == 0 and tl.turn_of[-1] == 1


def test_retry_is_its_own_span_between_two_attempts():
    ev = events_of(RETRY)
    lane = fold_timeline(ev).turns[0]
    reqs = lane.of_kind("request")
    assert [r.state for r in reqs] == ["error", "ok"]
    (retry,) = lane.of_kind("retry")
    assert "EMPTY_RESPONSE" in retry.label
    assert reqs[0].end <= retry.start <= retry.end <= reqs[1].start


def test_compaction_bracket_splits_the_step_attempts():
    ev = events_of(COMPACTION)
    lane = fold_timeline(ev).turns[0]
    (comp,) = lane.of_kind("compaction")
    assert comp.state == "ok" and comp.end is not None
    reqs = lane.of_kind("request")
    assert [r.step for r in reqs] == [1, 2, 2]
    assert reqs[1].state == "error" and reqs[2].state == "ok"
    assert reqs[1].end <= comp.start and comp.end <= reqs[2].first_token


def test_interrupted_turn_marks_unknown_tool_outcome():
    ev = events_of(UNKNOWN)
    tl = fold_timeline(ev)
    reasons = [lane.reason for lane in tl.turns]
    assert "interrupted" in reasons
    lane = tl.turns[reasons.index("interrupted")]
    assert [t.state for t in lane.of_kind("tool")] == ["unknown"]


def test_every_fixture_folds_and_incremental_equals_cold():
    for i, rel in enumerate(current_fixtures()):
        ev = events_of(rel, session_id=f"x{i}")
        cold = fold_timeline(ev)
        live = TimelineFold()
        for e in ev:
            live.apply(e)
        assert [(lane.turn, lane.reason, len(lane.spans), len(lane.steps)) for lane in live.turns] == [
            (lane.turn, lane.reason, len(lane.spans), len(lane.steps)) for lane in cold.turns
        ], rel
        assert len(cold.turns) == sum(1 for e in ev if e["type"] == "turn/start"), rel
        for e in ev[:50]:
            assert isinstance(summarize(e), str)


def test_dispatch_point_and_header_of_a_request():
    ev = user_turn(0, 1, "hi", "hello")
    chunk = next(e["seq"] for e in ev if e["type"] == "assistant/chunk")
    header_seq = next(e["seq"] for e in ev if e["type"] == "request/header")
    msg = next(e["seq"] for e in ev if e["type"] == "assistant/message")
    assert dispatch_seq(ev, msg) == chunk
    assert dispatch_seq(ev, header_seq) == chunk
    assert dispatch_seq(ev, ev[-1]["seq"]) is None  # turn/end is not inside a request
    assert request_header_at(ev, chunk)["system"] == "SYS"


def test_summaries_are_one_line():
    ev = user_turn(0, 1, "line one\nline two", "answer")
    lines = [summarize(e, 60) for e in ev]
    assert all("\n" not in s and len(s) <= 60 for s in lines)
    assert "user: line one⏎ line two" in lines[2]
    assert lines[-1] == "turn 1 completed"
