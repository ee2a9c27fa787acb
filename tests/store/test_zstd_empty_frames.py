"""A zstd log with empty frames (a header-only log from ``encode_materialization``, an empty append between
real ones) loads: python-zstandard's batch decoder corrupts the heap on a zero-size frame, so such batches
are decoded frame by frame. Each case runs in a child process: the old failure was an abort, not an error."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.conftest import REPO

CHILD = textwrap.dedent("""
    import sys, uuid
    from pathlib import Path
    from dsh_tui.session.headers import make_header
    from dsh_tui.store import jsonl, zstdframes
    path, n_events, empties = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    zstdframes.BATCH_BYTES = 64  # many batches: the threaded batch path runs too
    header = make_header(str(uuid.uuid4()), cwd="/tmp", created_at=1)
    events = [{"type": "user/message", "seq": i, "time": 1, "data": {"message": {"id": f"m{i}", "role": "user",
               "content": [{"type": "text", "text": f"hello {i}"}], "source": {"kind": "user"}}},
               "surfaceOp": "append"} for i in range(n_events)]
    data = zstdframes.compress_frame(jsonl.header_line(header))
    for ev in events:
        data += jsonl.encode_batch([ev], "zstd", True)
        for _ in range(empties):
            data += zstdframes.compress_frame(b"")
    if not events:
        data += jsonl.encode_batch([], "zstd", True)
    path.write_bytes(data)
    loaded = jsonl.scan_file(path)
    print(len(loaded.events), loaded.torn)
""")


@pytest.mark.parametrize(("n_events", "empties"), [(0, 0), (3, 1), (40, 2)])
def test_empty_zstd_frames_decode(tmp_path, n_events, empties):
    path = tmp_path / "session.jsonl.zstd"
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path), str(n_events), str(empties)],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == [str(n_events), "None"]
