"""The process table (Linux ``/proc``) as the local shell backend reads it: whether a process group waits on
its terminal's stdin (a REPL at its prompt: ``/proc/PID/task/TID/syscall``), a POSIX session's members and
which of them are still alive (``local.py``)."""

from __future__ import annotations

import os
import platform
import struct
from pathlib import Path

from dsh_tui.tools import procs

_SYSCALLS = {"x86_64": {"read": 0, "select": 23, "pselect": 270, "poll": 7, "ppoll": 271, "epoll_wait": 232,
                        "epoll_pwait": 281},
             "aarch64": {"read": 63, "pselect": 72, "ppoll": 73, "epoll_pwait": 22}}


def _stat(pid: int) -> list[str] | None:
    return procs._stat(pid)


def _mem(pid: int, address: int, length: int) -> bytes | None:
    try:
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as f:
            f.seek(address)
            return f.read(length)
    except (OSError, ValueError, OverflowError):
        return None


def _waits_on_stdin(pid: int, number: int, args: list[int], table: dict[str, int]) -> bool:
    a0, a1, a2 = (args + [0, 0, 0])[:3]
    if number == table["read"]:
        return a0 == 0
    if number in (table.get("select"), table["pselect"]):
        mem = _mem(pid, a1, 8) if a1 else None
        return a0 >= 1 and mem is not None and len(mem) > 0 and mem[0] % 2 == 1
    if number in (table.get("poll"), table["ppoll"]):
        if not a0 or a1 < 1:
            return False
        mem = _mem(pid, a0, min(a1, 1024) * 8) or b""
        for off in range(0, len(mem) - 7, 8):
            fd, events = struct.unpack_from("<ih", mem, off)
            if fd == 0 and events & 1:
                return True
        return False
    if number in (table.get("epoll_wait"), table["epoll_pwait"]):
        try:
            info = Path(f"/proc/{pid}/fdinfo/{a0}").read_text()
        except OSError:
            return False
        return a2 >= 1 and any(line.strip().startswith("tfd:") and line.split()[1] == "0"
                               for line in info.splitlines() if len(line.split()) > 1)
    return False


def stdin_waiting(pgid: int) -> bool:
    """Some thread of process group ``pgid`` is blocked reading its terminal (dsh ``isStdinWaiting``)."""
    table = _SYSCALLS.get(platform.machine())
    if table is None:
        return False
    try:
        pids = [int(e.name) for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return False
    for pid in pids:
        fields = _stat(pid)
        if fields is None or len(fields) < 3 or int(fields[2]) != pgid:
            continue
        try:
            tids = [e.name for e in os.scandir(f"/proc/{pid}/task") if e.name.isdigit()]
        except OSError:
            continue
        for tid in tids:
            try:
                text = Path(f"/proc/{pid}/task/{tid}/syscall").read_text().strip()
            except OSError:
                continue
            if text == "running" or text.startswith("-1 "):
                continue
            parts = text.split()
            try:
                number, args = int(parts[0]), [int(x, 16) for x in parts[1:7]]
            except (ValueError, IndexError):
                continue
            if _waits_on_stdin(pid, number, args, table):
                return True
    return False


def session_members(sid: int) -> dict[int, str]:
    """Every process of POSIX session ``sid`` with its start time."""
    out: dict[int, str] = {}
    try:
        pids = [int(e.name) for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return out
    for pid in pids:
        fields = _stat(pid)
        if fields is not None and len(fields) > 19 and int(fields[3]) == sid and fields[0] not in ("Z", "X"):
            out[pid] = fields[19]
    return out


def alive(tree: dict[int, str]) -> dict[int, str]:
    out = {}
    for pid, started in tree.items():
        fields = _stat(pid)
        if fields is not None and len(fields) > 19 and fields[19] == started and fields[0] not in ("Z", "X"):
            out[pid] = started
    return out
