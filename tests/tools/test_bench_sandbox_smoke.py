"""A tiny run of tests/bench/bench_sandbox.py proves the benchmark works (no timing asserted)."""

from __future__ import annotations

import asyncio

import pytest

from dsh_tui.tools.sandbox import SandboxSettings, probe


def test_bench_sandbox_tiny():
    sandbox, note = probe(SandboxSettings(mode="bwrap"))
    if sandbox is None:
        pytest.skip(f"bubblewrap cannot run here: {note}")
    from tests.bench.bench_sandbox import bench

    out = asyncio.run(bench(2))
    assert len(out["plain"]) == len(out["boxed"]) == 2
