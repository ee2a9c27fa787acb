"""A tiny run of tests/bench/bench_mentions.py proves the benchmark works (no timing asserted)."""

from __future__ import annotations

from tests.bench.bench_mentions import bench


async def test_bench_mentions_tiny(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    r = await bench(300, tmp_path)
    assert [k for k, _ms, _n in r["keys"]] == list("@file_07")
    assert r["keys"][-1][2] == 20  # file_070..079 in 3 directories: 30 matches, 20 shown
    assert r["indexed"] == 300 + 3 * 2  # the files, pkg_*/ and pkg_*/src/; node_modules is skipped
