"""The OpenAI-compatible ``/chat/completions`` provider (the DeepSeek API and generic gateways).

``errors`` (HTTP error classification) · ``serialize`` (request body) · ``sse`` (event-stream framing) ·
``translate`` (wire chunks → ``StreamChunk``s) · ``provider`` (``OpenAICompatProvider``, the httpx client).
"""

from dsh_tui.llm.openai.errors import http_error_code, parse_retry_after
from dsh_tui.llm.openai.provider import (
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_USER_AGENT,
    HARNESS_VERSION,
    OpenAICompatProvider,
)
from dsh_tui.llm.openai.serialize import encode_body, serialize_messages, serialize_request
from dsh_tui.llm.openai.translate import Translator, map_finish_reason, map_usage

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
