"""One-shot background subagents as jobs of the ``jobs`` plugin (``dsh_tui/extensions/jobs/``): the child runs
its prompt while the parent goes on; ``job_output`` reads its final answer, ``job_kill`` cancels its run."""

from __future__ import annotations

import asyncio
from typing import Any

from dsh_tui.extensions.subagents import children as ch


async def start_job_child(parent: Any, host: Any, handle: Any, *, open_child: Any, provider: str, args: dict,
                          tool_name: str, call_id: str, depth: int) -> Any:
    """Open a one-shot child for a background job and run its prompt; the job settles with the child's
    result (``completed``), its failure (``failed``, the reason as detail) or ``killed`` (``job_kill``,
    teardown: the child's run is cancelled). Returns the job's cancel function."""
    child = await open_child(parent, host, provider=provider, mode="one-shot", label=args["description"],
                             tool_name=tool_name, call_id=call_id, depth=depth)
    cagent = child.agent
    child.epoch_start = len(cagent.session.events)
    cagent.followup({"role": "user", "content": [{"type": "text", "text": args["prompt"]}],
                     "source": {"kind": "user"}})
    # as a foreground one-shot child: inside the first turn, after turn/start and the claim, before step/start
    cagent.session.append("subagent/descriptor",
                          {"version": 2, "mode": "one-shot", "provider": provider, "label": args["description"]})
    ch.notify_watchers(child)
    killed = [False]

    async def run() -> None:
        try:
            await cagent.wait_idle()
        finally:
            outcome = ch.epoch_outcome(cagent.session.events, child.epoch_start)
            child.outcome = outcome
            try:
                await ch.close_child(child)
            except Exception:  # noqa: BLE001 - the job still settles
                pass
        if outcome["kind"] == "completed" and not killed[0]:
            handle.settle("completed", None, outcome["text"])
        elif killed[0]:
            handle.settle("killed", None, outcome["text"] or None)
        else:
            handle.settle("failed", ch.foreground_error(outcome).split("\n")[0], outcome["text"] or None)

    task = asyncio.ensure_future(run())

    def cancel(_reason: str | None = None) -> None:
        if task.done() or killed[0]:
            return
        killed[0] = True
        cagent.cancel({"kind": "user"})

    return cancel
