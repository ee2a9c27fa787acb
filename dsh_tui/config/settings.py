"""User settings (``settings.toml``) and credentials (``credentials.toml``).

Both live in ``platformdirs.user_config_dir("dsh-tui")`` (``$XDG_CONFIG_HOME/dsh-tui`` on Linux).
Settings are a nested TOML document read with ``tomllib`` and saved with ``tomlkit`` so the user's
comments and layout survive (``config/files.py``). Other parts of the app keep their own keys here
(``ui.theme``, ``keymap.<binding-id>``, ``storage.backend`` ...) through ``Settings.get`` /
``Settings.set``; ``Settings.tree`` / ``Settings.section(name)`` read them typed (``config/tree.py``, every
section and field with its docstring: docs/settings.md), and the model providers have typed accessors
(pydantic models in ``config/models.py``)::

    [default]
    provider = "deepseek-official"
    model = "deepseek-flash"
    reasoning_effort = "high"

    [providers.vllm]
    base_url = "http://127.0.0.1:8000/v1"
    api_key_env = "VLLM_API_KEY"          # optional; a local server usually needs none
    thinking_format = "none"              # deepseek | openai | none
    [providers.vllm.models."Qwen/Qwen3-8B"]
    context_window = 32768
    max_tokens = 8192
    price_input = 0.0                     # USD per million tokens
    price_cache_hit = 0.0
    price_output = 0.0

The built-in provider ``deepseek-official`` always exists (``DEEPSEEK_API_KEY`` and optional
``DEEPSEEK_BASE_URL`` are enough, with no settings file at all; it speaks the Messages wire as dsh 0.2 does,
chat completions with ``api = "chat"`` or ``DSH_TUI_DEEPSEEK_API=chat``); a ``[providers.deepseek-official]``
table overrides its fields. The built-in ``anthropic`` route (Claude, ``ANTHROPIC_API_KEY``) is listed once its
key is set or the settings name it. API keys are never stored in ``settings.toml``: they come from the
environment variable a provider names, or from ``credentials.toml``, which must be private (mode 0600)::

    DEEPSEEK_API_KEY = "sk-..."           # by environment-variable name
    [providers.my-gateway]
    api_key = "..."                       # or per provider
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from dsh_tui.config.base import (
    ANTHROPIC_PROVIDER,
    DEEPSEEK_PROVIDER,
    EFFORTS,
    ChatSection,
    SettingsError,
    UiSection,
    builtin_anthropic,
    builtin_deepseek,
    deepseek_api,
    deepseek_models,
    lists_anthropic,
)
from dsh_tui.config.files import (
    check_toml_value,
    credentials_path,
    load_credentials,
    read_settings_file,
    settings_path,
    write_toml,
)

if TYPE_CHECKING:
    from dsh_tui.config.models import ProviderSettings, StorageSettings
    from dsh_tui.config.tree import SettingsTree


class KeyedProvider(Protocol):
    """What finding a provider's key needs: its name and key variable (a ``ProviderSettings``, or the
    built-in DeepSeek table's two fields before pydantic is imported)."""

    @property
    def name(self) -> str: ...

    @property
    def api_key_env(self) -> str | None: ...


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


# --------------------------------------------------------------------------------------------------
# Settings


class Settings:
    """The user's settings document (``data``) plus the built-in defaults underneath it."""

    def __init__(self, data: dict[str, Any] | None = None, path: Path | None = None) -> None:
        self.data: dict[str, Any] = copy.deepcopy(data or {})
        self.path = path

    # -- generic access ----------------------------------------------------------------------------

    def get(self, key: str, default: Any = None) -> Any:
        """Value at a dotted key (``"ui.theme"``); the built-in provider defaults are visible too."""
        node: Any = self._merged_view() if key.split(".")[0] in ("providers", "default") else self.data
        for part in _split_key(key):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return copy.deepcopy(node) if isinstance(node, (dict, list)) else node

    def set(self, key: str, value: Any) -> None:
        """Set a dotted key; ``None`` removes it. Intermediate tables are created."""
        parts = _split_key(key)
        if value is None:
            self.unset(key)
            return
        check_toml_value(value, key)
        node = self.data
        for i, part in enumerate(parts[:-1]):
            nxt = node.get(part)
            if nxt is None:
                nxt = node[part] = {}
            elif not isinstance(nxt, dict):
                raise SettingsError(f"cannot set {key}: {'.'.join(parts[: i + 1])} is not a table")
            node = nxt
        node[parts[-1]] = copy.deepcopy(value)

    def unset(self, key: str) -> None:
        parts = _split_key(key)
        node = self.data
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                return
            node = child
        node.pop(parts[-1], None)

    def as_dict(self) -> dict[str, Any]:
        return copy.deepcopy(self.data)

    # -- the typed tree (config/tree.py) ---------------------------------------------------------------

    @property
    def tree(self) -> SettingsTree:
        """The whole document, typed (pydantic: imported on first use); a value of the wrong type is a
        one-line ``SettingsError`` naming its key."""
        from dsh_tui.config.tree import parse_tree

        return parse_tree(self.data)

    def section(self, name: str) -> Any:
        """One section of the tree, typed, without validating the others (``section("sandbox").network``)."""
        from dsh_tui.config.tree import parse_section

        return parse_section(self.data, name)

    def problems(self) -> list[str]:
        """Unknown keys (with their path) and values of the wrong type, one line each; none stops the app."""
        from dsh_tui.config.tree import problems

        return problems(self.data)

    @property
    def ui(self) -> UiSection:
        """``[ui]``, typed without pydantic (the first frame reads it; ``tree.ui`` checks the types)."""
        return UiSection.read(self.get)

    @property
    def chat(self) -> ChatSection:
        """``[chat]``, typed without pydantic."""
        return ChatSection.read(self.get)

    # -- providers ---------------------------------------------------------------------------------

    def _merged_view(self) -> dict[str, Any]:
        user_providers = self.data.get("providers")
        if user_providers is not None and not isinstance(user_providers, dict):
            raise SettingsError("providers must be a table of provider tables")
        providers = dict(user_providers or {})
        deepseek_user = providers.get(DEEPSEEK_PROVIDER) or {}
        if not isinstance(deepseek_user, dict):
            raise SettingsError(f"providers.{DEEPSEEK_PROVIDER} must be a table")
        providers[DEEPSEEK_PROVIDER] = _merge(builtin_deepseek(deepseek_user.get("api")), deepseek_user)
        default = self.data.get("default") or {}
        if not isinstance(default, dict):
            raise SettingsError("default must be a table")
        anthropic_user = providers.get(ANTHROPIC_PROVIDER)
        if lists_anthropic(anthropic_user, default.get("provider")):
            if anthropic_user is not None and not isinstance(anthropic_user, dict):
                raise SettingsError(f"providers.{ANTHROPIC_PROVIDER} must be a table")
            providers[ANTHROPIC_PROVIDER] = _merge(builtin_anthropic(), anthropic_user or {})
        view = dict(self.data)
        view["providers"] = providers
        view["default"] = _merge({"provider": DEEPSEEK_PROVIDER}, default)
        return view

    def providers(self) -> dict[str, ProviderSettings]:
        from dsh_tui.config.models import parse_provider  # pydantic: imported on first use

        view = self._merged_view()["providers"]
        return {name: parse_provider(name, raw, name == DEEPSEEK_PROVIDER) for name, raw in view.items()}

    def provider(self, name: str | None = None) -> ProviderSettings:
        from dsh_tui.config.models import parse_provider

        name = name or self.default_provider
        view = self._merged_view()["providers"]
        if name not in view:
            known = ", ".join(sorted(view))
            raise SettingsError(
                f'unknown provider "{name}" (configured: {known}); add a [providers.{name}] table'
            )
        return parse_provider(name, view[name], name == DEEPSEEK_PROVIDER)

    def storage(self) -> StorageSettings:
        """The ``[storage]`` table (the session backend and compression of new roots)."""
        from dsh_tui.config.models import parse_storage

        return parse_storage(self.data.get("storage"))

    @property
    def default_provider(self) -> str:
        value = self.get("default.provider") or DEEPSEEK_PROVIDER
        if not isinstance(value, str):
            raise SettingsError("default.provider must be a string")
        return value

    @property
    def default_model(self) -> str | None:
        value = self.get("default.model")
        if value is not None and not isinstance(value, str):
            raise SettingsError("default.model must be a string")
        if value:
            return value
        if self.default_provider == DEEPSEEK_PROVIDER:
            user = (self.data.get("providers") or {}).get(DEEPSEEK_PROVIDER)
            return deepseek_models(deepseek_api(user.get("api") if isinstance(user, dict) else None))[0]
        models = list(self.provider(self.default_provider).models)
        return models[0] if models else None

    @property
    def default_reasoning_effort(self) -> str | None:
        value = self.get("default.reasoning_effort")
        if value is not None and value not in EFFORTS:
            raise SettingsError(
                f"default.reasoning_effort must be one of {', '.join(EFFORTS)}, not {value!r}"
            )
        return value


def _split_key(key: str) -> list[str]:
    if not isinstance(key, str) or not key:
        raise SettingsError(f"invalid settings key {key!r}")
    parts = key.split(".")
    if any(not p for p in parts):
        raise SettingsError(f"invalid settings key {key!r}")
    return parts


def load_settings(path: str | os.PathLike[str] | None = None) -> Settings:
    """Read the settings file; a missing file is empty settings, a broken one a ``SettingsError``."""
    p = Path(path) if path is not None else settings_path()
    return Settings(read_settings_file(p), p)


def save_settings(settings: Settings, path: str | os.PathLike[str] | None = None) -> Path:
    """Write the settings atomically, keeping the comments and layout of the file already there;
    returns the path written."""
    p = Path(path) if path is not None else (settings.path or settings_path())
    write_toml(p, settings.data)
    settings.path = p
    return p


def find_api_key(provider: KeyedProvider, path: str | os.PathLike[str] | None = None) -> str | None:
    """The key for ``provider``: its environment variable, else the credentials file; ``None`` if neither."""
    if provider.api_key_env:
        value = os.environ.get(provider.api_key_env)
        if value and value.strip():
            return value
    creds = load_credentials(path)
    if not creds:
        return None
    per = creds.get("providers", {})
    entry = per.get(provider.name) if isinstance(per, dict) else None
    if isinstance(entry, dict) and isinstance(entry.get("api_key"), str) and entry["api_key"].strip():
        return entry["api_key"]
    if provider.api_key_env:
        value = creds.get(provider.api_key_env)
        if isinstance(value, str) and value.strip():
            return value
    return None


def missing_key_message(provider: KeyedProvider) -> str:
    env = provider.api_key_env or f"{provider.name.upper().replace('-', '_')}_API_KEY"
    where = credentials_path()
    how = (
        f"export {env}=<your key>"
        if provider.api_key_env
        else f'set api_key_env = "{env}" in [providers.{provider.name}] and export {env}=<your key>'
    )
    return (
        f'no API key for provider "{provider.name}": {how}, '
        f'or add [providers.{provider.name}] api_key = "<your key>" to {where} (chmod 600)'
    )
