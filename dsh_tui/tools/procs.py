"""Every process a session starts, and ending them on every exit path (docs/cli.md, "Processes").

What dsh-tui starts runs in process groups of its own (``start_new_session``): a ``bash`` call, a background
job, an MCP stdio server (the MCP SDK starts it so), a served tab. Two mechanisms end them:

- ``track(pid)`` records such a group (with its leader's start time, so a reused number is never
  signalled); ``release(pgid)`` forgets it once it is empty. A group outlives its shell when the command
  left something behind (``sleep 1001 > /dev/null 2>&1 &`` in a foreground call): it stays tracked until
  it empties or the process exits.
- ``sweep()`` kills every tracked group, then every process still below this one in ``/proc`` (its own
  group too when it leads one): the MCP servers and anything a library started without telling us.

The command line (``dsh_tui.cli.main``) runs ``sweep`` at interpreter exit; a death by signal becomes an
exit because the commands handle SIGINT, SIGTERM and SIGHUP (``ExitSignals``; the app quits on them). What still
escapes: a process that left its group *and* our process tree (``setsid`` after a double fork, a daemon)
from a command not in a sandbox, and anything at all when dsh-tui itself is SIGKILLed (nothing runs then;
its direct children in other sessions are reparented to init). A served tab's app is bound to the server's
life (``bind_to_parent``) so that a SIGKILLed server still takes its tabs, and their sweeps, with it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Tracked process groups: pgid -> the leader's start time (``/proc/PID/stat`` field 22), "" if unknown.
GROUPS: dict[int, str] = {}
_lock = threading.Lock()


def _stat(pid: int | str) -> list[str] | None:
    """``/proc/PID/stat``'s fields after the command name (state, ppid, pgrp, ...), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    return text[text.rindex(")") + 2:].split()


def start_time(pid: int) -> str:
    fields = _stat(pid)
    return fields[19] if fields is not None and len(fields) > 19 else ""


def track(pid: int) -> int:
    """Record the process group ``pid`` leads (a child started with ``start_new_session``); returns it."""
    with _lock:
        GROUPS[pid] = start_time(pid)
    return pid


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def release(pgid: int) -> None:
    """Forget ``pgid`` if nothing is left in it (else it stays tracked until the sweep)."""
    if not _group_alive(pgid):
        with _lock:
            GROUPS.pop(pgid, None)


def forget(pgid: int) -> None:
    with _lock:
        GROUPS.pop(pgid, None)


def _ours(pgid: int, started: str) -> bool:
    """The group is still the one we started: its leader, if alive, is the same process (not a reuse)."""
    fields = _stat(pgid)
    if fields is None or not started:
        return True  # the leader is gone: the number stays the group's while the group lives
    return fields[19] == started or int(fields[2]) != pgid


def killpg(pgid: int, sig: int) -> None:
    """Signal a process group that may be gone already."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def kill_groups(sig: int = signal.SIGKILL) -> list[int]:
    """Signal every tracked group (still ours); returns the groups signalled."""
    with _lock:
        groups = list(GROUPS.items())
    done = []
    for pgid, started in groups:
        if pgid > 1 and _ours(pgid, started) and _group_alive(pgid):
            killpg(pgid, sig)
            done.append(pgid)
        if sig == signal.SIGKILL:
            forget(pgid)
    return done


def descendants(pid: int) -> dict[int, str]:
    """Every process under ``pid``, each with its start time (``/proc``; empty where there is none)."""
    children: dict[int, list[int]] = {}
    started: dict[int, str] = {}
    try:
        entries = [e.name for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return {}
    for name in entries:
        fields = _stat(name)
        if fields is not None and len(fields) > 19:
            children.setdefault(int(fields[1]), []).append(int(name))
            started[int(name)] = fields[19]
    found: dict[int, str] = {}
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found[child] = started[child]
                todo.append(child)
    return found


def kill_tree(tree: dict[int, str], sig: int = signal.SIGKILL) -> list[int]:
    """Signal what is still running of ``tree`` (the same process: same start time, not a reused pid), with
    the process group each one leads (never our own group); the pids signalled."""
    own = os.getpgrp()
    killed = []
    for pid, start in tree.items():
        fields = _stat(pid)
        if fields is None or len(fields) <= 19 or fields[19] != start or fields[0] in ("Z", "X"):
            continue
        if int(fields[2]) == pid and pid != own:
            killpg(pid, sig)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
        killed.append(pid)
    return killed


def sweep(sig: int = signal.SIGKILL) -> list[int]:
    """End every tracked group and every process below this one; returns what was signalled."""
    done = kill_groups(sig)
    done += kill_tree(descendants(os.getpid()), sig)
    return done


atexit.register(kill_groups)  # tracked groups go with the process even where no sweep was installed

EXIT_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class ExitSignals:
    """SIGINT, SIGTERM and SIGHUP (``EXIT_SIGNALS``) on the running loop, while in the ``with`` block: the
    first records its number in ``got``, sets ``event`` and calls each ``on_signal`` callback (cancel the
    turn); a second one sweeps and ends the process at once (``128 + N`` of the first). A signal this
    process was started ignoring (``nohup``) stays ignored."""

    def __init__(self) -> None:
        import asyncio

        self.got: list[int] = []
        self.event = asyncio.Event()
        self.callbacks: list[Callable[[int], None]] = []
        self._loop: Any = None
        self._installed: list[int] = []

    @property
    def signum(self) -> int | None:
        return self.got[0] if self.got else None

    def on_signal(self, callback: Callable[[int], None]) -> Callable[[], None]:
        self.callbacks.append(callback)
        return lambda: self.callbacks.remove(callback) if callback in self.callbacks else None

    def _handle(self, signum: int) -> None:
        if self.got:
            sweep()
            os._exit(128 + self.got[0])
        self.got.append(signum)
        self.event.set()
        for cb in list(self.callbacks):
            with contextlib.suppress(Exception):
                cb(signum)

    def __enter__(self) -> ExitSignals:
        import asyncio

        self._loop = asyncio.get_running_loop()
        for sig in EXIT_SIGNALS:
            if signal.getsignal(sig) == signal.SIG_IGN:
                continue
            try:
                self._loop.add_signal_handler(sig, self._handle, sig)
            except (ValueError, RuntimeError, NotImplementedError):  # not the main thread
                continue
            self._installed.append(sig)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig in self._installed:
            with contextlib.suppress(ValueError, RuntimeError):
                self._loop.remove_signal_handler(sig)
        self._installed.clear()


_BOUND: list[bool] = []  # ``bind_to_parent`` was called: SIGTERM may come again and again (see there)


def bind_to_parent(parent_pid: int | None = None) -> None:
    """Have the kernel send this process SIGTERM when its parent dies (``PR_SET_PDEATHSIG``, Linux): a
    served tab's app ends with a SIGKILLed server. If the parent is already gone, SIGTERM ourselves.

    The kernel sends it again each time the orphan is handed on: from one exiting thread of the dying parent
    to the next, then to init. A parent with several threads (the server has some) so sends several SIGTERMs
    for one death: a bound process takes a repeated SIGTERM as the same news (``bound_to_parent``)."""
    import ctypes

    _BOUND.append(True)
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    if parent_pid is not None and os.getppid() != parent_pid:
        os.kill(os.getpid(), signal.SIGTERM)


def bound_to_parent() -> bool:
    """``bind_to_parent`` was called in this process: its SIGTERMs may be the kernel's, repeated."""
    return bool(_BOUND)
