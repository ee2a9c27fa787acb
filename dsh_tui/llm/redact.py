"""Keep secrets out of anything a user or a log can see.

Provider error bodies and headers sometimes echo request data (a whole or truncated API key, the URL
with its credentials, the authorization header base64-encoded). One registry holds every secret this
process knows (the API keys it resolved, configured header values: ``register_secret``); ``redact`` removes
them, in every form below, from any string before it reaches a log, stderr or the screen: provider
errors, request ids, plugin load errors, listener failures and the command line's error line.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

REDACTED = "[REDACTED]"

_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',;]+")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]+=*")
_MIN_FRAGMENT = 8
_MIN_SECRET = 8  # shorter values are not registered (they would redact ordinary words)

_registered: set[str] = set()
_b64_cores: dict[str, tuple[str, ...]] = {}


def register_secret(value: str | None) -> None:
    """Remember ``value`` (an API key, a configured header value) so that every later ``redact`` removes it."""
    if value and len(value) >= _MIN_SECRET and value not in _registered:
        _registered.add(value)


def forget_secrets() -> None:
    """Empty the registry (tests: one test's keys must not redact another's texts)."""
    _registered.clear()


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Replace every secret (the given ones and the registered ones) with ``[REDACTED]``: the secret
    itself, its URL-encoded form, any fragment of it (8+ characters, wherever it sits: ``key=sk-12345678``
    or ``sk-1234567****``), any base64 text that encodes it (``Basic``/``Bearer`` headers echoed
    encoded: the whole base64 run goes), and any bearer token."""
    keys = {s for s in secrets if s and len(s) >= 4} | _registered
    if not text or not keys:
        return _BEARER.sub(lambda m: m.group(1) + REDACTED, text) if text else text
    forms = set(keys)
    for key in keys:
        forms.add(quote(key, safe=""))
        forms.add(quote_plus(key, safe=""))
    for form in sorted(forms, key=len, reverse=True):
        if form in text:
            text = text.replace(form, REDACTED)
    text = _redact_base64(text, keys)
    text = _redact_fragments(text, sorted(keys))
    return _BEARER.sub(lambda m: m.group(1) + REDACTED, text)


def _cores(key: str) -> tuple[str, ...]:
    """The base64 characters that encode ``key`` whatever precedes it (one per alignment, standard and
    URL-safe alphabets): any base64 of a text holding the key contains one of them."""
    cores = _b64_cores.get(key)
    if cores is None:
        raw = key.encode("utf-8", "surrogatepass")
        out: list[str] = []
        for shift in range(3):
            enc = base64.b64encode(b"\0" * shift + raw).decode()
            start = -(-shift // 3) * 4  # the first 3-byte group made of key bytes only
            end = ((shift + len(raw)) // 3) * 4
            core = enc[start:end]
            if len(core) >= 8:
                out += [core, core.replace("+", "-").replace("/", "_")]
        cores = _b64_cores[key] = tuple(out)
    return cores


def _redact_base64(text: str, keys: Iterable[str]) -> str:
    cores = [c for k in keys if len(k) >= _MIN_FRAGMENT for c in _cores(k)]
    if not cores or not any(c in text for c in cores):
        return text
    return _BASE64_RUN.sub(lambda m: REDACTED if any(c in m.group() for c in cores) else m.group(), text)


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
