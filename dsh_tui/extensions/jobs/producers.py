"""Job producers: background bash (``bash`` with ``run_in_background: true``).

A background command is a fresh ``bash -c`` in its own process group (``start_new_session``), stdin from
``/dev/null``; stdout and stderr stream into the job's bounded ring. No timeout applies (dsh). ``job_kill``
and teardown send SIGTERM to the group, then SIGKILL after the grace period; the job settles once the
process is gone. Every live group is tracked (``dsh_tui.tools.procs``): it is killed when the process
exits, by a signal the command line handles too, so a crash of the host does not leave a command running.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import signal as signal_mod
from typing import Any

from dsh_tui.extensions.jobs.registry import JobHandle, JobRegistry
from dsh_tui.tools.bash import drain_pumps
from dsh_tui.tools.bash import killpg as _killpg
from dsh_tui.tools.common import plain_error
from dsh_tui.tools.procs import forget, track
from dsh_tui.tools.sandbox import RUNNER_FAILED, runner_failure, spawn_failure_text
from dsh_tui.tools.sandbox import denied as sandbox_denied

GRACE_S = 3.0
READ_CHUNK = 65_536

class BashJobs:
    """What the ``bash`` tool calls for ``run_in_background`` (``dsh_tui.tools.bash``'s ``jobs`` port)."""

    def __init__(self, registry: JobRegistry, grace_s: float = GRACE_S) -> None:
        self.registry = registry
        self.grace_s = grace_s

    async def start(self, command: str, *, cwd: str, env: dict[str, str], label: str | None = None,
                    argv: list[str] | None = None, cleanup: Any = None, denial: str | None = None,
                    confined: Any = None) -> str:
        """``argv``: the command as the sandbox confines it; ``cleanup()`` runs once the job has ended;
        ``denial``: the sandbox's marker lines, added to the output when the job failed on a denial;
        ``confined``: the sandbox's ``Confined`` (its mode and dialects: a runner that failed is reported as
        dsh reports it)."""
        async def starter(handle: JobHandle) -> Any:
            try:
                return await _start_process(handle, command, cwd, env, self.grace_s, argv, cleanup, denial,
                                            confined)
            except BaseException:
                if cleanup is not None:
                    cleanup()
                raise

        job = await self.registry.start("bash", label or command, starter)
        return job.id


async def _start_process(handle: JobHandle, command: str, cwd: str, env: dict[str, str], grace_s: float,
                         argv: list[str] | None = None, cleanup: Any = None, denial: str | None = None,
                         confined: Any = None) -> Any:
    if not os.path.isdir(cwd):
        raise plain_error(f'workdir "{cwd}" is not a directory')
    try:
        proc = await asyncio.create_subprocess_exec(
            *(argv or ["bash", "-c", command]), cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)
    except (FileNotFoundError, PermissionError) as exc:
        if not argv or confined is None:
            raise plain_error(f"spawn bash ENOENT: {exc.filename or cwd}") from None
        # dsh: a background spawn failure settles the job as killed before exit, its output the failure and
        # the runner marker (the sandbox's runner never started, so the command did not run)
        if cleanup is not None:
            await asyncio.to_thread(cleanup)
        handle.append(f"spawn failed: {spawn_failure_text(argv[0], exc)}\n{RUNNER_FAILED.format(mode=confined.mode)}\n",
                      "stderr")
        handle.settle("killed", "killed before exit")
        return lambda _reason=None: None
    pgid = proc.pid
    track(pgid)
    state: dict[str, Any] = {"killed": False, "killer": None, "stderr": ""}

    async def pump(stream: asyncio.StreamReader, channel: str) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        while True:
            data = await stream.read(READ_CHUNK)
            if not data:
                tail = decoder.decode(b"", final=True)
                if tail:
                    handle.append(tail, channel)
                return
            text = decoder.decode(data)
            if (denial is not None or confined is not None) and channel == "stderr":
                state["stderr"] = (state["stderr"] + text)[-65_536:]
            handle.append(text, channel)

    async def run() -> None:
        assert proc.stdout is not None and proc.stderr is not None
        pumps = [asyncio.ensure_future(pump(proc.stdout, "stdout")), asyncio.ensure_future(pump(proc.stderr, "stderr"))]
        try:
            rc = await proc.wait()
            await drain_pumps(pumps, pgid, grace_s)
        except asyncio.CancelledError:
            _killpg(pgid, signal_mod.SIGKILL)
            raise
        finally:
            _killpg(pgid, signal_mod.SIGKILL)  # nothing of the group outlives its job
            forget(pgid)
            if cleanup is not None:
                await asyncio.to_thread(cleanup)
            killer = state["killer"]
            if killer is not None:
                killer.cancel()
        failed_runner = confined is not None and not state["killed"] and runner_failure(
            rc, state["stderr"], confined.runner_rules) is not None
        if failed_runner:
            handle.append(RUNNER_FAILED.format(mode=confined.mode) + "\n", "stderr")
        elif denial is not None and not state["killed"] and sandbox_denied(
                rc, state["stderr"], *(() if confined is None else (confined.denial_signatures,))):
            handle.append(denial + "\n", "stderr")  # dsh's marker, as a foreground call's result has it
        if state["killed"]:
            sig = -rc if rc is not None and rc < 0 else None
            name = signal_mod.Signals(sig).name if sig else None
            handle.settle("killed", f"signal: {name}" if name else "killed")
        elif rc == 0:
            handle.settle("completed", "exit code: 0")
        elif rc is not None and rc < 0:
            handle.settle("failed", f"signal: {signal_mod.Signals(-rc).name}")
        else:
            handle.settle("failed", f"exit code: {rc}")

    task = asyncio.ensure_future(run())

    async def escalate() -> None:
        await asyncio.sleep(grace_s)
        _killpg(pgid, signal_mod.SIGKILL)

    def cancel(_reason: str | None = None) -> None:
        if state["killed"] or task.done():
            return
        state["killed"] = True
        _killpg(pgid, signal_mod.SIGTERM)
        state["killer"] = asyncio.ensure_future(escalate())

    return cancel
