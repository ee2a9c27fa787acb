"""The session benchmark runs (tiny sizes); figures are printed, never asserted (no wall-clock asserts)."""

from __future__ import annotations

from tests.bench import bench_session


def test_bench_session_small_run(capsys):
    assert bench_session.main(["--small"]) == 0
    out = capsys.readouterr().out
    for needle in ("append (validated, in memory)", "per-append cost at", "derive_messages() (O(1) snapshot)", "seed validation", "pack_batch"):
        assert needle in out
