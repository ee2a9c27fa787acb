"""User settings (``settings.toml``) and credentials (``credentials.toml``).

``models`` (the typed provider settings, pydantic; ``SettingsError``) · ``files`` (paths, reading, the
comment-preserving ``tomlkit`` writes, credentials) · ``settings`` (``Settings``, ``load_settings``,
``save_settings``, API-key lookup).
"""

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
from dsh_tui.config.models import (
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
    ModelSettings,
    ProviderSettings,
    SettingsError,
    StorageSettings,
)
from dsh_tui.config.settings import (
    Settings,
    find_api_key,
    load_settings,
    missing_key_message,
    save_settings,
)

__all__ = [
    "APP_NAME", "CREDENTIALS_FILE", "DEEPSEEK_BASE_URL", "DEEPSEEK_BASE_URL_ENV", "DEEPSEEK_CONTEXT_WINDOW",
    "DEEPSEEK_KEY_ENV", "DEEPSEEK_MAX_TOKENS", "DEEPSEEK_MODELS", "DEEPSEEK_PROVIDER", "EFFORTS", "SETTINGS_FILE",
    "THINKING_FORMATS", "ModelSettings", "ProviderSettings", "Settings", "SettingsError", "StorageSettings", "config_dir",
    "credentials_path", "dumps_toml", "find_api_key", "load_credentials", "load_settings", "missing_key_message",
    "save_credential", "save_settings", "settings_path",
]
