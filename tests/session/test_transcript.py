"""TranscriptFold on the real dsh fixture logs and on hand-written edge cases."""

from __future__ import annotations

import pytest

from dsh_tui.session.transcript import (
    ADD,
    PLAN,
    REMOVE,
    UPDATE,
    TranscriptFold,
    fold_transcript,
    reason_text,
    tool_kind,
)
from tests.fixture_logs import all_fixture_paths, fixture_path, read_fixture


def _fold(name: str) -> TranscriptFold:
    header, events = read_fixture(fixture_path(name))
    return fold_transcript(header, events)


def _kinds(fold: TranscriptFold) -> list[str]:
    return [item.kind for item in fold.items]


def test_parallel_tool_round_builds_two_read_cards_then_the_answer():
    fold = _fold("parallel-tool-calls")
    assert _kinds(fold) == ["user", "context", "tool", "tool", "assistant", "footer"]
    cards = [i for i in fold.items if i.kind == "tool"]
    assert [c.call_id for c in cards] == ["call_read_a", "call_read_b"]
    assert all(c.tool == "read" and c.state == "ok" for c in cards)
    assert cards[0].args() == {"file_path": "a.txt"}
    assert "1: alpha" in cards[0].result
    assert cards[0].meta["totalLines"] == 1
    assert fold.items[4].text == "DONE" and fold.items[4].state == "final"
    footer = fold.items[-1]
    assert footer.reason == "completed" and footer.reason_text == ""
    assert (footer.input_tokens, footer.output_tokens) == (20, 6)
    assert fold.items[1].producer == "dsh-system-prompt (snapshot)"


def test_cancel_keeps_the_partial_answer_marked_interrupted():
    fold = _fold("cancel")
    answer = [i for i in fold.items if i.kind == "assistant"]
    assert len(answer) == 1 and answer[0].state == "interrupted" and answer[0].text
    assert fold.items[-1].reason == "aborted"
    assert fold.items[-1].reason_text == "Stopped by you"


def test_provider_error_footer_explains_code_and_message():
    fold = _fold("error-finish")
    assert fold.items[-1].reason_text == "Failed: AUTH: simulated provider error (HTTP 401)"
    assert not [i for i in fold.items if i.kind == "assistant"]


def test_retry_row_and_only_the_successful_attempt_is_kept():
    fold = _fold("empty-response-retry")
    retry = [i for i in fold.items if i.kind == "retry"]
    assert len(retry) == 1 and retry[0].started
    assert retry[0].describe() == ("Retrying model request (1/2) in 1 ms after EMPTY_RESPONSE: "
                                   "model returned a completed response with no content")
    assert [i.text for i in fold.items if i.kind == "assistant"] == ["Recovered."]


def test_compaction_row_keeps_history_above_it():
    fold = _fold("compaction-recovery")
    kinds = _kinds(fold)
    assert kinds.index("user") < kinds.index("compaction")
    row = fold.items[kinds.index("compaction")]
    assert row.describe() == "Compacted 1 message (~266 tokens)"
    assert "durable compaction premise" in row.summary


@pytest.mark.parametrize("path", all_fixture_paths(), ids=lambda p: p.parent.name)
def test_live_changes_rebuild_exactly_the_cold_items(path):
    """Applying events one by one and replaying the change stream gives the cold-load items."""
    header, events = read_fixture(path)
    live = TranscriptFold(header)
    shown: dict[str, object] = {}
    order: list[str] = []
    for event in events:
        for op, item in live.apply(event):
            if op == ADD:
                assert item.key not in shown
                shown[item.key] = item
                order.append(item.key)
            elif op == UPDATE:
                assert item.key in shown
            elif op == REMOVE:
                del shown[item.key]
                order.remove(item.key)
            else:
                assert op == PLAN
    cold = fold_transcript(header, events)
    assert order == [i.key for i in cold.items]
    assert [_snapshot(shown[k]) for k in order] == [_snapshot(i) for i in cold.items]


def _snapshot(item) -> tuple:
    return (item.kind, getattr(item, "state", None), getattr(item, "text", None),
            getattr(item, "result", None), getattr(item, "reason_text", None))


def _ev(seq, type_, data, **extra):
    return {"type": type_, "seq": seq, "time": 1000 + seq * 100, "data": data, **extra}


def _user(seq, text, kind="user"):
    return _ev(seq, "user/message", {"role": "user", "id": f"m{seq}", "source": {"kind": kind},
                                      "content": [{"type": "text", "text": text}]}, surfaceOp="append")


def _chunk(seq, chunk, turn=1, step=1):
    return _ev(seq, "assistant/chunk", {"turn": turn, "step": step, "chunk": chunk})


def test_streaming_text_grows_one_item_and_crash_marks_it_interrupted():
    fold = TranscriptFold({"type": "session", "id": "s"})
    fold.apply(_ev(0, "turn/start", {"turn": 1}))
    fold.apply(_ev(1, "step/start", {"turn": 1, "step": 1}))
    fold.apply(_user(2, "hi"))
    changes = fold.apply(_chunk(3, {"type": "reasoning-delta", "index": 0, "text": "one\ntwo"}))
    assert changes[0][0] == ADD and changes[0][1].kind == "thinking"
    fold.apply(_chunk(4, {"type": "text-delta", "index": 1, "text": "Hel"}))
    changes = fold.apply(_chunk(5, {"type": "text-delta", "index": 1, "text": "lo"}))
    assert changes[0][0] == UPDATE and changes[0][1].text == "Hello"
    assert fold.items[1].summary() == "two"
    fold.apply(_ev(6, "step/end", {"turn": 1, "step": 1}))
    fold.apply(_ev(7, "turn/end", {"turn": 1, "reason": {"kind": "interrupted"}}))
    assert fold.items[2].state == "interrupted"
    assert fold.items[-1].reason_text == "Interrupted by a crash"
    assert fold.items[-1].duration_ms == 700 and fold.items[-1].ttft_ms == 300


def test_tool_states_unknown_aborted_error_and_approval():
    fold = TranscriptFold()
    fold.apply(_ev(0, "turn/start", {"turn": 1}))
    fold.apply(_ev(1, "step/start", {"turn": 1, "step": 1}))
    calls = [{"type": "tool-call", "id": c, "name": n, "arguments": "{}"}
             for c, n in (("a", "bash"), ("b", "edit"), ("c", "grep"), ("d", "mystery"))]
    fold.apply(_ev(2, "assistant/message", {"turn": 1, "step": 1, "message": {
        "role": "assistant", "id": "x", "content": calls,
        "source": {"kind": "model", "provider": "p", "model": "m"}}}, surfaceOp="append"))
    assert [i.tool for i in fold.items] == ["bash", "edit", "search", "generic"]
    fold.apply(_ev(3, "approval/asked", {"id": "q", "toolName": "bash", "callId": "a", "reason": "needs ok"}))
    assert fold.items[0].approval == "asked" and fold.items[0].approval_reason == "needs ok"
    fold.apply(_ev(4, "approval/decided", {"id": "q", "outcome": "rejected"}))
    assert fold.items[0].approval == "rejected"
    for seq, cid in enumerate("abcd", start=5):
        fold.apply(_ev(seq, "tool/call", {"turn": 1, "step": 1, "callId": cid, "name": "x", "arguments": "{}"}))
    assert all(i.state == "running" for i in fold.items)

    def result(seq, cid, code=None, is_error=False):
        data = {"turn": 1, "step": 1, "message": {"role": "user", "id": f"r{cid}", "source": {"kind": "tool", "callId": cid},
                "content": [{"type": "tool-result", "toolCallId": cid, "isError": is_error,
                             "content": [{"type": "text", "text": f"out {cid}"}]}]}}
        if code:
            data["error"] = {"name": "E", "code": code}
        return _ev(seq, "tool/result", data, surfaceOp="append", sourceEventSeqs=[seq - 4])

    fold.apply(result(9, "a", "TOOL_OUTCOME_UNKNOWN", True))
    fold.apply(result(10, "b", "ABORTED", True))
    fold.apply(result(11, "c", None, True))
    fold.apply(result(12, "d"))
    assert [i.state for i in fold.items] == ["unknown", "aborted", "error", "ok"]
    assert fold.items[3].result == "out d"


def test_end_seed_divider_says_resumed_or_forked():
    resumed = TranscriptFold({"id": "s"})
    resumed.apply(_ev(0, "turn/start", {"turn": 1}))
    resumed.apply(_ev(1, "turn/end", {"turn": 1, "reason": {"kind": "completed"}}))
    resumed.apply(_ev(2, "session/end-seed", {}))
    assert resumed.items[-1].kind == "divider" and resumed.items[-1].text == "resumed here"
    forked = TranscriptFold({"id": "c", "parentSession": "p-123", "seedLength": 2})
    forked.apply(_ev(0, "turn/start", {"turn": 1}))
    forked.apply(_ev(1, "turn/end", {"turn": 1, "reason": {"kind": "completed"}}))
    forked.apply(_ev(2, "session/end-seed", {}))
    assert forked.items[-1].text == "forked from p-123 here"
    empty = TranscriptFold({"id": "e"})
    assert empty.apply(_ev(0, "session/end-seed", {})) == []


def test_a_fork_of_a_forks_first_divider_does_not_name_its_own_parent():
    """Issue #26 item 22: a grandchild's copy of its parent's end-seed said "forked from <parent> here"
    (its own parent) where the parent had left the grandparent."""
    grandchild = TranscriptFold({"id": "g", "parentSession": "child-1", "seedLength": 6})
    grandchild.apply(_ev(0, "turn/start", {"turn": 1}))
    grandchild.apply(_ev(1, "turn/end", {"turn": 1, "reason": {"kind": "completed"}}))
    grandchild.apply(_ev(2, "session/end-seed", {}))  # the child's own, copied
    grandchild.apply(_ev(3, "turn/start", {"turn": 2}))
    grandchild.apply(_ev(4, "turn/end", {"turn": 2, "reason": {"kind": "completed"}}))
    grandchild.apply(_ev(5, "turn/start", {"turn": 3}))
    grandchild.apply(_ev(6, "session/end-seed", {}))
    dividers = [i.text for i in grandchild.items if i.kind == "divider"]
    assert dividers == ["forked or resumed here in the history of child-1", "forked from child-1 here"]


def test_plan_strip_counts_last_todo_write():
    fold = TranscriptFold()
    fold.apply(_ev(0, "todo/write", {"todos": [{"content": "a", "status": "pending"}]}))
    changes = fold.apply(_ev(1, "todo/write", {"todos": [
        {"content": "a", "status": "completed"}, {"content": "b", "status": "in_progress"},
        {"content": "c", "status": "pending"}, {"content": "d", "status": "pending"}]}))
    assert changes[0][0] == PLAN
    assert fold.plan.describe() == "1 completed · 1 in progress · 2 pending"


def test_reason_texts_cover_every_kind():
    assert reason_text({"kind": "max-tokens"}) == "Output limit reached"
    assert reason_text({"kind": "blocked"}).startswith("Blocked")
    assert reason_text({"kind": "aborted", "reason": {"kind": "hook", "reason": "policy"}}) == "Stopped by a hook: policy"
    assert reason_text({"kind": "aborted", "reason": {"kind": "parent"}}) == "Stopped by the parent agent"
    assert reason_text({"kind": "future-thing"}) == "Ended: future-thing"
    assert tool_kind("bash") == "bash" and tool_kind("write") == "edit"


def test_fold_is_linear_on_a_long_stream():
    """200k chunks into one message fold without quadratic joins (text stays correct)."""
    fold = TranscriptFold()
    fold.apply(_ev(0, "turn/start", {"turn": 1}))
    fold.apply(_ev(1, "step/start", {"turn": 1, "step": 1}))
    for seq in range(2, 200_002):
        fold.apply(_chunk(seq, {"type": "text-delta", "index": 0, "text": "ab"}))
        if seq % 50_000 == 0:
            assert len(fold.items[0].text) == (seq - 1) * 2
    assert len(fold.items[0].text) == 400_000


def test_tail_first_fold_plus_prepended_head_equals_the_full_fold():
    from dsh_tui.session.transcript import tail_start
    from tests.ui.synthetic import long_session

    header, events = long_session(60)
    start = tail_start(events, 500)
    assert 0 < start < len(events) - 500 + 1 and events[start]["type"] == "turn/start"
    full = fold_transcript(header, events)
    tail = fold_transcript(header, events[start:])
    head = fold_transcript(header, events[:start])
    tail.prepend(head)
    assert [i.key for i in tail.items] == [i.key for i in full.items]
    assert [_snapshot(i) for i in tail.items] == [_snapshot(i) for i in full.items]
    assert tail.usage.total == full.usage.total and tail.usage.turns.keys() == full.usage.turns.keys()
    assert tail.usage.model == full.usage.model
    assert tail_start(events[:100], 500) == 0


@pytest.mark.parametrize("path", all_fixture_paths()[:20], ids=lambda p: p.parent.name)
def test_store_reader_and_minimal_parser_agree_on_the_fixtures(path):
    from tests.fixture_logs import read_projected

    header, events = read_fixture(path)
    header2, events2 = read_projected(path)
    assert [(e["type"], e["seq"], e["data"]) for e in events] == [(e["type"], e["seq"], e["data"]) for e in events2]
