"""The settings' constants, ``SettingsError`` and the built-in DeepSeek provider table: what the start-up path
needs, without pydantic (``models.py``, imported when a provider or storage table is first validated: pydantic
is ~45 ms to import, and the first frame reads only ``[ui]`` and ``[keymap]``)."""

from __future__ import annotations

import os
from typing import Any

from dsh_tui.session.errors import DshError

CREDENTIALS_FILE = "credentials.toml"

DEEPSEEK_PROVIDER = "deepseek-official"
DEEPSEEK_BASE_URL = "https://api.deepseek.com"
DEEPSEEK_KEY_ENV = "DEEPSEEK_API_KEY"
DEEPSEEK_BASE_URL_ENV = "DEEPSEEK_BASE_URL"
DEEPSEEK_MODELS = ("deepseek-v4-flash", "deepseek-v4-pro")
DEEPSEEK_CONTEXT_WINDOW = 1_000_000
DEEPSEEK_MAX_TOKENS = 256_000
THINKING_FORMATS = ("deepseek", "openai", "none")
# the wire a provider route speaks: OpenAI chat completions, or the Anthropic Messages API (dsh 0.2's route to
# DeepSeek: POST {base}/v1/messages)
APIS = ("chat", "messages")
EFFORTS = ("off", "low", "medium", "high", "max")
DEFAULT_IDLE_TIMEOUT_S = 300.0
DEFAULT_EVENT_TIMEOUT_S = 900.0  # a stream with no event (keep-alive comments only) for this long ends


class SettingsError(DshError):
    """The settings or credentials file is unreadable or holds a value of the wrong shape."""


def builtin_deepseek() -> dict[str, Any]:
    """The built-in ``deepseek-official`` table; a user's ``[providers.deepseek-official]`` is merged over it."""
    models: dict[str, Any] = {m: {"context_window": DEEPSEEK_CONTEXT_WINDOW} for m in DEEPSEEK_MODELS}
    return {
        "base_url": os.environ.get(DEEPSEEK_BASE_URL_ENV) or DEEPSEEK_BASE_URL,
        "api_key_env": DEEPSEEK_KEY_ENV,
        "thinking_format": "deepseek",
        "default_context_window": DEEPSEEK_CONTEXT_WINDOW,
        "default_max_tokens": DEEPSEEK_MAX_TOKENS,
        "models": models,
        "label": "DeepSeek",
    }
