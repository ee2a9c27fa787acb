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

The ``Context`` a plugin is applied with is ``dsh_tui.runtime.plugin_context``; the built-ins are a table in
``dsh_tui.runtime.builtin_plugins``, their bodies in their own modules, imported only when applied.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh_tui.llm.redact import redact
from dsh_tui.runtime.builtin_plugins import BUILTIN_IDS, BUILTINS, FEATURE_IDS, OFF_BY_DEFAULT
from dsh_tui.runtime.bus import BUILTIN, USER
from dsh_tui.runtime.listeners import DEFAULT_TIMEOUT_MS
from dsh_tui.runtime.plugin_context import AgentView, BuiltinContext, Context, PluginError, SessionView

ENTRY_POINT_GROUP = "dsh_tui.plugins"

__all__ = ["BUILTINS", "BUILTIN_IDS", "ENTRY_POINT_GROUP", "FEATURE_IDS", "OFF_BY_DEFAULT", "AgentView",
           "BuiltinContext", "Context",
           "PluginError", "PluginRecord", "PluginSpec", "Plugins", "SessionView", "builtin_specs", "discover",
           "listener_timeout", "resolve"]



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
                builtin = spec.source == "builtin"
                ctx = (BuiltinContext if builtin else Context)(agent, spec.id, config, BUILTIN if builtin else USER,
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
