"""Request retry (docs/runtime.md, "Provider failure codes and retry"): an ``agent/request-error`` listener.

Normal mode retries eligible codes up to ``max_retries`` per (turn, step, provider, policyKey);
always mode asks downstream first and retries anyway. Before waiting it appends ``llm/retry``
(``retryId`` reused across one sequence), waits cancellably, appends ``llm/retry-started`` and
returns ``{"kind": "retry"}``.
"""

from __future__ import annotations

import json
import random
import uuid
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dsh_tui.runtime.agent import Agent
    from dsh_tui.runtime.plugin_context import BuiltinContext


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def policy_key(policy: Any) -> str:
    key: list[Any]  # the policy's fields in a fixed order (a JSON array)
    if policy.mode == "always":
        key = ["always", _num(policy.initial_delay_ms), _num(policy.max_delay_ms), _num(policy.jitter_ratio)]
    else:
        key = ["normal", policy.max_retries, sorted(policy.retryable_codes), _num(policy.initial_delay_ms),
               _num(policy.max_delay_ms), _num(policy.jitter_ratio)]
    return json.dumps(key, separators=(",", ":"))


def local_delay_ms(policy: Any, retry: int, rng: random.Random | None = None) -> int | float:
    base = min(policy.initial_delay_ms * 2 ** (retry - 1), policy.max_delay_ms)
    j = policy.jitter_ratio
    if j:
        base = base * (rng or random).uniform(1 - j, 1 + j)
    return _num(round(min(base, policy.max_delay_ms)))


class RetryExecutor:
    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    async def on_request_error(self, payload: dict, next_: Any) -> Any:
        policy = payload.get("retryPolicy")
        signal = payload["signal"]
        if policy is None:
            return await next_()
        failure = payload["failure"]
        if policy.mode == "always":
            if signal.aborted:
                return None
            downstream = await next_()
            if isinstance(downstream, dict) and downstream.get("kind") == "retry":
                return downstream
        elif failure.get("code") not in policy.retryable_codes:
            return await next_()
        key = policy_key(policy)
        turn, step, provider = payload["turn"], payload["step"], payload["provider"]
        prior = None
        for ev in reversed(self.agent.session.events):
            if ev["type"] == "llm/retry":
                d = ev["data"]
                if d.get("turn") == turn and d.get("step") == step and d.get("provider") == provider \
                        and d.get("policyKey") == key:
                    prior = d
                    break
            elif ev["type"] == "step/start":
                break
        retry = (prior["retry"] if prior else 0) + 1
        if policy.mode != "always" and retry > policy.max_retries:
            return await next_()
        after = failure.get("providerRetryAfterMs")
        if isinstance(after, (int, float)) and after > 0 and after <= policy.max_delay_ms:
            delay = _num(after)
        elif isinstance(after, (int, float)) and after > policy.max_delay_ms and policy.mode != "always":
            return await next_()
        else:
            delay = local_delay_ms(policy, retry)
        retry_id = prior["retryId"] if prior else str(uuid.uuid4())
        data: dict[str, Any] = {"retryId": retry_id, "turn": turn, "step": step, "provider": provider,
                                "mode": policy.mode, "policyKey": key, "retry": retry}
        if policy.mode != "always":
            data["maxRetries"] = policy.max_retries
        data["delayMs"] = delay
        data["failure"] = failure
        self.agent.session.append("llm/retry", data)
        await signal.sleep(delay / 1000, self.agent.sleep)
        signal.throw_if_aborted()
        self.agent.session.append("llm/retry-started", {"retryId": retry_id, "turn": turn, "step": step,
                                                        "retry": retry})
        return {"kind": "retry"}


def apply(ctx: BuiltinContext) -> None:
    """The ``retry`` built-in: dsh's retry of failed model requests (``AgentConfig.retry``)."""
    agent = ctx.driver
    if agent.config.retry:
        ctx.on("agent/request-error", RetryExecutor(agent).on_request_error)
