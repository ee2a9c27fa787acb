"""Hostile files in a session root (issues #35 item 5, #37 items 2, 9 and 12): a FIFO named
``session.jsonl``, a symlink to ``/dev/zero``, a 3 GB sparse file, a zstd bomb, a chmod-000 log. Each is
listed as unreadable with its reason, at once and in bounded memory, and every other session of the root
still lists, resumes, exports and forks. Real files, real subprocesses (a hang shows as the subprocess
timeout, never as a stuck suite)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from tests.llm.sse_server import ScriptServer, chunk, sse_reply
from tests.store.test_catalog_support import make_header, user_turn, write_session

REPO = Path(__file__).resolve().parents[2]
LIMIT_AS = 1_500 << 20  # address space for the child: a 2-5 GB bomb read whole dies of MemoryError


def run_cli(*argv, env=None, cwd=None, timeout=60, limit_memory=True) -> subprocess.CompletedProcess:
    def pre():
        if limit_memory:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (LIMIT_AS, LIMIT_AS))

    return subprocess.run([sys.executable, "-m", "dsh_tui", *[str(a) for a in argv]], capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ, **(env or {})), cwd=cwd or REPO,
                          preexec_fn=pre)


def hostile(root: Path, name: str, log: str = "session.jsonl") -> Path:
    d = root / "--hostile--" / name
    d.mkdir(parents=True)
    return d / log


def make_fifo(root: Path) -> Path:
    p = hostile(root, "fifo")
    os.mkfifo(p)
    return p


def make_dev_zero(root: Path) -> Path:
    p = hostile(root, "zero")
    p.symlink_to("/dev/zero")
    return p


def make_sparse(root: Path) -> Path:
    p = hostile(root, "sparse")
    with open(p, "wb") as f:
        f.truncate(3 << 30)  # 3 GB of zeros, no newline, nothing on disk
    return p


KINDS = {"fifo": (make_fifo, "a FIFO (named pipe), not a regular file"),
         "dev-zero": (make_dev_zero, "a character device, not a regular file"),
         "sparse": (make_sparse, "a sparse file")}


@pytest.fixture
def env(tmp_path):
    return {"XDG_CACHE_HOME": str(tmp_path / "cache"), "DSH_HOME": str(tmp_path / "home"),
            "DEEPSEEK_API_KEY": "sk-test"}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_hostile_session_jsonl_is_listed_unreadable_and_the_others_work(tmp_path, env, kind):
    root = tmp_path / "root"
    ws = tmp_path / "ws"
    ws.mkdir()
    write_session(root, make_header("good-1", str(ws)), user_turn(0, 1, "hello lemons", "ok"))
    write_session(root, make_header("good-2", str(ws), createdAt=5), user_turn(0, 1, "hello pears", "fine"))
    make, reason = KINDS[kind]
    bad = make(root)

    p = run_cli("sessions", "--all", "--json", "--root", root, env=env)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert {r["id"] for r in rows if r["state"] != "unreadable"} == {"good-1", "good-2"}
    (row,) = [r for r in rows if r["state"] == "unreadable"]
    assert reason in row["reason"] and row["path"] == str(bad)

    # the other sessions: export, fork, resume by id, --last and path; the hostile one by its id says why
    p = run_cli("export", "good-1", "--root", root, env=env)
    assert p.returncode == 0 and "hello lemons" in p.stdout, p.stderr
    p = run_cli("fork", "good-2", "--root", root, env=env)
    assert p.returncode == 0, p.stderr
    with ScriptServer() as srv:
        e = dict(env, DEEPSEEK_BASE_URL=srv.base_url)
        for target in (["good-1"], ["--last"], [str(next(root.rglob("good-1/session.jsonl")))]):
            srv.push(sse_reply(chunk("again"), chunk(finish="stop")))
            p = run_cli("resume", *target, "--headless", "more?", "--root", root, env=e, cwd=ws)
            assert p.returncode == 0 and "again" in p.stdout, (target, p.stderr)
    p = run_cli("export", bad.parent.name, "--root", root, env=env)
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and reason in p.stderr, p.stderr


def test_the_catalog_index_of_a_hostile_root_never_opens_a_fifo(tmp_path):
    """In process: the catalog's scan, listing and index (the browser's path) over a FIFO, a device and a
    sparse file return at once (a blocking open would hang this test until the pytest timeout)."""
    from tests.store.test_catalog_support import cat

    root = tmp_path / "root"
    write_session(root, make_header("good-1", "/ws"), user_turn(0, 1, "hello", "ok"))
    for make, _ in KINDS.values():
        make(root)
    os.mkfifo(next(root.rglob("good-1")) / "session.lock")  # a FIFO where the lock file goes
    c = cat(root, tmp_path)
    listed = c.listing()
    rows = c.refresh()
    assert len(listed) == len(rows) == 4
    by = {r.path.split(os.sep)[-2]: r for r in rows}
    assert by["good-1"].state == "completed"
    for name, (_, reason) in zip(("fifo", "zero", "sparse"), KINDS.values()):
        assert by[name].state == "unreadable" and reason in by[name].reason, by[name]


def _zstd_log(root: Path, sid: str, head: bytes, fill: bytes, size: int) -> Path:
    """A real zstd log whose body frame decodes to ``head`` then ``size`` bytes of ``fill`` (a bomb: a few KB
    on disk), compressed a piece at a time."""
    header = json.dumps(make_header(sid, "/ws"), separators=(",", ":")).encode() + b"\n"
    c = zstandard.ZstdCompressor(write_checksum=True)
    body = c.compressobj()
    parts = [c.compress(header), body.compress(head)]
    piece = fill * ((16 << 20) // len(fill))
    for _ in range(size // len(piece)):
        parts.append(body.compress(piece))
    parts.append(body.flush())
    p = hostile(root, sid, "session.jsonl.zstd")
    p.write_bytes(b"".join(parts))
    return p


@pytest.mark.parametrize("bomb", ["blank-lines", "zeros", "one-long-line"])
def test_a_zstd_bomb_is_unreadable_in_bounded_memory(tmp_path, env, bomb):
    """A few KB of zstd holding 1-2 GB of blank lines, of zeros, or one line over dsh's longest: ``sessions``
    lists it as unreadable and the others are still listed and exported, under a 1.5 GB address-space limit
    (reading the bomb whole took 2-9 GB)."""
    root = tmp_path / "root"
    for sid in ("good-1", "good-2"):
        write_session(root, make_header(sid, "/ws"), user_turn(0, 1, f"hello {sid}", "ok"), zstd=True)
    head, fill, size = {"blank-lines": (b"", b"\n", 1 << 30), "zeros": (b"", b"\0", 2 << 30),
                        "one-long-line": (b'{"type":"turn/start","seq":0,"time":0,"data":{"x":"', b"a", 600 << 20)}[bomb]
    bad = _zstd_log(root, "bomb", head, fill, size)
    assert bad.stat().st_size < 1 << 20
    p = run_cli("sessions", "--all", "--json", "--root", root, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    rows = {r["path"]: r for r in json.loads(p.stdout)}
    assert {r["id"] for r in rows.values() if r["state"] != "unreadable"} == {"good-1", "good-2"}
    assert rows[str(bad)]["state"] == "unreadable", rows[str(bad)]
    p = run_cli("export", "good-1", "--root", root, env=env, timeout=120)
    assert p.returncode == 0 and "hello good-1" in p.stdout, p.stderr
    p = run_cli("export", "bomb", "--format", "jsonl", "--root", root, env=env, timeout=120)
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr


def test_a_non_utf8_session_directory_reads_alike_everywhere(tmp_path, env):
    """#37.12: ``log check`` called it ok while ``sessions``, ``resume`` and ``fork`` call it unreadable
    (docs/cli.md promises they agree): now every command names the same reason, and by id too."""
    root = tmp_path / "root"
    write_session(root, make_header("good-1", "/ws"), user_turn(0, 1, "hello", "ok"))
    bad = root / "--proj--" / os.fsdecode(b"sess\xff")
    bad.mkdir(parents=True)
    log = bad / "session.jsonl"
    log.write_text('{"type":"session","version":0,"id":"badname","createdAt":1,"delegationDepth":0}\n')
    why = "its file name is not valid UTF-8"
    p = run_cli("log", "check", log, env=env)
    row = json.loads(p.stdout)
    assert p.returncode == 1 and row["ok"] is False and why in row["error"] and "sess\\xff" in row["error"]
    p = run_cli("sessions", "--all", "--root", root, env=env)
    assert p.returncode == 0 and f"unreadable: {why}" in p.stdout and "good-1" in p.stdout, p.stderr
    for argv in (["resume", "badname", "--headless", "hi"], ["fork", "badname"], ["export", "badname"],
                 ["resume", log, "--headless", "hi"]):
        p = run_cli(*argv, "--root", root, env=env)
        assert p.returncode == 1 and p.stderr.count("\n") == 1 and why in p.stderr, (argv, p.stderr)


def test_a_chmod_000_log_is_reported_alike_by_id_and_by_path(tmp_path, env):
    """#37.12: a log the user cannot read said "no session" by id but "cannot read: Permission denied" by
    path. Run without the permission bypass (the suite runs as root)."""
    from tests.cli.test_no_traceback import run_sub, unprivileged_works

    if not unprivileged_works(tmp_path):
        pytest.fail("cannot drop CAP_DAC_OVERRIDE here: the permission test would not test anything")
    root = tmp_path / "root"
    write_session(root, make_header("good-1", "/ws"), user_turn(0, 1, "hello", "ok"))
    locked = write_session(root, make_header("locked-1", "/ws"), user_turn(0, 1, "secret", "ok"))
    locked.chmod(0)
    try:
        for ident in ("locked-1", locked):
            for cmd in ("fork", "export"):
                p = run_sub(cmd, ident, "--root", root, env=env, unprivileged=True)
                assert p.returncode == 1 and p.stderr.count("\n") == 1, p.stderr
                assert p.stderr.endswith("is unreadable: cannot read: Permission denied\n"), (ident, p.stderr)
        p = run_sub("sessions", "--all", "--root", root, env=env, unprivileged=True)
        assert p.returncode == 0 and "good-1" in p.stdout and "cannot read: Permission denied" in p.stdout
    finally:
        locked.chmod(0o644)
