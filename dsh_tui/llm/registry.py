"""Build a ``Provider`` from the user's settings and environment.

``build_provider(settings, name)`` never fails for a missing key: the key is resolved on every request
(so a key exported or stored later reaches the next request), and a request without one raises
``LlmError(MISSING_CREDENTIAL)`` whose message says exactly what to set. Call
``provider.check_credential()`` to fail early (``dsh-tui run --headless`` does).
"""

from __future__ import annotations

import math
import uuid
from dataclasses import replace
from typing import Any

from dsh_tui.config import (
    ANTHROPIC_PROVIDER,
    DEEPSEEK_CONTEXT_WINDOW,
    DEEPSEEK_MAX_TOKENS,
    DEEPSEEK_PROVIDER,
    ProviderSettings,
    Settings,
    SettingsError,
    config_dir,
    find_api_key,
    load_settings,
    missing_key_message,
)
from dsh_tui.llm.openai import OpenAICompatProvider
from dsh_tui.llm.protocol import INVALID_CREDENTIAL, MISSING_CREDENTIAL, LlmError, ModelInfo, RetryPolicy
from dsh_tui.llm.redact import register_secret

#: DeepSeek models that take images (dsh 0.2's catalog: ``deepseek-flash``; dsh 0.1's
#: ``deepseek-v4-flash-vision-exp``); any other DeepSeek model is text-only unless its settings say
#: ``input_modalities = ["text", "image"]``.
DEEPSEEK_IMAGE_MODELS = ("deepseek-flash", "deepseek-v4-flash-vision-exp")


def build_provider(
    settings: Settings | None = None, provider_name: str | None = None
) -> OpenAICompatProvider:
    """The provider route ``provider_name`` (default: ``default.provider``, i.e. ``deepseek-official``)."""
    settings = settings if settings is not None else load_settings()
    ps = settings.provider(provider_name)
    models = {mid: _model_info(m) for mid, m in ps.models.items()}
    if ps.name == DEEPSEEK_PROVIDER:  # dsh's catalog: these DeepSeek models take images
        for mid in DEEPSEEK_IMAGE_MODELS:
            info = models.get(mid)
            if info is None:
                models[mid] = ModelInfo(context_window=DEEPSEEK_CONTEXT_WINDOW, input_modalities=("text", "image"))
            elif ps.models[mid].input_modalities is None:
                models[mid] = replace(info, input_modalities=("text", "image"))
    default = ModelInfo(
        context_window=ps.default_context_window,
        default_max_tokens=ps.default_max_tokens,
    )
    try:  # known from the start: a plugin's error text or a listener's failure holding it is redacted too
        register_secret(find_api_key(ps))
    except SettingsError:
        pass
    effort = ps.reasoning_effort
    if effort is None and ps.name == settings.default_provider:
        effort = settings.default_reasoning_effort
    base_url, thinking_format = ps.base_url, ps.thinking_format
    idle_timeout_s, event_timeout_s = ps.idle_timeout_s, ps.event_timeout_s
    if base_url is None or thinking_format is None or idle_timeout_s is None or event_timeout_s is None:
        # ProviderSettings' validators fill these (or reject the table): only an unvalidated one lacks them
        raise SettingsError(f'provider "{ps.name}" is not a validated [providers.{ps.name}] table')
    cls = OpenAICompatProvider
    if ps.api == "messages":
        from dsh_tui.llm.messages import MessagesProvider

        cls = MessagesProvider
    provider = cls(
        ps.name,
        base_url,
        _key_resolver(ps),
        models,
        idle_timeout_s=idle_timeout_s,
        event_timeout_s=event_timeout_s,
        label=ps.label,
        thinking_format=thinking_format,
        thinking=ps.thinking,
        default_effort=effort,
        default_model=default,
        retry=_retry_policy(ps),
        user_id_resolver=anonymous_user_id if sends_user_id(settings, ps) else None,
        extra_headers=ps.headers,
    )
    if ps.api == "messages":
        from dsh_tui.llm.messages import MessagesProvider

        if isinstance(provider, MessagesProvider):
            if ps.name == ANTHROPIC_PROVIDER:
                provider.send_harness_headers = False
            elif ps.name == DEEPSEEK_PROVIDER:
                provider.request_extensions = {}  # dsh's deepseekLlmApiExtensions: [privacy] may turn some on
    return provider


def _model_info(m: Any) -> ModelInfo:
    return ModelInfo(
        context_window=m.context_window,
        default_max_tokens=m.max_tokens,
        price_input=m.price_input,
        price_cache_hit=m.price_cache_hit,
        price_output=m.price_output,
        input_modalities=tuple(m.input_modalities or ("text",)),
    )


def _retry_policy(ps: ProviderSettings) -> RetryPolicy:
    raw = ps.retry
    if not raw:
        return RetryPolicy()
    fields = {
        "mode": str,
        "max_retries": int,
        "initial_delay_ms": int,
        "max_delay_ms": int,
        "jitter_ratio": float,
    }
    kwargs: dict[str, Any] = {}
    for key, typ in fields.items():
        if key in raw:
            value = raw[key]
            if isinstance(value, bool) or not isinstance(value, (typ, int) if typ is float else typ):
                raise SettingsError(f"providers.{ps.name}.retry.{key} has the wrong type: {value!r}")
            kwargs[key] = typ(value)
            if key != "mode" and (not math.isfinite(kwargs[key]) or kwargs[key] < 0):
                raise SettingsError(f"providers.{ps.name}.retry.{key} must be a non-negative number, not {value!r}")
    from dsh_tui.config.check import check_retry

    check_retry(raw, f"providers.{ps.name}.retry")
    if kwargs.get("jitter_ratio", 0) > 1:
        raise SettingsError(f"providers.{ps.name}.retry.jitter_ratio must be between 0 and 1")
    if kwargs.get("mode", "normal") not in ("normal", "always"):
        raise SettingsError(f'providers.{ps.name}.retry.mode must be "normal" or "always"')
    if "retryable_codes" in raw:
        codes = raw["retryable_codes"]
        if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
            raise SettingsError(f"providers.{ps.name}.retry.retryable_codes must be a list of codes")
        kwargs["retryable_codes"] = tuple(codes)
    return RetryPolicy(**kwargs)


def _key_resolver(ps: ProviderSettings):
    needs_key = ps.api_key_env is not None

    def resolve() -> str | None:
        try:
            key = find_api_key(ps)
        except SettingsError as err:
            raise LlmError(str(err), INVALID_CREDENTIAL) from None
        if key is None and needs_key:
            raise LlmError(missing_key_message(ps), MISSING_CREDENTIAL)
        register_secret(key)
        return key

    return resolve


def default_route(settings: Settings) -> tuple[str, str]:
    """The (provider, model) a new session uses, whether or not a key is available."""
    provider = settings.default_provider
    model = settings.default_model
    if not model:
        raise SettingsError(
            f'no model for provider "{provider}": set default.model, or list models under [providers.{provider}.models]'
        )
    return provider, model


def credential_problem(settings: Settings, provider_name: str | None = None) -> str | None:
    """Why ``provider_name`` cannot be called right now (a one-line message), or ``None`` if it can."""
    try:
        ps = settings.provider(provider_name)
    except SettingsError as err:
        return str(err)
    try:
        key = find_api_key(ps)
    except SettingsError as err:
        return str(err)
    if key is None and ps.api_key_env is not None:
        return missing_key_message(ps)
    return None


def configured_model(settings: Settings) -> tuple[str, str] | None:
    """The default (provider, model) when it can actually be called (a key is available), else ``None``."""
    try:
        route = default_route(settings)
    except SettingsError:
        return None
    return route if credential_problem(settings, route[0]) is None else None


def is_configured(settings: Settings) -> bool:
    """False means: show the "no model configured" help (see ``credential_problem`` for the reason)."""
    return configured_model(settings) is not None


def available_models(settings: Settings) -> list[tuple[str, str]]:
    """Every (provider, model) the settings list, default route first."""
    out: list[tuple[str, str]] = []
    try:
        out.append(default_route(settings))
    except SettingsError:
        pass
    for name, ps in settings.providers().items():
        for mid in ps.models:
            if (name, mid) not in out:
                out.append((name, mid))
    return out


_USER_IDS: dict[str, str] = {}

USER_ID_SETTING = "privacy.send_anonymous_user_id"
USER_ID_HEADER = "x-deepseek-harness-user-id"


def is_deepseek_endpoint(base_url: str) -> bool:
    """True for DeepSeek's own API (``deepseek.com`` or a subdomain of it, over https)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(base_url)
    except ValueError:
        return False
    host = (parts.hostname or "").rstrip(".").lower()
    return parts.scheme == "https" and (host == "deepseek.com" or host.endswith(".deepseek.com"))


def sends_user_id(settings: Settings, ps: ProviderSettings) -> bool:
    """Whether requests of route ``ps`` carry the anonymous user id: only to DeepSeek's own endpoint,
    and not when ``privacy.send_anonymous_user_id = false``."""
    return settings.section("privacy").send_anonymous_user_id and is_deepseek_endpoint(ps.base_url)


def user_id_path():
    return config_dir() / "anonymous-user-id"


def anonymous_id_notice(settings: Settings, provider_name: str | None = None) -> str:
    """On the first run that will send the anonymous id: create it and say so ("" otherwise)."""
    try:
        ps = settings.provider(provider_name)
    except SettingsError:
        return ""
    path = user_id_path()
    if not sends_user_id(settings, ps) or path.exists() or anonymous_user_id() is None:
        return ""
    return (f"Requests to DeepSeek carry an anonymous random id ({USER_ID_HEADER} header, as dsh sends it), "
            f"stored in {path}. Turn it off with [privacy] send_anonymous_user_id = false in settings.toml.")


def anonymous_user_id() -> str | None:
    """A random, stable, anonymous id sent as ``x-deepseek-harness-user-id`` (as dsh does)."""
    path = user_id_path()
    cached = _USER_IDS.get(str(path))
    if cached is not None:
        return cached
    try:
        value = path.read_text(encoding="utf-8").strip()
    except OSError:
        value = ""
    if not value:
        value = str(uuid.uuid4())
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(value + "\n", encoding="utf-8")
        except OSError:
            return None
    _USER_IDS[str(path)] = value
    return value


__all__ = [
    "DEEPSEEK_CONTEXT_WINDOW",
    "DEEPSEEK_MAX_TOKENS",
    "anonymous_id_notice",
    "anonymous_user_id",
    "is_deepseek_endpoint",
    "sends_user_id",
    "available_models",
    "build_provider",
    "configured_model",
    "credential_problem",
    "default_route",
    "is_configured",
]
