"""UsageFold: token accounting per session spec §2.3, context %, cache %, cost."""

from __future__ import annotations

from dsh_tui.session.stats import Usage, UsageFold, cost_of, fold_usage, format_tokens
from tests.fixture_logs import fixture_path, read_fixture


def test_usage_chunks_per_step_and_turn_on_a_fixture():
    _, events = read_fixture(fixture_path("parallel-tool-calls"))
    fold = fold_usage(events)
    assert (fold.total.input, fold.total.output) == (20, 6)
    assert fold.steps[(1, 1)].usage.output == 5 and fold.steps[(1, 2)].usage.output == 1
    assert fold.turns[1].total == 26
    assert fold.model == "deepseek-v4-flash" and fold.provider == "deepseek-official"


def test_failed_attempt_usage_counts_and_message_usage_is_only_a_fallback():
    _, events = read_fixture(fixture_path("empty-response-retry"))
    chunk_usage = [e["data"]["chunk"]["usage"] for e in events
                   if e["type"] == "assistant/chunk" and e["data"]["chunk"]["type"] == "usage"]
    assert len(chunk_usage) == 2  # the failed attempt and the successful one
    fold = fold_usage(events)
    assert fold.total.input == sum(u["inputTokens"] for u in chunk_usage)
    assert fold.total.output == sum(u["outputTokens"] for u in chunk_usage)


def _ev(seq, type_, data):
    return {"type": type_, "seq": seq, "time": 0, "data": data}


def test_message_usage_fallback_context_cache_and_cost():
    fold = UsageFold({"m": (1.0, 0.1, 2.0)})
    fold.apply(_ev(0, "request/header", {"header": {"config": {"provider": "p", "model": "m", "reasoningEffort": "high"}},
                                         "reason": "initial"}))
    fold.apply(_ev(1, "request/context", {"provider": "p", "model": "m", "contextWindow": 1000}))
    fold.apply(_ev(2, "step/start", {"turn": 1, "step": 1}))
    fold.apply(_ev(3, "assistant/message", {"turn": 1, "step": 1, "message": {},
                                            "usage": {"inputTokens": 100, "cacheReadTokens": 300, "outputTokens": 100}}))
    assert fold.total.billed_input == 400 and fold.total.output == 100
    assert fold.context_percent() == 50.0
    assert fold.total.cache_percent() == 75.0
    assert abs(fold.cost_usd() - (100 * 1.0 + 300 * 0.1 + 100 * 2.0) / 1e6) < 1e-12
    assert fold.effort == "high"
    fold.apply(_ev(4, "request/header", {"header": {"config": {"provider": "p", "model": "unpriced"}}, "reason": "change"}))
    fold.apply(_ev(5, "step/start", {"turn": 1, "step": 2}))
    fold.apply(_ev(6, "assistant/chunk", {"turn": 1, "step": 2, "chunk": {"type": "usage",
                                                                          "usage": {"inputTokens": 1, "outputTokens": 1}}}))
    fold.apply(_ev(7, "assistant/message", {"turn": 1, "step": 2, "message": {},
                                            "usage": {"inputTokens": 1, "outputTokens": 1}}))
    assert fold.total.output == 101  # message usage ignored: the chunk was authoritative
    assert fold.cost_usd() is None  # an unpriced model makes the cost unknown, never wrong


def test_helpers():
    assert format_tokens(999) == "999" and format_tokens(1234) == "1.2k" and format_tokens(2_500_000) == "2.50M"
    assert cost_of(Usage(input=1_000_000), None) is None
    assert Usage().cache_percent() is None


def test_one_token_format_for_the_status_line_and_the_browser_column():
    """The browser's 6-cell column and the status line print tokens by the same rule, the column with one
    decimal of millions."""
    from dsh_tui.ui.widgets.sessionlist import SessionList  # noqa: F401  (the column's module imports it)

    assert format_tokens(1_234_567) == "1.23M" and format_tokens(1_234_567, m_digits=1) == "1.2M"
    assert format_tokens(12_345, m_digits=1) == "12.3k" and format_tokens(999, m_digits=1) == "999"

