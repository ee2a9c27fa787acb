"""Example plugin: refuse bash commands that match configured patterns, before approval or execution.

    [plugins.bash-guard]
    patterns = ['\\brm\\s+-rf\\b', '\\bgit\\s+push\\b']
    reason = "this command is blocked by the bash-guard plugin"

The model receives the refusal as the tool's error result and can choose another way.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, field_validator

from dsh_tui.plugins import Context

name = "bash-guard"


class Config(BaseModel):
    patterns: list[str] = [r"\brm\s+-rf\s+/(\s|$)"]
    reason: str = "blocked by the bash-guard plugin"

    @field_validator("patterns")
    @classmethod
    def _compile(cls, patterns: list[str]) -> list[str]:
        for p in patterns:
            try:
                re.compile(p)
            except re.error as err:
                raise ValueError(f"pattern {p!r}: {err}") from None
        return patterns


def apply(ctx: Context, config: Config) -> None:
    compiled = [re.compile(p) for p in config.patterns]

    async def pre_execute(payload, next):
        if payload["name"] == "bash" and isinstance(payload["arguments"], dict):
            command = str(payload["arguments"].get("command", ""))
            for pattern in compiled:
                if pattern.search(command):
                    ctx.log.info("refused %r (pattern %s)", command, pattern.pattern)
                    return {"kind": "deny", "reason": f"{config.reason} (pattern {pattern.pattern!r})"}
        return await next()

    ctx.on("tools/pre-execute", pre_execute)
