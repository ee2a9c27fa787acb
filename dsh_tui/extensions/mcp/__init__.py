"""The built-in ``mcp`` plugin: MCP servers' tools as the agent's tools (dsh's mcp-client;
docs/extensions.md, "MCP").

Servers come from ``[mcp.servers.<name>]`` in settings.toml and ``--mcp NAME=COMMAND`` (see
``config.py``). Each connects in the background once the agent's loop runs (``client.Server``). The
first model request waits for every server's first connection attempt, each bounded by the server's
``startup_timeout_ms`` (10 s): so the first prompt already sees the tools (``mcp__<server>__<tool>``),
and a hung or dead server costs at most its timeout, once; later turns never wait. A call to a tool of a
server whose first attempt is still running waits for that attempt (bounded the same way, cancelled
with the turn). Tools are exclusive (never run in parallel) and, under ``read-only`` and
``workspace-write``, ask for approval like ``bash`` unless the server's ``allowed_tools`` (or
``trust_annotations`` with ``readOnlyHint``) allow them. The connections close with the agent
(``ctx.effect``). The ``mcp`` library's own logging and every server problem go to
``<cache>/logs/mcp.log`` (``log_path()``), never to the terminal.

``servers(agent)`` is the ``/mcp`` listing (name, state, tools, reason); ``reconnect(agent, name)``
reconnects one. ``[plugins.mcp] enabled = false`` turns the whole feature off.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsh_tui.extensions.mcp.config import McpConfigError, ServerConfig, parse_cli, parse_servers
from dsh_tui.extensions.mcp.naming import PREFIX, public_tool_name, split_public_name
from dsh_tui.session.errors import DshError

if TYPE_CHECKING:
    from dsh_tui.runtime.plugin_context import BuiltinContext

__all__ = ["McpConfigError", "McpManager", "McpStartupError", "ServerConfig", "apply", "name", "parse_cli",
           "parse_servers", "public_tool_name", "reconnect", "servers", "split_public_name"]

name = "mcp"
log = logging.getLogger("dsh_tui.plugins.mcp")


STARTUP_MARGIN_S = 2.0  # spawning the process, on top of a server's startup timeout
_routed: list[Path] = []
_MARK = "_dsh_mcp"  # set on the log handlers this module installed (replaced, never stacked)


def log_path() -> Path:
    """The MCP log file: ``<cache>/logs/mcp.log``."""
    from dsh_tui.paths import cache_dir

    return cache_dir() / "logs" / "mcp.log"


def route_logging() -> None:
    """Send the ``mcp`` library's logging (tracebacks included) and dsh-tui's MCP notes to the MCP log
    file instead of the terminal (once per process). Without a writable file they are dropped."""
    path = log_path()
    if _routed and _routed[0] == path:
        return
    handler: logging.Handler
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, encoding="utf-8", delay=True)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    except OSError:
        handler = logging.NullHandler()
    for name in ("mcp", "dsh_tui.plugins.mcp"):
        logger = logging.getLogger(name)
        for old in list(logger.handlers):
            if getattr(old, _MARK, False):
                logger.removeHandler(old)
                with contextlib.suppress(Exception):
                    old.close()
        setattr(handler, _MARK, True)
        logger.addHandler(handler)
        logger.propagate = False
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.INFO)
    _routed[:] = [path]


class McpStartupError(DshError):
    """A server with ``fail_on_startup_error = true`` could not connect."""


class McpManager:
    """The servers of one agent (``agent.mcp``)."""

    def __init__(self, configs: list[ServerConfig], registry: Any, commands: Any = None, route: Any = None) -> None:
        from dsh_tui.extensions.mcp.client import Server

        self.servers: list[Any] = []
        seen: set[str] = set()
        for cfg in configs:
            self.servers.append(Server(cfg, registry, duplicate=cfg.name in seen, commands=commands,
                                       route=route))
            self.servers[-1].on_needs_login = self._needs_login
            seen.add(cfg.name)
        self.started = False
        self.closed = False
        self.waited = False  # the first request waited for the servers' first attempts
        # the app's status bar: called with the servers the first request waits for, then with []
        self.on_wait: Any = None
        self._on_report: Any = None  # the app: one notice per server that needs an OAuth login
        self._reports: list[str] = []  # made before anyone listened

    @property
    def on_report(self) -> Any:
        return self._on_report

    @on_report.setter
    def on_report(self, fn: Any) -> None:
        self._on_report = fn
        pending, self._reports = self._reports, []
        for text in pending if fn is not None else ():
            with contextlib.suppress(Exception):
                fn(text)

    def _needs_login(self, server: Any) -> None:
        from dsh_tui.extensions.mcp.oauth import login_hint

        text = f"MCP server {server.name} {login_hint(server.name)}"
        log.warning("%s", text)
        if self._on_report is None:
            self._reports.append(text)
            return
        with contextlib.suppress(Exception):
            self._on_report(text)

    def start(self) -> None:
        if self.started or self.closed:
            return
        self.started = True
        route_logging()
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
                if server.state == "needs-login":
                    from dsh_tui.extensions.mcp.oauth import login_hint

                    raise McpStartupError(f"MCP server {server.name} {login_hint(server.name)}")
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

    def connecting(self) -> list[str]:
        """The servers whose first connection attempt is still running."""
        return [s.name for s in self.servers if s.startable and s._first is not None and not s._first.is_set()]

    async def before_first_request(self, signal: Any = None) -> None:
        """The first model request waits (once) until every server's first attempt has ended, at most the
        longest ``startup_timeout_ms`` (plus a margin for spawning); cancelled with the turn."""
        if self.waited or self.closed:
            return
        self.waited = True
        self.start()
        startable = [s for s in self.servers if s.startable]
        if not startable:
            return
        limit = max(s.config.startup_timeout_ms for s in startable) / 1000 + STARTUP_MARGIN_S
        started = time.monotonic()
        waiting = self.connecting()
        if waiting and self.on_wait is not None:
            self._tell(waiting)
        try:
            wait = self.first_attempts(limit)
            await (signal.race(wait) if signal is not None else wait)
        finally:
            if waiting and self.on_wait is not None:
                self._tell([])
        late = self.connecting()
        log.info("first request waited %.2f s for MCP servers%s", time.monotonic() - started,
                 f"; still connecting: {', '.join(late)}" if late else "")

    def _tell(self, names: list[str]) -> None:
        with contextlib.suppress(Exception):
            self.on_wait(names)

    async def await_tool(self, tool_name: str) -> None:
        """A call names an ``mcp__`` tool that is not registered: wait for the first connection attempt
        of the server it belongs to (if that attempt is still running), or for its tool-list re-sync."""
        for server in self.servers:
            if not tool_name.startswith(f"{PREFIX}{server.name}__") or server._first is None:
                continue
            if not server._first.is_set():  # bounded: an attempt ends within its startup timeout
                limit = server.config.startup_timeout_ms / 1000 + STARTUP_MARGIN_S
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(server.first_attempt(), limit)
            if server._resync_tasks and tool_name not in server.tools:  # a list change is being synced
                await asyncio.gather(*list(server._resync_tasks), return_exceptions=True)

    def unavailable(self, tool_name: str) -> str:
        """Why a server's tool cannot be called now (its server is not ready), or "" (no such server)."""
        for server in self.servers:
            if tool_name.startswith(f"{PREFIX}{server.name}__"):
                if server.state == "ready":
                    return ""
                detail = f"{server.state}: {server.error}" if server.error else server.state
                if server.state == "needs-login":
                    from dsh_tui.extensions.mcp.oauth import login_hint

                    detail = login_hint(server.name)
                return f"MCP server {server.name} is not available ({detail})"
        return ""

    async def close(self) -> None:
        self.closed = True
        await asyncio.gather(*(s.close() for s in self.servers), return_exceptions=True)


def apply(ctx: BuiltinContext, config: dict) -> None:
    from dsh_tui.runtime.plugins import PluginError

    try:
        configs = parse_servers(config.get("settings"), config.get("cli") or ())
    except McpConfigError as err:  # reported as the plugin's load failure, naming the field
        raise PluginError(str(err)) from None
    if not configs:
        return
    def route() -> tuple[str, bool] | None:  # images in results: the current model and whether it takes them
        model_info = getattr(ctx.agent, "model_info", None)  # (with the attachment store, issue #32)
        info = model_info() if model_info is not None else None
        if not ctx.agent.model or info is None:
            return None
        return ctx.agent.model, bool(getattr(info, "takes_images", False))

    manager = McpManager(configs, ctx.tools.register, ctx.commands.register, route)
    ctx.provide("mcp", manager)  # withdrawn after the manager closed (disposers run newest first)
    ctx.effect(lambda: manager.close)
    try:
        asyncio.get_running_loop().call_soon(manager.start)
    except RuntimeError:  # built outside a loop: connect when the agent first runs
        ctx.on("agent/status", lambda _payload: manager.start() if not manager.started else None)

    async def pre_execute(payload: dict, next_: Any) -> Any:
        ex = payload.get("exec")
        call_name = payload.get("name") or ""
        if ex is not None and ex.tool is None and call_name.startswith(PREFIX):
            signal = payload.get("signal")
            wait = manager.await_tool(call_name)
            await (signal.race(wait) if signal is not None else wait)
            ex.tool = ctx.tool_service.tools.get(call_name)
            if ex.tool is None:  # say why in one line rather than "unknown tool"
                why = manager.unavailable(call_name)
                if why:
                    return {"kind": "deny", "reason": why}
        return await next_()

    async def assemble(payload: dict, next_: Any) -> Any:
        # the first request's tools are assembled here: wait for the servers first (once, bounded)
        if not manager.waited:
            await manager.before_first_request(payload.get("signal"))
        return await next_()

    async def pre_step(payload: dict, next_: Any) -> Any:
        # ``@server:uri`` mentions in the messages entering the turn: the resources' text joins the turn
        decision = await next_()
        if not isinstance(decision, dict) or decision.get("kind") != "enter":
            return decision
        return await _resource_context(manager, decision, payload.get("signal"))

    ctx.on("tools/pre-execute", pre_execute)
    ctx.on("system-prompt/assemble", assemble)
    ctx.on("agent/pre-step", pre_step)


async def _resource_context(manager: McpManager, decision: dict, signal: Any) -> dict:
    from dsh_tui.extensions.mcp.extras import mentions, read_resource_text
    from dsh_tui.runtime.agent import user_message

    found: list[tuple[Any, str]] = []
    for message in decision.get("messages") or []:
        if not isinstance(message, dict) or message.get("role") != "user" or \
                (message.get("source") or {}).get("plugin") == name:
            continue
        content = message.get("content")
        texts = [content] if isinstance(content, str) else [
            b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
        for text in texts:
            for server_name, uri in mentions(text):
                server = manager.get(server_name)
                if server is not None and (server, uri) not in found:
                    found.append((server, uri))
    if not found:
        return decision
    added = []
    for server, uri in found:
        if server.session is None and server.state in ("connecting", "reconnecting"):
            wait = asyncio.wait_for(server.first_attempt(),
                                    server.config.startup_timeout_ms / 1000 + STARTUP_MARGIN_S)
            with contextlib.suppress(Exception):
                await (signal.race(wait) if signal is not None else wait)
        text = await read_resource_text(server, uri)
        added.append(user_message(text, source={"kind": "plugin", "plugin": name}))
    return {**decision, "messages": [*decision["messages"], *added]}


def servers(agent: Any) -> list[Any]:
    """The ``/mcp`` listing of ``agent``'s servers (``client.ServerStatus`` rows; empty without any)."""
    manager = getattr(agent, "mcp", None)
    return manager.status() if manager is not None else []


def reconnect(agent: Any, server_name: str) -> bool:
    """Reconnect one server now (call on the agent's loop). False if there is no such server."""
    manager = getattr(agent, "mcp", None)
    return manager.reconnect(server_name) if manager is not None else False
