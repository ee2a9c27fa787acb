"""User settings (``settings.toml``) and credentials (``credentials.toml``).

``base`` (constants, ``SettingsError``, the pydantic-free ``[ui]`` / ``[chat]`` sections) · ``tree`` (the typed
settings tree, ``SettingsTree``: every section and field, pydantic, imported on first use) · ``models`` (the
typed provider settings, pydantic, imported on first use: ``ModelSettings``, ``ProviderSettings``,
``StorageSettings`` and ``SettingsTree`` are loaded from here lazily) · ``files`` (paths, reading, the
comment-preserving ``tomlkit`` writes, credentials) · ``settings`` (``Settings``, ``load_settings``,
``save_settings``, API-key lookup).
"""

from dsh_tui.config.base import (
    ANTHROPIC_PROVIDER,
    CREDENTIALS_FILE,
    DEEPSEEK_BASE_URL,
    DEEPSEEK_BASE_URL_ENV,
    DEEPSEEK_CONTEXT_WINDOW,
    DEEPSEEK_KEY_ENV,
    DEEPSEEK_MAX_TOKENS,
    DEEPSEEK_MODELS,
    DEEPSEEK_PROVIDER,
    EFFORTS,
    THINKING_FORMATS,
    SettingsError,
)
from dsh_tui.config.files import (
    APP_NAME,
    SETTINGS_FILE,
    config_dir,
    credentials_path,
    dumps_toml,
    load_credentials,
    save_credential,
    settings_path,
)
from dsh_tui.config.settings import (
    Settings,
    find_api_key,
    load_settings,
    missing_key_message,
    save_settings,
)

__all__ = [
    "ANTHROPIC_PROVIDER", "APP_NAME", "CREDENTIALS_FILE", "DEEPSEEK_BASE_URL", "DEEPSEEK_BASE_URL_ENV", "DEEPSEEK_CONTEXT_WINDOW",
    "DEEPSEEK_KEY_ENV", "DEEPSEEK_MAX_TOKENS", "DEEPSEEK_MODELS", "DEEPSEEK_PROVIDER", "EFFORTS", "SETTINGS_FILE",
    "THINKING_FORMATS", "ModelSettings", "ProviderSettings", "Settings", "SettingsError", "SettingsTree", "StorageSettings", "config_dir",
    "credentials_path", "dumps_toml", "find_api_key", "load_credentials", "load_settings", "missing_key_message",
    "save_credential", "save_settings", "settings_path",
]


_LAZY = ("ModelSettings", "ProviderSettings", "StorageSettings")
_LAZY_TREE = ("SettingsTree",)


def __getattr__(name: str):
    """The pydantic models, imported when first asked for (pydantic costs ~45 ms of start-up)."""
    if name in _LAZY:
        from dsh_tui.config import models

        return getattr(models, name)
    if name in _LAZY_TREE:
        from dsh_tui.config import tree

        return getattr(tree, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
