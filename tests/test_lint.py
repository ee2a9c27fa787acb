"""ruff is part of the suite: a lint error fails the tests like any other defect."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_ruff_clean():
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    out = subprocess.run([ruff, "check", "--no-cache", str(REPO)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
