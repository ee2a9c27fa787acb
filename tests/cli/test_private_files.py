"""#37.3: every file dsh-tui writes that holds session content is the user's alone. The catalog (the full
text of every log, a key a tool printed included), an export written with ``-o``, a copy saved for the
clipboard: 0600 files in 0700 directories, under the umask 022 a login shell has; an existing world-readable
catalog is fixed on open."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from tests.store.test_catalog_support import make_header, user_turn, write_session

REPO = Path(__file__).resolve().parents[2]


def mode(p: Path) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


def run_cli(*argv, env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dsh_tui", *[str(a) for a in argv]], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, **env), cwd=REPO,
                          preexec_fn=lambda: os.umask(0o022))


def no_world_or_group(root: Path) -> list[str]:
    return [f"{p} {oct(mode(p))}" for p in [root, *root.rglob("*")] if mode(p) & 0o077]


def test_the_catalog_and_exports_are_private(tmp_path):
    root = tmp_path / "root"
    write_session(root, make_header("s1", "/ws"), user_turn(0, 1, "the key is sk-secret", "noted"))
    cache = tmp_path / "cache"
    env = {"XDG_CACHE_HOME": str(cache), "DSH_HOME": str(tmp_path / "home")}
    p = run_cli("sessions", "--all", "--search", "secret", "--root", root, env=env)
    assert p.returncode == 0 and "s1" in p.stdout, p.stderr
    db = cache / "dsh-tui" / "catalog.sqlite"
    assert db.exists() and no_world_or_group(cache / "dsh-tui") == []

    out = tmp_path / "out.md"
    p = run_cli("export", "s1", "-o", out, "--root", root, env=env)
    assert p.returncode == 0, p.stderr
    assert "sk-secret" in out.read_text() and mode(out) == 0o600
    out.chmod(0o640)  # a file the user made readable to a group keeps the mode the user gave it
    p = run_cli("export", "s1", "-o", out, "--root", root, env=env)
    assert p.returncode == 0 and mode(out) == 0o640


def test_an_existing_world_readable_catalog_is_fixed_on_open(tmp_path):
    root = tmp_path / "root"
    write_session(root, make_header("s1", "/ws"), user_turn(0, 1, "hello", "ok"))
    cache = tmp_path / "cache"
    env = {"XDG_CACHE_HOME": str(cache), "DSH_HOME": str(tmp_path / "home")}
    assert run_cli("sessions", "--all", "--root", root, env=env).returncode == 0
    folder = cache / "dsh-tui"
    folder.chmod(0o755)
    for p in folder.glob("catalog.sqlite*"):
        p.chmod(0o644)  # as an older dsh-tui left them
    p = run_cli("sessions", "--all", "--root", root, env=env)
    assert p.returncode == 0 and "s1" in p.stdout, p.stderr
    assert no_world_or_group(folder) == [] and len(list(folder.glob("catalog.sqlite*"))) >= 1


def test_a_copy_saved_for_the_clipboard_is_private(tmp_path, monkeypatch):
    from dsh_tui.ui.clipboard import OSC52_LIMIT, copy_text

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    old = os.umask(0o022)
    try:
        msg = copy_text(object(), "x" * (OSC52_LIMIT + 1), name="tool output")
    finally:
        os.umask(old)
    folder = tmp_path / "data" / "dsh-tui" / "clipboard"
    (saved,) = folder.iterdir()
    assert str(saved) in msg and saved.read_text() == "x" * (OSC52_LIMIT + 1)
    assert mode(folder) == 0o700 and mode(saved) == 0o600


def test_private_dir_refuses_a_directory_of_another_user(tmp_path):
    import pytest

    from dsh_tui.store.fsio import private_dir

    if os.geteuid() != 0:
        pytest.skip("making a directory of another user needs root")
    d = tmp_path / "theirs"
    d.mkdir()
    os.chown(d, 12345, 12345)  # the suite runs as root; as a user this is another user's directory
    with pytest.raises(PermissionError):
        private_dir(d)
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(NotADirectoryError):
        private_dir(f)
    assert mode(private_dir(tmp_path / "a" / "b")) == 0o700
