"""Benchmark: ``dsh-tui serve`` in headless Chromium beside the same app in a local pseudo-terminal, same run.

Run:  .venv/bin/python tests/bench/bench_serve.py [--runs 5] [--keys 30]

For ``dsh-tui run`` (the chat; no model request is made):
- first screen: opening the URL (``page.goto``) -> the browser's terminal holds the chat's first complete
  screen (its composer placeholder), checked every animation frame; each run a new tab, so a new app
  process (the server is already listening). Beside it: spawning ``dsh-tui run`` in a pty -> the same text
  in its output;
- keystroke echo: a key pressed in the page (Playwright's keyboard, a trusted key event) -> the letter on
  the browser's screen, through the websocket and the app; beside it: a byte written to the pty -> the
  letter in the app's output. Each key is a different letter, so a repaint of an older one never counts.
Figures are printed, never asserted. Needs Chromium (apt-get install chromium) and the test extra.
"""

from __future__ import annotations

import argparse
import os
import re
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.cli.serve_support import DSH_TUI, Served  # noqa: E402
from tests.ui.browser_support import SCREEN, launch  # noqa: E402

NEEDLE = "Ask the agent"
ANSI = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|\x1b\][^\x07]*\x07")
LETTERS = "qwertyuiopasdfghjklzxcvbnm"


def _stats(name: str, values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    if not ms:
        return f"{name}: no data"
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return f"{name}: p50 {statistics.median(ms):.0f} ms, p95 {p95:.0f} ms, min {ms[0]:.0f}, max {ms[-1]:.0f} (n={len(ms)})"


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "DSH_HOME": str(home / ".dsh"), "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"), "XDG_DATA_HOME": str(home / ".local/share"),
            "DEEPSEEK_API_KEY": "sk-bench", "DEEPSEEK_BASE_URL": "http://127.0.0.1:9", "TERM": "xterm-256color"}


def _wait_text(page, text: str, timeout_ms: float = 60_000) -> None:
    page.wait_for_function(f"(needle) => ({SCREEN})().includes(needle)", arg=text, polling="raf",
                           timeout=timeout_ms)


def browser_runs(served: Served, tmp: Path, runs: int, keys: int) -> tuple[list[float], list[float]]:
    from playwright.sync_api import sync_playwright

    first: list[float] = []
    echo: list[float] = []
    with sync_playwright() as pw:
        context = launch(pw, tmp)
        try:
            for i in range(runs + 1):  # the first tab warms Chromium's caches: not counted
                page = context.new_page()
                start = time.perf_counter()
                page.goto(served.url)
                _wait_text(page, NEEDLE)
                if i:
                    first.append(time.perf_counter() - start)
                if i == runs:  # keys in the last tab
                    page.focus("textarea.xterm-helper-textarea")
                    page.wait_for_timeout(1500)  # the app settles (route, session, first blink)
                    typed = ""
                    for k in range(keys):
                        letter = LETTERS[k % len(LETTERS)]
                        typed += letter
                        start = time.perf_counter()
                        page.keyboard.press(letter)
                        _wait_text(page, typed)
                        echo.append(time.perf_counter() - start)
                        page.wait_for_timeout(30)
                        if len(typed) == len(LETTERS):  # start again on an empty composer
                            page.keyboard.press("Control+u")
                            page.wait_for_timeout(200)
                            typed = ""
                page.close()
                pid = served.started()[-1]
                served.wait_log(lambda s, pid=pid: pid in s.ended())
        finally:
            context.close()
    return first, echo


def _read_until(fd: int, predicate, timeout: float) -> bytes:
    buf = bytearray()
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            buf.extend(data)
            if predicate(bytes(buf)):
                break
    return bytes(buf)


def _plain(data: bytes) -> str:
    return ANSI.sub(b"", data).decode("utf-8", "replace")


def pty_runs(cwd: Path, env: dict[str, str], root: Path, runs: int, keys: int) -> tuple[list[float], list[float]]:
    import fcntl
    import struct
    import termios

    first: list[float] = []
    echo: list[float] = []
    for i in range(runs + 1):
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 133, 0, 0))
        start = time.perf_counter()
        proc = subprocess.Popen([str(DSH_TUI), "run", "--root", str(root)], cwd=cwd, env=env, stdin=slave,
                                stdout=slave, stderr=slave, start_new_session=True, close_fds=True)
        os.close(slave)
        try:
            _read_until(master, lambda b: NEEDLE in _plain(b), 60)
            if i:
                first.append(time.perf_counter() - start)
            if i == runs:
                _read_until(master, lambda b: False, 1.5)
                typed = 0
                for k in range(keys):
                    letter = LETTERS[k % len(LETTERS)]
                    start = time.perf_counter()
                    os.write(master, letter.encode())
                    _read_until(master, lambda b, letter=letter: letter in _plain(b), 10)
                    echo.append(time.perf_counter() - start)
                    _read_until(master, lambda b: False, 0.03)
                    typed += 1
                    if typed == len(LETTERS):
                        os.write(master, b"\x15")  # Ctrl+U
                        _read_until(master, lambda b: False, 0.2)
                        typed = 0
            os.write(master, b"\x11")  # Ctrl+Q
            _read_until(master, lambda b, proc=proc: proc.poll() is not None, 10)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)
            os.close(master)
    return first, echo


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keys", type=int, default=30)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    cwd = tmp / "ws"
    cwd.mkdir()
    env = _env(tmp / "home")
    root = tmp / "sessions"
    os.environ.update({k: v for k, v in env.items() if k != "TERM"})
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    with Served(["--port", "0", "--", "run", "--root", str(root)], cwd=cwd, env=env) as served:
        b_first, b_echo = browser_runs(served, tmp, args.runs, args.keys)
    p_first, p_echo = pty_runs(cwd, env, root, args.runs, args.keys)
    print(_stats("browser: open URL -> first screen", b_first))
    print(_stats("pty:     spawn    -> first screen", p_first))
    print(_stats("browser: key -> echo on screen (websocket)", b_echo))
    print(_stats("pty:     key -> echo in output", p_echo))
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
