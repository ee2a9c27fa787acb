"""HTTP error classification for the chat-completions provider: quota and context-overflow wording,
status precedence (docs/runtime.md, "Provider failure codes and retry"), ``Retry-After`` and request ids."""

from __future__ import annotations

import re
import time
from email.utils import parsedate_to_datetime
from typing import Any

from dsh_tui.llm._httpx import httpx
from dsh_tui.llm.protocol import (
    AUTH,
    CONTEXT_WINDOW_EXCEEDED,
    INVALID_REQUEST,
    QUOTA,
    RATE_LIMIT,
    SERVER,
)

# --------------------------------------------------------------------------------------------------
# Error classification (dsh-llm isQuotaExceededError / isContextWindowExceededError, adapter httpErrorCode)

_QUOTA_PATTERNS = [
    re.compile(r"\binsufficient[\s_-]+(?:quota|balance|credits?)\b", re.I),
    re.compile(r"\b(?:quota|usage[\s_-]+limit)[\s_-]+(?:exceeded|exhausted|reached)\b", re.I),
    re.compile(r"\bexceed(?:ed|s)?[\s_-]+(?:(?:your|the)[\s_-]+)?(?:current[\s_-]+)?quota\b", re.I),
    re.compile(r"\b(?:balance|credits?)[\s_-]+(?:exhausted|depleted)\b", re.I),
    re.compile(r"\bout[\s_-]+of[\s_-]+(?:credits?|budget)\b", re.I),
]
_OVERFLOW_PATTERNS = [
    re.compile(
        r"(?:^|[^a-z0-9])context[\s_-](?:length|window)[\s_-]"
        r"(?:exceed(?:ed|s)?|overflow(?:ed)?|limit[\s_-]exceeded)(?:$|[^a-z0-9])",
        re.I,
    ),
    re.compile(r"\b(?:maximum|max)(?:\s+(?:allowed|supported))?\s+context\s+(?:length|window)\b", re.I),
    re.compile(
        r"\b(?:request|prompt|input|messages?)\s+(?:is\s+|are\s+)?too\s+(?:large|long)\s+for\s+"
        r"(?:(?:this|the)\s+)?(?:model(?:'s)?\s+)?context(?:\s+window)?\b",
        re.I,
    ),
    re.compile(
        r"\b(?:input|prompt|request)\s+(?:is\s+)?too\s+(?:long|large)\s+for\s+(?:this|the)\s+model\b", re.I
    ),
    re.compile(
        r"\b(?:input|prompt|request|messages?)\b.{0,40}\b(?:exceed(?:s|ed)?|overflows?|is\s+larger\s+than)\b"
        r".{0,40}\b(?:the\s+)?(?:model(?:'s)?\s+)?context(?:\s+(?:length|window))?\b",
        re.I,
    ),
]


def is_quota_exceeded(detail: str) -> bool:
    return any(p.search(detail) for p in _QUOTA_PATTERNS)


def is_context_window_exceeded(detail: str) -> bool:
    return any(p.search(detail) for p in _OVERFLOW_PATTERNS)


def _error_detail(error: Any) -> str:
    if not isinstance(error, dict):
        return ""
    parts = [error.get("code"), error.get("type"), error.get("message")]
    return " ".join(str(p) for p in parts if p)


def http_error_code(status: int, error: Any = None) -> str:
    """dsh's precedence: 401/403, 413, quota wording, 429, 400 (+overflow wording), >=500, else HTTP_n."""
    if status in (401, 403):
        return AUTH
    if status == 413:
        return INVALID_REQUEST
    detail = _error_detail(error)
    if is_quota_exceeded(detail):
        return QUOTA
    if status == 429:
        return RATE_LIMIT
    if status == 400:
        return CONTEXT_WINDOW_EXCEEDED if is_context_window_exceeded(detail) else INVALID_REQUEST
    if status >= 500:
        return SERVER
    return f"HTTP_{status}"


def parse_retry_after(value: str | None, *, now: float | None = None) -> int | None:
    """``Retry-After`` as milliseconds: delta-seconds or an HTTP date; positive values only."""
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        ms = int(value) * 1000
        return ms if ms > 0 else None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        return None
    delay = round(when.timestamp() * 1000 - (time.time() if now is None else now) * 1000)
    return delay if delay > 0 else None


def request_id_of(headers: httpx.Headers) -> str | None:
    value = headers.get("x-request-id") or headers.get("x-deepseek-request-id")
    return value or None

