"""``!command`` in the composer (Claude Code's and Codex's shell mode): the user runs a command, sees its
output, and the model gets both with the next prompt as context.

The command is the user's own: a fresh ``bash -c`` in the session's cwd, outside the sandbox and without an
approval, stdin from ``/dev/null``, in its own process group (tracked: it ends with dsh-tui), cut after
``timeout_s``. Its input and output go to the model just before the user's next message (the app holds them
until then: a queued message would start a turn), as Claude Code records them: ``<bash-input>…</bash-input>``
then ``<bash-stdout>…</bash-stdout><bash-stderr>…</bash-stderr>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from dataclasses import dataclass

TIMEOUT_S = 120.0
MAX_CHARS = 30_000  # per stream, what the model and the screen get (the tail)


@dataclass
class ShellResult:
    command: str
    stdout: str
    stderr: str
    exit_code: int | None
    timed_out: bool = False

    def display(self) -> str:
        """What the app shows: ``$ command``, the output, and a non-zero exit."""
        body = self.stdout + (("\n" if self.stdout and not self.stdout.endswith("\n") else "") + self.stderr
                              if self.stderr else "")
        status = ""
        if self.timed_out:
            status = f"[timed out after {TIMEOUT_S:g} s]"
        elif self.exit_code:
            status = f"[exit code: {self.exit_code}]"
        lines = [f"$ {self.command}", body.rstrip("\n") or "(no output)"]
        if status:
            lines.append(status)
        return "\n".join(lines)

    def message(self) -> dict:
        """The user message the model gets with the next prompt."""
        out = self.stdout.rstrip("\n")
        err = self.stderr.rstrip("\n")
        if self.timed_out:
            err = (err + "\n" if err else "") + f"[timed out after {TIMEOUT_S:g} s]"
        elif self.exit_code:
            err = (err + "\n" if err else "") + f"[exit code: {self.exit_code}]"
        return {"role": "user", "content": [
            {"type": "text", "text": f"<bash-input>{self.command}</bash-input>"},
            {"type": "text", "text": f"<bash-stdout>{out}</bash-stdout><bash-stderr>{err}</bash-stderr>"}]}


def _tail(data: bytes) -> str:
    text = data.decode("utf-8", "replace")
    return text if len(text) <= MAX_CHARS else "…" + text[-MAX_CHARS:]


async def run(command: str, cwd: str, timeout_s: float = TIMEOUT_S) -> ShellResult:
    from dsh_tui.tools import procs
    from dsh_tui.tools.bash import bash_env

    proc = await asyncio.create_subprocess_exec(
        "bash", "-c", command, cwd=cwd, env=bash_env(), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)
    procs.track(proc.pid)
    timed_out = False
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        timed_out = True
        procs.killpg(proc.pid, signal.SIGKILL)
        out, err = await proc.communicate()
    except asyncio.CancelledError:
        procs.killpg(proc.pid, signal.SIGKILL)
        raise
    finally:
        with contextlib.suppress(ProcessLookupError):
            procs.killpg(proc.pid, signal.SIGKILL)  # nothing it left in its group outlives it
        procs.forget(proc.pid)
    return ShellResult(command, _tail(out), _tail(err), proc.returncode, timed_out)
