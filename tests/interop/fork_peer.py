"""dsh's own fork as an oracle: ``SessionStore.fork`` of the published ``@deepseek-ai/dsh-session`` on a
stored parent, the child persisted by the published JSONL backend (``fork.mjs``, run in the peer dir)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.interop.peer import Peer

FORK_MJS = Path(__file__).with_name("fork.mjs")


def dsh_fork(peer: Peer, root: Path, parent_id: str, child_id: str, *, boundary: int | None = None,
             compression: str = "zstd") -> dict:
    """Fork ``parent_id`` in ``root`` with real dsh; returns ``{id, seedLength}`` or ``{error, code}``."""
    script = peer.dir / "dsh-tui-fork.mjs"
    if not script.exists() or script.read_bytes() != FORK_MJS.read_bytes():
        shutil.copyfile(FORK_MJS, script)  # next to lib.mjs and node_modules, so its imports resolve
    args = ["--root", str(root), "--id", parent_id, "--child", child_id, "--compression", compression]
    if boundary is not None:
        args += ["--boundary", str(boundary)]
    proc = peer._run(script.name, args)
    if proc.returncode not in (0, 1):
        raise AssertionError(f"fork.mjs crashed: {proc.stderr.decode(errors='replace')[-2000:]}")
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])
