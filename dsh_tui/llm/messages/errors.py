"""Messages error classification (dsh 0.2's ``providerError``): HTTP status and the error ``type``."""

from __future__ import annotations

from typing import Any

from dsh_tui.llm.openai.errors import is_context_window_exceeded, is_quota_exceeded, parse_retry_after
from dsh_tui.llm.protocol import (
    AUTH,
    CONTEXT_WINDOW_EXCEEDED,
    INVALID_REQUEST,
    QUOTA,
    RATE_LIMIT,
    SERVER,
    LlmError,
)


def provider_error(raw: Any, status: int | None, headers: Any = None) -> LlmError:
    """An ``LlmError`` for an HTTP error body or an in-band ``error`` event (``status`` None)."""
    envelope = raw if isinstance(raw, dict) else {}
    found = envelope.get("error")
    error: dict[str, Any] = found if isinstance(found, dict) else {}
    message = error.get("message")
    if not isinstance(message, str):
        message = f"DeepSeek Messages request failed ({status if status is not None else 'stream error'})"
    kind = error.get("type") if isinstance(error.get("type"), str) else ""
    detail = f"{kind} {error.get('code') if isinstance(error.get('code'), str) else ''} {message}"
    if status in (401, 403) or kind in ("authentication_error", "permission_error"):
        code = AUTH
    elif is_quota_exceeded(detail) or status == 402:
        code = QUOTA
    elif status == 429 or kind == "rate_limit_error":
        code = RATE_LIMIT
    elif is_context_window_exceeded(detail):
        code = CONTEXT_WINDOW_EXCEEDED
    elif status in (400, 413) or kind == "invalid_request_error":
        code = INVALID_REQUEST
    elif (status is not None and status >= 500) or kind in ("api_error", "overloaded_error"):
        code = SERVER
    else:
        code = SERVER if status is None else f"HTTP_{status}"
    retry = request_id = None
    if headers is not None:
        retry = parse_retry_after(headers.get("retry-after"))
        request_id = headers.get("request-id") or headers.get("x-request-id") or headers.get("x-deepseek-request-id")
    return LlmError(message, code, status=status, retry_after_ms=retry, request_id=request_id or None)
