"""The provider benchmark runs end to end at a tiny size (the real run is tests/bench/bench_provider.py)."""

from __future__ import annotations

import importlib.util

from tests.conftest import REPO


def _bench():
    spec = importlib.util.spec_from_file_location(
        "bench_provider", REPO / "tests" / "bench" / "bench_provider.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bench_provider_tiny(capsys):
    result = _bench().main(["--chunks", "500", "--repeats", "1", "--latency-runs", "2"])
    # 500 text deltas + block-start + block-end + usage + finish; the baseline sees every SSE line.
    assert result["adapter_chunks"] == 504
    assert result["baseline_lines"] == 2 * 502
    assert result["ratio"] > 0 and result["cpu_ratio"] > 0
    out = capsys.readouterr().out
    assert "adapter / baseline cost" in out and "first chunk" in out
