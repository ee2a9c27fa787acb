"""store/fsio.write_atomic: the one whole-file replace (settings, credentials, the fs tools, the CSS cache)."""

from __future__ import annotations

import os

import pytest

from dsh_tui.store.fsio import write_atomic


def test_replace_create_only_and_modes(tmp_path):
    p = tmp_path / "deep" / "f.txt"  # the directory is made
    write_atomic(p, b"one", mode=0o600)
    assert p.read_bytes() == b"one" and (os.stat(p).st_mode & 0o777) == 0o600
    write_atomic(p, b"two", mode=0o640)
    assert p.read_bytes() == b"two" and (os.stat(p).st_mode & 0o777) == 0o640
    with pytest.raises(FileExistsError):
        write_atomic(p, b"three", create_only=True)
    assert p.read_bytes() == b"two"
    write_atomic(tmp_path / "deep" / "g.txt", b"new", create_only=True, fsync=False)
    assert sorted(x.name for x in p.parent.iterdir()) == ["f.txt", "g.txt"]  # no temporary file left


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    p = tmp_path / "f.txt"
    p.write_bytes(b"old")
    with pytest.raises(TypeError):
        write_atomic(p, "not bytes")  # type: ignore[arg-type]
    assert p.read_bytes() == b"old" and [x.name for x in tmp_path.iterdir()] == ["f.txt"]
