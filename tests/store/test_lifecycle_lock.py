"""One live writer per session across processes (fcntl lock file holding the pid)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from dsh_tui.store import lock as lk

HOLDER = textwrap.dedent(
    """
    import sys, time
    from dsh_tui.store.lock import SessionLock
    l = SessionLock(sys.argv[1], sys.argv[2]).acquire()
    print("locked", flush=True)
    sys.stdin.readline()
    l.release()
    print("released", flush=True)
    """
)


def _holder(path, sid):
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), sid], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "locked"
    return p


def test_second_process_is_refused_with_the_owner_pid(tmp_path):
    path = tmp_path / "s1" / "session.lock"
    p = _holder(path, "s1")
    try:
        with pytest.raises(lk.SessionInUseError, match=f"session s1 is in use by pid {p.pid}$"):
            lk.SessionLock(path, "s1").acquire()
        assert lk.holder(path) == p.pid
    finally:
        p.stdin.write("\n")
        p.stdin.flush()
        assert p.stdout.readline().strip() == "released"
        p.wait(10)
    assert lk.holder(path) is None
    with lk.SessionLock(path, "s1") as mine:
        assert mine.held and lk.holder(path) == os.getpid()
    assert not path.exists()


def test_sigkilled_owner_leaves_no_stale_lock(tmp_path):
    path = tmp_path / "s2.lock"
    p = _holder(path, "s2")
    p.kill()
    p.wait(10)
    with lk.SessionLock(path, "s2"):
        assert lk.holder(path) == os.getpid()


def test_same_process_second_acquire_is_refused_too(tmp_path):
    path = tmp_path / "s3.lock"
    with lk.SessionLock(path, "s3"), pytest.raises(lk.SessionInUseError, match=str(os.getpid())):
        lk.SessionLock(path, "s3").acquire()


def test_lock_file_names_are_single_safe_segments():
    assert lk.lock_file_name("session-1.a_b") == "session-1.a_b.lock"
    assert lk.lock_file_name("../x") == "..~002Fx.lock"
    assert lk.lock_file_name("..") == "~002E~002E.lock"


@pytest.mark.parametrize("sid", ["s-1.a_b", "../x", ".", "..", "é", "\U0001F600x", "a\udc80b", "a b/c", "~", "\x00"])
def test_a_lock_file_is_named_by_the_jsonl_segment_rule(sid):
    """One encodeSegment rule: the SQLite lock name of an id is its JSONL directory segment + ``.lock``."""
    from dsh_tui.store import layout

    assert lk.lock_file_name(sid) == layout.encode_segment(sid) + ".lock"
    assert lk.lock_file_name("") == "~.lock"  # the empty id has no segment
    assert lk.lock_file_name("é😀") == "~00E9~D83D~DE00.lock"
