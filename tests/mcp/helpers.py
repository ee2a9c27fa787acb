"""Agents with MCP servers for the tests: the built-in ``mcp`` plugin with given servers, real processes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from dsh_tui.llm.scripted import ScriptedProvider
from dsh_tui.runtime import Agent, AgentConfig
from dsh_tui.runtime.plugins import Plugins, builtin_specs
from tests.conftest import REPO
from tests.runtime.helpers import FakeSleep, make_session

PY_SERVER = [sys.executable, "-m", "tests.mcp.server"]


def stdio(**extra: Any) -> dict:
    """A ``[mcp.servers.<name>]`` table for the test server over stdio."""
    return {"command": sys.executable, "args": ["-m", "tests.mcp.server", "stdio"], "cwd": str(REPO), **extra}


def mcp_agent(responses: list, servers: dict[str, dict], tmp_path, *, cli: tuple[str, ...] = (), **cfg: Any) -> Agent:
    specs = builtin_specs()
    for spec in specs:
        if spec.id == "mcp":
            spec.config = {"settings": {"servers": servers}, "cli": cli}
    provider = ScriptedProvider(responses, name="mock")
    cfg.setdefault("model", "mock-model")
    cfg.setdefault("runtime_context", False)
    cfg.setdefault("check_requests", True)
    cfg.setdefault("preset", "full-access")  # MCP tools ask under the other presets
    cfg.setdefault("cwd", str(tmp_path))
    return Agent(make_session(str(tmp_path)), provider, [], config=AgentConfig(**cfg), sleep=FakeSleep(),
                 plugins=Plugins(specs, strict=True))


async def until(predicate: Callable[[], bool], timeout: float = 90.0) -> None:
    """Wait (polling) until ``predicate()`` holds; the timeout only turns a hang into a failure."""
    async def loop() -> None:
        while not predicate():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(loop(), timeout)


def server(agent: Agent, name: str) -> Any:
    return agent.mcp.get(name)


def results(agent: Agent) -> dict[str, tuple[str, bool]]:
    """callId -> (the model-visible text of its tool result, isError)."""
    out = {}
    for e in agent.session.events:
        if e["type"] == "tool/result":
            block = e["data"]["message"]["content"][0]
            out[block["toolCallId"]] = ("\n".join(c["text"] for c in block["content"]), block["isError"])
    return out


def blocks(agent: Agent, call_id: str) -> list[dict]:
    for e in agent.session.events:
        if e["type"] == "tool/result" and e["data"]["message"]["content"][0]["toolCallId"] == call_id:
            return e["data"]["message"]["content"][0]["content"]
    raise AssertionError(f"no result for {call_id}")


def start_http_server(env: dict | None = None) -> tuple[subprocess.Popen, str]:
    """The test server on streamable HTTP (127.0.0.1, a free port): (process, url)."""
    proc = subprocess.Popen([*PY_SERVER, "http"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env={**os.environ, **(env or {})})
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("PORT "):
        proc.kill()
        raise AssertionError(f"the HTTP test server did not start: {line!r}")
    return proc, f"http://127.0.0.1:{int(line.split()[1])}/mcp"
