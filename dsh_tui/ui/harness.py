"""The real harness behind the chat screen: store + writer + Agent + tools, on the harness thread.

``open_harness(bridge, spec)`` is a bridge factory (it runs on the harness loop). It starts or
resumes the session through ``dsh_tui.store.lifecycle``, builds the ``Agent`` with the built-in
tools, forwards ``agent/status`` / ``agent/error`` to the UI as live notices and routes
``approval/request`` to the UI (a ``concurrent.futures.Future`` the approval panel resolves).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh_tui.ui.bridge import Bridge


@dataclass
class HarnessSpec:
    """How to open the chat's session."""

    root: Path
    cwd: Path
    provider: Any = None  # a dsh_tui.llm Provider; None = no model configured
    model: str = ""
    reasoning_effort: str | None = None
    preset: str = "workspace-write"
    resume_id: str | None = None
    prompts: tuple[str, ...] = ()  # sent one after another, each when the agent is idle (the demo)
    clock: Any = None  # epoch-ms clock for the session and agent (screenshots freeze it)
    agent_options: dict[str, Any] = field(default_factory=dict)


def open_store(root: Path) -> Any:
    """The session store of ``root`` (backend chosen by ``dsh_tui.store.open``)."""
    from dsh_tui.store.open import open_store as open_root

    return open_root(root)


class AgentHarness:
    """What the bridge drives (see ``dsh_tui.ui.bridge.Harness``)."""

    def __init__(self, bridge: Bridge, session: Any, writer: Any, agent: Any) -> None:
        self.bridge = bridge
        self.session = session
        self.writer = writer
        self.agent = agent
        self._offs: list[Any] = []
        self._closed = False
        self._script: asyncio.Task | None = None
        self.root: Path | None = None  # the session root (a resume hint names it when it is not the default)
        on = agent.on
        self._offs.append(on("agent/status", lambda p: bridge.notice("status", p.get("status"))))
        self._offs.append(on("agent/error", self._on_error))
        self._offs.append(on("approval/request", self._on_approval))
        self.announce_model()

    def announce_model(self) -> None:
        """Tell the UI the route the next request uses (the status bar shows it before any turn)."""
        cfg = self.agent.config
        effort = cfg.reasoning_effort
        if effort is None:
            resolve = getattr(self.agent.provider, "resolve_model", None)
            try:
                effort = resolve(cfg.model).default_effort if resolve is not None and cfg.model else None
            except Exception:  # noqa: BLE001 - the effort is a nicety of the status bar
                effort = None
        self.bridge.notice("model", (cfg.provider, cfg.model, effort))

    def _on_error(self, payload: dict[str, Any]) -> None:
        error = payload.get("error") or {}
        if isinstance(error, dict):
            self.bridge.notice("error", f"{error.get('code', 'UNKNOWN')}: {error.get('message', '')}")
        else:
            self.bridge.notice("error", str(error))

    async def _on_approval(self, payload: dict[str, Any], _next: Any = None) -> str:
        call_id = payload.get("callId")
        arguments = ""
        for event in reversed(self.session.events):
            if event.get("type") == "tool/call" and event.get("data", {}).get("callId") == call_id:
                arguments = event["data"].get("arguments") or ""
                break
        request = self.bridge.ask_approval(str(payload.get("toolName") or "?"), arguments,
                                           str(payload.get("reason") or ""), call_id)
        signal = payload.get("signal")
        waiter = asyncio.wrap_future(request.future)
        if signal is not None and hasattr(signal, "race"):
            try:
                return await signal.race(waiter)
            finally:
                if not request.future.done():
                    request.future.cancel()
                    self.bridge.notice("approval-closed", request)
        return await waiter

    async def send(self, text: str, mode: str) -> None:
        if mode == "steer":
            self.agent.steer(text)
        else:
            self.agent.followup(text)

    async def set_model(self, model: str) -> None:
        """Use ``model`` from the next request on (logged as a ``request/header`` change)."""
        self.agent.config.model = model
        self.announce_model()

    async def cancel(self) -> None:
        self.agent.cancel({"kind": "user"})

    async def play(self, prompts: tuple[str, ...]) -> None:
        """Send each prompt once the agent is idle (the demo tour)."""
        for prompt in prompts:
            await self.agent.wait_idle()
            if self._closed:
                return
            self.agent.followup(prompt)
            await asyncio.sleep(0)
        await self.agent.wait_idle()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._script is not None:
            self._script.cancel()
        try:
            if self.agent.status == "running":
                self.agent.cancel({"kind": "disposed"})
            await asyncio.wait_for(self.agent.wait_idle(), 10)
        except (TimeoutError, Exception):  # noqa: BLE001 - closing must reach the writer
            pass
        try:
            await self.agent.dispose()
        except Exception:  # noqa: BLE001
            pass
        for off in self._offs:
            off()
        try:
            await asyncio.to_thread(self.writer.close)
        finally:
            await close_provider(self.agent.provider)


async def close_provider(provider: Any) -> None:
    """Release the provider's connections (``aclose``) when the harness stops; errors are not fatal."""
    aclose = getattr(provider, "aclose", None)
    if aclose is None:
        return
    try:
        await asyncio.wait_for(aclose(), 5)
    except Exception:  # noqa: BLE001 - shutting down: a provider that cannot close must not block quit
        pass


async def open_harness(bridge: Bridge, spec: HarnessSpec) -> AgentHarness:
    """Bridge factory: start (or resume) the session and its agent on the harness loop."""
    from dsh_tui.runtime.agent import Agent, AgentConfig
    from dsh_tui.session.headers import make_header
    from dsh_tui.store import lifecycle
    from dsh_tui.tools import builtin_tools

    store = open_store(spec.root)
    if spec.resume_id:
        session, writer = await asyncio.to_thread(lifecycle.resume, store, spec.resume_id, spec.clock)
    else:
        header = make_header(str(uuid.uuid4()), cwd=os.fspath(spec.cwd.resolve()),
                             created_at=spec.clock() if spec.clock else None)
        session, writer = lifecycle.start(store, header, clock=spec.clock)
    config = AgentConfig(provider=getattr(spec.provider, "name", "") or "", model=spec.model,
                         reasoning_effort=spec.reasoning_effort, preset=spec.preset, cwd=spec.cwd,
                         **spec.agent_options)
    agent = Agent(session, spec.provider, builtin_tools(), config=config, checkpoint=writer.checkpoint,
                  clock=spec.clock)
    harness = AgentHarness(bridge, session, writer, agent)
    harness.root = spec.root
    if spec.prompts:
        harness._script = asyncio.ensure_future(harness.play(spec.prompts))
    return harness
