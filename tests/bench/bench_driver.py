"""Driver overhead benchmarks (run: ``.venv/bin/python tests/bench/bench_driver.py [STEPS] [CALLS]``).

1. STEPS (default 10,000) steps in one turn with a zero-latency scripted provider and a no-op tool. The
   baseline (same run) appends exactly the same events directly to a fresh Session; the difference per
   step is the driver's own overhead (target <= 1 ms/step).
2. One step streaming 20,000 one-character text deltas: the driver's cost per chunk beside direct appends.
3. CALLS (default 1,000) parallel no-op tool calls in one step: wall time of the scheduler (tool/call and
   tool/result commits included) beside a bare ``asyncio.gather`` of the same bodies.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time

from dsh_tui.llm import scripted as s
from dsh_tui.runtime import Agent, AgentConfig
from dsh_tui.session.headers import make_header
from dsh_tui.session.log import Session
from dsh_tui.tools.base import ToolDefinition


async def _noop(args, ctx):
    return "ok"


def noop_tool(parallel: bool = False) -> ToolDefinition:
    return ToolDefinition(name="noop", description="does nothing", parameters={"type": "object", "properties": {}},
                          execute=_noop, render=lambda a, v: [{"type": "text", "text": v}],
                          is_concurrency_safe=(lambda a: True) if parallel else None)


def _agent(responses: list, parallel: bool = False, cap: int = 10) -> Agent:
    session = Session(make_header("bench", cwd="/bench", created_at=1))
    provider = s.ScriptedProvider(responses, name="bench", record=False)
    config = AgentConfig(model="bench-model", cwd="/bench", runtime_context=False, preset="full-access",
                         compaction=False, max_parallel_tool_calls=cap)
    return Agent(session, provider, [noop_tool(parallel)], config=config)


async def bench_steps(steps: int) -> dict:
    responses = [s.call(f"c{i}", "noop", {}) for i in range(steps - 1)] + [s.text("done")]
    agent = _agent(responses)
    t0, c0 = time.perf_counter(), time.process_time()
    agent.followup("go")
    await agent.wait_idle()
    driver, driver_cpu = time.perf_counter() - t0, time.process_time() - c0
    events = agent.session.events
    assert sum(1 for e in events if e["type"] == "step/start") == steps
    assert events[-1]["data"]["reason"] == {"kind": "completed"}
    fresh = Session(make_header("baseline", cwd="/bench", created_at=1))
    t0, c0 = time.perf_counter(), time.process_time()
    for e in events:
        fresh.append(e["type"], e["data"], surface_op=e.get("surfaceOp"), source_event_seqs=e.get("sourceEventSeqs"))
    baseline, baseline_cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"steps": steps, "events": len(events), "driver_s": driver, "baseline_s": baseline,
            "overhead_ms_per_step": (driver - baseline) * 1000 / steps, "ratio": driver / baseline,
            "driver_cpu_s": driver_cpu, "baseline_cpu_s": baseline_cpu,
            "overhead_cpu_ms_per_step": (driver_cpu - baseline_cpu) * 1000 / steps}


async def bench_parallel(calls: int) -> dict:
    agent = _agent([s.calls([(f"c{i}", "noop", {}) for i in range(calls)]), s.text("done")], parallel=True,
                   cap=calls)
    t0, c0 = time.perf_counter(), time.process_time()
    agent.followup("go")
    await agent.wait_idle()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    results = [e for e in agent.session.events if e["type"] == "tool/result"]
    assert len(results) == calls and [r["data"]["message"]["source"]["callId"] for r in results] == \
        [f"c{i}" for i in range(calls)]
    t0 = time.perf_counter()
    await asyncio.gather(*(_noop({}, None) for _ in range(calls)))
    gather = time.perf_counter() - t0
    return {"calls": calls, "wall_s": wall, "cpu_s": cpu, "gather_s": gather, "ratio": wall / gather}


async def bench_stream(chunks: int) -> dict:
    """One step streaming ``chunks`` text deltas: per-chunk cost of the driver beside direct appends."""
    agent = _agent([s.text("x" * chunks, chunk_size=1)])
    t0, c0 = time.perf_counter(), time.process_time()
    agent.followup("go")
    await agent.wait_idle()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    events = agent.session.events
    fresh = Session(make_header("baseline", cwd="/bench", created_at=1))
    c0 = time.process_time()
    for e in events:
        fresh.append(e["type"], e["data"], surface_op=e.get("surfaceOp"), source_event_seqs=e.get("sourceEventSeqs"))
    base_cpu = time.process_time() - c0
    return {"chunks": chunks, "wall_s": wall, "cpu_s": cpu, "baseline_cpu_s": base_cpu,
            "us_per_chunk": (cpu - base_cpu) * 1e6 / chunks}


def main(argv: list[str]) -> None:
    steps = int(argv[1]) if len(argv) > 1 else 10_000
    calls = int(argv[2]) if len(argv) > 2 else 1_000
    a = asyncio.run(bench_steps(steps))
    print(f"steps: {a['steps']} steps, {a['events']} events; driver {a['driver_s']:.3f} s, direct appends "
          f"{a['baseline_s']:.3f} s (ratio {a['ratio']:.1f}x); driver overhead {a['overhead_ms_per_step']:.3f} ms/step "
          f"(target <= 1 ms/step); CPU time: driver {a['driver_cpu_s']:.3f} s, appends {a['baseline_cpu_s']:.3f} s, "
          f"overhead {a['overhead_cpu_ms_per_step']:.3f} ms/step")
    gc.collect()
    c = asyncio.run(bench_stream(20_000))
    print(f"stream: {c['chunks']} text deltas in one step: {c['cpu_s'] * 1000:.0f} ms CPU, direct appends "
          f"{c['baseline_cpu_s'] * 1000:.0f} ms; driver overhead {c['us_per_chunk']:.1f} us/chunk")
    gc.collect()
    b = asyncio.run(bench_parallel(calls))
    print(f"parallel: {b['calls']} no-op calls in one step: {b['wall_s'] * 1000:.1f} ms wall (whole turn incl. "
          f"tool/call + tool/result commits; {b['cpu_s'] * 1000:.1f} ms CPU), bare asyncio.gather "
          f"{b['gather_s'] * 1000:.2f} ms, ratio {b['ratio']:.0f}x")


if __name__ == "__main__":
    main(sys.argv)
