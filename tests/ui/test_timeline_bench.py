"""The timeline benchmark runs (tiny size) and its figures are consistent."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_timeline.py"


def test_bench_timeline_tiny():
    spec = importlib.util.spec_from_file_location("bench_timeline", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.main(["--events", "1500"])
    assert out["events"] >= 1400 and out["turns"] > 10
    assert out["filter_rows"] == 2 * out["turns"]  # one tool/call + one tool/result per turn
    assert 0 < out["first_paint_rows_rendered"] <= 200  # only the visible rows are formatted
    for key in ("rows_to_first_paint_ms", "scroll_1000_p95_ms", "screen_memory_MB", "baseline_lineview_strings_MB"):
        assert out[key] > 0, key
