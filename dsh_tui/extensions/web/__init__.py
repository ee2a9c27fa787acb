"""The ``web`` built-in plugin: dsh's ``web_search`` and ``web_fetch`` tools (``dsh_tui.tools.web``) and their
system-prompt sections (``tool:web_search``, ``tool:web_fetch``), both on by default as in dsh 0.2.

Config (``[plugins.web]``; ``enabled = false`` turns both off):

- ``search`` / ``fetch`` (true): offer each tool;
- ``search_max_results`` (8), ``search_max_queries`` (4), ``search_timeout_ms`` / ``fetch_timeout_ms`` (30000),
  ``fetch_max_output_chars`` (200000);
- ``search_base_url`` (else ``$DEEPSEEK_SEARCH_BASE_URL``, else ``https://api.deepseek.com/anthropic/v1``),
  ``search_model`` (``deepseek-v4-flash``), ``search_api_key_env`` (``DEEPSEEK_API_KEY``; else the
  credentials file's key for ``deepseek-official``), ``search_max_uses`` (5);
- ``fetch_max_response_bytes`` (5000000), ``fetch_max_body_chars`` (100000), ``fetch_max_redirects`` (5);
- ``search_provider`` (``deepseek-official``; or dsh 0.1's ``exa`` with ``EXA_API_KEY``, ``perplexity`` with
  ``PERPLEXITY_API_KEY`` and model ``sonar``; ``search_base_url`` / ``search_api_key_env`` / ``search_model``
  override them);
- ``fetch_allow_networks`` ([]): addresses or networks (``"127.0.0.1"``, ``"10.0.0.0/8"``) ``web_fetch`` may
  reach although they are not public; everything else that is not public is refused.
"""

from __future__ import annotations

import os
from typing import Any

from dsh_tui.runtime.options import plugin_options
from dsh_tui.session.errors import DshError

name = "web"
__all__ = ["apply", "name", "DEFAULTS"]

DEFAULTS: dict[str, Any] = {
    "search": True, "fetch": True, "search_max_results": 8, "search_max_queries": 4, "search_timeout_ms": 30_000,
    "fetch_timeout_ms": 30_000, "fetch_max_output_chars": 200_000, "search_base_url": None,
    "search_model": "deepseek-v4-flash", "search_api_key_env": "DEEPSEEK_API_KEY", "search_max_uses": 5,
    "fetch_max_response_bytes": 5_000_000, "fetch_max_body_chars": 100_000, "fetch_max_redirects": 5,
    "fetch_allow_networks": [], "search_provider": "deepseek-official",
}
# dsh 0.1's search providers that need only a key: (base URL, key variable, model)
PROVIDERS = {"deepseek-official": (None, "DEEPSEEK_API_KEY", "deepseek-v4-flash"),
             "exa": ("https://api.exa.ai", "EXA_API_KEY", ""),
             "perplexity": ("https://api.perplexity.ai", "PERPLEXITY_API_KEY", "sonar")}
SEARCH_ORDER = 114.2  # after tool:jobs (114), as dsh 0.2 orders TOOL_WEB_SEARCH after TOOL_JOBS
FETCH_ORDER = 114.3


def _config(raw: Any) -> dict[str, Any]:
    cfg = plugin_options(raw, DEFAULTS, booleans=("search", "fetch"), shows_value=True, positive=(
        "search_max_results", "search_max_queries", "search_timeout_ms", "fetch_timeout_ms", "fetch_max_output_chars",
        "search_max_uses", "fetch_max_response_bytes", "fetch_max_body_chars"))
    v = cfg["fetch_max_redirects"]
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise DshError(f"fetch_max_redirects must be a non-negative integer, got {v!r}")
    if cfg["search_provider"] not in PROVIDERS:
        raise DshError(f"search_provider must be one of {', '.join(PROVIDERS)}, got {cfg['search_provider']!r}")
    if not isinstance(cfg["fetch_allow_networks"], list):
        raise DshError("fetch_allow_networks must be a list of addresses or networks")
    return cfg


def _api_key(env: str, provider: str = "deepseek-official") -> str | None:
    """The key in ``$env``, else the credentials file's (by variable name, or ``[providers.<provider>]``: a
    DeepSeek key is never sent to another search provider)."""
    value = os.environ.get(env)
    if value and value.strip():
        return value
    from types import SimpleNamespace

    from dsh_tui.config import DEEPSEEK_PROVIDER, SettingsError, find_api_key

    try:
        name = DEEPSEEK_PROVIDER if provider == "deepseek-official" else provider
        return find_api_key(SimpleNamespace(name=name, api_key_env=env))  # type: ignore[arg-type]
    except SettingsError:
        return None


def apply(ctx: Any, config: Any = None) -> None:
    from dsh_tui.llm.redact import redact
    from dsh_tui.tools import web

    cfg = _config(config)
    if cfg["search"]:
        provider = cfg["search_provider"]
        default_base, default_env, default_model = PROVIDERS[provider]
        if provider == "deepseek-official":
            base = cfg["search_base_url"] or os.environ.get(web.SEARCH_BASE_URL_ENV) or web.SEARCH_DEFAULT_BASE_URL
            env, model = str(cfg["search_api_key_env"]), str(cfg["search_model"])
        else:
            base = cfg["search_base_url"] or default_base
            env = default_env if cfg["search_api_key_env"] == DEFAULTS["search_api_key_env"] \
                else str(cfg["search_api_key_env"])
            model = default_model if cfg["search_model"] == DEFAULTS["search_model"] else str(cfg["search_model"])
        options = web.SearchOptions(
            base_url=str(base), api_key=lambda: _api_key(env, provider), api_key_env=env, provider=provider, model=model,
            max_uses=cfg["search_max_uses"],
            record=lambda data: ctx.append("web/deepseek-search-llm-request", data), redact=redact)
        ctx.tools.register(web.search_tool(options, max_results=cfg["search_max_results"],
                                           max_queries=cfg["search_max_queries"],
                                           timeout_ms=cfg["search_timeout_ms"]))
    if cfg["fetch"]:
        limits = web.FetchLimits(max_response_bytes=cfg["fetch_max_response_bytes"],
                                 max_body_chars=cfg["fetch_max_body_chars"],
                                 timeout_s=cfg["fetch_timeout_ms"] / 1000, max_redirects=cfg["fetch_max_redirects"],
                                 allow=web.parse_networks(cfg["fetch_allow_networks"]))
        ctx.tools.register(web.fetch_tool(limits, timeout_ms=cfg["fetch_timeout_ms"],
                                          max_output_chars=cfg["fetch_max_output_chars"]))

    async def assemble(_payload: dict, nxt: Any) -> Any:
        from dsh_tui.runtime import prompt as prompt_mod

        assembly = await nxt()
        visible = {t.get("name") for t in assembly.tools}
        if "web_search" in visible:
            text = web.SEARCH_SECTION_WITH_FETCH if "web_fetch" in visible else web.SEARCH_SECTION_ALONE
            assembly.sections.append(prompt_mod.Section("tool:web_search", SEARCH_ORDER, text))
        if "web_fetch" in visible:
            assembly.sections.append(prompt_mod.Section("tool:web_fetch", FETCH_ORDER, web.FETCH_SECTION))
        return assembly

    ctx.on("system-prompt/assemble", assemble)
