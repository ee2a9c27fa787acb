"""The settings' constants, ``SettingsError`` and the built-in DeepSeek provider table: what the start-up path
needs, without pydantic (``models.py``, imported when a provider or storage table is first validated: pydantic
is ~45 ms to import, and the first frame reads only ``[ui]`` and ``[keymap]``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from dsh_tui.session.errors import DshError

CREDENTIALS_FILE = "credentials.toml"

DEEPSEEK_PROVIDER = "deepseek-official"
DEEPSEEK_BASE_URL = "https://api.deepseek.com"
DEEPSEEK_KEY_ENV = "DEEPSEEK_API_KEY"
DEEPSEEK_BASE_URL_ENV = "DEEPSEEK_BASE_URL"
# the wire of the built-in route when no settings file says (``api = "chat"`` does): as dsh 0.2, Messages
DEEPSEEK_API_ENV = "DSH_TUI_DEEPSEEK_API"
# dsh 0.2's DeepSeek catalog (its llm-deepseek DEFAULT_MODELS: the Messages route, the first is the default)
DEEPSEEK_MODELS = ("deepseek-flash", "deepseek-v4-pro")
# the chat-completions route keeps dsh-tui's earlier catalog and default
DEEPSEEK_CHAT_MODELS = ("deepseek-v4-flash", "deepseek-v4-pro")
DEEPSEEK_CONTEXT_WINDOW = 1_000_000
DEEPSEEK_MAX_TOKENS = 256_000
# Anthropic's own API (Claude models) over the Messages wire, with ANTHROPIC_API_KEY
ANTHROPIC_PROVIDER = "anthropic"
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_KEY_ENV = "ANTHROPIC_API_KEY"
ANTHROPIC_BASE_URL_ENV = "ANTHROPIC_BASE_URL"
# model id: (context window, output cap) as Anthropic publishes them; the first is the provider's default
ANTHROPIC_MODELS = {
    "claude-sonnet-4-5": (200_000, 64_000),
    "claude-opus-4-1": (200_000, 32_000),
    "claude-haiku-4-5": (200_000, 64_000),
}
THINKING_FORMATS = ("deepseek", "openai", "none")
# the wire a provider route speaks: OpenAI chat completions, or the Anthropic Messages API (dsh 0.2's route to
# DeepSeek: POST {base}/v1/messages)
APIS = ("chat", "messages")
EFFORTS = ("off", "low", "medium", "high", "max")
DEFAULT_IDLE_TIMEOUT_S = 300.0
DEFAULT_EVENT_TIMEOUT_S = 900.0  # a stream with no event (keep-alive comments only) for this long ends


class SettingsError(DshError):
    """The settings or credentials file is unreadable or holds a value of the wrong shape."""


def deepseek_api(user_api: Any = None) -> str:
    """The wire of the built-in route: the user's ``api``, else ``$DSH_TUI_DEEPSEEK_API``, else ``messages``
    (dsh 0.2's route: ``POST {base}/v1/messages``)."""
    if isinstance(user_api, str) and user_api:
        return user_api
    return os.environ.get(DEEPSEEK_API_ENV) or "messages"


def deepseek_models(api: str) -> tuple[str, ...]:
    return DEEPSEEK_CHAT_MODELS if api == "chat" else DEEPSEEK_MODELS


def builtin_deepseek(user_api: Any = None) -> dict[str, Any]:
    """The built-in ``deepseek-official`` table; a user's ``[providers.deepseek-official]`` is merged over it
    (``user_api``: its ``api`` key, which picks the wire and so the model catalog)."""
    api = deepseek_api(user_api)
    models: dict[str, Any] = {m: {"context_window": DEEPSEEK_CONTEXT_WINDOW} for m in deepseek_models(api)}
    return {
        "base_url": os.environ.get(DEEPSEEK_BASE_URL_ENV) or DEEPSEEK_BASE_URL,
        "api": api,
        "api_key_env": DEEPSEEK_KEY_ENV,
        "thinking_format": "deepseek",
        "default_context_window": DEEPSEEK_CONTEXT_WINDOW,
        "default_max_tokens": DEEPSEEK_MAX_TOKENS,
        "models": models,
        "label": "DeepSeek",
    }


def builtin_anthropic() -> dict[str, Any]:
    """The built-in ``anthropic`` table (Claude over the Messages wire); a user's ``[providers.anthropic]`` is
    merged over it. No thinking fields are sent (``thinking_format = "none"``): Anthropic's extended thinking
    takes a token budget dsh's ``thinking: {type: enabled}`` does not carry."""
    return {
        "base_url": os.environ.get(ANTHROPIC_BASE_URL_ENV) or ANTHROPIC_BASE_URL,
        "api": "messages",
        "api_key_env": ANTHROPIC_KEY_ENV,
        "thinking_format": "none",
        "default_context_window": 200_000,
        "default_max_tokens": 32_000,
        "models": {m: {"context_window": cw, "max_tokens": out} for m, (cw, out) in ANTHROPIC_MODELS.items()},
        "label": "Anthropic",
    }


def lists_anthropic(user_table: Any, default_provider: Any) -> bool:
    """Whether the built-in ``anthropic`` route is listed: the settings name it, or ``ANTHROPIC_API_KEY`` is set
    (so the model picker offers Claude only to someone who can call it)."""
    return (user_table is not None or default_provider == ANTHROPIC_PROVIDER
            or bool((os.environ.get(ANTHROPIC_KEY_ENV) or "").strip()))


# --------------------------------------------------------------------------------------------------
# The sections the first frame reads (``[ui]``, ``[chat]``): plain dataclasses, so reading them costs no
# pydantic. ``config/tree.py`` validates the same fields strictly (a pydantic model made from each dataclass,
# with its field docstrings); ``read`` builds them as the app always has (``bool(value)``), without checking.
NOTIFY_MODES = ("auto", "bell", "off")


@dataclass(frozen=True)
class UiSection:
    """``[ui]``: how the app looks."""

    theme: str | None = None
    """The theme's name (``textual-dark``, ``dsh-dark``, …); the app saves the one picked with Ctrl+P. Unset: the
    app's default theme."""
    show_time: bool = True
    """Show each message's time in the chat transcript."""
    cursor_blink: bool = True
    """Blink the composer's cursor (``DSH_TUI_NO_BLINK`` turns it off too)."""
    notify: Literal["auto", "bell", "off"] = "auto"
    """How a finished turn or a question is announced while the terminal is not focused: ``auto`` (a desktop
    notification where the terminal supports one, else the bell), ``bell`` (always the bell) or ``off``."""

    @classmethod
    def read(cls, get: Callable[[str, Any], Any]) -> UiSection:
        """The section from ``get(dotted_key, default)``, as the app read it before the tree existed."""
        return cls(theme=get("ui.theme", None), show_time=bool(get("ui.show_time", True)),
                   cursor_blink=bool(get("ui.cursor_blink", True)), notify=get("ui.notify", "auto"))


@dataclass(frozen=True)
class ChatSection:
    """``[chat]``: the chat screen's behaviour."""

    enter_steers: bool = False
    """While a turn runs, Enter steers the text into it and Ctrl+S queues it (the default is the other way
    round)."""

    @classmethod
    def read(cls, get: Callable[[str, Any], Any]) -> ChatSection:
        return cls(enter_steers=bool(get("chat.enter_steers", False)))
