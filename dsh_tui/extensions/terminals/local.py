"""The local shell backend (dsh's ``terminal-bash`` over ``subprocess-local``'s terminal): an interactive
``bash --noprofile --norc -i`` on a real PTY (``os.openpty``), in the OS sandbox when the call's mode
confines, with dsh's readiness rules for a send and dsh's sanitized line text for what the model reads.

Readiness (why a send returns): ``stdin_read`` once the shell printed its controlled prompt (the OSC
``133;D;`` marker ``PROMPT_COMMAND`` emits, then exactly ``dsh> ``) and owns the terminal's foreground again,
or once the foreground process group is blocked reading the terminal (``/proc/PID/task/TID/syscall``: a
``read`` of fd 0, or ``select``/``poll``/``epoll`` on it: a REPL at its prompt); ``inferred_idle`` after
``idle_silence_ms`` of silence; ``timeout`` after ``timeout_ms``; ``session_exit`` when the shell ended.

The screen (``screen()``) is a ``pyte`` terminal emulator fed the same bytes: what a person would see on the
terminal (the app's terminal card); ``pyte`` is imported on the first output.

Ending: ``close`` sends SIGTERM to every process of the shell's tree and session, SIGKILL after the grace,
then SIGHUP/SIGKILL to the shell (an interactive bash ignores SIGTERM). The shell's process group is tracked
(``dsh_tui.tools.procs``) so the command line's exit sweep takes it too; when dsh-tui dies without running
anything (SIGKILL), closing the PTY's master hangs the terminal up, which sends SIGHUP to the shell and its
foreground job (and bubblewrap's ``--die-with-parent`` ends a sandboxed shell).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import fcntl
import os
import signal as signal_mod
import struct
import subprocess
import termios
import time
from typing import TYPE_CHECKING, Any

from dsh_tui.extensions.terminals.procfs import alive as _alive
from dsh_tui.extensions.terminals.procfs import session_members, stdin_waiting
from dsh_tui.extensions.terminals.text import BoundedText, Sanitizer
from dsh_tui.extensions.terminals.text import utf8_tail as _utf8_tail
from dsh_tui.tools import procs

if TYPE_CHECKING:
    from dsh_tui.tools.sandbox import Confined

CONTROLLED_PROMPT = "dsh> "
SIGNALS = ("SIGINT", "SIGTERM", "SIGKILL", "SIGTSTP", "SIGHUP")

DEFAULTS: dict[str, Any] = {
    "backend_type": "shell", "shell_path": "/bin/bash", "shell_args": ["--noprofile", "--norc", "-i"],
    "rows": 40, "cols": 160, "scrollback_lines": 10_000, "scrollback_max_bytes": 4 * 1024 * 1024,
    "max_read_bytes": 256 * 1024, "poll_interval_ms": 50, "exact_probe_after_ms": 150, "idle_silence_ms": 3_000,
    "handoff_grace_ms": 500, "timeout_ms": 30_000, "dispose_grace_ms": 3_000,
}


# ---- one session ------------------------------------------------------------------------------------------


class SendOperation:
    """One send: its output since it started, settled once with a wait reason."""

    def __init__(self, max_bytes: int) -> None:
        self.output = BoundedText(max_bytes)
        self.started = time.monotonic()
        self.future: asyncio.Future = asyncio.get_running_loop().create_future()
        self.initial_pgid: int | None = None
        self.left_wait = True
        self.output_after_write = False
        self.sinks: list[Any] = []  # a background send's job output
        self.on_cancel: Any = None

    @property
    def settled(self) -> bool:
        return self.future.done()

    def append(self, text: str) -> None:
        if not self.settled:
            self.output.append(text)
            self.output_after_write = True
            for sink in self.sinks:
                sink(text)

    def cancel(self) -> bool:
        """Interrupt the foreground command (SIGINT); False once settled."""
        if self.settled:
            return False
        if self.on_cancel is not None:
            self.on_cancel()
        return True

    def settle(self, reason: str, status: dict, inherited: bool) -> None:
        if self.settled:
            return
        self.future.set_result({"viewport": self.output.value, "waitReason": reason, "sessionStatus": dict(status),
                                "truncated": self.output.dropped or inherited})

    def fail(self, err: BaseException) -> None:
        if not self.settled:
            self.future.set_exception(err)

    def accepts_stdin_wait(self, pgid: int, waiting: bool) -> bool:
        if pgid != self.initial_pgid:
            return waiting
        if not waiting:
            self.left_wait = True
        # the same group was waiting before the write: it must have left the wait (seen by a poll, or shown
        # by output after the write: a REPL that echoed and answered) before its wait counts again
        return waiting and (self.left_wait or self.output_after_write)


class LocalPtySession:
    """One interactive shell on a PTY."""

    def __init__(self, proc: subprocess.Popen, master: int, config: dict[str, Any]) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.master = master
        self.config = config
        self.motd = ""
        self.started = procs.start_time(self.pid)
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.sanitizer = Sanitizer(config["max_read_bytes"])
        self.scrollback = BoundedText(config["scrollback_max_bytes"], config["scrollback_lines"])
        self.status_value: dict = {"kind": "running"}
        self.active: SendOperation | None = None
        self.prompt_seen = False
        self.prompt_text_seen = False
        self.prompt_tail = ""
        self.shell_pgid: int | None = None
        self.initializing = False
        self.last_output = time.monotonic()
        self.closing = False
        self._close_task: asyncio.Future | None = None
        self._eof = False
        # the sandbox confinement the shell runs in (ShellBackend sets it): cleaned up once it exited
        self.confined: Confined | None = None
        self._screen: Any = None
        self._stream: Any = None
        self.listeners: list[Any] = []  # called with no argument after new output (the app's card)
        self.loop = asyncio.get_running_loop()
        self.loop.add_reader(master, self._on_readable)
        self._watch = asyncio.ensure_future(self._watch_exit())
        self.tree: dict[int, str] = {}

    # ---- output -------------------------------------------------------------------------------------------
    def _on_readable(self) -> None:
        try:
            data = os.read(self.master, 65_536)
        except OSError:
            data = b""
        if not data:
            self._end_output()
            return
        self._feed_screen(data)
        self._on_data(self.decoder.decode(data))

    def _end_output(self) -> None:
        if self._eof:
            return
        self._eof = True
        with contextlib.suppress(ValueError, OSError):
            self.loop.remove_reader(self.master)
        self._on_data(self.decoder.decode(b"", final=True))
        self._append(self.sanitizer.flush())

    def _feed_screen(self, data: bytes) -> None:
        try:
            if self._stream is None:
                import pyte

                self._screen = pyte.Screen(self.config["cols"], self.config["rows"])
                self._stream = pyte.ByteStream(self._screen)
            self._stream.feed(data)
        except Exception:  # noqa: BLE001 - the screen is a view; the model's text does not depend on it
            self._stream = None
        for listener in list(self.listeners):
            with contextlib.suppress(Exception):
                listener()

    def screen(self) -> list[str]:
        """The terminal's visible lines as a person sees them (trailing blank lines dropped)."""
        if self._screen is None:
            return []
        lines = [line.rstrip() for line in self._screen.display]
        while lines and not lines[-1]:
            lines.pop()
        return lines

    def _on_data(self, data: str) -> None:
        text, prompt, tail = self.sanitizer.push(data)
        self._append(text)
        if prompt:
            self.prompt_seen = True
            self.prompt_tail = ""
            self.last_output = time.monotonic()
        if self.prompt_seen and tail is not None:
            remaining = max(0, len(CONTROLLED_PROMPT) + 1 - len(self.prompt_tail))
            self.prompt_tail += tail[:remaining]
            if len(tail) > remaining:
                self.prompt_tail = CONTROLLED_PROMPT + "\0"
            self.prompt_text_seen = self.prompt_tail == CONTROLLED_PROMPT

    def _append(self, text: str) -> None:
        if not text:
            return
        self.last_output = time.monotonic()
        self.scrollback.append(text)
        if self.active is not None:
            self.active.append(text)

    async def _watch_exit(self) -> None:
        while True:
            rc = self.proc.poll()
            if rc is not None:
                break
            await asyncio.sleep(0.05)
        for _ in range(40):  # the output the shell wrote before it ended
            if self._eof:
                break
            await asyncio.sleep(0.005)
        self._end_output()
        self.status_value = {"kind": "exited", "exitCode": rc if rc >= 0 else None,
                             "signal": signal_mod.Signals(-rc).name if rc < 0 else None}
        procs.release(self.pid)
        self._settle("session_exit")

    # ---- sends --------------------------------------------------------------------------------------------
    def foreground(self) -> int | None:
        try:
            pgid = os.tcgetpgrp(self.master)
        except OSError:
            return None
        return pgid if pgid > 0 else None

    def _remember_tree(self) -> None:
        if procs.start_time(self.pid) == self.started:
            self.tree.update(procs.descendants(self.pid))
            self.tree.update(session_members(self.pid))
        self.tree.pop(self.pid, None)

    async def start_send(self, text: str, submit: bool, cancelled: asyncio.Event | None = None) -> SendOperation:
        if self.closing:
            raise RuntimeError("PTY session is closing")
        if self.status_value["kind"] == "exited":
            raise RuntimeError("PTY session has exited")
        if self.active is not None:
            raise RuntimeError("PTY session already has an active send")
        op = SendOperation(self.config["max_read_bytes"])
        op.on_cancel = lambda: asyncio.ensure_future(self._interrupt())
        self.active = op
        self._reset_evidence()
        pgid = self.foreground()
        op.initial_pgid = pgid
        op.left_wait = not (pgid is not None and await asyncio.to_thread(stdin_waiting, pgid))
        data = (text + ("\r" if submit else "")).encode()
        if data:
            self._reset_evidence()
            try:
                view = memoryview(data)
                while view:
                    n = os.write(self.master, view)
                    view = view[n:]
            except OSError as err:
                self.active = None
                raise RuntimeError(f"PTY write failed: {err}") from None
        asyncio.ensure_future(self._poll(op, cancelled))
        return op

    async def _interrupt(self) -> None:
        with contextlib.suppress(Exception):
            await self.signal("SIGINT")

    def _reset_evidence(self) -> None:
        self.last_output = time.monotonic()
        self.prompt_seen = False
        self.prompt_text_seen = False
        self.prompt_tail = ""

    def _settle(self, reason: str) -> None:
        op = self.active
        if op is None:
            return
        self.active = None
        op.settle(reason, self.status_value, self.scrollback.dropped)

    async def _poll(self, op: SendOperation, cancelled: asyncio.Event | None) -> None:
        cfg = self.config
        interval = cfg["poll_interval_ms"] / 1000
        interrupted = False
        try:
            while self.active is op and not op.settled:
                await asyncio.sleep(interval)
                if self.active is not op or op.settled or self.closing:
                    return
                if cancelled is not None and cancelled.is_set() and not interrupted:
                    interrupted = True
                    with contextlib.suppress(Exception):
                        await self.signal("SIGINT")
                if self.status_value["kind"] == "exited":
                    self._settle("session_exit")
                    return
                now = time.monotonic()
                if now - op.started >= cfg["timeout_ms"] / 1000:
                    self._settle("timeout")
                    return
                fg = self.foreground()
                self._remember_tree()
                idle = now - self.last_output
                if self.prompt_seen and fg is not None and self.shell_pgid is None:
                    self.shell_pgid = fg
                if (self.prompt_seen and self.prompt_text_seen and idle >= interval and fg is not None
                        and fg == self.shell_pgid):
                    self._settle("stdin_read")
                    return
                elapsed = now - op.started
                has_output = not self.initializing or bool(self.scrollback.value)
                if has_output and fg is not None:
                    waiting = await asyncio.to_thread(stdin_waiting, fg)
                    if op.accepts_stdin_wait(fg, waiting) and elapsed >= cfg["exact_probe_after_ms"] / 1000:
                        self._settle("stdin_read")
                        return
                grace = cfg["handoff_grace_ms"] / 1000 if self.prompt_seen else 0
                if has_output and idle >= cfg["idle_silence_ms"] / 1000 + grace:
                    self._settle("inferred_idle")
                    return
        except Exception as err:  # noqa: BLE001 - the send fails with it rather than hanging
            if self.active is op:
                self.active = None
            op.fail(err)

    async def initialize(self) -> None:
        self.initializing = True
        try:
            op = await self.start_send("", False)
            result = await op.future
            if result["waitReason"] == "session_exit":
                raise RuntimeError("PTY shell exited during startup")
            if result["waitReason"] == "timeout":
                raise RuntimeError("PTY shell did not reach readiness before startup timeout")
            self.motd = result["viewport"]
        finally:
            self.initializing = False

    # ---- the rest of the session contract -----------------------------------------------------------------
    def read(self, offset: int | None = None, count: int | None = None) -> dict:
        text = self.scrollback.value
        lines = text.split("\n")
        total = 0 if not text else len(lines)
        offset = 0 if offset is None else offset
        count = 500 if count is None else count
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise ValueError("PTY read offset must be a non-negative safe integer")
        if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
            raise ValueError("PTY read count must be a positive safe integer")
        if offset >= total:
            return {"text": "", "totalLines": total, "lineBegin": offset, "lineEnd": offset,
                    "truncated": self.scrollback.dropped}
        end = total - offset
        start = max(0, end - count)
        bounded, cut = _utf8_tail("\n".join(lines[start:end]), self.config["max_read_bytes"])
        returned = 0 if not bounded else len(bounded.split("\n"))
        return {"text": bounded, "totalLines": total, "lineBegin": offset, "lineEnd": offset + returned,
                "truncated": self.scrollback.dropped or cut}

    async def signal(self, name: str) -> dict:
        if self.closing:
            raise RuntimeError("PTY session is closing")
        fg = self.foreground()
        if fg is None:
            raise RuntimeError(f"cannot resolve foreground process group for terminal {self.pid}")
        if name == "SIGKILL" and fg in (self.pid, self.shell_pgid):
            raise RuntimeError("refusing to SIGKILL the terminal shell; terminate the terminal session instead")
        os.killpg(fg, getattr(signal_mod, name))
        return {"delivered": True, "targetPgid": fg}

    def status(self) -> dict:
        return dict(self.status_value)

    def close(self, reason: str = "") -> asyncio.Future:
        self.closing = True
        if self._close_task is None:
            self._close_task = asyncio.ensure_future(self._close_once())
        return self._close_task

    async def _wait_gone(self, tree: dict[int, str], seconds: float) -> dict[int, str]:
        until = time.monotonic() + seconds
        alive = _alive(tree)
        while alive and time.monotonic() < until:
            await asyncio.sleep(0.025)
            alive = _alive(tree)
        return alive

    async def _close_once(self) -> None:
        grace = self.config["dispose_grace_ms"] / 1000
        self._remember_tree()
        procs.kill_tree(self.tree, signal_mod.SIGTERM)
        left = await self._wait_gone(self.tree, grace)
        self._remember_tree()
        procs.kill_tree({**left, **_alive(self.tree)}, signal_mod.SIGKILL)
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.send_signal(signal_mod.SIGHUP)  # an interactive bash ignores SIGTERM
            with contextlib.suppress(OSError):
                self.proc.send_signal(signal_mod.SIGCONT)
            until = time.monotonic() + grace
            while self.proc.poll() is None and time.monotonic() < until:
                await asyncio.sleep(0.025)
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.kill()
            until = time.monotonic() + grace
            while self.proc.poll() is None and time.monotonic() < until:
                await asyncio.sleep(0.025)
        procs.killpg(self.pid, signal_mod.SIGKILL)
        self._remember_tree()
        survivors = _alive(self.tree)
        procs.kill_tree(survivors, signal_mod.SIGKILL)
        survivors = await self._wait_gone(survivors, grace)
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(self._watch), grace + 1)
        self._settle("session_exit")
        self._end_output()
        with contextlib.suppress(OSError):
            os.close(self.master)
        procs.forget(self.pid)
        if self.proc.poll() is None or survivors:
            pids = [self.pid] if self.proc.poll() is None else sorted(survivors)
            raise RuntimeError(f"terminal cleanup failed; surviving pids: {', '.join(map(str, pids))}")


def _child_setup() -> None:  # runs in the child after setsid: the PTY becomes its controlling terminal
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def child_env(session_id: str, pty_id: str, base: dict[str, str]) -> dict[str, str]:
    env = dict(base)
    env.update({"TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat", "DSH_SHELL": "1", "DSH_SESSION_ID": session_id,
                "DSH_PTY_SESSION_ID": pty_id, "PS1": CONTROLLED_PROMPT,
                "PROMPT_COMMAND": f"printf \"\\033]133;D;%s\\007\" \"$?\"; PS1='{CONTROLLED_PROMPT}'",
                "BASH_SILENCE_DEPRECATION_WARNING": "1"})
    return env


async def spawn_local(argv: list[str], *, cwd: str, env: dict[str, str], config: dict[str, Any]) -> LocalPtySession:
    master, slave = os.openpty()
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", config["rows"], config["cols"], 0, 0))
        proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env,
                                start_new_session=True, preexec_fn=_child_setup, close_fds=True)
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    procs.track(proc.pid)
    os.set_blocking(master, False)
    session = LocalPtySession(proc, master, config)
    try:
        await session.initialize()
    except BaseException:
        with contextlib.suppress(Exception):
            await session.close("PTY startup failed")
        raise
    return session
