"""The ``bash`` tool (dsh ``tool-bash`` over ``bash-local``).

Each call is a fresh ``bash -c`` in its own process group (``start_new_session``), cwd = the
session cwd or ``workdir`` (confined to the workspace unless ``ctx.allow_outside``). Per stream the
last ``max_output_bytes`` (64,000) bytes stay in memory; once a stream outgrows that, the whole
stream is copied to a spill file (capped at 64 MiB) and the text gets the
``[output truncated; full output: <path>]`` marker. Timeout (default 120 s, cap 600 s) and
cancellation send SIGTERM to the group, then SIGKILL after the grace period. The group is tracked
(``dsh_tui.tools.procs``): what a finished command left running in it (``cmd &``) ends with the process. The result text is
dsh's ``renderResult``: non-zero exits are not errors. ``run_in_background``
hands the command to a jobs port (``async start(command, *, cwd, env, label) -> job_id``): the builder's
``jobs`` option, else the calling agent's registry (``dsh_tui.extensions.jobs``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal as signal_mod
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dsh_tui.session.errors import DshError
from dsh_tui.tools.base import ToolContext, ToolDefinition, ToolError
from dsh_tui.tools.common import aborted_error, js_number, plain_error, private_dir
from dsh_tui.tools.paths import confine_dir
from dsh_tui.tools.procs import killpg, release, track
from dsh_tui.tools.sandbox import (
    CONFINED,
    denial_markers,
    denied,
    escalation_args_problem,
    runner_failure,
    spawn_failure_text,
    unavailable_text,
)

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
MAX_OUTPUT_BYTES = 64_000
MAX_SPILL_BYTES = 64 * 1024 * 1024
GRACE_MS = 3_000
READ_CHUNK = 65_536

ENV_OVERRIDES = {"NO_COLOR": "1", "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat"}
# Credentials never reach model-run commands: every name matching dsh's MCP rule
# (/KEY|PASSWORD|SECRET|TOKEN/i, plus the DSH_ prefix handled below), every variable a provider of the
# configuration names as its key (``api_key_env``, whatever its name), and any variable holding the
# value of a configured key.
_SCRUB = re.compile(r"KEY|PASSWORD|SECRET|TOKEN", re.IGNORECASE)


def configured_credentials() -> tuple[set[str], set[str]]:
    """(variable names, key values) the settings and credentials file name; empty when unreadable."""
    from dsh_tui.config import load_credentials, load_settings

    names: set[str] = set()
    values: set[str] = set()
    try:
        for ps in load_settings().providers().values():
            if ps.api_key_env:
                names.add(ps.api_key_env)
    except (DshError, OSError, ValueError, TypeError):
        pass
    try:
        creds = load_credentials() or {}
    except (DshError, OSError, ValueError):
        creds = {}
    for k, v in creds.items():
        if isinstance(v, str) and v.strip():
            names.add(k)
            values.add(v)
        elif k == "providers" and isinstance(v, dict):
            values.update(e["api_key"] for e in v.values()
                          if isinstance(e, dict) and isinstance(e.get("api_key"), str) and e["api_key"].strip())
    values.update(os.environ[n] for n in names if os.environ.get(n, "").strip())
    return names, values


class _Capture:
    """Tail-keeping capture of one output stream, spilling the complete stream once it overflows."""

    def __init__(self, cap: int, spill_max: int, spill_path: Path | None) -> None:
        self.cap = cap
        self.spill_max = spill_max
        self.spill_path = spill_path
        self.buf = bytearray()
        self.total = 0
        self.spilled = 0
        self.fh: Any = None
        self.spill_failed = False

    async def push(self, data: bytes) -> None:
        self.total += len(data)
        if self.fh is None and not self.spill_failed and self.total > self.cap:
            self.fh = await asyncio.to_thread(self._open)
            if self.fh is not None:
                await self._write(bytes(self.buf))
        if self.fh is not None:
            await self._write(data)
        self.buf += data
        if len(self.buf) > self.cap:
            del self.buf[: len(self.buf) - self.cap]

    def _open(self) -> Any:
        if self.spill_path is None:
            self.spill_failed = True
            return None
        try:
            self.spill_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.spill_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            return os.fdopen(fd, "wb")
        except OSError:
            self.spill_failed = True
            return None

    async def _write(self, data: bytes) -> None:
        room = self.spill_max - self.spilled
        if room <= 0 or not data:
            return
        chunk = data[:room]
        try:
            await asyncio.to_thread(self.fh.write, chunk)
            self.spilled += len(chunk)
        except OSError:
            self.spill_failed = True

    async def close(self) -> None:
        if self.fh is not None:
            with contextlib.suppress(OSError):
                await asyncio.to_thread(self.fh.close)

    def result(self) -> dict[str, Any]:
        data = bytes(self.buf)
        truncated = self.total > self.cap
        if truncated:
            start = 0
            while start < len(data) and start < 4 and (data[start] & 0xC0) == 0x80:
                start += 1
            data = data[start:]
        out: dict[str, Any] = {"text": data.decode("utf-8", "replace"), "truncated": truncated}
        if truncated and self.fh is not None and not self.spill_failed and self.spill_path is not None:
            out["spillPath"] = str(self.spill_path)
        return out


async def _pump(stream: asyncio.StreamReader, capture: _Capture) -> None:
    while True:
        data = await stream.read(READ_CHUNK)
        if not data:
            return
        await capture.push(data)


async def _exited(proc: asyncio.subprocess.Process) -> int:
    """The exit status as soon as the process ends (``Process.wait`` also waits for the pipes)."""
    delay = 0.001
    while proc.returncode is None:
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.025)
    return proc.returncode


async def drain_pumps(pumps: Sequence[asyncio.Future[Any]], pgid: int, grace: float) -> None:
    """After the shell exited: descendants may still hold the pipes open. Give them ``grace`` seconds, then
    end the group and give the readers one more second (the bash tool and background jobs alike)."""
    _, pending = await asyncio.wait(pumps, timeout=grace)
    if pending:
        killpg(pgid, signal_mod.SIGKILL)
        _, pending = await asyncio.wait(pending, timeout=1.0)
        for task in pending:
            task.cancel()


class RunnerSpawnError(DshError, OSError):
    """The confined argv's program (the sandbox runner) could not be spawned."""

    def __init__(self, program: str, err: OSError) -> None:
        super().__init__(err.errno, err.strerror)
        self.program = program
        self.text = spawn_failure_text(program, err)


async def run_bash(
    command: str,
    *,
    cwd: str,
    timeout_ms: float,
    cancelled: asyncio.Event,
    env: dict[str, str],
    max_output_bytes: int = MAX_OUTPUT_BYTES,
    max_spill_bytes: int = MAX_SPILL_BYTES,
    spill_stem: Path | None = None,
    grace_ms: float = GRACE_MS,
    argv: list[str] | None = None,
) -> dict[str, Any]:
    """Run ``bash -c command`` (or ``argv``: the command confined by a sandbox) to completion, timeout or
    cancellation; returns dsh's ShellRunResult."""
    out = _Capture(
        max_output_bytes,
        max_spill_bytes,
        spill_stem.with_name(spill_stem.name + "-stdout.txt") if spill_stem else None,
    )
    err = _Capture(
        max_output_bytes,
        max_spill_bytes,
        spill_stem.with_name(spill_stem.name + "-stderr.txt") if spill_stem else None,
    )
    try:
        proc = await asyncio.create_subprocess_exec(
            *(argv or ["bash", "-c", command]), cwd=cwd, env=env,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )  # fmt: skip
    except (FileNotFoundError, PermissionError) as exc:
        if argv:  # the sandbox's runner could not be started: the caller reports it as the sandbox's failure
            raise RunnerSpawnError(argv[0], exc) from None
        raise plain_error(f"spawn bash ENOENT: {exc.filename or cwd}") from None
    pgid = track(proc.pid)  # ended with the process if something of it outlives the call (tools.procs)
    assert proc.stdout is not None and proc.stderr is not None
    pumps = [asyncio.ensure_future(_pump(proc.stdout, out)), asyncio.ensure_future(_pump(proc.stderr, err))]
    waiter = asyncio.ensure_future(_exited(proc))
    cancel_wait = asyncio.ensure_future(cancelled.wait())
    timed_out = aborted = False
    grace = grace_ms / 1000
    try:
        done, _ = await asyncio.wait(
            {waiter, cancel_wait}, timeout=timeout_ms / 1000, return_when=asyncio.FIRST_COMPLETED
        )
        if waiter not in done:
            if cancel_wait in done:
                aborted = True
            else:
                timed_out = True
            killpg(pgid, signal_mod.SIGTERM)
            finished, _ = await asyncio.wait({waiter}, timeout=grace)
            if not finished:
                killpg(pgid, signal_mod.SIGKILL)
                await waiter
        await drain_pumps(pumps, pgid, grace)
    except asyncio.CancelledError:
        killpg(pgid, signal_mod.SIGKILL)
        raise
    finally:
        cancel_wait.cancel()
        for task in pumps:
            if not task.done():
                task.cancel()
        if not waiter.done():
            killpg(pgid, signal_mod.SIGKILL)
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(waiter), 1.0)
        await out.close()
        await err.close()
        release(pgid)
    rc = proc.returncode
    if rc is not None and rc < 0:
        try:
            sig_name: str | None = signal_mod.Signals(-rc).name
        except ValueError:
            sig_name = f"SIG{-rc}"
        exit_code: int | None = None
    else:
        sig_name, exit_code = None, rc
    return {
        "exitCode": exit_code,
        "signal": sig_name,
        "timedOut": timed_out,
        "aborted": aborted,
        "timeoutMs": timeout_ms,
        "stdout": out.result(),
        "stderr": err.result(),
    }


def _stream_text(stream: dict[str, Any]) -> str:
    text = stream["text"]
    if stream.get("truncated"):
        text += f"\n[output truncated; full output: {stream.get('spillPath') or '(unavailable)'}]"
    return text


def render_bash_result(value: dict[str, Any], escalation: bool = False) -> str:
    """dsh ``renderResult``: the sandbox denial marker (and, with ``escalation``, its hint) before the exit
    markers."""
    if value.get("kind") == "background":
        return f"started background job {value['jobId']}"
    body = _stream_text(value["stdout"])
    err = _stream_text(value["stderr"])
    if err != "":
        if body != "" and not body.endswith("\n"):
            body += "\n"
        body += "[stderr]\n" + err
    if body == "":
        body = "(no output)"
    markers: list[str] = []
    sandbox = value.get("sandbox")
    if isinstance(sandbox, dict) and sandbox.get("denied"):
        markers.extend(denial_markers(str(sandbox.get("mode")), escalation))
    if value.get("timedOut"):
        markers.append(f"[timed out after {js_number(value['timeoutMs'])}ms]")
    if value.get("signal") is not None:
        markers.append(f"[killed by signal: {value['signal']}]")
    elif value.get("exitCode") != 0:
        markers.append(f"[exit code: {value.get('exitCode')}]")
    if not markers:
        return body
    return (body if body.endswith("\n") else body + "\n") + "\n".join(markers)


def _validate(args: Any) -> None:
    if not isinstance(args, dict):
        raise plain_error("invalid command: expected a non-empty string")
    command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        raise plain_error("invalid command: expected a non-empty string")
    description = args.get("description")
    if not isinstance(description, str) or not description.strip():
        raise plain_error("invalid description: expected a non-empty string")
    timeout = args.get("timeoutMs")
    if timeout is not None:
        ok = isinstance(timeout, int | float) and not isinstance(timeout, bool)
        if not ok or timeout != timeout or timeout in (float("inf"), float("-inf")) or timeout <= 0:
            raise plain_error(f"invalid timeoutMs: expected a positive number, got {js_number(timeout)}")


def credential_free_environ(parent: dict[str, str] | None = None) -> dict[str, str]:
    """``parent`` (default: this process's environment) without credentials or ``DSH_*`` values: the
    base of what a model-run command (``bash_env``) and an MCP stdio server get."""
    names, values = configured_credentials()
    return {k: v for k, v in (os.environ if parent is None else parent).items()
            if not _SCRUB.search(k) and not k.startswith("DSH_") and k not in names and v not in values}


def bash_env(extra: dict[str, str] | None = None, ctx: ToolContext | None = None) -> dict[str, str]:
    """The command environment: ambient env minus harness credentials and stale ``DSH_*`` values,
    the model-friendly overrides, then the managed ``DSH_*`` facts (dsh ``shell-env``)."""
    home = os.environ.get("DSH_HOME") or os.path.join(os.path.expanduser("~"), ".dsh")
    env = credential_free_environ()
    env.update(ENV_OVERRIDES)
    env["DSH_HOME"] = home
    env["DSH_SHELL"] = "1"
    session = getattr(getattr(ctx, "agent", None), "session", None)
    session_id = getattr(session, "id", None)
    if isinstance(session_id, str) and session_id:
        env["DSH_SESSION_ID"] = session_id
    if extra:
        env.update(extra)
    return env


def bash_tool(
    schema: dict[str, Any],
    *,
    background: bool = False,
    escalation: bool = False,
    jobs: Any = None,
    default_timeout_ms: float = DEFAULT_TIMEOUT_MS,
    max_timeout_ms: float = MAX_TIMEOUT_MS,
    max_output_bytes: int = MAX_OUTPUT_BYTES,
    max_spill_bytes: int = MAX_SPILL_BYTES,
    grace_ms: float = GRACE_MS,
    env: dict[str, str] | None = None,
    sandbox: Any = None,
) -> ToolDefinition:
    """``sandbox``: a ``dsh_tui.tools.sandbox.Sandbox``: each command runs confined under the call's
    ``ctx.sandbox_mode`` (``read-only`` / ``workspace-write``; ``danger-full-access`` runs it as it is)."""

    def confine(command: str, ctx: ToolContext, cwd: str) -> Any:
        mode = ctx.sandbox_mode
        if sandbox is None or mode not in CONFINED:
            return None
        return sandbox.confine(["bash", "-c", command], mode=mode, workspace=str(ctx.workspace), cwd=cwd)

    async def execute(args: Any, ctx: ToolContext) -> Any:
        _validate(args)
        if args.get("sandbox_permissions") is not None and not escalation:
            raise plain_error(
                "sandbox_permissions is not available in this composition (no sandboxing executor to escalate)"
            )
        if escalation:
            problem = escalation_args_problem(args.get("sandbox_permissions"), args.get("justification"))
            if problem:
                raise plain_error(problem)
        workdir = args.get("workdir")
        if isinstance(workdir, str):
            cwd = await asyncio.to_thread(confine_dir, ctx, workdir, subject="command", escalation=escalation)
        else:
            cwd = str(ctx.cwd)
        if args.get("run_in_background") is True:
            if not background:
                raise plain_error(
                    "run_in_background is disabled for this deployment (enableRunInBackground: false)"
                )
            # The jobs port: the builder's, else the calling agent's job registry (the ``jobs`` plugin).
            port = jobs if jobs is not None else getattr(getattr(getattr(ctx, "agent", None), "jobs", None),
                                                         "bash", None)
            if port is None:
                raise plain_error(
                    "background jobs unavailable: load @deepseek-ai/dsh-jobs and @deepseek-ai/dsh-tool-jobs"
                )
            if ctx.cancelled.is_set():
                raise aborted_error()
            confined = await asyncio.to_thread(confine, args["command"], ctx, cwd)
            if confined is None:
                job_id = await port.start(args["command"], cwd=cwd, env=bash_env(env, ctx), label=args["command"])
            else:  # the job runs the confined argv and removes its temp dir when it ends
                job_id = await port.start(args["command"], cwd=cwd, env={**bash_env(env, ctx), **confined.env},
                                          label=args["command"], argv=confined.argv, cleanup=confined.cleanup,
                                          confined=confined,
                                          denial="\n".join(denial_markers(confined.mode, escalation)))
            return {"kind": "background", "jobId": str(job_id)}
        if not os.path.isdir(cwd):
            raise plain_error(f'workdir "{cwd}" is not a directory')
        if ctx.cancelled.is_set():
            raise aborted_error()
        requested = args.get("timeoutMs")
        timeout_ms = min(requested if requested is not None else default_timeout_ms, max_timeout_ms)
        spill_dir = Path(ctx.spill_dir) if ctx.spill_dir is not None else _private_spill_dir()
        call = re.sub(r"[^A-Za-z0-9._-]+", "_", ctx.call_id or "bash")[:60]
        stem = spill_dir / f"{call}-{uuid.uuid4().hex[:8]}" if spill_dir is not None else None
        confined = await asyncio.to_thread(confine, args["command"], ctx, cwd)
        try:
            result = await run_bash(
                args["command"], cwd=cwd, timeout_ms=timeout_ms, cancelled=ctx.cancelled,
                env=bash_env(env, ctx) if confined is None else {**bash_env(env, ctx), **confined.env},
                max_output_bytes=max_output_bytes, max_spill_bytes=max_spill_bytes, spill_stem=stem,
                grace_ms=grace_ms, argv=None if confined is None else confined.argv,
            )  # fmt: skip
        except RunnerSpawnError as err:  # the runner never started: the command did not run
            assert confined is not None
            raise ToolError(unavailable_text(confined.mode, err.text), code="SANDBOX_UNAVAILABLE",
                            name="SandboxUnavailableError") from None
        finally:
            if confined is not None:
                await asyncio.to_thread(confined.cleanup)
        if result["aborted"]:
            raise aborted_error()
        if confined is not None:
            stderr = result["stderr"]["text"]
            failure = runner_failure(result["exitCode"], stderr, confined.runner_rules)
            if failure is not None:  # the runner refused: the command did not run
                raise ToolError(unavailable_text(confined.mode, failure), code="SANDBOX_UNAVAILABLE",
                                name="SandboxUnavailableError")
            result["sandbox"] = {"mode": confined.mode,
                                 "denied": denied(result["exitCode"], stderr, confined.denial_signatures),
                                 "enforcement": "full"}
        return {"kind": "foreground", **result}

    def render(args: Any, value: Any) -> list[dict[str, Any]]:
        return [{"type": "text", "text": render_bash_result(value, escalation)}]

    return ToolDefinition(
        name="bash",
        description=schema["description"],
        parameters=schema["parameters"],
        execute=execute,
        render=render,
        presentation_meta=None,
        is_concurrency_safe=None,
        access="exec",
        sandboxed=sandbox is not None,
    )


def _private_spill_dir() -> Path | None:
    """This user's private spill directory (``tools.common.private_dir``), or None: nothing spilled."""
    try:
        return private_dir("spill")
    except OSError:
        return None
