"""Keep secrets out of anything a user or a log can see.

Provider error bodies sometimes echo request data (a whole or truncated API key, the URL with its
credentials). Every message the provider layer puts into an ``LlmError`` goes through ``redact``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

REDACTED = "[REDACTED]"

_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',;]+")
_MIN_FRAGMENT = 8


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Replace every secret, every fragment of one (8+ characters, wherever it sits: ``key=sk-12345678``
    or ``sk-1234567****``) and any bearer token with ``[REDACTED]``."""
    keys = [s for s in secrets if s and len(s) >= 4]
    for key in sorted(keys, key=len, reverse=True):
        if key in text:
            text = text.replace(key, REDACTED)
    text = _redact_fragments(text, keys)
    return _BEARER.sub(lambda m: m.group(1) + REDACTED, text)


def _redact_fragments(text: str, keys: list[str]) -> str:
    """Each maximal run of ``text`` that is a substring (8+ characters) of a key becomes ``[REDACTED]``."""
    n = _MIN_FRAGMENT
    windows = sorted({k[i : i + n] for k in keys for i in range(len(k) - n + 1)})
    if not windows:  # no key long enough for a fragment to be recognisable
        return text
    find = re.compile("|".join(map(re.escape, windows))).search
    out: list[str] = []
    start = 0
    m = find(text)
    while m is not None:
        i = m.start()
        j = m.end()  # the window matched: extend the run while it stays inside a key
        while j < len(text) and any(text[i : j + 1] in k for k in keys):
            j += 1
        out.append(text[start:i])
        out.append(REDACTED)
        start = j
        m = find(text, j)
    out.append(text[start:])
    return "".join(out)


def redact_url(url: str) -> str:
    """A URL safe to show: user info and query string values removed."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        netloc = REDACTED + "@" + netloc.rsplit("@", 1)[1]
    query = parts.query
    if query:
        query = "&".join(
            (kv.partition("=")[0] + "=" + REDACTED) if "=" in kv else kv for kv in query.split("&")
        )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
