"""The ``Context`` a plugin is applied with (``ctx.on``, ``ctx.tools``, ``ctx.commands``, ``ctx.effect``,
``ctx.session``, ``ctx.agent``, ``ctx.log``) and the read-only views it offers; ``PluginError``.
Re-exported by ``dsh_tui.runtime.plugins`` and the public facade ``dsh_tui.plugins``.

``BuiltinContext`` is what a built-in plugin (``dsh_tui/extensions``) is applied with: the same ``Context``
plus, named, what a built-in needs (docs/architecture.md, "Core and extensions"): ``driver`` (the agent
itself, typed), ``live_session`` (the session log it appends to), ``options`` (the agent's ``AgentConfig``),
``provider``, ``tool_service``, ``host``, and ``provide(name, service)`` (a service the UI and other code reach as ``agent.<name>``, withdrawn at unload).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from dsh_tui.runtime.bus import EVENT_MODES, USER
from dsh_tui.runtime.listeners import DEFAULT_TIMEOUT_MS, guard
from dsh_tui.session.errors import DshError
from dsh_tui.session.events import KNOWN_EVENT_TYPES

if TYPE_CHECKING:
    from dsh_tui.llm.protocol import Provider
    from dsh_tui.runtime.agent import Agent, AgentConfig
    from dsh_tui.runtime.tools import ToolService


class PluginError(DshError):
    """A plugin could not be found, configured or applied (fatal only with ``strict``)."""


class SessionView:
    """A read-only view of the agent's session."""

    def __init__(self, session: Any) -> None:
        self._s = session

    @property
    def id(self) -> str:
        return self._s.id

    @property
    def header(self) -> Mapping[str, Any]:
        return MappingProxyType(self._s.header)

    @property
    def events(self) -> Sequence[dict]:
        """The log's events (do not mutate them)."""
        return self._s.events

    @property
    def last_turn(self) -> int:
        return self._s.last_turn

    def derive_messages(self) -> list[dict]:
        """What the model sees, as a list."""
        return self._s.derive_messages().to_list()


class AgentView:
    """The agent as a plugin sees it: read-only state, plus the agent's public input methods."""

    def __init__(self, agent: Any) -> None:
        self._a = agent

    @property
    def id(self) -> str:
        return self._a.id

    @property
    def status(self) -> str:
        return self._a.status

    @property
    def phase(self) -> dict:
        return self._a.phase

    @property
    def config(self) -> Mapping[str, Any]:
        from dataclasses import asdict

        return MappingProxyType(asdict(self._a.config))

    @property
    def model(self) -> str:
        return self._a.config.model

    @property
    def tool_names(self) -> list[str]:
        return list(self._a.tools.tools)

    def model_info(self) -> Any:
        """What the provider knows about the agent's current model (``dsh_tui.llm.protocol.ModelInfo``:
        context window, efforts, ``input_modalities``…), or None without a provider."""
        provider = getattr(self._a, "provider", None)
        if provider is None or not self._a.config.model:
            return None
        return provider.resolve_model(self._a.config.model)

    @property
    def jobs(self) -> Any:
        """The agent's background-job registry (the built-in ``jobs`` plugin), or None when it is off."""
        return getattr(self._a, "jobs", None)

    @property
    def plugins(self) -> list[dict]:
        """The agent's plugins as ``PluginRecord.as_dict()`` (id, source, target, state, ...), in load order."""
        return [r.as_dict() for r in self._a.plugins.records]

    def request_extension(self, name: str, prepare: Callable[[dict], dict | None]) -> Callable[[], None] | None:
        """Contribute the top-level field ``name`` to this agent's model requests, as dsh's
        ``deepseekLlmApiExtensions`` (``dsh_session_log``, ``dsh_plugin_packages``): only DeepSeek's own route
        over the Messages wire takes them (``None`` otherwise). ``prepare(request)`` returns ``{"value": ...,
        "accept"?: callable run once the request succeeded}`` or ``None``. Returns the remover."""
        register = getattr(self._a.provider, "register_extension", None)
        return None if register is None else register(name, prepare)

    @property
    def terminals(self) -> Any:
        """The agent's persistent terminals (the built-in ``terminals`` plugin), or None when it is off."""
        return getattr(self._a, "terminals", None)

    @property
    def sandbox(self) -> Any:
        """The OS sandbox (``dsh_tui.tools.sandbox.Sandbox``) the host runs commands in, or None."""
        return getattr(getattr(self._a, "host", None), "sandbox", None)

    def followup(self, message: Any) -> dict:
        return self._a.followup(message)

    def steer(self, message: Any) -> dict:
        return self._a.steer(message)

    def inject(self, message: Any) -> dict:
        return self._a.inject(message)

    def cancel(self, reason: dict | None = None) -> None:
        self._a.cancel(reason)


class _Tools:
    def __init__(self, ctx: Context, agent: Any) -> None:
        self._ctx = ctx
        self._service = agent.tools

    def register(self, tool: Any) -> Callable[[], None]:
        """Register a ``dsh_tui.tools.ToolDefinition`` for this agent; undone when the plugin unloads."""
        service = self._service
        if getattr(tool, "name", None) in service.tools:  # e.g. "bash": a clash is this plugin's load error
            from dsh_tui.tools import BUILTIN_TOOL_NAMES

            kind = "a built-in tool" if tool.name in BUILTIN_TOOL_NAMES else "already registered by another plugin"
            raise PluginError(f'tool "{tool.name}" is {kind}; give the tool another name')
        service.register(tool)
        self._ctx.tool_names.append(tool.name)

        def off() -> None:
            if service.tools.get(tool.name) is tool:
                del service.tools[tool.name]

        self._ctx._disposers.append(off)
        return off

    @property
    def names(self) -> list[str]:
        return list(self._service.tools)


class _Commands:
    def __init__(self, ctx: Context, agent: Any) -> None:
        self._ctx = ctx
        self._registry = agent.commands

    def register(self, name: str, help: str, run: Callable[..., Any], *,  # noqa: A002 - the command's help
                 usage: str = "", record_input: bool = True) -> Callable[[], None]:
        """Register the slash command ``/name`` (``[a-z][a-z0-9_-]*``) with a one-line ``help``. ``run(call)``
        gets a ``CommandCall`` (``call.args``, ``call.raw``, ``call.agent``) and returns the text shown to the
        user (or a ``CommandResult``; raise ``CommandError`` for an error), possibly async. Undone when the
        plugin unloads. A later registration of the same name replaces an earlier one."""
        from dsh_tui.runtime.commands import Command

        off = self._registry.register(Command(name, help, run, usage=usage, record_input=record_input,
                                        plugin=self._ctx.id))
        self._ctx.command_names.append(name)
        self._ctx._disposers.append(off)
        return off

    @property
    def names(self) -> list[str]:
        return sorted(self._registry.commands)


class Context:
    """What ``apply(ctx, config)`` gets. See docs/plugins.md."""

    def __init__(self, agent: Any, plugin_id: str, config: Any, tier: int = USER,
                 listener_timeout_ms: float = DEFAULT_TIMEOUT_MS) -> None:
        self._agent = agent
        self.id = plugin_id
        self._listener_timeout_ms = listener_timeout_ms
        self.config = config
        self._tier = tier
        self._disposers: list[Callable[[], Any]] = []
        self.events: list[str] = []
        self.tool_names: list[str] = []
        self.tools = _Tools(self, agent)
        self.command_names: list[str] = []
        self.commands = _Commands(self, agent)
        self.session = SessionView(agent.session)
        self.agent = AgentView(agent)
        self.log = logging.getLogger(f"dsh_tui.plugins.{plugin_id}")

    def on(self, name: str, listener: Callable[..., Any], *, prepend: bool = False) -> Callable[[], None]:
        """Listen on an agent or capability event (``dsh_tui.runtime.bus.EVENT_MODES`` lists them). Waterfall
        listeners are ``(payload, next)``; the others ``(payload)``. Undone when the plugin unloads."""
        if name not in EVENT_MODES:
            raise PluginError(f"unknown event {name!r} (see docs/plugins.md for the list)")
        if self._tier == USER:  # SystemExit and hangs contained, named (dsh_tui.runtime.listeners)
            listener = guard(self.id, name, listener, EVENT_MODES[name], self._listener_timeout_ms)
        off = self._agent.bus.on(name, listener, scope=self._agent.id, prepend=prepend, tier=self._tier)
        self.events.append(name)
        self._disposers.append(off)
        return off

    def effect(self, execute: Callable[[], Any], label: str = "anonymous") -> Callable[[], Any]:
        """dsh's ``ctx.effect(execute, label)``: run ``execute()`` now and keep what it returns as the teardown,
        run when the plugin unloads (newest first) or when the returned ``dispose()`` is called (once).

        ``execute`` may return a disposer (a callable; sync or async), ``None`` (nothing to undo), a generator
        that yields disposers (a composite effect: undone in reverse), or a coroutine (async setup: it runs as a
        task and whatever it returns is the disposer; unload waits for it). Anything else is a ``TypeError``.
        An exception from ``execute`` propagates (in ``apply``: the plugin fails to load)."""
        parts: list[Callable[[], Any]] = []
        setup: asyncio.Task | None = None

        def collect(value: Any) -> None:
            if callable(value):
                parts.append(value)
            elif value is not None:
                raise TypeError(f"Invalid effect {label!r}: yielded {type(value).__name__}, not a disposer")

        out = execute()
        if inspect.iscoroutine(out):
            setup = asyncio.get_running_loop().create_task(out)
        elif inspect.isgenerator(out):
            try:
                for value in out:
                    collect(value)
            except BaseException:
                while parts:  # a composite effect that failed half-way undoes what it set up
                    result = parts.pop()()
                    if inspect.iscoroutine(result):
                        result.close()
                raise
        elif callable(out):
            parts.append(out)
        elif out is not None:
            raise TypeError(f"Invalid effect {label!r}: execute() returned {type(out).__name__}, "
                            "not a disposer, a generator or a coroutine")
        done = False

        async def run_async_rest(pending: Any) -> None:
            if pending is not None:
                await pending
            if setup is not None:
                if not setup.done():
                    setup.cancel()
                try:
                    collect(await setup)
                except asyncio.CancelledError:
                    pass
            await _run_all(parts)

        def dispose() -> Any:
            nonlocal done
            if done:
                return None
            done = True
            if dispose in self._disposers:
                self._disposers.remove(dispose)
            if setup is None:
                while parts:
                    result = parts.pop()()
                    if inspect.isawaitable(result):
                        return run_async_rest(result)
                return None
            return run_async_rest(None)

        self._disposers.append(dispose)
        return dispose

    def append(self, type: str | Mapping[str, Any], data: Any = None) -> dict:  # noqa: A002 - dsh field name
        """Append a plugin-owned event to the session log: ``append(type, data)`` or ``append(event)`` with
        ``event = {"type": ..., "data": ...}``; returns the event as written (with ``seq`` and ``time``). A
        type dsh does not know is written with ``ignorable: true`` so that dsh (and older dsh-tui) still open
        the log."""
        event_type: Any = type
        if isinstance(type, Mapping):
            if data is not None:
                raise TypeError("append(event) takes no data: the event carries it")
            event_type, data = type.get("type"), type.get("data", {})
        if not isinstance(event_type, str) or not event_type:
            raise TypeError("append needs an event type (a non-empty string)")
        return self._agent.session.append(event_type, {} if data is None else data,
                                          ignorable=event_type not in KNOWN_EVENT_TYPES)

    async def dispose(self) -> None:
        """Undo every registration, newest first; async disposers are awaited."""
        while self._disposers:
            fn = self._disposers.pop()
            try:
                out = fn()
                if inspect.isawaitable(out):
                    await out
            except Exception as err:  # noqa: BLE001 - one failing disposer must not stop the others
                self.log.warning("disposer failed: %r", err)


class BuiltinContext(Context):
    """What a built-in plugin (a package of ``dsh_tui.extensions``) is applied with: everything a user plugin's
    ``Context`` has, plus, named, what built-ins need. A built-in never reaches a private attribute of the agent;
    what it takes from the core is one of these."""

    @property
    def driver(self) -> Agent:
        """The agent this built-in extends (``dsh_tui.runtime.agent.Agent``): its loop (``followup``, ``steer``,
        ``inject``, ``cancel``, ``run_maintenance``, ``status``, ``inbox``), its bus and clock. For the objects a
        built-in makes that drive the agent (the compactor, the retry executor, goal rounds, children)."""
        return self._agent

    @property
    def live_session(self) -> Any:
        """The agent's session (``dsh_tui.session.Session``): ``append``, ``subscribe``, ``events``, ``header``
        (user plugins get the read-only ``ctx.session`` and ``ctx.append``)."""
        return self._agent.session

    @property
    def options(self) -> AgentConfig:
        """The agent's ``AgentConfig`` (model, cwd, workspace, retry and compaction switches …); a built-in such
        as ``working-directory`` may change it."""
        return self._agent.config

    @property
    def provider(self) -> Provider | None:
        """The model client the agent requests with (``dsh_tui.llm.protocol.Provider``), or None."""
        return self._agent.provider

    @property
    def tool_service(self) -> ToolService:
        """The agent's tool service (``dsh_tui.runtime.tools.ToolService``): the tools as the model sees them,
        for a built-in that wraps one (``jobs`` gives ``bash`` its ``run_in_background``)."""
        return self._agent.tools

    @property
    def host(self) -> Any:
        """The agent host that opened the agent (``dsh_tui.runtime.host.AgentHost``), or None for a bare agent
        (built-ins that open children, subagents and ralph, need it)."""
        return self._agent.host

    def provide(self, name: str, service: Any) -> None:
        """Offer ``service`` as ``agent.<name>`` (``jobs``, ``terminals``, ``skills``, ``mcp``, ``compactor``:
        what the UI, the commands and ``ctx.agent`` read; ``settle_children`` and ``delegated``: what the core's
        host and user-questions seam ask of the subagents built-in); withdrawn when the plugin unloads (if it is
        still this one)."""
        agent = self._agent
        setattr(agent, name, service)

        def withdraw() -> None:
            if getattr(agent, name, None) is service:
                setattr(agent, name, None)

        self._disposers.append(withdraw)


async def _run_all(disposers: list[Callable[[], Any]]) -> None:
    """Run an effect's remaining disposers, newest first, awaiting async ones."""
    while disposers:
        out = disposers.pop()()
        if inspect.isawaitable(out):
            await out
