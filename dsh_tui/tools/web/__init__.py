"""dsh's web tools: ``web_search`` (``dsh-tool-web`` over ``dsh-web-search-deepseek``) and ``web_fetch``
(``dsh-tool-web`` over ``dsh-web-fetch-http``), with dsh 0.2's model-facing texts.

``web_fetch`` fetches one HTTP(S) URL: at most 2048 characters, no credentials in it; the host name is
resolved once and every address must be public (loopback, private, link-local, reserved… refused) unless a
configured network allows it; the connection goes to the checked address (the host name stays in ``Host``
and TLS SNI), so a DNS answer that changes between the check and the connection (DNS rebinding) cannot
reach a private address. Same-origin redirects only (at most 5), a 5 MB response cap (a larger
``Content-Length`` is refused, a longer stream cut), 100,000 characters of body, 30 s. HTML becomes
Markdown (``markdownify``; scripts, styles and hidden elements dropped; pages nested deeper than 512
elements pass through raw, as dsh does), the whole output at most 200,000 characters.

``web_search`` asks DeepSeek's Anthropic-compatible Messages API to run its native ``web_search`` server tool
(``$DEEPSEEK_SEARCH_BASE_URL``, default ``https://api.deepseek.com/anthropic/v1``; the DeepSeek API key) and
lists the result blocks as sources, 1–4 queries merged round-robin, at most 8 sources; or, configured, dsh
0.1's Exa or Perplexity search (each needs only its key).
"""

from dsh_tui.tools.web.base import EXTERNAL_WEB_CONTENT_NOTICE, WebError
from dsh_tui.tools.web.fetch import (
    DEFAULT_USER_AGENT,
    FETCH_SCHEMA,
    FETCH_SECTION,
    MAX_URL_LENGTH,
    TRUNCATION_FOOTER,
    FetchLimits,
    classify,
    fetch,
    fetch_tool,
    format_fetch_output,
    is_public,
    parse_networks,
    resolve_addresses,
    validate_url,
)
from dsh_tui.tools.web.html import MAX_CONVERSION_DEPTH, exceeds_depth, html_to_markdown
from dsh_tui.tools.web.search import (
    SEARCH_BASE_URL_ENV,
    SEARCH_DEFAULT_BASE_URL,
    SEARCH_SECTION_ALONE,
    SEARCH_SECTION_WITH_FETCH,
    SEARCH_USER_AGENT,
    SearchOptions,
    format_search_output,
    map_anthropic_response,
    merge_results,
    parse_search_args,
    search_deepseek,
    search_exa,
    search_one,
    search_perplexity,
    search_schema,
    search_tool,
)

__all__ = [
    "DEFAULT_USER_AGENT", "EXTERNAL_WEB_CONTENT_NOTICE", "FETCH_SCHEMA", "FETCH_SECTION", "MAX_CONVERSION_DEPTH",
    "MAX_URL_LENGTH", "SEARCH_BASE_URL_ENV", "SEARCH_DEFAULT_BASE_URL", "SEARCH_SECTION_ALONE",
    "SEARCH_SECTION_WITH_FETCH", "SEARCH_USER_AGENT", "TRUNCATION_FOOTER", "FetchLimits", "SearchOptions", "WebError",
    "classify", "exceeds_depth", "fetch", "fetch_tool", "format_fetch_output", "format_search_output",
    "html_to_markdown", "is_public", "map_anthropic_response", "merge_results", "parse_networks",
    "parse_search_args", "resolve_addresses", "search_deepseek", "search_exa", "search_one", "search_perplexity",
    "search_schema", "search_tool", "validate_url",
]
