"""Plugins: what a plugin is, how it is found and loaded, and the ``Context`` it is applied with.

A plugin is a module or object with ``name: str``, an optional ``Config`` (a pydantic model; its validation
error is the plugin's load error) and ``apply(ctx, config)`` (or ``apply(ctx)``). Its registrations
(``ctx.on``, ``ctx.tools.register``, ``ctx.effect``) are undone in reverse order when the agent closes.

Where plugins come from, in order (the order of user listeners in every event):

1. the settings file: ``[plugins.<id>]`` tables in file order (``module = "pkg.mod"`` or ``"pkg.mod:obj"``,
   ``enabled = false``, any other key is the plugin's config; a table named after a built-in or an entry
   point only configures or disables it);
2. Python entry points in the group ``dsh_tui.plugins``, by name (value ``module`` or ``module:object``);
3. ``--plugin MODULE`` flags on the command line (and ``plugins=[...]`` in the SDK), in order.

Built-in behaviour is registered as plugins too (ids in ``BUILTIN_IDS``, listed in ``dsh_tui.runtime.builtin_plugins``), in the ``BUILTIN`` tier of the
event bus: user plugins' listeners always run before them (a user's ``agent/request-error`` listener sees a
failure before the built-in retry does). Any built-in can be disabled by id.

A plugin whose import, config or ``apply`` fails is reported (``PluginRecord.state == "failed"`` with the
reason) and the others still load; ``strict=True`` makes any failure fatal (``PluginError``).

Over 500 lines for a reason: discovery, the ``Context`` a plugin is applied with, loading and unloading
are one API (re-exported by ``dsh_tui.plugins``). The built-ins are a table in ``builtin_plugins``; their
bodies live in their own modules, imported only when applied.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from dsh_tui.llm.redact import redact
from dsh_tui.runtime.builtin_plugins import BUILTIN_IDS, BUILTINS, FEATURE_IDS, OFF_BY_DEFAULT
from dsh_tui.runtime.bus import BUILTIN, EVENT_MODES, USER
from dsh_tui.runtime.listeners import DEFAULT_TIMEOUT_MS, guard
from dsh_tui.session.errors import DshError
from dsh_tui.session.events import KNOWN_EVENT_TYPES

ENTRY_POINT_GROUP = "dsh_tui.plugins"



class PluginError(DshError):
    """A plugin could not be found, configured or applied (fatal only with ``strict``)."""


@dataclass
class PluginSpec:
    """One plugin to load: where it comes from and with what config."""

    id: str
    source: str  # "builtin" | "settings" | "entry-point" | "project" | "cli" | "sdk"
    target: str = ""  # "pkg.mod" or "pkg.mod:obj" (empty for an object given directly or a built-in); a path
    # for a project plugin (``.dsh-tui/plugins/<name>.py`` or ``<name>/``)
    obj: Any = None  # the plugin object itself (SDK, built-ins)
    config: dict[str, Any] = field(default_factory=dict)
    enabled: bool = True
    listener_timeout_ms: float = DEFAULT_TIMEOUT_MS  # ``[plugins.<id>] listener_timeout_ms`` (runtime.listeners)
    skipped: str = ""  # why it is not even imported (a project plugin of a workspace not trusted)


@dataclass
class PluginRecord:
    """What became of one plugin: ``loaded``, ``failed`` (with ``error``), ``disabled`` or ``skipped`` (not
    imported: a project plugin of a workspace not trusted; ``error`` says so)."""

    id: str
    source: str
    target: str
    state: str
    error: str = ""
    events: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "source": self.source, "target": self.target, "state": self.state,
                "error": self.error, "events": list(self.events), "tools": list(self.tools),
                "commands": list(self.commands)}


# -------------------------------------------------------------------------------------------------
# Discovery


_EP_CACHE: list[Any] = []  # [(key, entry points)]: the last scan and what it depended on


def _path_key() -> tuple:
    """``sys.path`` with each directory's mtime: installing or removing a distribution changes it. The
    working directory (``""``, ``"."``: where the agent writes files) counts by name only."""
    key = []
    for entry in sys.path:
        try:
            key.append((entry, None if entry in ("", ".") else os.stat(entry).st_mtime_ns))
        except OSError:
            key.append((entry, None))
    return tuple(key)


def _entry_points() -> list[Any]:
    """The installed plugins' entry points, by name. The scan reads every distribution's metadata (3-25 ms on
    a loaded machine), and each agent the host opens (a subagent child too) asks, on the harness loop: it is
    kept until ``sys.path`` or one of its directories changes."""
    from importlib.metadata import entry_points

    key = _path_key()
    if _EP_CACHE and _EP_CACHE[0][0] == key:
        return list(_EP_CACHE[0][1])
    found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
    _EP_CACHE[:] = [(key, found)]
    return list(found)


def discover(settings: Any = None, cli: Sequence[str] = (), objects: Sequence[Any] = (),
             workspace: str | os.PathLike[str] | None = None, trusted: bool | None = None) -> list[PluginSpec]:
    """Every plugin the configuration names, in load order (built-ins first; they sit in their own tier).

    ``settings``: a ``dsh_tui.config.Settings`` (or None); ``cli``: ``--plugin`` module names; ``objects``:
    plugin objects or modules handed over directly (the SDK); ``workspace``: the session's working directory,
    whose project plugins (``.dsh-tui/plugins/``) load if it is trusted (``dsh_tui.config.trust``) and are
    listed as skipped, never imported, if not (``trusted``: decided by the caller instead)."""
    table = settings.get("plugins") if settings is not None else None
    if table is None:
        table = {}
    if not isinstance(table, Mapping):
        raise PluginError("settings: [plugins] must be a table of [plugins.<id>] tables")
    configured: dict[str, dict[str, Any]] = {}
    for pid, raw in table.items():
        if not isinstance(raw, Mapping):
            raise PluginError(f"settings: [plugins.{pid}] must be a table")
        configured[str(pid)] = dict(raw)

    def options(pid: str) -> tuple[bool, dict[str, Any], str]:
        raw = dict(configured.get(pid, {}))
        enabled = raw.pop("enabled", pid not in OFF_BY_DEFAULT)
        if not isinstance(enabled, bool):
            raise PluginError(f"settings: plugins.{pid}.enabled must be true or false")
        module = raw.pop("module", "")
        if not isinstance(module, str):
            raise PluginError(f"settings: plugins.{pid}.module must be a string")
        raw.pop("listener_timeout_ms", None)
        return enabled, raw, module

    specs: list[PluginSpec] = []
    for pid in BUILTIN_IDS:
        enabled, config, _module = options(pid)
        if pid == "mcp":  # its servers are the [mcp] table (and --mcp: dsh_tui.runtime.host.load_plugins)
            config = {"settings": settings.get("mcp") if settings is not None else None, "cli": ()}
        elif pid == "lsp":  # its servers and options are the [lsp] table ([plugins.lsp] may set options too)
            config = {**config, **((settings.get("lsp") if settings is not None else None) or {})}
        elif pid == "deepseek-extensions":  # what to send is the [privacy] table's to say
            config = {**config, "privacy": settings.get("privacy") if settings is not None else None}
        specs.append(PluginSpec(pid, "builtin", obj=BUILTINS[pid], config=config, enabled=enabled))
    eps = {ep.name: ep for ep in _entry_points()}
    for pid in configured:  # settings order
        if pid in BUILTIN_IDS or pid in eps:
            continue
        enabled, config, module = options(pid)
        if module:
            specs.append(PluginSpec(pid, "settings", target=module, config=config, enabled=enabled))
        # else: only configures a plugin loaded another way (--plugin, the SDK); checked after loading
    for name, ep in eps.items():  # entry points by name
        enabled, config, _module = options(name)
        specs.append(PluginSpec(name, "entry-point", target=ep.value, config=config, enabled=enabled))
    if workspace is not None:
        from dsh_tui.config import trust

        paths = trust.project_plugin_paths(workspace)
        if trusted is None:
            trusted = bool(paths) and trust.is_trusted(workspace)
        for path in paths:  # named by the plugin's own ``name`` once imported, like --plugin
            if trusted:
                specs.append(PluginSpec(path.stem, "project", target=str(path),
                                        config={"__settings__": configured}))
            else:
                specs.append(PluginSpec(path.stem, "project", target=str(path), skipped=(
                    f"the workspace {Path(workspace).resolve()} is not trusted: trust it when the app asks, "
                    "or run with --trust")))
    for target in cli:  # named by the plugin's own ``name`` once imported (see Plugins.apply)
        specs.append(PluginSpec(target, "cli", target=target, config={"__settings__": configured}))
    for obj in objects:
        pid = str(getattr(obj, "name", "") or getattr(obj, "__name__", "plugin"))
        enabled, config, _module = options(pid)
        specs.append(PluginSpec(pid, "sdk", obj=obj, config=config, enabled=enabled))
    for pid in configured:  # a config-only table: must name a plugin loaded another way
        if pid not in BUILTIN_IDS and pid not in eps and not configured[pid].get("module"):
            specs.append(PluginSpec(pid, "settings", config=dict(configured[pid]), enabled=False))
    for spec in specs:
        spec.listener_timeout_ms = listener_timeout(configured.get(spec.id, {}), spec.id)
    return specs


def listener_timeout(table: Mapping[str, Any], pid: str) -> float:
    """``[plugins.<id>] listener_timeout_ms``: a positive number of milliseconds (default 60,000)."""
    value = table.get("listener_timeout_ms", DEFAULT_TIMEOUT_MS)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < float("inf"):
        raise PluginError(f"settings: plugins.{pid}.listener_timeout_ms must be a positive number of "
                          f"milliseconds, got {value!r}")
    return float(value)


def resolve(spec: PluginSpec) -> Any:
    """The plugin object of ``spec`` (imports its module)."""
    if spec.obj is not None:
        return spec.obj
    if spec.source == "project":
        return _import_project(Path(spec.target))
    module_name, _, attr = spec.target.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except (Exception, SystemExit, KeyboardInterrupt) as err:  # noqa: BLE001 - the plugin's load error
        raise PluginError(f"cannot import {module_name}: {_error_text(err)}") from err
    for part in filter(None, attr.split(".")):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise PluginError(f"{module_name} has no attribute {attr!r}") from None
    return obj


def _import_project(path: Path) -> Any:
    """Import the project plugin at ``path`` (a module file or a package folder) as
    ``dsh_tui_project_<name>``; imported once per process (a subagent's agent gets the same module)."""
    import importlib.util
    import re

    name = "dsh_tui_project_" + re.sub(r"\W", "_", path.stem)
    init = path / "__init__.py" if path.is_dir() else path
    loaded = sys.modules.get(name)
    if loaded is not None and getattr(loaded, "__file__", None) == str(init):
        return loaded
    try:
        spec = importlib.util.spec_from_file_location(
            name, init, submodule_search_locations=[str(path)] if path.is_dir() else None)
        if spec is None or spec.loader is None:
            raise ImportError(f"not a Python module: {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except (Exception, SystemExit, KeyboardInterrupt) as err:  # noqa: BLE001 - the plugin's load error
        sys.modules.pop(name, None)
        raise PluginError(f"cannot import {path}: {_error_text(err)}") from err
    return module


# -------------------------------------------------------------------------------------------------
# The context a plugin is applied with


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
    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    def register(self, tool: Any) -> Callable[[], None]:
        """Register a ``dsh_tui.tools.ToolDefinition`` for this agent; undone when the plugin unloads."""
        service = self._ctx._agent.tools
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
        return list(self._ctx._agent.tools.tools)


class _Commands:
    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    def register(self, name: str, help: str, run: Callable[..., Any], *,  # noqa: A002 - the command's help
                 usage: str = "", record_input: bool = True) -> Callable[[], None]:
        """Register the slash command ``/name`` (``[a-z][a-z0-9_-]*``) with a one-line ``help``. ``run(call)``
        gets a ``CommandCall`` (``call.args``, ``call.raw``, ``call.agent``) and returns the text shown to the
        user (or a ``CommandResult``; raise ``CommandError`` for an error), possibly async. Undone when the
        plugin unloads. A later registration of the same name replaces an earlier one."""
        from dsh_tui.runtime.commands import Command

        registry = self._ctx._agent.commands
        off = registry.register(Command(name, help, run, usage=usage, record_input=record_input,
                                        plugin=self._ctx.id))
        self._ctx.command_names.append(name)
        self._ctx._disposers.append(off)
        return off

    @property
    def names(self) -> list[str]:
        return sorted(self._ctx._agent.commands.commands)


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
        self.tools = _Tools(self)
        self.command_names: list[str] = []
        self.commands = _Commands(self)
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


async def _run_all(disposers: list[Callable[[], Any]]) -> None:
    """Run an effect's remaining disposers, newest first, awaiting async ones."""
    while disposers:
        out = disposers.pop()()
        if inspect.isawaitable(out):
            await out


def _config_for(obj: Any, raw: dict[str, Any]) -> Any:
    schema = getattr(obj, "Config", None)
    if schema is None:
        return dict(raw)
    validate = getattr(schema, "model_validate", None)
    try:
        return validate(raw) if validate is not None else schema(**raw)
    except Exception as err:  # noqa: BLE001 - pydantic's ValidationError and friends
        text = " ".join(line for line in str(err).splitlines()  # one line, without pydantic's help links
                        if not line.strip().startswith("For further information visit "))
        raise PluginError(f"invalid config: {' '.join(text.split())}") from err


def _call_apply(apply: Callable[..., Any], ctx: Context, config: Any) -> Any:
    try:
        params = inspect.signature(apply).parameters
        takes_config = len(params) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params.values())
    except (TypeError, ValueError):
        takes_config = True
    return apply(ctx, config) if takes_config else apply(ctx)


class Plugins:
    """The plugins of one agent: applied in ``Agent.__init__`` before ``agent/created``, disposed on close."""

    def __init__(self, specs: Iterable[PluginSpec] | None = None, *, strict: bool = False,
                 on_failure: Callable[[PluginRecord], Any] | None = None) -> None:
        self.specs = list(specs) if specs is not None else builtin_specs()
        self.strict = strict
        self.on_failure = on_failure
        self.records: list[PluginRecord] = []
        self.contexts: list[Context] = []
        # each applicable spec's (plugin object, validated config), or why it could not be prepared
        self._prepared: dict[int, tuple[Any, Any] | BaseException] | None = None

    def disabled(self, pid: str) -> bool:
        return any(s.id == pid and not s.enabled and s.source == "builtin" for s in self.specs)

    def prepare(self) -> None:
        """Import every plugin and validate its config (before a session exists: with ``strict`` a broken
        plugin stops ``run`` before anything is written). ``apply`` calls it if nobody did."""
        if self._prepared is not None:
            return
        self._prepared = {}
        for i, spec in enumerate(self.specs):
            if not spec.enabled or spec.skipped or (spec.source == "settings" and not spec.target
                                                     and spec.obj is None):
                continue
            try:
                obj = resolve(spec)
                if spec.source in ("cli", "project"):  # its id is its name; its config the [plugins.<name>] table
                    table = dict(spec.config.pop("__settings__", {}).get(_name_of(obj, spec.target), {}))
                    spec.id = _name_of(obj, spec.target)
                    spec.enabled = table.pop("enabled", True) is not False
                    table.pop("module", None)
                    spec.listener_timeout_ms = listener_timeout(table, spec.id)
                    table.pop("listener_timeout_ms", None)
                    spec.config = table
                if not callable(getattr(obj, "apply", None)):
                    raise PluginError("has no apply(ctx, config)")
                self._prepared[i] = (obj, _config_for(obj, spec.config))
            except (Exception, SystemExit, KeyboardInterrupt) as err:  # noqa: BLE001 - reported by apply
                self._prepared[i] = err
                if self.strict:
                    raise PluginError(f"plugin {spec.id}: {_error_text(err)}") from err

    def apply(self, agent: Any) -> list[PluginRecord]:
        self.prepare()
        assert self._prepared is not None
        for i, spec in enumerate(self.specs):
            if spec.source == "settings" and not spec.target and spec.obj is None:  # config-only table
                if any(r.id == spec.id for r in self.records):
                    continue
                self._failed(PluginRecord(spec.id, "settings", "", "failed",
                                          f'[plugins.{spec.id}] configures a plugin that is not loaded: add '
                                          f'module = "package.module", install it, or pass --plugin'))
                continue
            record = PluginRecord(spec.id, spec.source, spec.target, "loaded")
            if spec.skipped:
                record.state, record.error = "skipped", spec.skipped
                self.records.append(record)
                if self.on_failure is not None:  # reported like a failure (the app's notice, one line on stderr)
                    self.on_failure(record)
                continue
            self.records.append(record)
            if not spec.enabled:
                record.state = "disabled"
                continue
            prepared = self._prepared.get(i)
            ctx: Context | None = None
            try:
                if isinstance(prepared, BaseException):
                    raise prepared
                if prepared is None:  # its spec changed since prepare(): reported as a failure
                    raise PluginError("was not prepared")
                obj, config = prepared
                ctx = Context(agent, spec.id, config, BUILTIN if spec.source == "builtin" else USER,
                              spec.listener_timeout_ms)
                out = _call_apply(obj.apply, ctx, config)
                if inspect.isawaitable(out):
                    if inspect.iscoroutine(out):
                        out.close()
                    raise PluginError("apply() must not be async (register async listeners instead)")
            except (Exception, SystemExit, KeyboardInterrupt) as err:  # noqa: BLE001 - reported; others load
                if ctx is not None:
                    _dispose_now(ctx)
                self.records.pop()
                self._failed(PluginRecord(spec.id, spec.source, spec.target, "failed", _error_text(err)), err)
                continue
            record.events, record.tools = list(ctx.events), list(ctx.tool_names)
            record.commands = list(ctx.command_names)
            self.contexts.append(ctx)
        return self.records

    def _failed(self, record: PluginRecord, cause: BaseException | None = None) -> None:
        self.records.append(record)
        if self.strict:
            raise PluginError(f"plugin {record.id}: {record.error}") from cause
        if self.on_failure is not None:
            self.on_failure(record)

    async def dispose(self) -> None:
        while self.contexts:
            await self.contexts.pop().dispose()

    def failures(self) -> list[PluginRecord]:
        return [r for r in self.records if r.state == "failed"]


def _error_text(err: BaseException) -> str:
    """A plugin's load error as shown and logged: secrets this process knows redacted."""
    if isinstance(err, PluginError):
        return redact(str(err))
    return redact(f"{type(err).__name__}: {err}" if str(err) else type(err).__name__)


def _name_of(obj: Any, fallback: str) -> str:
    name = getattr(obj, "name", None)
    return name if isinstance(name, str) and name else fallback


def _dispose_now(ctx: Context) -> None:
    """Undo a failed plugin's registrations at once (synchronous disposers only)."""
    while ctx._disposers:
        try:
            out = ctx._disposers.pop()()
            if inspect.iscoroutine(out):
                out.close()
        except Exception:  # noqa: BLE001
            pass


def builtin_specs(features: bool = False) -> list[PluginSpec]:
    """The built-in plugins of a bare ``Agent`` (no ``plugins=``): the loop's own behaviour. The feature
    plugins (``FEATURE_IDS``: project instructions, titles, background jobs) read the workspace, run work or call the model
    beside the turn; the agent host loads them with every other plugin (``discover``), and
    ``features=True`` adds them here."""
    return [PluginSpec(pid, "builtin", obj=BUILTINS[pid], enabled=pid not in OFF_BY_DEFAULT) for pid in BUILTIN_IDS
            if features or pid not in FEATURE_IDS]
