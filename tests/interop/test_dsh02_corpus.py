"""The dsh 0.2 corpus (``tests/fixtures/dsh02``): format v4 logs written by the real dsh 0.2. dsh-tui does
not read v4 yet; until it does, every command that meets one says so in one line, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from tests.conftest import REPO

CORPUS = REPO / "tests" / "fixtures" / "dsh02"
LOGS = sorted(CORPUS.rglob("session.v4.jsonl.zstd"))


def test_the_corpus_holds_v4_logs_of_every_scenario():
    scenarios = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())
    assert len(scenarios) >= 19
    for name in scenarios:
        logs = list((CORPUS / name).rglob("session.v4.jsonl.zstd"))
        assert logs, name
        for log in logs:
            with zstandard.ZstdDecompressor().stream_reader(log.open("rb")) as reader:
                lines = reader.read().decode().splitlines()
            header = json.loads(lines[0])
            assert header["type"] == "session" and header["version"] == 4
            assert log.parent.name == header["id"] or header.get("parentSession")  # a child's dir is its parent's
            assert [json.loads(x)["seq"] for x in lines[1:]] == list(range(len(lines) - 1))


@pytest.mark.parametrize("log", LOGS[:4], ids=lambda p: p.parts[-5])
def test_log_check_refuses_a_v4_log_in_one_line(log: Path):
    out = subprocess.run([sys.executable, "-m", "dsh_tui", "log", "check", str(log)], capture_output=True,
                         text=True, timeout=60, cwd=REPO)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "session format version 4 was written by a newer harness" in json.loads(out.stdout)["error"]
