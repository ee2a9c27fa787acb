"""The built-in ``mcp`` plugin: MCP servers' tools as the agent's tools (dsh's mcp-client;
docs/extensions.md, "MCP").

Servers come from ``[mcp.servers.<name>]`` in settings.toml and ``--mcp NAME=COMMAND`` (see
``config.py``). Each connects in the background once the agent's loop runs (``client.Server``): a slow
or broken server delays nothing; its tools (``mcp__<server>__<tool>``) are in the next request after it
is ready. A call to a tool of a server whose first connection attempt is still running waits for that
attempt; any other call never waits. Tools are exclusive (never run in parallel) and ask for no
approval of their own. The connections close with the agent (``ctx.effect``).

``servers(agent)`` is the ``/mcp`` listing (name, state, tools, reason); ``reconnect(agent, name)``
reconnects one. ``[plugins.mcp] enabled = false`` turns the whole feature off.
"""

from __future__ import annotations

import asyncio
from typing import Any

from dsh_tui.runtime.mcp.config import McpConfigError, ServerConfig, parse_cli, parse_servers
from dsh_tui.runtime.mcp.naming import PREFIX, public_tool_name, split_public_name
from dsh_tui.session.errors import DshError

__all__ = ["McpConfigError", "McpManager", "McpStartupError", "ServerConfig", "apply", "name", "parse_cli",
           "parse_servers", "public_tool_name", "reconnect", "servers", "split_public_name"]

name = "mcp"


class McpStartupError(DshError):
    """A server with ``fail_on_startup_error = true`` could not connect."""


class McpManager:
    """The servers of one agent (``agent.mcp``)."""

    def __init__(self, configs: list[ServerConfig], registry: Any) -> None:
        from dsh_tui.runtime.mcp.client import Server

        self.servers: list[Any] = []
        seen: set[str] = set()
        for cfg in configs:
            self.servers.append(Server(cfg, registry, duplicate=cfg.name in seen))
            seen.add(cfg.name)
        self.started = False
        self.closed = False

    def start(self) -> None:
        if self.started or self.closed:
            return
        self.started = True
        for server in self.servers:
            server.start()

    def get(self, server_name: str) -> Any:
        for server in self.servers:
            if server.name == server_name and server.startable:
                return server
        return None

    def status(self) -> list[Any]:
        return [s.status() for s in self.servers]

    def reconnect(self, server_name: str) -> bool:
        server = self.get(server_name)
        if server is None or self.closed:
            return False
        server.reconnect()
        return True

    async def startup(self) -> None:
        """Wait for the first attempt of every ``fail_on_startup_error`` server; raise if one failed."""
        self.start()
        for server in self.servers:
            if server.config.fail_on_startup_error and server.startable:
                await server.first_attempt()
                if server.state != "ready":
                    raise McpStartupError(f"MCP server {server.name} failed to start: {server.error}")

    async def first_attempts(self, timeout: float) -> None:
        """Wait (at most ``timeout`` seconds) until every server's first connection attempt has ended."""
        self.start()
        waits = [asyncio.ensure_future(s.first_attempt()) for s in self.servers if s.startable]
        if waits:
            _, pending = await asyncio.wait(waits, timeout=timeout)
            for w in pending:
                w.cancel()

    async def await_tool(self, tool_name: str) -> None:
        """A call names an ``mcp__`` tool that is not registered: wait for the first connection attempt
        of the server it belongs to (if that attempt is still running), or for its tool-list re-sync."""
        for server in self.servers:
            if not tool_name.startswith(f"{PREFIX}{server.name}__") or server._first is None:
                continue
            if not server._first.is_set():
                await server.first_attempt()
            if server._resync_tasks and tool_name not in server.tools:  # a list change is being synced
                await asyncio.gather(*list(server._resync_tasks), return_exceptions=True)

    async def close(self) -> None:
        self.closed = True
        await asyncio.gather(*(s.close() for s in self.servers), return_exceptions=True)


def apply(ctx: Any, config: dict) -> None:
    from dsh_tui.runtime.plugins import PluginError

    try:
        configs = parse_servers(config.get("settings"), config.get("cli") or ())
    except McpConfigError as err:  # reported as the plugin's load failure, naming the field
        raise PluginError(str(err)) from None
    if not configs:
        return
    agent = ctx._agent
    manager = McpManager(configs, ctx.tools.register)
    agent.mcp = manager

    def forget() -> None:
        if getattr(agent, "mcp", None) is manager:
            agent.mcp = None

    ctx.effect(forget)
    ctx.effect(manager.close)
    try:
        asyncio.get_running_loop().call_soon(manager.start)
    except RuntimeError:  # built outside a loop: connect when the agent first runs
        ctx.on("agent/status", lambda _payload: manager.start() if not manager.started else None)

    async def pre_execute(payload: dict, next_: Any) -> Any:
        ex = payload.get("exec")
        call_name = payload.get("name") or ""
        if ex is not None and ex.tool is None and call_name.startswith(PREFIX):
            await manager.await_tool(call_name)
            ex.tool = agent.tools.tools.get(call_name)
        return await next_()

    ctx.on("tools/pre-execute", pre_execute)


def servers(agent: Any) -> list[Any]:
    """The ``/mcp`` listing of ``agent``'s servers (``client.ServerStatus`` rows; empty without any)."""
    manager = getattr(agent, "mcp", None)
    return manager.status() if manager is not None else []


def reconnect(agent: Any, server_name: str) -> bool:
    """Reconnect one server now (call on the agent's loop). False if there is no such server."""
    manager = getattr(agent, "mcp", None)
    return manager.reconnect(server_name) if manager is not None else False
