"""Keep secrets out of anything a user or a log can see.

Provider error bodies sometimes echo request data (a whole or truncated API key, the URL with its
credentials). Every message the provider layer puts into an ``LlmError`` goes through ``redact``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

REDACTED = "[REDACTED]"

# Candidate tokens that may be an echoed (possibly truncated) key: long runs of key-ish characters.
_TOKEN = re.compile(r"[A-Za-z0-9_\-\.+/=~]{8,}")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',;]+")
_MIN_FRAGMENT = 8


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Replace every secret, every long fragment of one, and any bearer token with ``[REDACTED]``."""
    keys = [s for s in secrets if s and len(s) >= 4]
    for key in sorted(keys, key=len, reverse=True):
        if key in text:
            text = text.replace(key, REDACTED)
    long_keys = [k for k in keys if len(k) >= _MIN_FRAGMENT]
    if long_keys:

        def _sub(m: re.Match[str]) -> str:
            tok = m.group(0)
            # A truncated echo: the token (or its inner part) is a long fragment of a key.
            for key in long_keys:
                if tok in key:
                    return REDACTED
                for piece in re.split(r"[.*]+", tok):
                    if len(piece) >= _MIN_FRAGMENT and piece in key:
                        return tok.replace(piece, REDACTED)
            return tok

        text = _TOKEN.sub(_sub, text)
    return _BEARER.sub(lambda m: m.group(1) + REDACTED, text)


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
            (kv.split("=", 1)[0] + "=" + REDACTED) if "=" in kv else kv for kv in query.split("&")
        )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
