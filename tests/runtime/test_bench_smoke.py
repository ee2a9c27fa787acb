"""A tiny run of tests/bench/bench_driver.py proves the benchmark works (no timing asserted)."""

from __future__ import annotations

from tests.bench.bench_driver import bench_parallel, bench_steps, bench_stream


async def test_bench_driver_tiny():
    a = await bench_steps(30)
    assert a["steps"] == 30 and a["events"] > 30 * 5
    b = await bench_parallel(25)
    assert b["calls"] == 25
    c = await bench_stream(50)
    assert c["chunks"] == 50
