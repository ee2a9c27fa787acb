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


def image_unavailable(model: str) -> str:
    """dsh's text for a valid MCP image a text-only ``model`` gets: with the attachment store (issue #32) the
    route's refusal, without it "no attachment store is mounted"."""
    import importlib.util

    reason = (f'model "{model}" does not declare image input' if importlib.util.find_spec("dsh_tui.store.attachments")
              else "no attachment store is mounted")
    return f"[image unavailable: image/png; {reason}; raw image data remains available to programmatic callers]"


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


# ---- headless runs against a scripted model server (tests/llm/sse_server.py) ----------------------------
def write_settings(srv: Any, extra: str = "") -> None:
    """settings.toml pointing the default route at ``srv`` (plus ``extra`` TOML)."""
    from dsh_tui.config import settings_path

    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[default]\nprovider = "local"\nmodel = "m"\n'
                    f'[providers.local]\nbase_url = "{srv.base_url}/v1"\n{extra}')


def run_headless(tmp_path: Any, *argv: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", *argv, "--root",
                           str(tmp_path / "root"), "--cwd", str(tmp_path)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ))


def call_chunks(*items: tuple[str, str, dict]) -> list:
    """One streamed chunk per tool call ``(call id, tool name, arguments)``."""
    import json

    from tests.llm.sse_server import chunk, tool_call

    return [chunk(tool_calls=[tool_call(i, id=cid, name=name, args=json.dumps(args))])
            for i, (cid, name, args) in enumerate(items)]


def tool_messages(request: dict) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["body"]["messages"] if m["role"] == "tool"}
