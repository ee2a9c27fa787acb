"""Hostile log files read by the store (``log check``, resume's load) and the line splitter every reader
shares (issue #37 items 2 and 9): a zstd bomb costs bounded memory, a very long line linear time, a line
over dsh's longest (536,870,888 bytes) is an unparsable line as in dsh, never a held gigabyte."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsh_tui.store.fsio import MAX_LINE_BYTES, LineSplitter, open_regular
from tests.cli.test_hostile_roots import LIMIT_AS, _zstd_log
from tests.store.test_catalog_support import make_header, user_turn, write_session

REPO = Path(__file__).resolve().parents[2]


def run_cli(*argv, env=None, timeout=60, limit_memory=True) -> subprocess.CompletedProcess:
    def pre():
        if limit_memory:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (LIMIT_AS, LIMIT_AS))

    return subprocess.run([sys.executable, "-m", "dsh_tui", *[str(a) for a in argv]], capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ, **(env or {})), cwd=REPO,
                          preexec_fn=pre)


def test_max_line_is_dsh_longest_string():
    assert MAX_LINE_BYTES == 0x1FFFFFE8 == 536_870_888  # V8's longest string: dsh cannot read a longer line


def test_the_splitter_is_linear_and_holds_one_bounded_line():
    s = LineSplitter(cap=10)
    assert s.feed(b'{"a"') == [] and s.feed(b'1}\n{x}\n{y') == [b'{"a"1}', b"{x}"] and s.first_end == 7
    assert s.feed(b"}\n") == [b"{y}"] and s.pos == 15 and s.pending == 0
    # zeros are not kept while they grow; a line over the cap comes out as OVERLONG, not held
    assert s.feed(b"\0" * 1000) == [] and s._frags == [] and s.pending == 1000
    assert s.feed(b"\n{}\n") == [LineSplitter.JUNK, b"{}"]
    assert s.feed(b"{" * 11) == [] and s._frags == []
    assert s.feed(b"}\n{z}\n" + b"[" * 11 + b"\n") == [LineSplitter.OVERLONG, b"{z}", LineSplitter.OVERLONG]
    s.skip(b"{a}\n{b")
    assert s.feed(b"}\n") == [b"{b}"]


def test_a_line_over_the_cap_is_an_unparsable_line_as_in_dsh(tmp_path):
    """dsh cannot make a string of a line over its longest: its scanner calls the line unparsable (a torn
    tail, or corruption before a later turn/end). The scanner and the catalog say the same, by name."""
    from dsh_tui.store.jsonl.scanner import LineScanner

    header = json.dumps(make_header("s", "/ws")).encode() + b"\n"
    events = user_turn(0, 1, "hi", "ok")
    body = b"".join(json.dumps(e).encode() + b"\n" for e in events)
    sc = LineScanner(header)
    sc._split = LineSplitter(cap=50)
    sc.write(body[:0] + b'{"type":"x","pad":"' + b"a" * 200 + b'"}\n' + body)
    assert len(sc.events) == 0 and "is longer than" in str(sc.issue) and "line 1" in str(sc.issue)


@pytest.mark.parametrize("bomb", ["blank-lines", "zeros"])
def test_log_check_of_a_zstd_bomb_is_bounded(tmp_path, bomb):
    """1 GB of blank lines or 2 GB of zeros in a 30-60 KB zstd log: ``log check`` says corrupt, under a
    1.5 GB address-space limit (it took 5.4-9 GB, or never ended)."""
    fill, size = {"blank-lines": (b"\n", 1 << 30), "zeros": (b"\0", 2 << 30)}[bomb]
    p = _zstd_log(tmp_path / "root", "bomb", b"", fill, size)
    r = run_cli("log", "check", p, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    row = json.loads(r.stdout)
    assert row["ok"] is False and "corrupt Zstandard session log" in row["error"]


def test_one_300_mb_event_reads_in_linear_time(tmp_path):
    """A raw log with one 300 MB event: ``log check`` and ``sessions`` read it in linear time (quadratic
    buffering took 66-68 s: the subprocess timeout would end them), and the tail preview gives up on it."""
    root = tmp_path / "root"
    events = user_turn(0, 1, "x", "ok")
    path = write_session(root, make_header("big", "/ws"), events)
    big = next(i for i, e in enumerate(events) if e["type"] == "user/message")
    text = json.dumps(events[big]).encode()
    marker = b'"x"'
    assert text.count(marker) == 1
    lines = path.read_bytes().split(b"\n")
    with open(path, "wb") as f:
        for i, line in enumerate(lines):
            if i == big + 1:
                head, tail = line.split(marker)
                f.write(head + b'"' + b"y" * (300 << 20) + b'"' + tail)
            else:
                f.write(line)
            if i < len(lines) - 1:
                f.write(b"\n")
    # the app's first paint of a long session reads its tail backwards: a line this long is left to the load
    r = subprocess.run([sys.executable, "-c", "import sys; from dsh_tui.store.tail import read_tail; "
                        "print(read_tail(sys.argv[1], 1000))", str(path)], capture_output=True, text=True,
                       timeout=60, cwd=REPO)
    assert r.returncode == 0 and r.stdout == "None\n", r.stderr
    r = run_cli("log", "check", path, limit_memory=False)
    assert r.returncode == 0 and json.loads(r.stdout)["ok"] is True, r.stdout + r.stderr
    r = run_cli("sessions", "--all", "--json", "--root", root, limit_memory=False,
                env={"XDG_CACHE_HOME": str(tmp_path / "cache"), "DSH_HOME": str(tmp_path / "home")})
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)
    assert row["id"] == "big" and row["state"] == "completed" and row["turns"] == 1


def test_open_regular_refuses_what_is_not_a_regular_file(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sparse = tmp_path / "sparse"
    with open(sparse, "wb") as f:
        f.truncate(1 << 30)
    plain = tmp_path / "plain"
    plain.write_bytes(b"x" * (32 << 20))  # large, not sparse
    for p, why in ((fifo, "a FIFO"), ("/dev/zero", "a character device"), (tmp_path, "a directory"),
                   (sparse, "a sparse file")):
        with pytest.raises(OSError) as info:
            open_regular(p)
        assert why in info.value.strerror
    with open_regular(plain) as f:
        assert f.read(3) == b"xxx"
    with open_regular(sparse, sparse_ok=True) as f:
        assert f.read(3) == b"\0\0\0"
