"""The model route: which provider and model a new agent gets, or why there is none (one set of words for
"no model configured", used by the app, ``run`` and ``resume``). Cheap to import: the provider and httpx are
loaded only when a route is built."""

from __future__ import annotations

from typing import Any


def _one_line(text: str) -> str:
    return " ".join(text.split())


def model_route(model: str | None = None) -> tuple[Any, str, str]:
    """(provider, model, hint): the configured model route, or (None, "", how to configure one)."""
    from dsh_tui.config import load_settings
    from dsh_tui.llm import registry

    try:
        settings = load_settings()
        problem = registry.credential_problem(settings)
        if problem is not None:
            return None, "", _one_line(f"No model configured: {problem} (or try `dsh-tui demo`)")
        provider = registry.build_provider(settings)
        name = model or registry.default_route(settings)[1]
    except Exception as err:  # noqa: BLE001 - shown in the status bar; the app still opens
        return None, "", _one_line(f"No model configured: {err}")
    return provider, name, ""


def credential_hint(settings: Any) -> str:
    """The "no model configured" hint when the default provider has no usable key, else "".

    Settings and credentials only (no provider, no httpx: ~1 ms), so the hint is on the first frame;
    the same words as ``model_route``. ``settings`` None: the settings file could not be read (its
    error is then reported by ``model_route`` in the thread)."""
    if settings is None:
        return ""
    from types import SimpleNamespace

    from dsh_tui.config import (
        DEEPSEEK_KEY_ENV,
        DEEPSEEK_PROVIDER,
        SettingsError,
        find_api_key,
        missing_key_message,
    )

    # the rule of dsh_tui.llm.registry.credential_problem (which imports the provider and httpx);
    # tests/ui/test_app_startup.py checks both give the same answer
    try:
        if not settings.data.get("providers") and settings.default_provider == DEEPSEEK_PROVIDER:
            # the built-in DeepSeek table, known valid: only its name and key variable matter here, and
            # validating it would import pydantic before the first frame (~45 ms)
            ps = SimpleNamespace(name=DEEPSEEK_PROVIDER, api_key_env=DEEPSEEK_KEY_ENV)
        else:
            ps = settings.provider(None)
        key = find_api_key(ps)
    except SettingsError as err:
        problem: str | None = str(err)
    else:
        problem = missing_key_message(ps) if key is None and ps.api_key_env is not None else None
    if problem is None:
        return ""
    return _one_line(f"No model configured: {problem} (or try `dsh-tui demo`)")
