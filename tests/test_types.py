"""The type checker is part of the suite (issue #28): mypy on ``dsh_tui`` (configured in pyproject.toml) may
report only errors already recorded in ``tests/mypy_baseline.txt``. A change that adds one fails here with
the new error named; a change that removes some passes and says so (re-record with
``python tests/test_types.py --record`` so the count can only go down)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BASELINE = REPO / "tests" / "mypy_baseline.txt"
LINE = re.compile(r"^(?P<file>[^:]+):\d+(?::\d+)?: error: (?P<message>.*)$")


def mypy_errors() -> list[str]:
    """Each error as ``file: message [code]`` (line numbers left out, so that moving code is not a change)."""
    out = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", "--no-pretty",
                          "--hide-error-context", "--no-color-output"],
                         cwd=REPO, capture_output=True, text=True, timeout=900)
    errors = []
    for line in out.stdout.splitlines():
        m = LINE.match(line)
        if m:
            errors.append(f"{m['file']}: {m['message']}")
    assert out.returncode in (0, 1) and (errors or out.returncode == 0), out.stdout[-2000:] + out.stderr[-2000:]
    return sorted(errors)


def test_mypy_reports_no_error_beyond_the_baseline(capsys):
    now = Counter(mypy_errors())
    recorded = Counter(line for line in BASELINE.read_text(encoding="utf-8").splitlines() if line.strip())
    added = now - recorded
    with capsys.disabled():
        print(f"\nmypy: {sum(now.values())} errors (baseline {sum(recorded.values())})")
        if sum(now.values()) < sum(recorded.values()):
            print("  fewer than recorded: re-record with `python tests/test_types.py --record`")
    assert not added, "new type errors:\n" + "\n".join(sorted(added.elements()))


#: Packages held at zero type errors: the baseline may name none of their files.
CLEAN = ("dsh_tui/cli/", "dsh_tui/tools/", "dsh_tui/llm/", "dsh_tui/runtime/mcp/", "dsh_tui/extensions/mcp/")


def test_the_clean_packages_stay_free_of_type_errors():
    recorded = [line for line in BASELINE.read_text(encoding="utf-8").splitlines() if line.startswith(CLEAN)]
    assert not recorded, "type errors recorded in a package held at zero:\n" + "\n".join(recorded)


if __name__ == "__main__":
    if sys.argv[1:] == ["--record"]:
        BASELINE.write_text("\n".join(mypy_errors()) + "\n", encoding="utf-8")
        print(f"recorded {len(BASELINE.read_text().splitlines())} errors in {BASELINE}")
