"""The reference MCP server ``@modelcontextprotocol/server-everything`` on Node 22, both from the npm
registry, installed the way the dsh interop peer is (tests/interop/peer.py): tests/mcp/everything/
(package.json + package-lock.json) copied to ``$DSH_TUI_MCP_EVERYTHING_DIR`` or
``~/.cache/dsh-tui/mcp-everything-<hash of the lock>`` and ``npm ci``-ed there once, under an fcntl lock.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from tests.conftest import REPO

SOURCE = REPO / "tests" / "mcp" / "everything"
_LOCK_HASH = hashlib.sha256((SOURCE / "package-lock.json").read_bytes()).hexdigest()[:16]
DIR = Path(os.environ.get("DSH_TUI_MCP_EVERYTHING_DIR")
           or Path.home() / ".cache" / "dsh-tui" / f"mcp-everything-{_LOCK_HASH}")
_REAL_ENV = dict(os.environ)  # before any test points HOME/XDG elsewhere
MARKER = ".dsh-tui-installed"


class Unavailable(RuntimeError):
    """The server could not be installed; the message says why."""


def install(target: Path = DIR, timeout: float = 600) -> list[str]:
    """Install once (idempotent, lock-guarded); returns the server's stdio command line."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            target.mkdir(exist_ok=True)
            for src in SOURCE.iterdir():
                if src.is_file():
                    shutil.copy2(src, target / src.name)
            node = target / "node_modules" / ".bin" / "node"
            marker = target / MARKER
            if (marker.read_text() if marker.exists() else "") != _LOCK_HASH or not node.exists():
                npm = shutil.which("npm", path=_REAL_ENV.get("PATH"))
                if npm is None:
                    raise Unavailable("needs `npm` on PATH to install Node 22 and "
                                      "@modelcontextprotocol/server-everything from the npm registry")
                proc = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=target, env=_REAL_ENV,
                                      capture_output=True, text=True, timeout=timeout)
                if proc.returncode != 0:
                    tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
                    raise Unavailable(f"`npm ci` in {target} failed (exit {proc.returncode}): " + " | ".join(tail))
                marker.write_text(_LOCK_HASH)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    script = target / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    version = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=60).stdout
    if not version.startswith("v22.") or not script.exists():
        raise Unavailable(f"{node} is not Node 22 ({version.strip()}) or {script} is missing")
    return [str(node), str(script), "stdio"]
