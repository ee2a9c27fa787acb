"""The OpenAI-compatible ``/chat/completions`` provider (DeepSeek and generic gateways)."""

from dsh_tui.llm.openai.translate import (
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_USER_AGENT,
    HARNESS_VERSION,
    OpenAICompatProvider,
    Translator,
    encode_body,
    http_error_code,
    map_finish_reason,
    map_usage,
    parse_retry_after,
    serialize_messages,
    serialize_request,
)

__all__ = [
    "DEFAULT_IDLE_TIMEOUT_S",
    "DEFAULT_USER_AGENT",
    "HARNESS_VERSION",
    "OpenAICompatProvider",
    "Translator",
    "encode_body",
    "http_error_code",
    "map_finish_reason",
    "map_usage",
    "parse_retry_after",
    "serialize_messages",
    "serialize_request",
]
