"""Example plugin: append every tool call and its outcome to a JSONL audit file.

    [plugins.tool-audit]
    path = "~/dsh-tool-audit.jsonl"     # default: tool-audit.jsonl in the session's working directory

One line per call: {"time", "session", "callId", "tool", "arguments", "ok"}. The file is opened once and
closed when the agent closes (``ctx.effect``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from pydantic import BaseModel

from dsh_tui.plugins import Context

name = "tool-audit"


class Config(BaseModel):
    path: str = ""


def apply(ctx: Context, config: Config) -> None:
    path = Path(config.path).expanduser() if config.path else Path(ctx.agent.config["cwd"]) / "tool-audit.jsonl"
    handle = path.open("a", encoding="utf-8")
    ctx.effect(lambda: handle.close)  # dsh's ctx.effect: runs now; what it returns runs when the plugin unloads

    def on_result(payload) -> None:
        result = payload["result"]
        line = {"time": int(time.time() * 1000), "session": ctx.session.id, "callId": payload["callId"],
                "tool": payload["name"], "arguments": payload["arguments"], "ok": not result.get("isError", False)}
        handle.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
        handle.flush()

    ctx.on("tools/result", on_result)
