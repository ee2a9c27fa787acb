"""The span tree (dsh_tui/session/spans.py) on recorded dsh sessions, with hand-written expectations.

The recordings' times are re-stamped to ``T0 + 40 ms × seq`` (their own clocks jump between machines),
so every duration below is a count of events times 40 ms, checked by hand against the logs.
"""

from __future__ import annotations

from dsh_tui.session.rows import expand_lines
from dsh_tui.session.spans import SpanFold, fold_spans, message_label
from tests.store.test_catalog_support import current_fixtures, load_fixture

T0 = 1_780_000_000_000
APPROVED = "examples/acp-agent/tests/snapshots/escalation-approved/session.jsonl"
REJECTED = "examples/acp-agent/tests/snapshots/escalation-rejected/session.jsonl"
PARALLEL = "examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl"
RETRY = "examples/acp-agent/tests/snapshots/empty-response-retry/session.jsonl"
COMPACTION = "examples/headless-agent/tests/snapshots/compaction-recovery/session.jsonl"
UNKNOWN = "examples/headless-agent/tests/semantic-checkpoint-snapshots/tool-outcome-unknown/session.expected.jsonl"


def events_of(rel: str, **kw) -> list[dict]:
    _, rows = load_fixture(rel, **kw)
    ev = expand_lines(rows)
    for e in ev:
        e["time"] = T0 + 40 * e["seq"]
    return ev


def shape(node) -> list[tuple]:
    return [(n.depth, n.kind, n.seq, n.end_seq, n.state) for n in node.walk()]


def test_approval_wait_is_split_from_execution():
    ev = events_of(APPROVED)
    fold = fold_spans(ev)
    (turn,) = fold.turns
    # seqs read off the log: step/start 3, request/header 7, first chunk 9, usage 130, finish 131,
    # assistant/message 132, tool/call 133, approval/asked 134, approval/decided 135, tool/result 136
    assert shape(turn)[:12] == [
        (0, "turn", 1, 188, "completed"),
        (1, "step", 3, 137, "ok"),
        (2, "request", 7, 131, "ok"),
        (3, "waiting", 7, 9, "ok"),
        (3, "decoding", 9, 131, "ok"),
        (3, "usage", 130, 130, "ok"),
        (3, "message", 132, 132, "ok"),
        (2, "tool", 133, 136, "ok"),
        (3, "approval", 134, 135, "allowed-once"),
        (3, "execution", 135, 136, "ok"),
        (3, "result", 136, 136, "ok"),
        (1, "step", 138, 187, "ok"),
    ]
    request, tool = turn.children[0].children
    assert (request.waiting_ms, request.decoding_ms) == (2 * 40, 122 * 40)
    assert (request.usage.input, request.usage.output, request.usage.reasoning) == (1501, 174, 28)
    approval, execution, result = tool.children
    assert tool.duration_ms == 3 * 40  # call -> result, as before
    assert approval.duration_ms == 40 and execution.duration_ms == 40  # the wait is not execution
    assert "danger-full-access" in approval.detail
    assert tool.ref == "call_00_d0sAHpJ9mYOJi0z7KNy30441" and result.label == "escalated"


def test_a_rejected_call_has_no_execution_time():
    fold = fold_spans(events_of(REJECTED))
    tool = next(n for n in fold.turns[0].walk() if n.kind == "tool")
    kinds = [c.kind for c in tool.children]
    assert kinds == ["approval", "execution", "result"]
    approval, execution, _ = tool.children
    assert approval.state == "rejected"
    assert execution.label == "not run" and execution.duration_ms == 0


def test_parallel_calls_get_distinct_slots_and_overlap():
    fold = fold_spans(events_of(PARALLEL))
    step1 = fold.turns[0].children[0]
    tools = [c for c in step1.children if c.kind == "tool"]
    assert [(t.label, t.slot, t.seq, t.end_seq) for t in tools] == [("read", 0, 18, 20), ("read", 1, 19, 21)]
    assert tools[1].start < tools[0].end  # the bars overlap


def test_slots_are_reused_once_free():
    ev = [{"type": "turn/start", "seq": 0, "time": 0, "data": {"turn": 1}},
          {"type": "step/start", "seq": 1, "time": 1, "data": {"turn": 1, "step": 1}}]

    def add(tp, data):
        ev.append({"type": tp, "seq": len(ev), "time": 10 * len(ev), "data": {"turn": 1, "step": 1, **data}})

    def result(cid):
        add("tool/result", {"message": {"source": {"kind": "tool", "callId": cid},
                                        "content": [{"type": "tool-result", "toolCallId": cid, "content": []}]}})

    for cid in ("a", "b", "c"):
        add("tool/call", {"callId": cid, "name": "read", "arguments": "{}"})
    result("a")
    add("tool/call", {"callId": "d", "name": "read", "arguments": "{}"})
    result("b")
    result("c")
    result("d")
    tools = [n for n in fold_spans(ev).turns[0].walk() if n.kind == "tool"]
    assert [(t.ref, t.slot) for t in tools] == [("a", 0), ("b", 1), ("c", 2), ("d", 0)]


def test_streamed_chunks_are_folded_into_their_message():
    ev = events_of(APPROVED)
    fold = fold_spans(ev)
    nodes = [n for r in fold.roots for n in r.walk()]
    assert len(nodes) == 17  # 189 events, 170 of them chunks: no node per chunk
    messages = [n for n in nodes if n.kind == "message"]
    chunk_seqs = [e["seq"] for e in ev if e["type"] == "assistant/chunk"]
    assert [(m.first_chunk, m.chunks) for m in messages] == [(9, 123), (139, 47)]
    assert sum(m.chunks for m in messages) == len(chunk_seqs)
    assert [m.label for m in messages] == ["→ bash", "DONE"]
    assert fold.node_at(50) is messages[0]  # a chunk belongs to its message
    assert fold.node_at(134).kind == "approval"


def test_retry_is_a_span_between_two_attempts():
    fold = fold_spans(events_of(RETRY))
    step = fold.turns[0].children[0]
    assert [(c.kind, c.state) for c in step.children] == [("request", "error"), ("retry", "ok"), ("request", "ok")]
    failed, retry, ok = step.children
    assert retry.detail == "EMPTY_RESPONSE" and retry.label == "retry 1"
    assert failed.end <= retry.start <= retry.end <= ok.start
    assert failed.children[-1].label == "(no message: error)"
    assert ok.children[-1].label == "Recovered."
    assert [r.index for r in fold.requests] == [0, 1]


def test_compaction_is_a_span_inside_its_step():
    fold = fold_spans(events_of(COMPACTION))
    step2 = fold.turns[0].children[1]
    assert [(c.kind, c.state) for c in step2.children] == [("request", "error"), ("compaction", "ok"),
                                                           ("request", "ok")]
    assert step2.children[1].duration_ms == 3 * 40


def test_an_interrupted_turn_closes_what_was_open():
    fold = fold_spans(events_of(UNKNOWN))
    lane = next(t for t in fold.turns if t.state == "interrupted")
    (tool,) = [n for n in lane.walk() if n.kind == "tool"]
    assert tool.state == "unknown"
    assert all(n.end is not None or n.state != "running" for n in lane.walk())


def test_every_fixture_folds_and_incremental_equals_cold():
    for i, rel in enumerate(current_fixtures()):
        ev = events_of(rel, session_id=f"x{i}")
        cold = fold_spans(ev)
        live = SpanFold()
        for e in ev:
            live.apply(e)
        assert [shape(r) for r in live.roots] == [shape(r) for r in cold.roots], rel
        assert len(cold.turns) == sum(1 for e in ev if e["type"] == "turn/start"), rel
        assert len(cold.turn_of) == len(ev), rel


def test_message_label_is_one_short_line():
    assert message_label([{"type": "reasoning", "text": "hmm"}, {"type": "text", "text": "a\nb"}]) == "a b"
    assert message_label([{"type": "tool-call", "name": "bash"}, {"type": "tool-call", "name": "read"}]) == \
        "→ bash, read"
    assert message_label([{"type": "reasoning", "text": "only thinking"}]) == "(thinking) only thinking"
    assert len(message_label([{"type": "text", "text": "x" * 500}])) == 80
