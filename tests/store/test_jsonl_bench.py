"""The load benchmark runs end to end at a tiny size (the real run is tests/bench/bench_load.py)."""

from __future__ import annotations

import subprocess
import sys

from dsh_tui.store import jsonl
from tests.conftest import REPO


def test_bench_generator_writes_a_valid_log(tmp_path):
    sys.path.insert(0, str(REPO / "tests" / "bench"))
    try:
        import bench_load
    finally:
        sys.path.remove(str(REPO / "tests" / "bench"))
    raw, zst, n = bench_load.generate(tmp_path / "raw", tmp_path / "zstd", 1500)
    assert n >= 1500
    for root, comp in ((tmp_path / "raw", "none"), (tmp_path / "zstd", "zstd")):
        res = jsonl.JsonlStore(root, comp).inspect(bench_load.SESSION_ID)
        assert len(res.events) == n and not res.repaired
        assert res.session is None  # inspect validates without keeping a Session; load keeps one
        assert jsonl.JsonlStore(root, comp).load(bench_load.SESSION_ID).session.last_turn == -(-n // 104)
    assert raw.read_bytes().count(b"-chunks") > 0


def test_bench_script_runs(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(REPO / "tests" / "bench" / "bench_load.py"), "--events", "3000", "--repeat", "1",
         "--no-dsh", "--keep", str(tmp_path / "b")],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "orjson.loads per line" in out and out.count("dsh-tui inspect") == 2
    assert "of baseline" in out and "peak RSS" in out
