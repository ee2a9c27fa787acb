"""dsh's examples/headless-agent/tests/fixtures/subagent-settlement-fence.ts as a dsh-tui plugin (test fixture).

The recorder of dsh's ``subagent-settlement`` stream holds the root agent's second step until the child's
settlement notice has entered the root's inbox, so the recording does not depend on which of the two the
machine schedules first. Loaded by settings (``[plugins.settlement-fence] module = "tests.cli.settlement_fence"``).
"""

from __future__ import annotations

import asyncio
from typing import Any

name = "settlement-fence"


def apply(ctx: Any, config: Any = None) -> None:
    if ctx.session.header.get("parentSession") is not None:
        return  # the fence holds the root only
    delivered = asyncio.Event()

    def inserted(payload: dict) -> None:
        if ((payload.get("message") or {}).get("source") or {}).get("kind") == "subagent-settled":
            delivered.set()

    async def pre_step(payload: dict, nxt: Any) -> Any:
        if payload.get("turn") == 1 and payload.get("step") == 2 and not delivered.is_set():
            await delivered.wait()
        return await nxt()

    ctx.on("agent/inbox/inserted", inserted)
    ctx.on("agent/pre-step", pre_step)
