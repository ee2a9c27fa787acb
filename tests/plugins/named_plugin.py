"""A plugin module given to the SDK by name (``Harness(plugins=["tests.plugins.named_plugin"])``)."""

from __future__ import annotations

from typing import Any

SEEN: list[str] = []


def apply(ctx: Any, config: dict) -> None:
    async def request(payload: dict, next_: Any) -> Any:
        SEEN.append("agent/request")
        return await next_()

    ctx.on("agent/request", request)
