"""Spill files live in a directory private to the user (``$TMPDIR/dsh-tui-<uid>``, 0700): one planted in the
shared temp directory by another user (their own directory, or a symlink to one) is never used, and a
result that cannot be saved is cut all the same and says so."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from dsh_tui.llm import scripted as s
from dsh_tui.tools import common
from tests.runtime.helpers import make_agent, make_tool, of_type, run_followup, texts

BIG = "A" * 3000 + "B" * 3000
OTHER_UID = 54321


@pytest.fixture
def shared_tmp(tmp_path, monkeypatch):
    """``tempfile.gettempdir()`` is a fresh shared directory (sticky, world-writable, as /tmp)."""
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    monkeypatch.setattr(common, "_PRIVATE", {})
    return shared


async def _spilled(tmp_path) -> tuple[str, Path]:
    async def body(args, ctx):
        return BIG

    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    agent = make_agent([s.call("c1", "big", {}), s.text("ok")], [make_tool("big", body)], max_inline_bytes=800,
                       cwd=str(ws))  # no spill_dir: the default one
    await run_followup(agent, "go")
    text = texts(of_type(agent, "tool/result")[0]["data"]["message"]["content"][0])
    assert len(text.encode()) <= 800 and "(Omitted " in text, text
    return text, Path(text.split("stored at: ")[1].split(". Use read")[0])


def _private_chain(path: Path, top: Path) -> None:
    """Every directory from ``path``'s up to ``top`` (excluded) is ours and closed to others."""
    for parent in path.parents:
        if parent == top:
            return
        st = os.lstat(parent)
        assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid(), parent
        if parent.parent == top:
            assert not st.st_mode & 0o077, oct(st.st_mode)
    raise AssertionError(f"{path} is not under {top}")


async def test_a_spill_goes_to_a_private_per_user_directory(tmp_path, shared_tmp):
    text, path = await _spilled(tmp_path)
    assert path.read_text() == BIG and path.stat().st_mode & 0o777 == 0o600
    base = shared_tmp / f"dsh-tui-{os.getuid()}"
    assert base in path.parents, path
    assert os.lstat(base).st_mode & 0o777 == 0o700
    _private_chain(path, shared_tmp)


@pytest.mark.skipif(os.getuid() != 0, reason="making a directory another user's needs root")
async def test_a_directory_another_user_owns_in_the_shared_tmp_is_not_used(tmp_path, shared_tmp):
    for planted in ("dsh-tui-spill", f"dsh-tui-spill-{os.getuid()}", f"dsh-tui-{os.getuid()}"):
        (shared_tmp / planted).mkdir(mode=0o777)
        os.chown(shared_tmp / planted, OTHER_UID, OTHER_UID)
    text, path = await _spilled(tmp_path)
    assert path.read_text() == BIG
    _private_chain(path, shared_tmp)
    assert not any(list((shared_tmp / p).iterdir()) for p in ("dsh-tui-spill", f"dsh-tui-{os.getuid()}"))


async def test_a_symlink_planted_in_the_shared_tmp_is_not_followed(tmp_path, shared_tmp):
    attacker = tmp_path / "attacker"
    attacker.mkdir(mode=0o777)
    (shared_tmp / f"dsh-tui-{os.getuid()}").symlink_to(attacker)
    (shared_tmp / "dsh-tui-spill").symlink_to(attacker)
    text, path = await _spilled(tmp_path)
    assert path.read_text() == BIG and list(attacker.iterdir()) == []
    assert attacker not in path.resolve().parents
    _private_chain(path, shared_tmp)


def test_our_own_directory_with_loose_permissions_is_closed(shared_tmp):
    base = shared_tmp / f"dsh-tui-{os.getuid()}"
    base.mkdir(mode=0o755)
    base.chmod(0o755)
    assert common.private_dir("spill") == base / "spill"
    assert base.stat().st_mode & 0o777 == 0o700 and (base / "spill").stat().st_mode & 0o777 == 0o700


async def test_a_result_that_cannot_be_saved_is_cut_all_the_same(tmp_path):
    async def body(args, ctx):
        return BIG

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    agent = make_agent([s.call("c1", "big", {}), s.text("ok")], [make_tool("big", body)], max_inline_bytes=800,
                       tmp_path=tmp_path, spill_dir=str(blocker / "spill"))
    await run_followup(agent, "go")
    text = texts(of_type(agent, "tool/result")[0]["data"]["message"]["content"][0])
    assert len(text.encode()) <= 800, len(text)
    assert text.startswith("AAA") and text.endswith("bytes. The complete result could not be saved.)"), text[-200:]
    omitted = int(text.split("(Omitted ")[1].split(" bytes")[0])
    assert omitted == len(BIG) - len(text.split("\n\n(Omitted")[0])
