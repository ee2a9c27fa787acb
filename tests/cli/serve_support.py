"""``dsh-tui serve`` as a real subprocess for the serve tests: its URL, its log, the processes it starts."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

DSH_TUI = Path(sys.executable).parent / "dsh-tui"
STARTED = re.compile(r"app process (\d+) started")
ENDED = re.compile(r"app process (\d+) ended \(exit (-?\d+|None)\)")


class Served:
    """``with Served(args, cwd=..., env=...) as s``: ``s.url`` (the last URL printed), ``s.take_url()`` (a
    URL not opened yet: each opens one tab), ``s.port``, ``s.ticket``, ``s.log()``."""

    def __init__(self, args: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
        self.args = args
        self.cwd = cwd
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen[str] | None = None
        self.urls: list[str] = []
        self.taken: set[str] = set()
        self.out: list[str] = []
        self._err: list[str] = []
        self._ready = threading.Event()

    def __enter__(self) -> Served:
        self.proc = subprocess.Popen([str(DSH_TUI), "serve", *self.args], cwd=self.cwd, env=self.env, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()
        if not self._ready.wait(30):
            self.stop()
            raise AssertionError(f"dsh-tui serve printed no URL: {self.log()}")
        return self

    def _read_out(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.out.append(line)  # the URLs, then what an app that failed wrote (textual-serve relays it)
            if line.startswith("http"):
                self.urls.append(line.strip())
                self._ready.set()
        self._ready.set()

    def _read_err(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            self._err.append(line)

    @property
    def url(self) -> str:
        return self.urls[-1] if self.urls else ""  # the loopback one when two are printed

    @property
    def port(self) -> int:
        return int(urlsplit(self.url).port or 0)

    @property
    def ticket(self) -> str:
        return parse_qs(urlsplit(self.url).query)["ticket"][0]

    def take_url(self, timeout: float = 30.0) -> str:
        """The URL for the next tab (waits for the one printed after the last was opened)."""
        assert self.wait_log(lambda s: s.url not in s.taken, timeout), f"no fresh URL printed: {self.urls}"
        url = self.url
        self.taken.add(url)
        return url

    def ws_url(self, client, url: str | None = None) -> str:
        """Open a page (``client``: an httpx client) and return the websocket URL it carries."""
        import re

        page = client.get(url or self.take_url())
        assert page.status_code == 200, (page.status_code, page.text)
        return re.search(r'data-session-websocket-url="([^"]+)"', page.text).group(1)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return "".join(self._err)

    def started(self) -> list[int]:
        return [int(m) for m in STARTED.findall(self.log())]

    def ended(self) -> dict[int, str]:
        return {int(pid): code for pid, code in ENDED.findall(self.log())}

    def wait_log(self, predicate, timeout: float = 30.0) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if predicate(self):
                return True
            time.sleep(0.05)
        return predicate(self)

    def children(self) -> list[int]:
        """The server's child processes (from /proc)."""
        assert self.proc is not None
        out: list[int] = []
        task_dir = Path(f"/proc/{self.proc.pid}/task")
        for task in task_dir.iterdir() if task_dir.exists() else ():
            try:
                out += [int(p) for p in (task / "children").read_text().split()]
            except OSError:
                pass
        return out

    def stop(self) -> int:
        """SIGTERM, as Ctrl+C or a service manager would; the exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10)

    def __exit__(self, *exc: object) -> None:
        self.stop()


def listening(port: int) -> list[str]:
    """The local addresses listening on ``port`` (from /proc/net/tcp and tcp6), e.g. ``["127.0.0.1"]``."""
    import ipaddress

    found = []
    for name, size in (("tcp", 4), ("tcp6", 16)):
        try:
            lines = Path(f"/proc/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if int(hex_port, 16) != port or fields[3] != "0A":  # 0A: LISTEN
                continue
            raw = bytes.fromhex(address)
            # the kernel prints each 32-bit word in host (little-endian) order
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, size, 4))
            found.append(str(ipaddress.ip_address(raw)))
    return found


def gone(pid: int) -> bool:
    """The process is gone (and reaped: not even a zombie)."""
    return not Path(f"/proc/{pid}").exists()
