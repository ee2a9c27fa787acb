"""The typed settings tree: one root model (``SettingsTree``) with a section per table of ``settings.toml``,
a docstring on every field (the settings reference, ``docs/settings.md``, is generated from them:
``python -m dsh_tui.config.reference``).

pydantic, imported on first use (``Settings.tree`` / ``Settings.section`` / ``Settings.problems``): the first
frame reads ``[ui]`` and ``[chat]`` through the pydantic-free dataclasses of ``config/base.py`` (which this
tree validates strictly as its ``ui`` / ``chat`` fields) and ``[keymap]`` as checked by ``config/check.py``.

A value of the wrong type is one ``SettingsError`` line naming its key (``ui.show_time must be true or false,
not 'no'``). Unknown keys never stop anything (a newer settings file must still load): ``unknown_keys`` lists
them with their full path, and the app shows them once in a notice after its first frame.

Tables whose contents belong to someone else are typed loosely here and validated where they are used:
``[providers.NAME]`` (``config/models.py``, with the built-in routes merged underneath, when a provider is
used), ``[mcp.servers.NAME]`` (the MCP built-in), ``[lsp.servers.NAME]`` (the LSP built-in) and a plugin's
options in ``[plugins.ID]`` (the plugin's own ``Config``).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import textwrap
import typing
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from dsh_tui.config.base import DEEPSEEK_PROVIDER, ChatSection, SettingsError, UiSection
from dsh_tui.config.models import (
    _TABLE_TYPES,
    _TYPE_WORDS,
    ModelSettings,
    ProviderSettings,
    StorageSettings,
    describe,
)

__all__ = ["SettingsTree", "parse_tree", "parse_section", "unknown_keys", "RETRY_KEYS"]

RETRY_KEYS = ("mode", "max_retries", "initial_delay_ms", "max_delay_ms", "jitter_ratio", "retryable_codes")


class _Section(BaseModel):
    # strict: TOML already has types, so "5" is not 5 and true is not 1; unknown keys are reported, not refused
    model_config = ConfigDict(strict=True, frozen=True, extra="ignore", use_attribute_docstrings=True)


def attribute_docstrings(cls: type) -> dict[str, str]:
    """The docstrings under a class's fields (``name: type = default`` then a string), by field name."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):  # no source (a frozen build): the fields are still typed, undocumented
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    out: dict[str, str] = {}
    for node, after in zip(body, body[1:]):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
            out[node.target.id] = inspect.cleandoc(after.value.value)
    return out


def _mirror(cls: type) -> type[_Section]:
    """A strict pydantic model with the fields, defaults and field docstrings of the dataclass ``cls``
    (``config/base.py``'s pydantic-free sections)."""
    hints = typing.get_type_hints(cls)
    docs = attribute_docstrings(cls)
    fields: dict[str, Any] = {f.name: (hints[f.name], Field(default=f.default, description=docs.get(f.name)))
                              for f in dataclasses.fields(cls)}
    model = create_model(cls.__name__, __base__=_Section, __doc__=cls.__doc__, **fields)
    model.__module__ = __name__
    return model


UiTable = _mirror(UiSection)
ChatTable = _mirror(ChatSection)


class DefaultSection(_Section):
    """``[default]``: the model route a new session uses (the command palette's model pick saves it here)."""

    provider: str = DEEPSEEK_PROVIDER
    """The provider (a ``[providers.NAME]`` table, or a built-in route: ``deepseek-official``, ``anthropic``)."""
    model: str | None = None
    """The model id. Unset: the provider's first model."""
    reasoning_effort: Literal["off", "low", "medium", "high", "max"] | None = None
    """The reasoning effort of a new session. Unset: the provider's ``reasoning_effort``, else the model's
    default."""


class PriceSection(_Section):
    """``[prices."MODEL"]``: what a model costs, in USD per million tokens (the status bar's cost). An entry
    without both ``input`` and ``output`` is ignored."""

    input: float | None = None
    """Uncached input tokens."""
    output: float | None = None
    """Output tokens."""
    cache_read: float | None = None
    """Cache-hit input tokens. Unset: the ``input`` price."""


class PrivacySection(_Section):
    """``[privacy]``: what is sent to DeepSeek beyond the conversation."""

    send_anonymous_user_id: bool = True
    """Send an anonymous id (created on first use, beside the settings) to DeepSeek's own API, as dsh does."""
    send_session_log: bool = False
    """Send the session's events with each request on DeepSeek's Messages route (dsh's ``dsh_session_log``)."""
    send_plugin_packages: bool = False
    """Send the active plugins' packages with each request on DeepSeek's Messages route
    (dsh's ``dsh_plugin_packages``)."""


class SandboxSection(_Section):
    """``[sandbox]``: the sandbox ``bash`` runs in (docs/sandbox.md)."""

    mode: Literal["auto", "bwrap", "off"] = "auto"
    """``auto`` (bubblewrap where it works, else none, said once), ``bwrap`` (bubblewrap or refuse) or ``off``;
    ``DSH_TUI_SANDBOX`` and ``--sandbox`` override it."""
    network: bool = False
    """Let sandboxed commands reach the network."""
    writable: list[str] = Field(default_factory=list)
    """Paths writable inside the sandbox besides the workspace (e.g. ``["~/.npm"]``)."""
    readable: list[str] = Field(default_factory=list)
    """Paths readable inside the sandbox besides the defaults."""


class McpSection(_Section):
    """``[mcp]``: MCP servers (``dsh-tui mcp add|list|get|remove`` edits them)."""

    servers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """``[mcp.servers.NAME]``: one server each (``command``/``args``/``env`` or ``url``/``headers``, …;
    checked by the MCP built-in when it starts, docs/tools.md)."""


class LspSection(_Section):
    """``[lsp]``: language servers for the ``lsp`` tool and the diagnostics after ``write`` / ``edit``."""

    diagnostics: bool = True
    """Add the language server's diagnostics to ``write`` / ``edit`` results."""
    diagnostics_wait_ms: int = 3000
    """How long to wait for diagnostics after a write, in milliseconds."""
    max_diagnostics: int = 20
    """Diagnostics shown per file at most."""
    max_locations: int = 100
    """Locations (definitions, references) in one ``lsp`` result at most."""
    max_result_chars: int = 16_000
    """Characters of one ``lsp`` result at most."""
    timeout_ms: int = 60_000
    """A language server request's timeout, in milliseconds."""
    servers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """``[lsp.servers.ID]``: one server each (``command``, ``args``, ``extensions``, ``root_markers``, ``env``,
    ``initialization_options``, ``configuration``; checked by the LSP built-in)."""


class PluginTable(_Section):
    """``[plugins.ID]``: one plugin's table; keys other than these are the plugin's options (its ``Config``)."""

    model_config = ConfigDict(extra="allow")

    enabled: bool | None = None
    """Load the plugin. Unset: on, except for the built-ins that are off by default (docs/plugins.md)."""
    module: str = ""
    """A module (or ``module:OBJECT``) to import the plugin from."""
    listener_timeout_ms: int | float = 60_000
    """How long one of the plugin's event listeners may run, in milliseconds."""


class SettingsTree(_Section):
    """The whole ``settings.toml``."""

    default: DefaultSection = Field(default_factory=DefaultSection)
    """The model route of a new session."""
    providers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """``[providers.NAME]``: model routes (``ProviderSettings``, below; validated when the provider is used, so
    a broken route does not stop the rest of the app)."""
    storage: StorageSettings = Field(default_factory=StorageSettings)
    """Where and how sessions are stored."""
    ui: UiTable = Field(default_factory=UiTable)  # type: ignore[valid-type]
    """How the app looks."""
    chat: ChatTable = Field(default_factory=ChatTable)  # type: ignore[valid-type]
    """The chat screen's behaviour."""
    keymap: dict[str, Any] = Field(default_factory=dict)
    """``"binding.id" = "key[,key…]"``: the app's keys remapped (docs/app.md lists the binding ids)."""
    prices: dict[str, PriceSection] = Field(default_factory=dict)
    """Model prices by model id, over the built-in ones and the providers' ``price_*`` fields."""
    models: list[str] = Field(default_factory=list)
    """Model names the command palette offers besides the providers' models."""
    privacy: PrivacySection = Field(default_factory=PrivacySection)
    """What is sent to DeepSeek beyond the conversation."""
    sandbox: SandboxSection = Field(default_factory=SandboxSection)
    """The sandbox of ``bash``."""
    mcp: McpSection = Field(default_factory=McpSection)
    """MCP servers."""
    lsp: LspSection = Field(default_factory=LspSection)
    """Language servers."""
    plugins: dict[str, PluginTable] = Field(default_factory=dict)
    """Plugins by id: built-ins turned on or off, plugins loaded from a module, and their options."""


SECTIONS = tuple(SettingsTree.model_fields)


def _path(loc: tuple[Any, ...]) -> str:
    """``('prices', 'm', 'input')`` -> ``prices."m".input`` (model ids quoted, list items indexed)."""
    out = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif (i == 1 and loc[0] == "prices") or (i == 3 and loc[0] == "providers" and loc[2] == "models"):
            out += f'."{part}"'
        else:
            out += f".{part}" if out else str(part)
    return out


def _error(err: ValidationError) -> SettingsError:
    """The first error as one line naming its key, in the words of ``config/check.py`` and ``models.py``."""
    first = err.errors(include_url=False)[0]
    path, kind, value = _path(tuple(first["loc"])), first["type"], first.get("input")
    if kind == "literal_error":
        choices = re.findall(r"'([^']*)'", str((first.get("ctx") or {}).get("expected", "")))
        return SettingsError(f"{path} must be one of {', '.join(choices)}, not {value!r}")
    if kind == "list_type":
        return SettingsError(f"{path} must be a list, not {value!r}")
    if kind == "missing":
        return SettingsError(f"{path} is required")
    if kind in _TABLE_TYPES:
        return SettingsError(f"{path} must be a table")
    if kind in _TYPE_WORDS:
        return SettingsError(f"{path} must be {_TYPE_WORDS[kind]}, not {value!r}")
    return SettingsError(describe(err, "settings").removeprefix("settings."))


def parse_tree(data: dict[str, Any]) -> SettingsTree:
    """The whole document, typed; the first value of the wrong type is a ``SettingsError`` naming its key."""
    try:
        return SettingsTree.model_validate(data)
    except ValidationError as err:
        raise _error(err) from None


def parse_section(data: dict[str, Any], name: str) -> Any:
    """One section, typed (the others are not looked at): ``parse_section(data, "sandbox").network``."""
    if name not in SettingsTree.model_fields:
        raise SettingsError(f"{name} is not a settings section")
    raw = data.get(name)
    try:
        tree = SettingsTree.model_validate({} if raw is None else {name: raw})
    except ValidationError as err:
        raise _error(err) from None
    return getattr(tree, name)


# --------------------------------------------------------------------------------------------------
# Unknown keys


def _fields(kind: Any) -> tuple[str, ...] | None:
    """The keys of a table typed ``kind`` (a model or a dataclass), or None if its keys are free."""
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        if kind.model_config.get("extra") == "allow":
            return None
        return tuple(kind.model_fields)
    return None


_PROVIDER_KEYS = tuple(k for k in ProviderSettings.model_fields if k not in ("name", "builtin"))
_MODEL_KEYS = tuple(k for k in ModelSettings.model_fields if k != "id")


def _walk(table: Any, keys: tuple[str, ...], where: str, out: list[str]) -> None:
    if not isinstance(table, dict):
        return
    out.extend(f"{where}.{k}" for k in table if k not in keys)


def unknown_keys(data: dict[str, Any]) -> list[str]:
    """Every key of ``data`` the settings tree does not know, with its full path (``ui.shwo_time``), in file
    order. Free-form tables (keymap, plugin options, MCP / LSP servers) are their owners' to check."""
    out: list[str] = []
    for key, value in data.items():
        if key not in SettingsTree.model_fields:
            out.append(key)
            continue
        if key == "providers" and isinstance(value, dict):
            for name, table in value.items():
                where = f"providers.{name}"
                _walk(table, _PROVIDER_KEYS, where, out)
                if not isinstance(table, dict):
                    continue
                _walk(table.get("retry"), RETRY_KEYS, f"{where}.retry", out)
                models = table.get("models")
                if isinstance(models, dict):
                    for mid, model in models.items():
                        _walk(model, _MODEL_KEYS, f'{where}.models."{mid}"', out)
            continue
        if key == "prices" and isinstance(value, dict):
            for mid, entry in value.items():
                _walk(entry, tuple(PriceSection.model_fields), f'prices."{mid}"', out)
            continue
        kind = SettingsTree.model_fields[key].annotation
        fields = _fields(kind)
        if fields is not None:
            _walk(value, fields, key, out)
    return out


def problems(data: dict[str, Any]) -> list[str]:
    """What the tree says about ``data``, one line each: the first value of the wrong type, then the unknown
    keys (none of them stops the app)."""
    out: list[str] = []
    try:
        parse_tree(data)
    except SettingsError as err:
        out.append(str(err))
    out.extend(f"{key} is not a setting (ignored)" for key in unknown_keys(data))
    return out
