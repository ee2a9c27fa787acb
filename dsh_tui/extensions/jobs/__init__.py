"""The ``jobs`` built-in plugin: background jobs and dsh's ``job_output`` / ``job_list`` / ``job_kill`` tools
(dsh's ``jobs-local`` + ``tool-jobs``).

Applying it gives the agent a job registry (``agent.jobs``, ``registry.py``) that background work registers
with: ``bash`` with ``run_in_background: true`` (``producers.py``) and one-shot background subagents
(``dsh_tui.extensions.subagents``). When the agent host built ``bash`` without an explicit ``background``
tool option, the plugin rebuilds it with ``run_in_background`` advertised.

A job that settles on its own (not killed by ``job_kill``, not collected by a ``job_output`` wait, not
torn down) sends its owner dsh's notice ``background job <id> (<kind>: <label>) finished [status: …]. Read
its output with job_output.``: injected into a busy agent's next step, or opening a turn on an idle one
(at most ``max_consecutive_wakes`` turns in a row without user input; then it waits for the next step).
Disposing the agent kills every live job and waits for it.

Config (``[plugins.jobs]``, the pydantic ``Config`` below): ``wait_timeout_ms`` (30000), ``max_wait_timeout_ms``
(600000), ``completion_delivery`` (``wakeup`` | ``quiet``), ``max_consecutive_wakes`` (3), ``max_concurrent_jobs`` (10).
"""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo

from dsh_tui.extensions.jobs.producers import BashJobs
from dsh_tui.extensions.jobs.registry import Job, JobRegistry
from dsh_tui.runtime.options import option_error, positive_int, validate_options
from dsh_tui.tools.base import ToolDefinition, ToolError, ToolSchema

if TYPE_CHECKING:
    from dsh_tui.runtime.plugin_context import BuiltinContext

name = "jobs"
__all__ = ["apply", "name", "Config", "DEFAULTS", "JobRegistry", "BashJobs", "notice_text"]

DEFAULTS: dict[str, Any] = {"wait_timeout_ms": 30_000, "max_wait_timeout_ms": 600_000,
                            "completion_delivery": "wakeup", "max_consecutive_wakes": 3, "max_concurrent_jobs": 10}
NOTICE_PLUGIN = "tool-jobs"
SECTION = ("Track every background job id you start. You are notified in-session when a job finishes — do not "
           "busy-poll or sleep on one; keep working on independent steps and do not duplicate a running job's "
           "work. Before giving a final answer, collect every still-relevant job with job_output (set wait: true "
           "only when you are genuinely blocked on it), and job_kill jobs that stopped mattering.")
_JOB_ID = {"type": "string", "description": "Job id returned by the tool that started the background work."}
JOB_OUTPUT_SCHEMA: ToolSchema = {  # dsh 0.2's texts
    "name": "job_output",
    "description": "Read a background job: output since the previous read for stream jobs, or the result of a "
                   "finished final-output job.",
    "parameters": {"type": "object", "properties": {
        "job_id": _JOB_ID,
        "wait": {"type": "boolean", "description": "Block until the job finishes or the timeout expires; a "
                                                   "timed-out wait leaves the job running. Defaults to false."},
        "timeout_ms": {"type": "number", "description": "Max wait in milliseconds with wait: true. Defaults to and "
                                                        "is capped by configuration."}},
        "required": ["job_id"]},
}
JOB_LIST_SCHEMA: ToolSchema = {
    "name": "job_list",
    "description": "List your background jobs (running and finished) with their ids, kinds, and statuses.",
    "parameters": {"type": "object", "properties": {}},
}
JOB_KILL_SCHEMA: ToolSchema = {
    "name": "job_kill",
    "description": "Request cancellation of a running background job.",
    "parameters": {"type": "object", "properties": {
        "job_id": _JOB_ID,
        "reason": {"type": "string", "description": "Optional short reason, recorded in the log and forwarded to "
                                                    "the job."}},
        "required": ["job_id"]},
}


def _delivery(value: Any, info: ValidationInfo) -> Any:
    # checked last, as the hand-written checks did: the two timeouts' order first
    wait, longest = info.data.get("wait_timeout_ms"), info.data.get("max_wait_timeout_ms")
    if wait is not None and longest is not None and wait > longest:
        raise option_error(f"wait_timeout_ms ({wait}) exceeds max_wait_timeout_ms ({longest})")
    if value not in ("wakeup", "quiet"):
        raise option_error(f'completion_delivery must be "wakeup" or "quiet", got {value!r}')
    return value


_Positive = Annotated[int, BeforeValidator(positive_int)]


class Config(BaseModel):
    """``[plugins.jobs]``: background jobs. Fields are checked in this order (the first problem is the one
    reported)."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    wait_timeout_ms: _Positive = 30_000
    """How long a ``job_output`` wait lasts when the model gives no ``timeout_ms``, in milliseconds."""
    max_wait_timeout_ms: _Positive = 600_000
    """The longest ``job_output`` wait, in milliseconds (not less than ``wait_timeout_ms``)."""
    max_consecutive_wakes: _Positive = 3
    """Turns a finished job may open in a row on an idle agent without user input."""
    max_concurrent_jobs: _Positive = 10
    """Jobs running at once at most."""
    completion_delivery: Annotated[Literal["wakeup", "quiet"], BeforeValidator(_delivery)] = \
        Field(default="wakeup", validate_default=True)
    """``wakeup``: a finished job's notice opens a turn on an idle agent; ``quiet``: it waits for the next
    step."""


def _config(raw: Any) -> Config:
    return validate_options(Config, raw, DEFAULTS)


def status_line(job: dict) -> str:
    detail = job.get("detail")
    return f"[status: {job['status']}, {detail}]" if detail is not None else f"[status: {job['status']}]"


def notice_text(job: Job) -> str:
    return (f"background job {job.id} ({job.kind}: {job.label}) finished {job.status_line()}. "
            f"Read its output with job_output.")


def notice_message(job: Job) -> dict:
    summary = f"{job.kind} {job.label} {job.status_line()}"
    if len(summary) > 120:
        summary = summary[:119] + "…"
    return {"role": "user", "content": [{"type": "text", "text": notice_text(job)}],
            "source": {"kind": "plugin", "plugin": NOTICE_PLUGIN, "form": "notice", "summary": summary}}


def _text(value: str) -> list[dict]:
    return [{"type": "text", "text": value}]


def apply(ctx: BuiltinContext, config: Any = None) -> None:
    cfg = _config(config)
    agent = ctx.driver
    registry = JobRegistry(max_active=cfg.max_concurrent_jobs, clock=agent.clock)
    registry.bash = BashJobs(registry)  # type: ignore[attr-defined]
    ctx.provide("jobs", registry)  # withdrawn after the registry is disposed (disposers run newest first)
    ctx.effect(lambda: registry.dispose)
    _advertise_background(ctx, agent)

    # Notices: jobs the model already collected (a wait that returned the end, its own kill) are not announced.
    delivered: set[str] = set()
    wakes = [0]

    def on_settled(job: Job, cause: str) -> None:
        claimed = job.id in delivered
        delivered.discard(job.id)
        if claimed or cause == "teardown" or getattr(agent, "_disposed", False):
            return
        message = notice_message(job)
        if cfg.completion_delivery == "wakeup" and agent.status == "idle" and wakes[0] < cfg.max_consecutive_wakes:
            wakes[0] += 1
            agent.followup(message)
        else:
            agent.inject(message)

    registry.on_settled.append(on_settled)

    def on_claimed(payload: dict) -> None:
        if ((payload.get("message") or {}).get("source") or {}).get("kind") == "user":
            wakes[0] = 0  # human input refills the wake budget

    ctx.on("agent/inbox/claimed", on_claimed)

    async def assemble(payload: dict, nxt: Any) -> Any:
        from dsh_tui.runtime import prompt as prompt_mod

        assembly = await nxt()
        if "job_output" in agent.tools.tools:
            assembly.sections.append(prompt_mod.Section("tool:jobs", 114, SECTION))
        return assembly

    ctx.on("system-prompt/assemble", assemble)

    async def job_output(args: dict, tctx: Any) -> dict:
        job_id = registry.get(args.get("job_id")).id
        if args.get("wait") is True:
            requested = args.get("timeout_ms")
            if requested is not None and (isinstance(requested, bool) or not isinstance(requested, int | float)
                                          or not math.isfinite(requested) or requested <= 0):
                raise ToolError(f"invalid wait timeout: expected a positive number of milliseconds, got {requested}")
            timeout = min(requested if requested is not None else cfg.wait_timeout_ms, cfg.max_wait_timeout_ms)
            delivered.add(job_id)
            try:
                job = await registry.wait(job_id, timeout, tctx.cancelled)
            except BaseException:
                delivered.discard(job_id)
                raise
            if not job.terminal:
                delivered.discard(job_id)
        text, job = registry.read(job_id)
        return {"text": text, "job": job.public()}

    def render_output(_args: Any, value: dict) -> list[dict]:
        body = value["text"] or "(no new output)"
        return _text(body + ("" if body.endswith("\n") else "\n") + status_line(value["job"]))

    async def job_list(args: dict, tctx: Any) -> list[dict]:
        return [j.public() for j in registry.list()]

    def render_list(_args: Any, jobs: list[dict]) -> list[dict]:
        if not jobs:
            return _text("(no background jobs)")
        return _text("\n".join(f"{j['id']} [{j['kind']}] {j['status']} — {j['label']}" for j in jobs))

    async def job_kill(args: dict, tctx: Any) -> dict:
        job_id = registry.get(args.get("job_id")).id
        reason = args.get("reason")
        outcome = registry.kill(job_id, reason if isinstance(reason, str) else None)
        if outcome == "requested":
            delivered.add(job_id)  # the model's own kill is its delivery: no notice repeats it
        return {"outcome": "already-finished" if outcome == "already-finished" else "cancellation-requested",
                "job": registry.get(job_id).public()}

    def render_kill(_args: Any, value: dict) -> list[dict]:
        job = value["job"]
        if value["outcome"] == "already-finished":
            return _text(f"job {job['id']} had already finished {status_line(job)}")
        return _text(f"requested cancellation of job {job['id']}")

    for schema, execute, render in ((JOB_OUTPUT_SCHEMA, job_output, render_output),
                                    (JOB_LIST_SCHEMA, job_list, render_list),
                                    (JOB_KILL_SCHEMA, job_kill, render_kill)):
        ctx.tools.register(ToolDefinition(schema["name"], schema["description"], copy.deepcopy(schema["parameters"]),
                                          execute, render, access="read"))


def _advertise_background(ctx: Any, agent: Any) -> None:
    """Rebuild the host's ``bash`` with ``run_in_background`` when the host left the option unset."""
    tool = agent.tools.tools.get("bash")
    host = getattr(agent, "host", None)
    if tool is None or host is None or "run_in_background" in (tool.parameters.get("properties") or {}):
        return
    options = dict(getattr(host.spec, "tool_options", None) or {})
    if "background" in options:  # the deployment decided (``background: false`` refuses with dsh's text)
        return
    from dsh_tui.tools import builtin_tools

    options.update(background=True, names=("bash",))
    rebuilt = builtin_tools(**options)[0]
    agent.tools.tools["bash"] = rebuilt

    def restore() -> None:
        if agent.tools.tools.get("bash") is rebuilt:
            agent.tools.tools["bash"] = tool

    ctx.effect(lambda: restore)
