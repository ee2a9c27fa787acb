"""Shared helpers for the runtime tests: a real Session, the scripted provider, a few tiny tools."""

from __future__ import annotations

import asyncio
from typing import Any

from dsh_tui.llm.scripted import ScriptedProvider
from dsh_tui.runtime import Agent, AgentConfig
from dsh_tui.session.headers import make_header
from dsh_tui.session.log import Session
from dsh_tui.tools.base import ToolDefinition

BOUNDARIES = {"turn/start", "turn/end", "step/start", "step/end"}


class FakeSleep:
    """Records requested delays and yields once instead of waiting (tests never assert wall-clock)."""

    def __init__(self) -> None:
        self.delays: list[float] = []
        self.gate: asyncio.Event | None = None

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        if self.gate is not None:
            await self.gate.wait()
        await asyncio.sleep(0)


def make_session(cwd: str = "/work") -> Session:
    counter = iter(range(1, 10**9))
    return Session(make_header("sess-test", cwd=cwd, created_at=1), clock=lambda: next(counter))


def make_agent(responses: list | None = None, tools: list[ToolDefinition] | None = None, *, session=None,
               provider: ScriptedProvider | None = None, tmp_path=None, fallback=None, **cfg: Any) -> Agent:
    session = session if session is not None else make_session(str(tmp_path) if tmp_path else "/work")
    provider = provider or ScriptedProvider(responses or [], name="mock", fallback=fallback)
    cfg.setdefault("model", "mock-model")
    cfg.setdefault("runtime_context", False)
    cfg.setdefault("check_requests", True)
    cfg.setdefault("preset", "full-access")
    if tmp_path is not None:
        cfg.setdefault("cwd", str(tmp_path))
        cfg.setdefault("spill_dir", str(tmp_path / "spill"))
    agent = Agent(session, provider, tools or [], config=AgentConfig(**cfg), sleep=FakeSleep())
    return agent


def types(agent: Agent) -> list[str]:
    return [e["type"] for e in agent.session.events]


def of_type(agent: Agent, *names: str) -> list[dict]:
    return [e for e in agent.session.events if e["type"] in names]


def boundaries(agent: Agent) -> list[tuple]:
    out = []
    for e in agent.session.events:
        if e["type"] in BOUNDARIES:
            d = e["data"]
            if e["type"] == "turn/end":
                out.append((e["type"], d["turn"], d["reason"]["kind"]))
            elif e["type"] == "turn/start":
                out.append((e["type"], d["turn"]))
            else:
                out.append((e["type"], d["turn"], d["step"]))
    return out


def compact_types(agent: Agent) -> list[str]:
    """Event types with runs of assistant/chunk collapsed to one ``chunks``."""
    out: list[str] = []
    for t in types(agent):
        if t == "assistant/chunk":
            if out and out[-1] == "chunks":
                continue
            t = "chunks"
        out.append(t)
    return out


def texts(message: dict) -> str:
    return "".join(b.get("text", "") for b in message.get("content", []) if b.get("type") == "text")


def user_texts(agent: Agent) -> list[str]:
    return [texts(e["data"]) for e in of_type(agent, "user/message")]


def make_tool(name: str, body=None, *, parallel: bool = False, access: str = "read", params: dict | None = None,
              timeout_ms: int | None = None) -> ToolDefinition:
    async def default_body(args, ctx):
        return f"{name}: {args.get('text', '') if isinstance(args, dict) else args}"

    return ToolDefinition(
        name=name,
        description=f"the {name} tool",
        parameters=params or {"type": "object", "properties": {"text": {"type": "string"}}},
        execute=body or default_body,
        render=lambda args, value: [{"type": "text", "text": str(value)}],
        is_concurrency_safe=(lambda args: True) if parallel else None,
        access=access,
        timeout_ms=timeout_ms,
    )


def echo_tool() -> ToolDefinition:
    async def body(args, ctx):
        return f"echo: {args['text']}"

    return make_tool("echo", body, params={"type": "object", "properties": {"text": {"type": "string"}},
                                           "required": ["text"]})


async def run_followup(agent: Agent, text: str) -> None:
    agent.followup(text)
    await asyncio.wait_for(agent.wait_idle(), 10)
