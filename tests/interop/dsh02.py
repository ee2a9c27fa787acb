"""dsh 0.2 (the newest published dsh) as a test peer: PyPI's ``deepseek-harness-sdk`` 0.2.1rc2 (dsh's own Python
SDK) with ``deepseek-harness-runtime-bin`` (a self-contained ``dsh`` command), installed once per machine into a venv at ``$DSH_TUI_DSH02_DIR`` or
``~/.cache/dsh-tui/dsh02-0.2.1rc2`` (an fcntl lock makes concurrent xdist workers install it once).
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

VERSION = "0.2.1rc2"
DSH02_DIR = Path(os.environ.get("DSH_TUI_DSH02_DIR") or Path.home() / ".cache" / "dsh-tui" / f"dsh02-{VERSION}")
_REAL_ENV = dict(os.environ)
MARKER = ".dsh-tui-installed"
_STAMP = f"{VERSION} sdk"


class Dsh02Unavailable(RuntimeError):
    """dsh 0.2 could not be installed; the message says why."""


def install(where: Path = DSH02_DIR, timeout: float = 900) -> Path:
    """The path of dsh 0.2's ``dsh`` command, installed on first use."""
    where.parent.mkdir(parents=True, exist_ok=True)
    dsh = where / "bin" / "dsh"
    with open(where.parent / f"{where.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            marker = where / MARKER
            if not (marker.exists() and marker.read_text() == _STAMP and dsh.exists()):
                _run([sys.executable, "-m", "venv", "--clear", str(where)], timeout)
                _run([str(where / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                      f"deepseek-harness-runtime-bin=={VERSION}", f"deepseek-harness-sdk=={VERSION}"], timeout)
                if not dsh.exists():
                    raise Dsh02Unavailable(f"the install did not provide {dsh}")
                marker.write_text(_STAMP)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return dsh


def _run(cmd: list[str], timeout: float) -> None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_REAL_ENV)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise Dsh02Unavailable(f"{cmd[0]} failed: {err}") from None
    if out.returncode != 0:
        tail = (out.stderr or out.stdout).strip().splitlines()[-3:]
        raise Dsh02Unavailable(f"{' '.join(cmd[:4])} … exited {out.returncode}: {' | '.join(tail)}")


def python() -> str:
    """The Python of dsh 0.2's venv (it has dsh's SDK, ``deepseek_harness``)."""
    return str(install().parent / "python")
