"""Full disk, for real: a subprocess lowers its own RLIMIT_FSIZE so the next write fails with EFBIG.

The append fails with a clear error, the log stays at its last committed length (SQLite: the database
file and its committed content unchanged), and once the limit is lifted the same writer persists the
failed batch and the session continues.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.store import crash_child as cc

SCRIPT = textwrap.dedent(
    """
    import json, os, random, resource, signal, sys
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG instead of being killed
    from dsh_tui.session.headers import make_header
    from dsh_tui.store import lifecycle
    from dsh_tui.store.writer import WriterError
    from tests.store import crash_child as cc

    root, backend = sys.argv[1], sys.argv[2]
    store = cc.open_backend(root, backend)
    header = make_header("full", cwd="/work/full", created_at=1)
    session, writer = lifecycle.start(store, header, window_ms=60_000)
    rng = random.Random(1)
    cc.scripted_turn(session, 1, rng, first=True)
    writer.flush()

    def sizes():
        out = {}
        for d, _, files in os.walk(root):
            for f in files:
                p = os.path.join(d, f)
                out[os.path.relpath(p, root)] = os.path.getsize(p)
        return out

    before = sizes()
    committed = store.read_from("full", 0)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (max(before.values()) + 2048, hard))
    cc.begin_turn(session, 2, rng.randbytes(200_000).hex(), rng)  # a big prompt (incompressible enough)
    try:
        writer.flush()
        error = None
    except WriterError as err:
        error = str(err)
    during = sizes()
    unchanged = store.read_from("full", 0) == committed
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    cc.end_step(session, 2, 1)
    cc.end_turn(session, 2)
    writer.close()
    print(json.dumps({"error": error, "before": before, "during": during, "unchanged": unchanged,
                      "total": len(session.events), "committed": len(committed)}))
    """
)


@pytest.mark.parametrize("backend", ["none", "zstd", "sqlite"])
def test_full_disk_append_fails_cleanly_and_the_session_continues(tmp_path, backend):
    root = tmp_path / "root"
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(root), backend], capture_output=True, text=True,
                         cwd=str(cc.CHILD_REPO), timeout=120)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["error"] and "could not persist events" in r["error"]
    assert "\n" not in r["error"]
    assert r["unchanged"]
    if backend == "sqlite":
        assert r["during"]["sessions.sqlite"] == r["before"]["sessions.sqlite"]
    else:
        (log,) = [k for k in r["before"] if k.endswith((".jsonl", ".zstd"))]
        assert r["during"][log] == r["before"][log]  # rolled back to the last committed length
    store = cc.open_backend(str(root), backend)
    res = store.load("full")
    assert len(res.events) == r["total"] and res.closers == []
    assert res.events[r["committed"]]["type"] == "agent/inbox/spliced"
    assert res.events[-1]["data"] == {"turn": 2, "reason": {"kind": "completed"}}
