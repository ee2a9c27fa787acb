"""A tiny run of tests/bench/bench_titles.py proves the benchmark works (no timing asserted)."""

from __future__ import annotations

from tests.bench.bench_titles import bench_discovery, bench_first_byte


async def test_bench_titles_tiny():
    a = await bench_first_byte(2)
    assert a["rounds"] == 2 and a["title_requests"] == 2  # one per "on" round, none in the "off" ones
    b = bench_discovery(files=210, depth=20, repeats=1)
    assert b["files"] == 210 + 5 and b["instruction_files"] == 5 and b["probed_files"] == 4
