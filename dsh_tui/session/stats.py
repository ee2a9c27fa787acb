"""Status figures folded from a session log: tokens, cache hits, context use and cost.

Token accounting (docs/format.md, "Token accounting"): per-attempt ``assistant/chunk{usage}`` records are
authoritative, ``assistant/message.usage`` is the fallback for an attempt that streamed none; failed
attempts only have the chunk (and still cost tokens). Counts are disjoint: ``inputTokens`` is the
uncached input, billed input = input + cacheRead + cacheWrite.

The fold is incremental (``apply(event)``, O(1) per event) and pure, so the status bar of a live
session and of the same session reopened from disk show the same figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# USD per 1M tokens: (uncached input, cache-hit input, output). No provider's prices are built in (they
# change, and a stale price shows a wrong cost): they come from settings (``prices.<model> = {input,
# cache_read, output}`` or a provider's ``price_*`` model keys); without one the cost is unknown.
DEFAULT_PRICES: dict[str, tuple[float, float, float]] = {
    "demo-scripted": (0.0, 0.0, 0.0),  # the offline demo model costs nothing
}

# Context windows used when the log has no ``request/context.contextWindow``.
DEFAULT_CONTEXT_WINDOW = 128_000


@dataclass(slots=True)
class Usage:
    """Disjoint token counts, added up."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0

    def add(self, usage: dict[str, Any]) -> None:
        self.input += _int(usage.get("inputTokens"))
        self.output += _int(usage.get("outputTokens"))
        self.cache_read += _int(usage.get("cacheReadTokens"))
        self.cache_write += _int(usage.get("cacheWriteTokens"))
        self.reasoning += _int(usage.get("reasoningTokens"))

    def add_usage(self, other: Usage) -> None:
        self.input += other.input
        self.output += other.output
        self.cache_read += other.cache_read
        self.cache_write += other.cache_write
        self.reasoning += other.reasoning

    @property
    def billed_input(self) -> int:
        return self.input + self.cache_read + self.cache_write

    @property
    def total(self) -> int:
        return self.billed_input + self.output

    def cache_percent(self) -> float | None:
        billed = self.billed_input
        return None if billed == 0 else 100.0 * self.cache_read / billed


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def cost_of(usage: Usage, price: tuple[float, float, float] | None) -> float | None:
    """USD cost of ``usage`` at ``price`` (per 1M tokens), or None when the model has no price."""
    if price is None:
        return None
    inp, cached, out = price
    return (usage.input * inp + usage.cache_write * inp + usage.cache_read * cached + usage.output * out) / 1e6


@dataclass(slots=True)
class StepUsage:
    turn: int
    step: int
    usage: Usage = field(default_factory=Usage)


class UsageFold:
    """Per-step, per-turn and session token totals, plus the latest request's context use."""

    def __init__(self, prices: dict[str, tuple[float, float, float]] | None = None) -> None:
        self.prices = dict(DEFAULT_PRICES if prices is None else prices)
        self.total = Usage()
        self.cost: float = 0.0
        self.cost_known = True
        self.steps: dict[tuple[int, int], StepUsage] = {}
        self.turns: dict[int, Usage] = {}
        self.provider: str | None = None
        self.model: str | None = None
        self.effort: str | None = None
        self.context_window: int | None = None
        # billed input of the last request: what currently occupies the context window
        self.last_request_tokens: int = 0
        self._attempt_has_usage_chunk = False

    # -- folding -------------------------------------------------------------------------------
    def apply(self, event: dict[str, Any]) -> bool:
        """Fold one event; returns True when a figure changed."""
        etype = event.get("type")
        data = event.get("data") or {}
        if etype == "assistant/chunk":
            chunk = data.get("chunk") or {}
            if chunk.get("type") == "usage" and isinstance(chunk.get("usage"), dict):
                self._attempt_has_usage_chunk = True
                self._add(data, chunk["usage"])
                return True
            return False
        if etype == "assistant/message":
            had = self._attempt_has_usage_chunk
            self._attempt_has_usage_chunk = False
            usage = data.get("usage")
            if not had and isinstance(usage, dict):
                self._add(data, usage)
                return True
            return False
        if etype in ("step/start", "llm/retry-started", "compaction/end"):
            self._attempt_has_usage_chunk = False
            return False
        if etype == "request/header":
            config = ((data.get("header") or {}).get("config")) or {}
            self.provider = config.get("provider", self.provider)
            self.model = config.get("model", self.model)
            self.effort = config.get("reasoningEffort")
            return True
        if etype == "request/context":
            self.provider = data.get("provider", self.provider)
            self.model = data.get("model", self.model)
            window = data.get("contextWindow")
            self.context_window = window if isinstance(window, int) and window > 0 else None
            return True
        return False

    def _add(self, data: dict[str, Any], usage: dict[str, Any]) -> None:
        one = Usage()
        one.add(usage)
        self.total.add_usage(one)
        turn, step = _int(data.get("turn")), _int(data.get("step"))
        per_step = self.steps.get((turn, step))
        if per_step is None:
            per_step = self.steps[(turn, step)] = StepUsage(turn, step)
        per_step.usage.add_usage(one)
        self.turns.setdefault(turn, Usage()).add_usage(one)
        self.last_request_tokens = one.billed_input + one.output
        price = self.price()
        if price is None:
            self.cost_known = False
        else:
            self.cost += cost_of(one, price) or 0.0

    def merge_head(self, head: UsageFold) -> None:
        """Add the figures of a fold over the events before this one's (tail-first loading)."""
        self.total.add_usage(head.total)
        for key, step in head.steps.items():
            self.steps.setdefault(key, step)
        for turn, usage in head.turns.items():
            if turn in self.turns:
                self.turns[turn].add_usage(usage)
            else:
                self.turns[turn] = usage
        self.cost += head.cost
        self.cost_known = self.cost_known and head.cost_known
        self.provider = self.provider or head.provider
        self.model = self.model or head.model
        self.effort = self.effort or head.effort
        self.context_window = self.context_window or head.context_window
        self.last_request_tokens = self.last_request_tokens or head.last_request_tokens

    # -- figures -------------------------------------------------------------------------------
    def price(self) -> tuple[float, float, float] | None:
        return self.prices.get(self.model or "")

    def window(self) -> int:
        return self.context_window or DEFAULT_CONTEXT_WINDOW

    def context_percent(self) -> float:
        return min(100.0, 100.0 * self.last_request_tokens / self.window())

    def cost_usd(self) -> float | None:
        """USD so far; None when a request of an unpriced model was counted, or the current model has no
        price (so an unpriced session never shows $0.0000 before its first usage)."""
        if not self.cost_known or (self.model and self.price() is None):
            return None
        return self.cost


def fold_usage(events: list[dict[str, Any]], prices: dict[str, tuple[float, float, float]] | None = None) -> UsageFold:
    """Fold a whole log (cold load)."""
    fold = UsageFold(prices)
    for event in events:
        fold.apply(event)
    return fold


def format_tokens(n: int, *, m_digits: int = 2) -> str:
    """1234 -> '1.2k', 1234567 -> '1.23M' (``m_digits`` decimals of millions: the browser's 6-cell token
    column uses 1, '1.2M')."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.{m_digits}f}M"
