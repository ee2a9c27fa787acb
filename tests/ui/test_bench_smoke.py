"""Tiny-size run of the UI streaming benchmark: proves it works (no timing assertions)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_ui_stream.py"


async def test_stream_bench_runs_and_drains_the_whole_answer():
    spec = importlib.util.spec_from_file_location("bench_ui_stream", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    result = await bench.measure(200, 0.5)
    assert set(result) >= {"lag_p99", "backlog_p99", "echo_p95", "drain_ms", "flushes"}
    assert result["flushes"] >= 1 and result["drain_ms"] >= 0


def test_long_session_bench_child_opens_a_tiny_session_tail_first(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_ui_long", BENCH.parent / "bench_ui_long.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    events = bench.make_session(tmp_path, 60, 130)  # 30 turns, ~8k events: more than the 6k-event tail
    out = bench.spawn("long", str(tmp_path), "tail")
    assert out["events"] == events and out["last_turn"] == 30
    assert out["first_paint"] <= out["head_folded"] and out["mounted_views"] > 0


def test_long_session_bench_counts_to_the_frame_that_shows_the_latest_turn(tmp_path):
    """``--instructions`` for the long session: the child stops at the first frame showing the latest turn
    (the frame after the attach can still show an empty transcript), the full load held back, and prints
    nothing (valgrind counts up to there)."""
    import os
    import subprocess
    import sys

    spec = importlib.util.spec_from_file_location("bench_ui_long", BENCH.parent / "bench_ui_long.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.make_session(tmp_path / "root", 60, 130)  # 30 turns, tail first
    frame = tmp_path / "frame.txt"
    env = {**bench.child_env(), "DSH_BENCH_FIRST_FRAME_EXIT": "1", "DSH_BENCH_FRAME_OUT": str(frame)}
    proc = subprocess.run([sys.executable, str(BENCH.parent / "bench_ui_long.py"), "--child", "long", "0",
                           str(tmp_path / "root"), "tail"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "{" not in proc.stdout  # stopped at the paint: no echo, no full load
    assert "Question 30:" in frame.read_text()
    assert os.environ.get("DSH_BENCH_FIRST_FRAME_EXIT") is None


async def test_subagents_bench_runs_parallel_children_over_http():
    """A tiny run of tests/bench/bench_subagents.py (3 children, short streams): every child answers over
    the real HTTP server and the parent's turn completes; no timing asserted."""
    spec = importlib.util.spec_from_file_location("bench_subagents", BENCH.parent / "bench_subagents.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    result = await bench.measure(children=3, chunks=5, delay=0.001)
    assert set(result) >= {"alone_s", "parallel_s", "ratio", "echo_p95"}
    assert result["alone_s"] > 0 and result["parallel_s"] > 0
