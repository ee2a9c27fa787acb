"""One supervised connection per MCP server, on the official ``mcp`` SDK (stdio and streamable HTTP).

``Server.start()`` runs a supervisor task on the agent's loop: connect (a fresh transport and
``ClientSession``), ``initialize``, list every page of ``tools/list``, register the tools, then wait for
the transport to close. Nothing here waits for a server: the agent's turns go on while it connects, and
its tools appear in the next request after it is ready. dsh's rules (docs/extensions.md, "MCP"):

- a lost connection (the stdio transport closing: the server exited) or a failed attempt is retried
  with backoff doubling from ``initial_delay_ms`` to ``max_delay_ms``; after ``max_attempts``
  consecutive failures the server's tools are unregistered until a reconnect by hand; a connection that
  stayed up ``max_delay_ms`` resets the budget. During an outage the tools stay registered and calls fail;
- ``notifications/tools/list_changed`` re-lists; a failed fetch keeps the old tools, a new list
  replaces them atomically; a duplicate raw name rejects the list; a name some other tool already holds
  rolls the whole generation back (no tools from this server);
- stdio servers get the parent environment minus names matching KEY/PASSWORD/SECRET/TOKEN (any case)
  or starting ``DSH_``, and minus every configured provider key (its ``api_key_env`` variable, any
  variable holding a configured key; as the bash tool), with the server's ``env`` over it; their stderr goes to a temporary file whose
  last line is quoted when the server fails.

Nothing is written to the session log. The ``mcp`` package is imported only when a server starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from dsh_tui.extensions.mcp.config import ServerConfig
from dsh_tui.extensions.mcp.convert import McpToolError, admit_images, canonical, model_content
from dsh_tui.extensions.mcp.naming import CLIENT_INFO, public_tool_name
from dsh_tui.extensions.mcp.status import ServerStatus
from dsh_tui.extensions.mcp.status import describe as _describe
from dsh_tui.extensions.mcp.status import needs_login as _needs_login
from dsh_tui.extensions.mcp.stdio import TransportStats, stdio_transport
from dsh_tui.extensions.mcp.tool_list import (
    MAX_DESCRIPTION,
    MAX_TOOLS,
    RawResult,
    checked_schema,
    list_tools,
    shown,
)
from dsh_tui.tools.base import ToolDefinition, ToolError
from dsh_tui.tools.bash import credential_free_environ

log = logging.getLogger("dsh_tui.plugins.mcp")

# the stdio transport's own shutdown (close stdin, 2 s, SIGTERM, 2 s, SIGKILL) is bounded; so is ours
CLOSE_TIMEOUT_S = 8.0


def scrubbed_environment(extra: dict[str, str] | None = None, parent: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a stdio server: the parent's minus secret-looking names (dsh's rule) and, as
    for the bash tool, every configured provider key's variable and value; ``extra`` over it."""
    env = credential_free_environ(parent)
    env.update(extra or {})
    return env


class Server:
    """One configured server and its supervised connection (see the module docstring)."""

    def __init__(self, config: ServerConfig, registry: Any, *, duplicate: bool = False,
                 commands: Any = None, route: Any = None) -> None:
        self.config = config
        self.name = config.name
        self.registry = registry  # register(tool) -> off(), unregister via the off()s
        self.commands = commands  # register(name, help, run, usage=...) -> off(): its prompts (mcp/extras.py)
        self.route = route  # () -> (model id, takes images) | None: images in results (convert.admit_images)
        self.prompts: dict[str, str] = {}  # command name -> the prompt's name
        self._prompt_offs: list[Callable[[], None]] = []
        self.capabilities: Any = None
        self.state = "disabled" if not config.enabled else "connecting"
        self.error = ""
        if duplicate:
            self.state, self.error = "failed", f'duplicate MCP server name "{config.name}"'
        self.failed_attempts = 0
        self.session: Any = None
        self.tools: dict[str, ToolDefinition] = {}
        self._offs: dict[str, Callable[[], None]] = {}
        self._task: asyncio.Task | None = None
        self._stop = False
        self._wake: asyncio.Event | None = None
        self._first: asyncio.Event | None = None  # created on the loop in start()
        self._sync_lock: asyncio.Lock | None = None
        self._resync_tasks: set[asyncio.Task] = set()
        self._resync_again = False  # a list change arrived while a re-sync ran: one more, not one per notice
        self.notes: list[str] = []
        self.stats = TransportStats()
        self.ever_connected = False
        self.connections = 0  # successful connections so far (a reconnect makes a new one)
        self.attempts = 0  # connection attempts started
        self._attempt: asyncio.Task | None = None
        self.on_needs_login: Callable[[Server], None] | None = None  # the manager reports it (one line)

    # ---- lifecycle -------------------------------------------------------------------------------
    @property
    def startable(self) -> bool:
        return self.config.enabled and not (self.state == "failed" and self.error.startswith("duplicate"))

    def start(self) -> None:
        if not self.startable or self._task is not None:
            return
        self._first = asyncio.Event()
        self._wake = asyncio.Event()
        self._sync_lock = asyncio.Lock()
        self._stop = False
        self._task = asyncio.get_running_loop().create_task(self._supervise(), name=f"mcp:{self.name}")

    async def first_attempt(self) -> None:
        """Wait until the first connection attempt succeeded or failed (``fail_on_startup_error``)."""
        if self._first is not None:
            await self._first.wait()

    def reconnect(self) -> None:
        """Drop the current connection (or backoff wait) and connect again now, with a fresh budget."""
        if not self.startable:
            return
        if self._task is None or self._task.done():
            self._task = None
            self.failed_attempts = 0
            self.state, self.error = "connecting", ""
            self.start()
            return
        self.failed_attempts = 0
        self._reconnect_now = True
        assert self._wake is not None
        self._wake.set()
        if self.session is None and self._attempt is not None and not self._attempt.done():
            self._attempt.cancel()  # still connecting (perhaps to a server that never answers): start over

    async def close(self) -> None:
        self._stop = True
        task, self._task = self._task, None
        for t in list(self._resync_tasks):
            t.cancel()
        if task is not None and not task.done():
            if self._wake is not None:
                self._wake.set()
            if self.session is None:  # connecting (perhaps to a server that never answers): stop it now
                task.cancel()
            # a live connection winds down itself: stdin closed, the server exits (bounded waits)
            done, _ = await asyncio.wait({task}, timeout=CLOSE_TIMEOUT_S)
            if not done:
                task.cancel()
                await asyncio.wait({task}, timeout=CLOSE_TIMEOUT_S)
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: a failure while closing is not worth a warning
        self._unregister()
        self.state = "closed" if self.config.enabled else self.state

    # ---- the supervisor --------------------------------------------------------------------------
    _reconnect_now = False

    async def _supervise(self) -> None:
        connected_at: float | None = None
        while not self._stop:
            self.state = "connecting" if self.failed_attempts == 0 and not self.ever_connected else "reconnecting"
            if self._reconnect_now:
                self.state = "connecting"
            self._reconnect_now = False
            assert self._wake is not None
            self._wake.clear()
            errfile = self.stats = TransportStats()
            self.attempts += 1
            # the attempt is a task of its own: a reconnect by hand cancels one stuck connecting
            self._attempt = asyncio.get_running_loop().create_task(self._connect_and_serve(errfile))
            try:
                connected_at = await self._attempt
                failure = _describe(ConnectionError("connection closed"), errfile)
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if self._stop or (current is not None and current.cancelling()) or not self._reconnect_now:
                    self._attempt.cancel()
                    raise
                failure = "reconnecting by hand"
            except BaseException as err:  # noqa: BLE001 - any failure of an attempt is the attempt's
                if _needs_login(err):  # no retry helps until the user logs in (dsh-tui mcp login NAME)
                    self.session = None
                    self._unregister()
                    self.state, self.error = "needs-login", ""
                    assert self._first is not None
                    self._first.set()
                    if self.on_needs_login is not None:
                        with contextlib.suppress(Exception):
                            self.on_needs_login(self)
                    return
                failure = _describe(err, errfile)
                if self._first is not None and not self._first.is_set():
                    log.warning("mcp server %s: connection attempt failed: %s", self.name, failure)
            finally:
                self.session = None
                assert self._first is not None
                self._first.set()
            if self._stop:
                return
            if self._reconnect_now:
                continue
            self.error = failure
            policy = self.config.reconnect
            if not policy.enabled:
                self.state = "failed"
                return
            if connected_at is not None and time.monotonic() - connected_at >= policy.max_delay_ms / 1000:
                self.failed_attempts = 0
            connected_at = None
            self.failed_attempts += 1
            if self.failed_attempts > policy.max_attempts:
                self._unregister()
                self.state = "failed"
                self.error = (f"gave up after {policy.max_attempts} consecutive failed reconnect attempts "
                              f"({failure})")
                return
            delay = min(policy.max_delay_ms, policy.initial_delay_ms * 2 ** (self.failed_attempts - 1)) / 1000
            self.state = "reconnecting"
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    async def _connect_and_serve(self, errfile: Any) -> float | None:
        """One generation: connect, list, register, then wait for the transport to close (returns the time
        it was up from) or for a stop/reconnect. Raises on a failed attempt."""
        import mcp.types as types
        from mcp import ClientSession

        closed = asyncio.Event()
        async with contextlib.AsyncExitStack() as stack:
            read, write = await stack.enter_async_context(self._transport(errfile))
            # The stdio transport ends its read stream when the server exits: the wrapper notices.
            recv = _ClosingStream(read, self._closed_now(closed))
            session = await stack.enter_async_context(ClientSession(
                recv, write, client_info=types.Implementation.model_validate(CLIENT_INFO), message_handler=self._on_message))
            stage = "initialize"
            try:
                async with asyncio.timeout(cfg_timeout := self.config.startup_timeout_ms / 1000):
                    init = await session.initialize()
                    self.capabilities = getattr(init, "capabilities", None)
                    self.session = session
                    stage = "tools/list"
                    await self._sync(session, initial=True)
                    stage = "prompts/list"
                    await self._sync_prompts(session)
            except TimeoutError:
                raise ConnectionError(f"no answer to {stage} within {_seconds(cfg_timeout)}") from None
            if closed.is_set():
                raise ConnectionError("the server closed the connection")
            self.state, self.error = "ready", ""
            self.ever_connected = True
            self.connections += 1
            up = time.monotonic()
            assert self._first is not None and self._wake is not None
            self._first.set()
            while not (closed.is_set() or self._stop or self._reconnect_now):
                self._wake.clear()
                await self._wake.wait()
            self.session = None
            return up

    def _closed_now(self, closed: asyncio.Event) -> Callable[[], None]:
        def mark() -> None:
            closed.set()
            if self._wake is not None:
                self._wake.set()

        return mark

    def _transport(self, stats: TransportStats) -> Any:
        cfg = self.config
        if cfg.transport == "stdio":
            return stdio_transport(cfg.command or "", list(cfg.args), env=scrubbed_environment(cfg.env),
                                   cwd=cfg.cwd or None, server=self.name, stats=stats)
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        from dsh_tui.extensions.mcp import oauth

        auth = None
        if not oauth.has_authorization_header(cfg.headers):  # stored tokens, refreshed; never a browser here
            auth = oauth.provider(self.name, cfg.url or "")

        @contextlib.asynccontextmanager
        async def http() -> Any:
            async with create_mcp_http_client(headers=dict(cfg.headers), auth=auth) as client, \
                    streamable_http_client(cfg.url or "", http_client=client) as streams:
                yield streams[0], streams[1]

        return http()

    # ---- tools -----------------------------------------------------------------------------------
    async def _on_message(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if method == "notifications/prompts/list_changed" and self.session is not None:
            asyncio.get_running_loop().create_task(self._sync_prompts(self.session))
            return
        if method == "notifications/tools/list_changed" and self.session is not None:
            if self._resync_tasks:  # coalesced: a flood of notices costs one more listing, not one each
                self._resync_again = True
                return
            session = self.session
            task = asyncio.get_running_loop().create_task(self._resync(session))
            self._resync_tasks.add(task)
            task.add_done_callback(self._resync_tasks.discard)

    async def _resync(self, session: Any) -> None:
        while True:
            self._resync_again = False
            try:
                await self._sync(session, initial=False)
            except Exception as err:  # noqa: BLE001 - a failed fetch keeps the old tools
                log.warning("mcp server %s: tool re-sync failed: %s", self.name, err)
            if not self._resync_again or self.session is not session:
                return

    async def _sync(self, session: Any, *, initial: bool) -> None:
        assert self._sync_lock is not None
        async with self._sync_lock:
            listed, notes = await list_tools(session)
            if self.session is not session or self._stop:
                return
            definitions: dict[str, ToolDefinition] = {}
            if len(listed) > MAX_TOOLS:
                notes.insert(0, f"{len(listed)} tools listed; only the first {MAX_TOOLS} are used")
                listed = listed[:MAX_TOOLS]
            for tool in listed:
                public = public_tool_name(self.name, tool.name)
                if public in definitions:
                    raise ValueError(f'server listed tool "{tool.name}" more than once — invalid tool list')
                schema, problem = checked_schema(tool)
                if problem:
                    notes.append(f'tool "{shown(tool.name)}" left out: {problem}')
                    continue
                description = tool.description or ""
                if len(description) > MAX_DESCRIPTION:
                    notes.append(f'tool "{shown(tool.name)}": description cut to {MAX_DESCRIPTION} characters')
                    description = description[:MAX_DESCRIPTION]
                execution = getattr(tool, "execution", None)
                task_required = getattr(execution, "task_support", None) == "required"
                definitions[public] = self._definition(public, tool.name, description, schema, task_required,
                                                       self._access(tool))
            self.notes = notes
            for note in notes:
                log.warning("mcp server %s: %s", self.name, note)
            self._unregister()
            try:
                for public, definition in definitions.items():
                    self._offs[public] = self.registry(definition)
                    self.tools[public] = definition
            except Exception as err:  # noqa: BLE001 - a foreign name in our namespace: none of ours
                self._unregister()
                self.error = f"tool registration failed, no tools registered: {err}"
                log.error("mcp server %s: %s", self.name, self.error)
                if initial and self.config.fail_on_startup_error:
                    raise

    async def _sync_prompts(self, session: Any) -> None:
        """The server's prompts as slash commands (``mcp/extras.py``); a failure leaves them out, noted."""
        if self.commands is None or getattr(self.capabilities, "prompts", None) is None:
            return
        from dsh_tui.extensions.mcp.extras import make_prompt_command

        try:
            listed = list((await session.list_prompts()).prompts)
        except Exception as err:  # noqa: BLE001 - prompts are extra: the tools still work
            log.warning("mcp server %s: prompts/list failed: %s", self.name, err)
            return
        if self.session is not session or self._stop:
            return
        for off in self._prompt_offs:
            with contextlib.suppress(Exception):
                off()
        self._prompt_offs.clear()
        self.prompts = {}
        for prompt in listed[:MAX_TOOLS]:
            name, help_text, run, usage = make_prompt_command(self, prompt.name, prompt.description or "",
                                                              list(prompt.arguments or []))
            try:
                self._prompt_offs.append(self.commands(name, help_text, run, usage=usage))
                self.prompts[name] = prompt.name
            except Exception as err:  # noqa: BLE001 - a name another command holds, an invalid one
                log.warning("mcp server %s: prompt %s left out: %s", self.name, prompt.name, err)

    def _unregister(self) -> None:
        for off in self._offs.values():
            with contextlib.suppress(Exception):
                off()
        self._offs.clear()
        self.tools.clear()

    def _access(self, tool: Any) -> str:
        """``mcp-allowed`` (runs without asking, as a read) when the settings allow the tool
        (``allowed_tools``: its name or ``"*"``) or trust the server's annotations and the tool says it
        only reads (``readOnlyHint: true``); else ``mcp`` (asks under read-only and workspace-write)."""
        allowed = self.config.allowed_tools
        if "*" in allowed or tool.name in allowed:
            return "mcp-allowed"
        annotations = getattr(tool, "annotations", None)
        if self.config.trust_annotations and getattr(annotations, "read_only_hint", None) is True:
            return "mcp-allowed"
        return "mcp"

    def _definition(self, public: str, raw: str, description: str, schema: dict, task_required: bool,
                    access: str = "mcp") -> ToolDefinition:
        server = self

        async def execute(args: Any, ctx: Any) -> Any:
            if task_required:
                raise ToolError(f'Tool "{raw}" requires task-based execution, which this bridge does not support')
            arguments = args if isinstance(args, dict) else {}
            return await server.call(raw, arguments, getattr(ctx, "cancelled", None))

        return ToolDefinition(name=public, description=description, parameters=schema, execute=execute,
                              render=lambda _args, value: model_content(value, raw), access=access)

    async def call(self, raw: str, arguments: dict, cancelled: asyncio.Event | None = None) -> dict:
        """``tools/call`` on the live session; the canonical value (``McpToolError`` as a ``ToolError``)."""
        import mcp.types as types

        session = self.session
        if session is None:
            raise ToolError("Not connected")
        request = types.CallToolRequest(params=types.CallToolRequestParams(name=raw, arguments=arguments))
        coro = session.send_request(request, RawResult,
                                    request_read_timeout_seconds=self.config.tool_call_timeout_ms / 1000)
        if cancelled is None:
            result = await coro
        else:  # the call is cancelled with the tool call (the SDK tells the server: notifications/cancelled)
            current = asyncio.current_task()
            watch = asyncio.ensure_future(cancelled.wait())
            if current is not None:
                watch.add_done_callback(lambda w: current.cancel() if not w.cancelled() else None)
            try:
                result = await coro
            finally:
                watch.cancel()
        try:
            value = canonical(result.model_dump(by_alias=True, mode="json"), raw)
        except McpToolError as err:
            raise ToolError(str(err)) from None
        if any(isinstance(b, dict) and b.get("type") == "image" for b in value.get("content") or []):
            await asyncio.to_thread(admit_images, value, self.route() if self.route is not None else None)
        return value

    def status(self) -> ServerStatus:
        return ServerStatus(self.name, self.config.transport or "", self.config.target, self.state,
                            sorted(self.tools), self.error, self.failed_attempts,
                            self.config.reconnect.max_attempts, self.config.source, list(self.notes),
                            sorted(self.prompts))


def _seconds(s: float) -> str:
    return f"{s:g} s"


class _ClosingStream:
    """The transport's read stream as the session reads it, calling ``on_end`` when it ends (the server
    exited): a transport close is what dsh reconnects on. No extra task or hop per message."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def __aenter__(self) -> _ClosingStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        try:
            return await self._inner.__aexit__(*exc)
        finally:
            self._on_end()

    def __aiter__(self) -> _ClosingStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._inner.__anext__()
        except BaseException as err:
            if not isinstance(err, asyncio.CancelledError):
                self._on_end()
            raise

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except BaseException as err:
            if not isinstance(err, asyncio.CancelledError):
                self._on_end()
            raise
