"""The provider contract between the harness driver (``dsh_tui.runtime``) and model adapters.

A request is a plain dict (lossless JSON) so it can be compared with the log::

    {
      "config":   {"provider": str, "model": str, "reasoningEffort"?: str, "temperature"?: float,
                   "maxTokens"?: int, "stop"?: [str]},          # LlmCallConfig
      "system":   str | None,
      "tools":    [{"name", "description", "parameters"}],       # ToolSchema list, may be empty
      "messages": [Message, ...],                                # exactly session.derive_messages()
      "sessionId": str | None,
      "purpose":  "turn" | "compaction" | "session-title",
    }

``Provider.stream(request)`` is an async generator of ``StreamChunk`` dicts (docs/runtime.md,
"Block assembler"): ``block-start``, ``text-delta``, ``reasoning-delta``, ``tool-call-delta``,
``block-end``, ``usage``, ``finish``. An adapter reports failure by raising ``LlmError`` (before or
during iteration); the runtime's final adapter boundary turns any failure into one terminal
``finish {kind: error|aborted, failure}`` chunk. Cancellation is task cancellation: the consumer
closes the generator (``aclose``) and the adapter must release its connection promptly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, NotRequired, Protocol, TypedDict, runtime_checkable

from dsh_tui.session.errors import DshError

# Canonical failure codes (docs/runtime.md, "Provider failure codes and retry").
AUTH = "AUTH"
QUOTA = "QUOTA"
RATE_LIMIT = "RATE_LIMIT"
CONTEXT_WINDOW_EXCEEDED = "CONTEXT_WINDOW_EXCEEDED"
INVALID_REQUEST = "INVALID_REQUEST"
SERVER = "SERVER"
TRANSPORT = "TRANSPORT"
TIMEOUT = "TIMEOUT"
STREAM_CLOSED = "STREAM_CLOSED"
MALFORMED_RESPONSE = "MALFORMED_RESPONSE"
EMPTY_RESPONSE = "EMPTY_RESPONSE"
ABORTED = "ABORTED"
UNKNOWN = "UNKNOWN"
MISSING_CREDENTIAL = "MISSING_CREDENTIAL"
INVALID_CREDENTIAL = "INVALID_CREDENTIAL"  # a key that is blank or not header-safe, or an unreadable credentials file
UNSUPPORTED_REASONING_EFFORT = "UNSUPPORTED_REASONING_EFFORT"  # refused before any request is sent


class LlmFailure(TypedDict):
    """What a failed model call leaves in the log (``turn/end`` ``reason.error``, ``llm/retry`` ``failure``)."""

    message: str
    code: str
    status: NotRequired[int]
    providerRetryAfterMs: NotRequired[int]
    requestId: NotRequired[str]


class StreamChunk(TypedDict, total=False):
    """One chunk of ``Provider.stream`` (docs/runtime.md, "Block assembler"). ``type``: ``block-start``
    (``index``, ``blockType``: text, reasoning, tool-call), ``text-delta`` / ``reasoning-delta`` (``index``,
    ``text``), ``tool-call-delta`` (``index``, ``id``, ``name``, ``argumentsDelta``), ``block-end`` (``index``,
    ``block``), ``usage`` (``usage``), ``finish`` (``reason``: ``{kind: stop | length | tool-calls | error |
    aborted, failure?: LlmFailure}``)."""

    type: str
    index: int
    blockType: str
    text: str
    id: str
    name: str
    argumentsDelta: str
    block: dict[str, Any]
    usage: dict[str, Any]
    reason: dict[str, Any]


class LlmError(DshError):
    """A model call failed. ``failure()`` is the ``LlmFailure`` dict that goes into the log."""

    def __init__(
        self,
        message: str,
        code: str = UNKNOWN,
        *,
        status: int | None = None,
        retry_after_ms: int | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.retry_after_ms = retry_after_ms
        self.request_id = request_id

    def failure(self) -> LlmFailure:
        out: LlmFailure = {"message": self.message, "code": self.code}
        if self.status is not None:
            out["status"] = self.status
        if self.retry_after_ms is not None:
            out["providerRetryAfterMs"] = self.retry_after_ms
        if self.request_id is not None:
            out["requestId"] = self.request_id
        return out


@dataclass(frozen=True)
class ModelInfo:
    """What the harness needs to know about a model route."""

    context_window: int | None = None
    default_max_tokens: int | None = None
    efforts: tuple[str, ...] = ()
    default_effort: str | None = None
    # Prices in USD per million tokens (input uncached, cache hit, output); None when unknown.
    price_input: float | None = None
    price_cache_hit: float | None = None
    price_output: float | None = None
    # What the model takes as input: ("text",) or ("text", "image") (dsh's ``inputModalities``; unknown
    # models are text-only, as dsh's adapters assume), and its request-image budget (pixels, encoded bytes).
    input_modalities: tuple[str, ...] = ("text",)
    image_pixel_budget: int | None = None
    image_max_bytes: int | None = None

    @property
    def takes_images(self) -> bool:
        return "image" in self.input_modalities


@dataclass(frozen=True)
class RetryPolicy:
    """dsh's retry policy (docs/runtime.md, "Provider failure codes and retry").

    ``mode`` is "normal" or "always"."""

    mode: str = "normal"
    max_retries: int = 5
    retryable_codes: tuple[str, ...] = (EMPTY_RESPONSE, RATE_LIMIT, SERVER, TIMEOUT, TRANSPORT)
    initial_delay_ms: int = 500
    max_delay_ms: int = 10_000
    jitter_ratio: float = 0.1
    policy_key: str = field(default="default")


@runtime_checkable
class Provider(Protocol):
    """One provider route (e.g. ``deepseek-official``)."""

    name: str

    def resolve_model(self, model: str) -> ModelInfo: ...

    def retry_policy(self) -> RetryPolicy: ...

    def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]: ...


@runtime_checkable
class ChildProviders(Protocol):
    """A provider that gives each subagent child a provider of its own (a recorded scenario's replay: each
    child replays its own recording); any other provider is shared by the children."""

    def child_provider(self, child_id: str) -> Provider: ...
