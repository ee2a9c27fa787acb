"""§3.6 legacy import matches real dsh byte for byte: a legacy-shaped fixture written by dsh's own
persistence (``write.mjs --realize``) and decoded by dsh (``load.mjs --inspect --dump``) prints exactly
the lines ``dsh-tui log cat`` prints for the same file — imported user/assistant/tool messages included,
key order and all."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import FIXTURES
from tests.interop.conftest import dsh_peer  # noqa: F401 - the session-scoped peer fixture

pytestmark = pytest.mark.interop

WEB = FIXTURES / "apps" / "web" / "tests" / "snapshots"
CASES = [
    ("fresh-round-trip", "none"),  # legacy user/message, assistant/message (usage after content), tool/result
    ("steering", "zstd"),  # legacy steering/message besides the above
]


def _dsh_dump(peer, root) -> list[bytes]:
    proc = subprocess.run([peer.node, str(peer.dir / "load.mjs"), "--root", str(root), "--inspect", "--dump"],
                          cwd=peer.dir, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[:2000] + proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert b'"ok":true' in lines[0], lines[0]
    return lines[1:]  # the first line is the session summary; then one event per line, as dsh decoded it


@pytest.mark.parametrize(("name", "compression"), CASES)
def test_log_cat_prints_what_dsh_load_returns_for_legacy_logs(dsh_peer, tmp_path, name, compression):  # noqa: F811
    source = WEB / name / "session.jsonl"
    text = source.read_text()
    assert '"provenance"' in text and '"callId"' in text  # legacy assistant and tool-result shapes are present
    root = tmp_path / "root"
    dsh_peer.write(root, source, compression=compression, batch="9,2", realize=True, session_id="legacy",
                   cwd="/tmp/dsh-interop-cwd")
    theirs = _dsh_dump(dsh_peer, root)
    [log] = [p for p in root.rglob("session*.jsonl*") if p.parent.name == "legacy"]
    proc = subprocess.run([sys.executable, "-m", "dsh_tui", "log", "cat", str(log)], capture_output=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    ours = proc.stdout.splitlines()
    assert len(ours) == len(theirs) > 30
    imported = [i for i, line in enumerate(ours) if b"legacy-message:legacy:" in line]
    assert len(imported) >= 3  # the comparison covers imported messages, not only current-shape events
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a == b, f"line {i + 1} differs:\n ours {a[:300]!r}\n dsh  {b[:300]!r}"
