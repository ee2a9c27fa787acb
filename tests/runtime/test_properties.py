"""Property test (runtime spec 9, "properties.spec.ts"): any burst of sends in one tick drains in one go.

For a random mix of followup / steer / inject sent synchronously while idle: one drain (status trace
running, idle), contiguous turn numbers, every message entered exactly once, next-step input entered
before the next-turn prompt of the same claim (C2), and every request equals the log's projection.
"""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_tui.llm import scripted as s
from tests.runtime.helpers import make_agent, of_type, texts


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["followup", "steer", "inject"]), min_size=1, max_size=8))
def test_burst_of_sends_drains_once(kinds):
    async def scenario():
        agent = make_agent(fallback=lambda req: s.text("ok"))
        for i, kind in enumerate(kinds):
            getattr(agent, kind)(f"{kind}-{i}")
        await asyncio.wait_for(agent.wait_idle(), 10)
        return agent

    agent = asyncio.run(scenario())
    wakes = [k for k in kinds if k != "inject"]
    entered = [texts(e["data"]) for e in of_type(agent, "user/message")]
    if not wakes:
        assert agent.statuses == [] and entered == []
        return
    assert agent.statuses == ["running", "idle"]
    assert sorted(entered) == sorted(f"{k}-{i}" for i, k in enumerate(kinds))
    turns = [e["data"]["turn"] for e in of_type(agent, "turn/start")]
    assert turns == list(range(1, len(turns) + 1))
    assert turns == [e["data"]["turn"] for e in of_type(agent, "turn/end")]
    # the first waking send opens turn 1 synchronously; each later followup gets its own turn, while later
    # steers and injects join turn 1 at its next step boundary
    assert len(turns) == kinds.count("followup") + (1 if wakes[0] == "steer" else 0)
    assert all(e["data"]["reason"] == {"kind": "completed"} for e in of_type(agent, "turn/end"))
    followups = [t for t in entered if t.startswith("followup")]
    assert followups == sorted(followups, key=lambda t: int(t.split("-")[1]))  # send order
    # whatever enters at one step boundary: next-step input (FIFO) precedes the next-turn prompt (C2)
    step_batches: list[list[str]] = []
    for e in agent.session.events:
        if e["type"] == "step/start":
            step_batches.append([])
        elif e["type"] == "user/message":
            step_batches[-1].append(texts(e["data"]))
    for batch in step_batches:
        kinds_in = [t.split("-")[0] for t in batch]
        assert kinds_in.count("followup") <= 1
        if "followup" in kinds_in:
            assert kinds_in[-1] == "followup"
