"""The per-agent background-job registry (dsh's ``jobs-local`` contract, process-local).

A job is started by a producer (background bash, a one-shot background subagent) through
``JobRegistry.start(kind, label, starter)``: the registry issues the id (``<kind>-<n>``, counted per kind),
calls ``starter(handle)`` which launches the work and returns its ``cancel(reason)`` function, and the
producer reports output with ``handle.append(text, channel)`` and the end with ``handle.settle(...)``.

- Admission: at most ``max_active`` (10) jobs ``running`` or ``stopping`` per registry; above it ``start``
  fails before the producer runs, with dsh's text.
- Output: a bounded ring per job (256 KiB live, trimmed to 16 KiB after the first terminal read); the model
  reads it through a consuming cursor (``read``); a read below the ring's window is *lossy*.
- Lifecycle: ``kill`` requests cancellation (status ``stopping``; the job settles ``killed`` when its work
  stops); ``dispose`` (agent teardown) cancels every live job and waits for it, so no process outlives the
  agent. Each settlement calls the ``on_settled(job, cause)`` listeners (cause ``producer``, ``kill`` or
  ``teardown``) after releasing the waiters.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from dsh_tui.tools.base import ToolError

log = logging.getLogger("dsh_tui.extensions.jobs")

MAX_ACTIVE = 10
RETAIN_BYTES = 256 * 1024
SETTLED_RETAIN_BYTES = 16 * 1024
TERMINAL = ("completed", "killed", "failed")


class _Ring:
    """Output chunks ``[offset, channel, text]`` with a byte cap; the oldest are dropped first."""

    def __init__(self) -> None:
        self.chunks: list[list[Any]] = []
        self.total = 0  # bytes ever appended
        self.retained = 0

    @property
    def earliest(self) -> int:
        return self.chunks[0][0] if self.chunks else self.total

    def append(self, text: str, channel: str, cap: int) -> None:
        size = len(text.encode("utf-8"))
        if not size:
            return
        self.chunks.append([self.total, channel, text])
        self.total += size
        self.retained += size
        self.trim(cap)

    def trim(self, cap: int) -> None:
        while self.retained > cap and self.chunks:
            first = self.chunks[0]
            size = len(first[2].encode("utf-8"))
            if self.retained - size >= cap or len(self.chunks) > 1:
                self.chunks.pop(0)
                self.retained -= size
                continue
            keep = cap  # one oversized chunk: keep its UTF-8-safe tail
            data = first[2].encode("utf-8")[-keep:]
            text = data.decode("utf-8", "ignore")
            kept = len(text.encode("utf-8"))
            first[0] += size - kept
            first[2] = text
            self.retained = kept

    def read_from(self, cursor: int) -> tuple[list[tuple[str, str]], bool]:
        out = []
        for offset, channel, text in self.chunks:
            end = offset + len(text.encode("utf-8"))
            if end <= cursor:
                continue
            if offset < cursor:
                text = text.encode("utf-8")[cursor - offset:].decode("utf-8", "ignore")
            out.append((channel, text))
        return out, self.earliest > cursor


@dataclass
class Job:
    id: str
    kind: str
    label: str
    status: str = "running"  # running | stopping | completed | killed | failed
    detail: str | None = None
    result: str | None = None
    started_at: int = 0
    finished_at: int | None = None
    ring: _Ring = field(default_factory=_Ring)
    cursor: int = 0
    result_delivered: bool = False
    cancel: Callable[[str | None], Any] | None = None
    kill_reason: str | None = None
    cause: str | None = None
    settled: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def status_line(self) -> str:
        return f"[status: {self.status}, {self.detail}]" if self.detail is not None else f"[status: {self.status}]"

    def public(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "label": self.label, "status": self.status}
        if self.detail is not None:
            out["detail"] = self.detail
        out["startedAt"] = self.started_at
        if self.finished_at is not None:
            out["finishedAt"] = self.finished_at
        return out


class JobHandle:
    """The producer's face of one job."""

    def __init__(self, registry: JobRegistry, job: Job) -> None:
        self._registry = registry
        self._job = job

    @property
    def id(self) -> str:
        return self._job.id

    def append(self, text: str, channel: str = "stdout") -> None:
        if self._job.terminal:
            return
        self._job.ring.append(text, channel, self._registry.retain_bytes)

    def settle(self, status: str, detail: str | None = None, result: str | None = None) -> None:
        self._registry._settle(self._job, status, detail, result)


def render_delta(chunks: list[tuple[str, str]], lossy: bool) -> str:
    """stdout (and unlabelled) chunks in order, then every stderr chunk in one ``[stderr]`` section."""
    out = "".join(t for c, t in chunks if c != "stderr")
    err = "".join(t for c, t in chunks if c == "stderr")
    body = out + (("\n" if out and not out.endswith("\n") else "") + "[stderr]\n" + err if err else "")
    if not lossy:
        return body
    notice = "[some output was dropped from memory; full output: (unavailable)]"
    return body + ("\n" if body and not body.endswith("\n") else "") + notice


class JobRegistry:
    def __init__(self, *, max_active: int = MAX_ACTIVE, retain_bytes: int = RETAIN_BYTES,
                 settled_retain_bytes: int = SETTLED_RETAIN_BYTES, clock: Callable[[], int] | None = None) -> None:
        self.max_active = max_active
        self.retain_bytes = retain_bytes
        self.settled_retain_bytes = settled_retain_bytes
        self.clock = clock or (lambda: int(time.time() * 1000))
        self.jobs: dict[str, Job] = {}
        self._counters: dict[str, int] = {}
        self.on_settled: list[Callable[[Job, str], Any]] = []
        self.closed = False

    # ---- producers ---------------------------------------------------------------------------------
    async def start(self, kind: str, label: str,
                    starter: Callable[[JobHandle], Awaitable[Callable[[str | None], Any]]]) -> Job:
        if self.closed:
            raise ToolError("background jobs unavailable: the agent is closing")
        active = sum(1 for j in self.jobs.values() if j.status in ("running", "stopping"))
        if active >= self.max_active:
            raise ToolError(f"background job limit reached for this owner (limit: {self.max_active}); use job_kill "
                            f"to stop an unneeded job, wait for it to finish, then retry")
        count = self._counters.get(kind, 0) + 1
        self._counters[kind] = count
        job = Job(f"{kind}-{count}", kind, label or kind, started_at=self.clock())
        job.cancel = await starter(JobHandle(self, job))  # a failing starter registers nothing
        self.jobs[job.id] = job
        return job

    # ---- the model's controls ----------------------------------------------------------------------
    def get(self, job_id: object) -> Job:
        """The job ``job_id`` (a model's argument, checked here: a non-empty string naming a job)."""
        if not isinstance(job_id, str) or not job_id:
            import json

            raise ToolError(f"invalid job_id: expected a non-empty string, got {json.dumps(job_id)}")
        job = self.jobs.get(job_id)
        if job is None:
            raise ToolError(f"unknown job {job_id}")
        return job

    def list(self) -> list[Job]:
        return list(self.jobs.values())

    def read(self, job_id: str) -> tuple[str, Job]:
        """Consume the output since the previous read; the result rides the first read after settlement."""
        job = self.get(job_id)
        chunks, lossy = job.ring.read_from(job.cursor)
        job.cursor = job.ring.total
        text = render_delta(chunks, lossy)
        if job.terminal and not job.result_delivered:
            job.result_delivered = True
            if job.result is not None:
                text = text + ("\n" if text and not text.endswith("\n") else "") + job.result
        if job.terminal:
            job.ring.trim(self.settled_retain_bytes)
        return text, job

    def kill(self, job_id: str, reason: str | None = None) -> str:
        job = self.get(job_id)
        if job.terminal:
            return "already-finished"
        if job.cancel is not None:
            job.cancel(reason)
        job.status = "stopping"
        if reason is not None:
            job.kill_reason = reason
        job.cause = "kill"
        return "requested"

    async def wait(self, job_id: str, timeout_ms: float, cancelled: asyncio.Event | None = None) -> Job:
        job = self.get(job_id)
        if job.terminal:
            return job
        waits = {asyncio.ensure_future(job.settled.wait())}
        if cancelled is not None:
            waits.add(asyncio.ensure_future(cancelled.wait()))
        try:
            await asyncio.wait(waits, timeout=timeout_ms / 1000, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
        if not job.terminal and cancelled is not None and cancelled.is_set():
            raise ToolError("tool call aborted", code="ABORTED", name="AbortError")
        return job

    # ---- settlement and teardown -------------------------------------------------------------------
    def _settle(self, job: Job, status: str, detail: str | None, result: str | None) -> None:
        if job.terminal:
            return
        job.status = status
        if status == "killed" and job.kill_reason is not None:
            job.detail = f"{detail}; {job.kill_reason}" if detail is not None else job.kill_reason
        else:
            job.detail = detail
        job.result = result
        job.finished_at = self.clock()
        job.cancel = None
        job.settled.set()
        cause = job.cause or "producer"
        for fn in list(self.on_settled):
            try:
                fn(job, cause)
            except Exception:  # noqa: BLE001 - one listener must not stop the others
                log.exception("job settlement listener failed")

    async def dispose(self, timeout: float = 10.0) -> None:
        """Cancel every live job (cause ``teardown``) and wait until each has settled."""
        self.closed = True
        live = [j for j in self.jobs.values() if not j.terminal]
        for job in live:
            job.cause = "teardown"
            try:
                if job.cancel is not None:
                    job.cancel("owner disposed")
                job.status = "stopping"
            except Exception as err:  # noqa: BLE001 - teardown must not deadlock on a throwing cancel
                self._settle(job, "failed", f"cancel threw during teardown; work may be orphaned: {err}", None)
        if live:
            await asyncio.wait([asyncio.ensure_future(j.settled.wait()) for j in live], timeout=timeout)
