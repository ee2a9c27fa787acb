"""A tiny run of tests/bench/bench_mcp.py proves the benchmark works (no timing asserted)."""

from __future__ import annotations

from tests.bench.bench_mcp import bare_calls, harness_calls


async def test_bench_mcp_tiny():
    assert len(await bare_calls(3)) == 3
    out = await harness_calls(3)
    assert out["calls"] == 3 and len(out["times"]) == 3
