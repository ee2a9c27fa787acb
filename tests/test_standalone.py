"""A fresh clone is self-contained: no tracked file reaches for a sibling ``shared/`` directory.

The recorded dsh logs, the corpus inventory, the SQLite DDL and the interop peer all live under ``tests/``;
a person who clones the repository has nothing beside it, so a path outside the repository is a bug.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import FIXTURES, INTEROP, INVENTORY, REPO

# Built from parts so that this file does not match its own search.
NEEDLES = ("../" + "shared", "DSH_TUI_" + "SHARED", "/work/" + "shared")
SKIP_DIRS = {".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis", ".ruff_cache", "node_modules"}


def _tracked_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, timeout=60)
        names = [n for n in out.stdout.decode().split("\0") if n]
        if names:
            return [REPO / n for n in names]
    except (OSError, subprocess.SubprocessError):
        pass
    # not a git checkout (an unpacked archive): every file below the repository
    return [p for p in REPO.rglob("*") if p.is_file() and not SKIP_DIRS.intersection(p.relative_to(REPO).parts)]


def test_no_tracked_file_reaches_outside_the_repository():
    offenders = []
    files = _tracked_files()
    assert len(files) > 300  # the corpus alone is hundreds of files: the listing really ran
    for path in files:
        if not path.is_file():
            continue
        data = path.read_bytes()
        for needle in NEEDLES:
            if needle.encode() in data:
                offenders.append(f"{path.relative_to(REPO)}: {needle}")
    assert offenders == []


def test_the_data_the_tests_read_is_in_the_repository():
    for path in (FIXTURES, INVENTORY, INTEROP):
        assert path.resolve().is_relative_to(REPO)
    assert (FIXTURES / "LICENSE").read_text().startswith("MIT")
    assert (INTEROP / "package-lock.json").is_file() and (INTEROP / "package.json").is_file()
    for script in ("lib.mjs", "load.mjs", "write.mjs"):
        assert (INTEROP / script).is_file()
    assert len(list(FIXTURES.rglob("*.jsonl"))) >= 128
