"""One adapter for the DeepSeek API and any OpenAI-compatible ``/chat/completions`` endpoint.

A port of dsh's ``dsh-llm-deepseek`` (docs/runtime.md, "Provider failure codes and retry").
This module is the httpx
client: headers, the idle timeout, connection reuse and the streaming loop; the request body comes from
``serialize``, SSE framing from ``sse``, the wire → ``StreamChunk`` translation from ``translate`` and the
HTTP error classification from ``errors`` (all in ``dsh_tui/llm/openai/``). Generic gateways (vLLM, SGLang,
Ollama, llama.cpp) use the same translator; ``thinking_format`` chooses how reasoning effort is put on the wire.

The API key is resolved per request through ``api_key_resolver`` and never leaves the
``authorization`` header: every error message is passed through ``redact`` first.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import orjson

from dsh_tui import __version__
from dsh_tui.llm._httpx import httpx
from dsh_tui.llm.openai.errors import http_error_code, parse_retry_after, request_id_of
from dsh_tui.llm.openai.serialize import (
    DEEPSEEK_EFFORTS,
    OPENAI_EFFORTS,
    THINKING_FORMATS,
    encode_body,
    serialize_request,
)
from dsh_tui.llm.openai.sse import MAX_LINE_BYTES, SseDecoder, SseLineTooLong
from dsh_tui.llm.openai.translate import Translator
from dsh_tui.llm.protocol import (
    EMPTY_RESPONSE,
    INVALID_CREDENTIAL,
    MALFORMED_RESPONSE,
    STREAM_CLOSED,
    TIMEOUT,
    TRANSPORT,
    LlmError,
    ModelInfo,
    RetryPolicy,
)
from dsh_tui.llm.redact import redact, redact_url, register_secret

HARNESS_VERSION = "0.1.1-rc.2"  # the dsh release whose wire behaviour this adapter reproduces
DEFAULT_USER_AGENT = f"deepseek-harness/{HARNESS_VERSION} (+https://github.com/deepseek-ai/deepseek-harness) dsh-tui/{__version__}"
DEFAULT_IDLE_TIMEOUT_S = 300.0
DEFAULT_EVENT_TIMEOUT_S = 900.0  # no event for this long (only ": keep-alive" comments): the stream ends
_LEGAL_KEY = re.compile(r"^[\x21-\x7e]+$")


# --------------------------------------------------------------------------------------------------
# The provider


DRAIN_S = 0.1


def _image_refs(messages: Any) -> Any:
    """Every image occurrence's attachment, in request order (tool results' after their message's own)."""
    for message in messages:
        content = [b for b in message.get("content") or () if isinstance(b, dict)]
        for block in content:
            if block.get("type") == "image":
                yield block.get("attachment") or {}
        for block in content:
            if block.get("type") == "tool-result":
                yield from (b.get("attachment") or {} for b in block.get("content") or ()
                            if isinstance(b, dict) and b.get("type") == "image")


def _has_images(request: dict[str, Any]) -> bool:
    def walk(blocks: Any) -> bool:
        return any(isinstance(b, dict) and (b.get("type") == "image" or
                                            (b.get("type") == "tool-result" and walk(b.get("content"))))
                   for b in blocks or ())

    return any(walk(m.get("content")) for m in request.get("messages") or ())


async def _drain(body: AsyncIterator[bytes]) -> None:
    """Consume what is left of a finished stream, giving up after ``DRAIN_S`` (the connection is
    then closed instead of reused)."""
    try:
        async with asyncio.timeout(DRAIN_S):
            async for _ in body:
                pass
    except (TimeoutError, httpx.HTTPError, OSError):
        pass


def _is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class OpenAICompatProvider:
    """A ``Provider`` (``dsh_tui.llm.protocol``) for one route served over chat completions.

    ``models`` maps model ids to what is known about them; any other id passes through as a route with
    ``default_model`` facts. ``api_key_resolver()`` returns the key, ``None`` for an endpoint without
    authentication, or raises ``LlmError(MISSING_CREDENTIAL)``; it is called once per request.
    """

    def __init__(
        self,
        name: str,
        base_url: str,
        api_key_resolver: Callable[[], str | None],
        models: dict[str, ModelInfo] | None = None,
        *,
        idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
        event_timeout_s: float = DEFAULT_EVENT_TIMEOUT_S,
        user_agent: str = DEFAULT_USER_AGENT,
        label: str | None = None,
        thinking_format: str = "deepseek",
        thinking: str | None = None,
        default_effort: str | None = None,
        default_model: ModelInfo | None = None,
        retry: RetryPolicy | None = None,
        user_id_resolver: Callable[[], str | None] | None = None,
        extra_headers: dict[str, str] | None = None,
    ) -> None:
        if thinking_format not in THINKING_FORMATS:
            raise ValueError(f"thinking_format must be one of {THINKING_FORMATS}")
        self.name = name
        base = base_url.rstrip("/")
        if "@" in base.split("://", 1)[-1].split("/", 1)[0]:
            # httpx would send it as a Basic authorization header (which a server may echo into the log)
            raise LlmError(f'the base URL of provider "{name}" must not hold credentials (user:key@host); '
                           "configure the key with api_key_env or the credentials file", INVALID_CREDENTIAL)
        if base.endswith("/chat/completions"):  # a pasted endpoint URL instead of the base URL
            base = base[: -len("/chat/completions")]
        self.base_url = base
        self.api_key_resolver = api_key_resolver
        self.models = dict(models or {})
        self.idle_timeout_s = float(idle_timeout_s)
        self.event_timeout_s = float(event_timeout_s)
        self.user_agent = user_agent
        self.label = label or ("DeepSeek" if thinking_format == "deepseek" else name)
        self.thinking_format = thinking_format
        self.thinking = thinking
        self.default_effort = default_effort
        self.default_model = default_model or ModelInfo()
        self._retry = retry or RetryPolicy()
        self.user_id_resolver = user_id_resolver
        self.extra_headers = dict(extra_headers or {})
        for value in self.extra_headers.values():
            register_secret(value)  # a gateway's own key header: redacted wherever it is echoed
        self.max_line_bytes = MAX_LINE_BYTES  # one SSE line longer than this ends the stream (MALFORMED_RESPONSE)
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    # -- Provider protocol -------------------------------------------------------------------------

    def resolve_model(self, model: str) -> ModelInfo:
        info = self.models.get(model, self.default_model)
        default: str | None
        if self.thinking_format == "deepseek":
            if self.thinking == "disabled":
                efforts: tuple[str, ...] = ("off",)
                default = "off"
            else:
                efforts = DEEPSEEK_EFFORTS
                default = self.default_effort or "high"
        elif self.thinking_format == "openai":
            efforts, default = OPENAI_EFFORTS, self.default_effort
        else:
            efforts, default = (), None
        return replace(
            info,
            context_window=info.context_window or self.default_model.context_window,
            default_max_tokens=info.default_max_tokens or self.default_model.default_max_tokens,
            efforts=info.efforts or efforts,
            default_effort=info.default_effort or default,
        )

    def retry_policy(self) -> RetryPolicy:
        return self._retry

    def check_credential(self) -> None:
        """Raise the ``MISSING_CREDENTIAL`` / ``INVALID_CREDENTIAL`` error a request would raise."""
        self._api_key()

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/chat/completions"

    def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        return self._stream(request)

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and not client.is_closed:
            try:
                await client.aclose()
            except RuntimeError:  # created in a loop that is gone
                pass

    # -- internals ---------------------------------------------------------------------------------

    def _api_key(self) -> str | None:
        key = self.api_key_resolver()
        if key is None:
            return None
        key = key.strip()
        if not key or not _LEGAL_KEY.match(key):
            raise LlmError(
                f'the API key for provider "{self.name}" is blank or contains characters no HTTP header can carry; '
                "set it to the raw key alone",
                INVALID_CREDENTIAL,
            )
        register_secret(key)
        return key

    async def _get_client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        current = self._client
        if current is not None and not current.is_closed and self._client_loop is loop:
            return current
        t = self.idle_timeout_s
        # Building a client loads the TLS trust store (50-80 ms): done in a worker thread so the
        # first request of a session does not stall the event loop (the UI) for that long.
        client: httpx.AsyncClient = await asyncio.to_thread(
            httpx.AsyncClient,
            timeout=httpx.Timeout(t, connect=t, read=t, write=t, pool=t),
            # Environment proxies apply to remote endpoints, never to a server on this machine.
            trust_env=not _is_loopback(self.base_url),
            limits=httpx.Limits(max_connections=32, max_keepalive_connections=8),
        )
        current = self._client
        if current is not None and not current.is_closed and self._client_loop is loop:
            await client.aclose()  # a concurrent first request installed one meanwhile: share it
            return current
        self._client, self._client_loop = client, loop
        return client

    def _headers(self, key: str | None, request: dict[str, Any]) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "accept-encoding": "identity",
            "user-agent": self.user_agent,
        }
        # a settings header replaces dsh-tui's of the same name (header names ignore case): never two
        headers.update((k.lower(), v) for k, v in self.extra_headers.items())
        if key is not None:
            headers["authorization"] = f"Bearer {key}"
        if self.user_id_resolver is not None:
            uid = self.user_id_resolver()
            if uid:
                headers["x-deepseek-harness-user-id"] = uid
        if request.get("sessionId"):
            headers["x-deepseek-harness-session-id"] = str(request["sessionId"])
        if request.get("purpose") == "compaction":
            headers["x-deepseek-harness-compact"] = "1"
        return headers

    def build_body(self, request: dict[str, Any]) -> dict[str, Any]:
        return serialize_request(
            request,
            thinking_format=self.thinking_format,
            thinking=self.thinking,
            # The configured default effort goes on the wire when the request names none (as dsh's
            # adapter does); resolve_model's "high" fallback is only what the UI shows as default.
            default_effort=self.default_effort,
            images=self.image_resolver(request),
        )

    def image_resolver(self, request: dict[str, Any]) -> Callable[[dict[str, Any]], Any] | None:
        """How this request's images reach the wire: None when the model is text-only (dsh's stand-in text
        instead), else each stored image's request version for the model's budget (an image missing from
        the local store becomes the stand-in text too, so an old session still runs)."""
        info = self.resolve_model((request.get("config") or {}).get("model") or "")
        if not info.takes_images:
            return None
        from dsh_tui.store import attachments

        pixels: int | None = info.image_pixel_budget or attachments.REQUEST_MAX_PIXELS
        cap = info.image_max_bytes or attachments.REQUEST_MAX_BYTES
        if self.name == "deepseek-official" and info.image_pixel_budget is None:  # dsh's DeepSeek route
            pixels, cap = None, info.image_max_bytes or attachments.DEEPSEEK_REQUEST_MAX_BYTES
        cache: dict[str, Any] = {}

        def version(ref: dict[str, Any]) -> Any:
            key = str(ref.get("attachmentId"))
            if key not in cache:
                try:
                    cache[key] = attachments.request_image(ref, pixels, cap)
                except attachments.AttachmentError:
                    cache[key] = None
            return cache[key]

        # dsh's inline budget: the oldest occurrences beyond 20 MiB of base64 (or 600 images) are omitted
        refs = list(_image_refs(request.get("messages") or ()))
        sizes = [(len(v.data) + 2) // 3 * 4 if (v := version(r)) is not None else 0 for r in refs]  # base64
        drop = attachments.offload_count(sizes)
        seen = [0]

        def resolve(ref: dict[str, Any]) -> Any:
            index = seen[0]
            seen[0] += 1
            if index < drop:
                return attachments.offloaded_text(ref)
            return version(ref)

        return resolve

    async def _stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        if _has_images(request):  # decoding and re-encoding images stays off the event loop
            body = encode_body(await asyncio.to_thread(self.build_body, request))
        else:
            body = encode_body(self.build_body(request))
        key = self._api_key()
        # Extra header values (a gateway's own key header, say) are redacted like the key itself.
        secrets = tuple(v for v in (key, *self.extra_headers.values()) if v and len(v) >= 8)
        headers = self._headers(key, request)
        client = await self._get_client()
        where = redact_url(self.base_url)
        label = self.label
        started = False
        try:
            async with client.stream("POST", self.endpoint, content=body, headers=headers) as response:
                started = True
                status = response.status_code
                if not 200 <= status < 300:
                    await self._raise_http_error(response, secrets)
                if status in (204, 205):
                    raise LlmError(f"{label} API returned no response body", EMPTY_RESPONSE)
                decoder = SseDecoder(self.max_line_bytes)
                translator = self._translator(request, secrets)
                feed = decoder.feed_framed
                translate = translator.feed_all
                body = response.aiter_bytes()
                head = b""  # the first bytes, to name what arrived when it is not an event stream
                yielded = False
                clock = asyncio.get_running_loop().time
                event_deadline = clock() + self.event_timeout_s
                async for raw in body:
                    if len(head) < _HEAD_BYTES:
                        head += raw[: _HEAD_BYTES - len(head)]
                    events = feed(raw)
                    if events:
                        event_deadline = clock() + self.event_timeout_s
                    elif clock() > event_deadline:
                        # bytes keep coming (": keep-alive" comments), so the idle timeout never fires
                        ms = round(self.event_timeout_s * 1000)
                        raise LlmError(f"{label} stream sent no event for {ms}ms (only keep-alive comments)",
                                       TIMEOUT)
                    chunks, done = translate(events)
                    yielded = yielded or bool(chunks)
                    if done:
                        try:
                            for chunk in chunks:
                                yield chunk
                        finally:
                            # Read the end of the body (usually already here) so the connection
                            # goes back to the pool: the next request skips a TCP/TLS handshake.
                            await _drain(body)
                        return
                    for chunk in chunks:
                        yield chunk
                    if translator.error is not None:
                        raise translator.error
                chunks, done = translate(decoder.close_framed())
                for chunk in chunks:
                    yield chunk
                if done:
                    return
                if translator.error is not None:
                    raise translator.error
                if not yielded and not chunks:
                    raise _not_an_event_stream(label, status, response.headers.get("content-type"), head, secrets)
                raise LlmError(translator.end_message, STREAM_CLOSED)
        except SseLineTooLong as err:
            raise LlmError(f"{label} API sent {err} (no event is that long); the stream was stopped",
                           MALFORMED_RESPONSE) from None
        except httpx.TimeoutException as err:
            ms = round(self.idle_timeout_s * 1000)
            raise LlmError(f"{label} stream idle timeout after {ms}ms", TIMEOUT) from err
        except httpx.HTTPError as err:
            what = "stream from" if started else "request to"
            cause = redact(str(err) or type(err).__name__, secrets)
            raise LlmError(f"{label} API {what} {where} failed ({cause})", TRANSPORT) from err
        except OSError as err:
            cause = redact(str(err) or type(err).__name__, secrets)
            raise LlmError(f"{label} API request to {where} failed ({cause})", TRANSPORT) from err

    def _translator(self, request: dict[str, Any], secrets: tuple[str, ...]) -> Any:
        """The wire → ``StreamChunk`` translator of one response (``feed_all``, ``error``, ``end_message``)."""
        return Translator(secrets=secrets)

    async def _raise_http_error(self, response: httpx.Response, secrets: tuple[str, ...]) -> None:
        raw = bytearray()
        async for part in response.aiter_bytes():
            raw += part
            if len(raw) > 1 << 20:
                break
        raise self._http_error(response, bytes(raw), secrets)

    def _http_error(self, response: httpx.Response, raw: bytes, secrets: tuple[str, ...]) -> LlmError:
        status = response.status_code
        message = f"{self.label} API error (HTTP {status})"
        provider_error = None
        try:
            parsed = orjson.loads(raw)
            provider_error = parsed.get("error") if type(parsed) is dict else None
            if type(provider_error) is dict and provider_error.get("message"):
                message = str(provider_error["message"])
            elif type(provider_error) is str and provider_error:  # {"error": "text"} (Ollama, llama.cpp)
                message = provider_error
                provider_error = {"message": provider_error}
        except orjson.JSONDecodeError:
            pass
        return LlmError(
            redact(message, secrets),
            http_error_code(status, provider_error),
            status=status,
            retry_after_ms=parse_retry_after(response.headers.get("retry-after")),
            request_id=_safe_request_id(response.headers, secrets),
        )


_HEAD_BYTES = 120


def _safe_request_id(headers: Any, secrets: tuple[str, ...]) -> str | None:
    """The response's request id (stored as ``requestId`` in the log), with any echoed key redacted."""
    value = request_id_of(headers)
    return redact(value, secrets) if value else None


def _not_an_event_stream(label: str, status: int, ctype: str | None, head: bytes, secrets: tuple[str, ...]) -> LlmError:
    """A 2xx answer whose body held no server-sent event: say what arrived (status, content type and
    the first bytes, secrets redacted), not that a stream ended early."""
    text = " ".join(head.decode("utf-8", "replace").split())
    shown = redact(text, secrets)[:80] if text else "an empty body"
    kind = (ctype or "no content type").split(";")[0].strip()
    return LlmError(
        f"{label} API answered HTTP {status} with {kind}, not an event stream"
        + (f" (body starts: {shown!r})" if text else " (an empty body)"),
        MALFORMED_RESPONSE,
    )
