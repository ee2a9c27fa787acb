"""The catalog benchmark runs (tiny size) and its figures are consistent."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_catalog.py"


def test_bench_catalog_tiny(capsys):
    spec = importlib.util.spec_from_file_location("bench_catalog", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.main(["--sessions", "20", "--big", "1", "--big-events", "1500"])
    assert out["rows_listed"] == 20
    assert out["first_paint_rows_not_indexed"] == 0  # the warm open painted the snapshot's facts
    assert out["events"] > 1500
    for key in ("cold_sessions_per_s", "cold_MB_per_s", "warm_scan_ms", "search_p95_ms", "filter_p95_ms",
                "warm_open_to_first_paint_ms", "baseline_optionlist_first_paint_ms", "ratio_cold_build_to_read_all"):
        assert out[key] > 0, key
    assert out["catalog_made_open_ms"] > 0 and out["baseline_warm_catalog_open_ms"] > 0
    assert out["warm_open_imports_sqlite_utils"] is False
    assert "warm_open_to_first_paint_ms" in capsys.readouterr().out
