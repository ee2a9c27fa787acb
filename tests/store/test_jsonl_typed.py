"""``dsh_tui/store/jsonl`` is free of mypy errors (issue #29): ``tests/test_types.py`` fails on any error beyond
``tests/mypy_baseline.txt``, and the baseline names none in this package, so none can come back unseen."""

from __future__ import annotations

from pathlib import Path

BASELINE = Path(__file__).resolve().parents[1] / "mypy_baseline.txt"


def test_the_mypy_baseline_names_no_error_in_store_jsonl():
    lines = [line for line in BASELINE.read_text(encoding="utf-8").splitlines()
             if line.startswith("dsh_tui/store/jsonl/")]
    assert lines == [], "type errors recorded in dsh_tui/store/jsonl:\n" + "\n".join(lines)
