"""The Anthropic Messages route (dsh 0.2's way to DeepSeek): ``POST {root}/v1/messages``.

The httpx client, timeouts, redaction and the streaming loop are the chat-completions provider's
(``dsh_tui.llm.openai.provider``); this class changes what differs on the wire: the endpoint, the
``x-api-key`` and ``anthropic-version`` headers, the body (``serialize``), the event translation
(``translate``) and the error classification (``errors``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import orjson

from dsh_tui.llm._httpx import httpx
from dsh_tui.llm.messages.errors import provider_error
from dsh_tui.llm.messages.serialize import MESSAGES_EFFORTS, serialize_request
from dsh_tui.llm.messages.translate import MessagesTranslator
from dsh_tui.llm.openai.provider import OpenAICompatProvider
from dsh_tui.llm.protocol import LlmError, ModelInfo
from dsh_tui.llm.redact import redact

ANTHROPIC_VERSION = "2023-06-01"
DEEPSEEK_MESSAGES_URL = "https://api.deepseek.com/anthropic"  # dsh 0.2's PUBLIC_BASE_URL
DEFAULT_MAX_TOKENS = 256_000


def messages_root(base_url: str) -> str:
    """The API root holding ``/messages``: the base URL, with ``/v1`` added unless its path ends so.
    DeepSeek's own chat-completions base URL maps to its Messages endpoint."""
    base = base_url.rstrip("/")
    if base in ("https://api.deepseek.com", "https://api.deepseek.com/v1"):
        base = DEEPSEEK_MESSAGES_URL
    return base if urlsplit(base).path.endswith("/v1") else f"{base}/v1"


class MessagesProvider(OpenAICompatProvider):
    """A ``Provider`` for one route served over the Anthropic Messages API."""

    #: dsh's ``x-deepseek-harness-*`` headers (session id, compaction flag) go to DeepSeek routes, not to
    #: Anthropic's own API (``build_provider`` turns them off for the ``anthropic`` route)
    send_harness_headers = True
    #: dsh's ``deepseekLlmApiExtensions``: top-level request fields other parts contribute (name → prepare),
    #: in registration order; ``None`` for a route that takes none (only DeepSeek's own route does)
    #: (several agents sharing the provider each register theirs: the first that answers a request fills it)
    request_extensions: dict[str, list[Callable[[dict[str, Any]], dict[str, Any] | None]]] | None = None

    def register_extension(self, name: str, prepare: Callable[[dict[str, Any]], dict[str, Any] | None]
                           ) -> Callable[[], None] | None:
        """Contribute the request field ``name``: ``prepare(request)`` returns ``{"value": ..., "accept"?:
        callable}`` (``accept`` runs once the response completed) or ``None`` (no field this time).
        Returns the function that removes it, or ``None`` when this route takes no extensions."""
        if self.request_extensions is None:
            return None
        self.request_extensions.setdefault(name, []).append(prepare)

        def remove() -> None:
            listed = (self.request_extensions or {}).get(name) or []
            if prepare in listed:
                listed.remove(prepare)

        return remove

    def resolve_model(self, model: str) -> ModelInfo:
        info = super().resolve_model(model)
        if self.thinking_format == "none":  # a gateway or Anthropic itself: no thinking fields are sent
            return info
        if self.thinking == "disabled":
            return replace(info, efforts=("off",), default_effort="off")
        return replace(info, efforts=MESSAGES_EFFORTS, default_effort=self.default_effort or "high")

    @property
    def endpoint(self) -> str:
        return f"{messages_root(self.base_url)}/messages"

    def _headers(self, key: str | None, request: dict[str, Any]) -> dict[str, str]:
        headers = super()._headers(key, request)
        if key is not None and headers.get("authorization") == f"Bearer {key}":
            del headers["authorization"]
            headers["x-api-key"] = key
        headers["anthropic-version"] = ANTHROPIC_VERSION
        if not self.send_harness_headers:
            for name in [h for h in headers if h.startswith("x-deepseek-harness-")]:
                del headers[name]
        return headers

    def build_body(self, request: dict[str, Any]) -> dict[str, Any]:
        model = (request.get("config") or {}).get("model") or ""
        body = serialize_request(
            request,
            thinking="disabled" if self.thinking_format == "none" else self.thinking,
            default_effort=None if self.thinking_format == "none" else self.default_effort,
            max_tokens=self.resolve_model(model).default_max_tokens or DEFAULT_MAX_TOKENS,
            images=self.image_resolver(request),
        )
        if self.thinking_format == "none":
            del body["thinking"]
        accepts = []
        for name, prepares in list((self.request_extensions or {}).items()):
            for prepare in list(prepares):
                prepared = prepare(request)
                if prepared is None:
                    continue
                body[name] = prepared["value"]
                if prepared.get("accept") is not None:
                    accepts.append(prepared["accept"])
                break
        if accepts:
            self._accepts[id(request)] = accepts
        return body

    @property
    def _accepts(self) -> dict[int, list[Callable[[], Any]]]:
        pending = self.__dict__.get("_pending_accepts")
        if pending is None:
            pending = self.__dict__["_pending_accepts"] = {}
        return pending

    async def _stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        finished = False
        try:
            async for chunk in super()._stream(request):
                if chunk.get("type") == "finish":
                    finished = True
                yield chunk
        finally:
            accepts = self._accepts.pop(id(request), [])
        if finished:  # the provider took the request: its extensions' contributions were delivered
            for accept in accepts:
                accept()

    def _translator(self, request: dict[str, Any], secrets: tuple[str, ...]) -> Any:
        return MessagesTranslator((request.get("config") or {}).get("model") or "", secrets=secrets)

    def _http_error(self, response: httpx.Response, raw: bytes, secrets: tuple[str, ...]) -> LlmError:
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            parsed = None
        err = provider_error(parsed, response.status_code, response.headers)
        err.message = redact(err.message, secrets)
        err.args = (err.message,)
        if err.request_id:  # a key echoed in the request id header is stored as requestId otherwise
            err.request_id = redact(err.request_id, secrets)
        return err
