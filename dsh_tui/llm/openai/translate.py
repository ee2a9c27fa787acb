"""One adapter for the DeepSeek API and any OpenAI-compatible ``/chat/completions`` endpoint.

A port of dsh's ``dsh-llm-deepseek`` (runtime spec §6.2 with corrections C13): request serialization,
SSE framing (``dsh_tui.llm.sse``), the stateful wire → ``StreamChunk`` translation, usage and finish
mapping, HTTP error classification and the idle timeout. Generic gateways (vLLM, SGLang, Ollama,
llama.cpp) use the same translator; ``thinking_format`` chooses how reasoning effort is put on the wire.

The API key is resolved per request through ``api_key_resolver`` and never leaves the
``authorization`` header: every error message is passed through ``redact`` first.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import orjson

from dsh_tui import __version__
from dsh_tui.llm._httpx import httpx
from dsh_tui.llm.openai.sse import DATA, SseDecoder
from dsh_tui.llm.protocol import (
    AUTH,
    CONTEXT_WINDOW_EXCEEDED,
    EMPTY_RESPONSE,
    INVALID_CREDENTIAL,
    INVALID_REQUEST,
    MALFORMED_RESPONSE,
    QUOTA,
    RATE_LIMIT,
    SERVER,
    STREAM_CLOSED,
    TIMEOUT,
    TRANSPORT,
    UNSUPPORTED_REASONING_EFFORT,
    LlmError,
    ModelInfo,
    RetryPolicy,
)
from dsh_tui.llm.redact import redact, redact_url

HARNESS_VERSION = "0.1.1-rc.2"  # the dsh release whose wire behaviour this adapter reproduces
DEFAULT_USER_AGENT = f"deepseek-harness/{HARNESS_VERSION} (+https://github.com/deepseek-ai/deepseek-harness) dsh-tui/{__version__}"
DEFAULT_IDLE_TIMEOUT_S = 300.0
DEEPSEEK_EFFORTS = ("off", "low", "high", "max")
OPENAI_EFFORTS = ("off", "low", "medium", "high")
THINKING_FORMATS = ("deepseek", "openai", "none")
IMAGE_PLACEHOLDER = "[image omitted: this model route does not accept image input]"

_FRAMED_DONE = b"data: [DONE]"
_LEGAL_KEY = re.compile(r"^[\x21-\x7e]+$")


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
    """C13 precedence: 401/403, 413, quota wording, 429, 400 (+overflow wording), >=500, else HTTP_n."""
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


# --------------------------------------------------------------------------------------------------
# Serialization (dsh-llm-deepseek serialize.ts, C13: text blocks joined with "")


def _flatten_text(blocks: list[dict[str, Any]]) -> str:
    out = []
    for block in blocks:
        t = block.get("type")
        if t == "text":
            out.append(block.get("text", ""))
        elif t == "image":
            out.append(IMAGE_PLACEHOLDER)
    return "".join(out)


def _serialize_assistant(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content") or []
    text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
    reasoning = "".join(b.get("text", "") for b in content if b.get("type") == "reasoning")
    calls = [
        {
            "id": b.get("id", ""),
            "type": "function",
            "function": {"name": b.get("name", ""), "arguments": b.get("arguments", "")},
        }
        for b in content
        if b.get("type") == "tool-call"
    ]
    out: dict[str, Any] = {"role": "assistant", "content": text}
    if reasoning:
        out["reasoning_content"] = reasoning
    if calls:
        out["tool_calls"] = calls
    return out


def serialize_messages(messages: list[dict[str, Any]], *, reasoning_passback: bool = True) -> list[dict]:
    wire: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content") or []
        if role == "system":
            wire.append({"role": "system", "content": _flatten_text(content)})
            continue
        if role == "assistant":
            entry = _serialize_assistant(message)
            if not reasoning_passback:
                entry.pop("reasoning_content", None)
            wire.append(entry)
            continue
        results = [b for b in content if b.get("type") == "tool-result"]
        text = _flatten_text(content)
        if text or not results:
            wire.append({"role": "user", "content": text})
        for result in results:
            wire.append(
                {
                    "role": "tool",
                    "tool_call_id": result.get("toolCallId", ""),
                    "content": _flatten_text(result.get("content") or []) or "(no output)",
                }
            )
    return wire


def serialize_request(
    request: dict[str, Any],
    *,
    thinking_format: str = "deepseek",
    thinking: str | None = None,
    default_effort: str | None = None,
) -> dict[str, Any]:
    """The ``/chat/completions`` body for one harness request (optional fields omitted, never null)."""
    config = request.get("config") or {}
    messages: list[dict[str, Any]] = []
    system = request.get("system")
    if system is not None:
        messages.append({"role": "system", "content": system})
    messages.extend(
        serialize_messages(request.get("messages") or [], reasoning_passback=thinking_format != "none")
    )
    body: dict[str, Any] = {
        "model": config.get("model"),
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    body.update(
        _thinking_fields(
            config.get("reasoningEffort"), request.get("purpose"), thinking_format, thinking, default_effort
        )
    )
    tools = request.get("tools") or []
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.get("name"),
                    "description": t.get("description"),
                    "parameters": t.get("parameters"),
                },
            }
            for t in tools
        ]
    if config.get("temperature") is not None:
        body["temperature"] = config["temperature"]
    if config.get("maxTokens") is not None:
        body["max_tokens"] = config["maxTokens"]
    if config.get("stop") is not None:
        body["stop"] = config["stop"]
    return body


def _thinking_fields(
    effort: str | None, purpose: str | None, fmt: str, thinking: str | None, default_effort: str | None
) -> dict[str, Any]:
    if fmt == "none":
        return {}
    if fmt == "openai":
        if purpose == "session-title":
            return {}
        effort = default_effort if effort is None else effort
        if effort is None or effort == "off":
            return {}
        if effort not in OPENAI_EFFORTS:
            raise LlmError(
                f'this provider does not support reasoning effort "{effort}"', UNSUPPORTED_REASONING_EFFORT
            )
        return {"reasoning_effort": effort}
    # deepseek
    if purpose == "session-title":
        return {"thinking": {"type": "disabled"}}
    if effort is None:
        effort = default_effort
    elif effort not in DEEPSEEK_EFFORTS:
        raise LlmError(f'DeepSeek does not support reasoning effort "{effort}"', UNSUPPORTED_REASONING_EFFORT)
    if thinking == "disabled" and effort is not None and effort != "off":
        raise LlmError(
            f'DeepSeek deployment does not support reasoning effort "{effort}"', UNSUPPORTED_REASONING_EFFORT
        )
    if effort == "off":
        return {"thinking": {"type": "disabled"}}
    if effort in ("low", "high", "max"):
        return {"thinking": {"type": "enabled"}, "reasoning_effort": effort}
    return {} if thinking is None else {"thinking": {"type": thinking}}


def encode_body(body: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(body)
    except TypeError:
        # Lone surrogates (legal in a dsh log) cannot be UTF-8: escape them as JSON.stringify does.
        return json.dumps(body, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode()


# --------------------------------------------------------------------------------------------------
# Translation (dsh-llm-deepseek translate.ts)


def map_usage(usage: dict[str, Any]) -> dict[str, Any]:
    """Disjoint harness counts: DeepSeek's ``prompt_tokens`` includes cache hits, so they are subtracted."""
    details = usage.get("prompt_tokens_details")
    cache_read = details.get("cached_tokens") if isinstance(details, dict) else None
    if cache_read is None:
        cache_read = usage.get("prompt_cache_hit_tokens")
    cdetails = usage.get("completion_tokens_details")
    reasoning = cdetails.get("reasoning_tokens") if isinstance(cdetails, dict) else None
    out: dict[str, Any] = {
        "inputTokens": _int(usage.get("prompt_tokens")) - _int(cache_read),
        "outputTokens": _int(usage.get("completion_tokens")),
    }
    if cache_read is not None:
        out["cacheReadTokens"] = _int(cache_read)
    if reasoning is not None:
        out["reasoningTokens"] = _int(reasoning)
    return out


def _int(value: Any) -> int:
    if isinstance(value, bool) or value is None:
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value == value and abs(value) < 2**53:
        return int(value)
    return 0


def map_finish_reason(reason: str) -> dict[str, Any]:
    if reason == "stop":
        return {"kind": "stop"}
    if reason == "tool_calls":
        return {"kind": "tool-calls"}
    if reason == "length":
        return {"kind": "max-tokens"}
    return {"kind": "error", "failure": {"message": f"model stopped: {reason}", "code": reason.upper()}}


class _Block:
    __slots__ = ("index", "kind", "parts", "call_id", "name")

    def __init__(self, index: int, kind: str) -> None:
        self.index = index
        self.kind = kind
        self.parts: list[str] = []
        self.call_id: str | None = None
        self.name: str | None = None

    def close(self) -> dict[str, Any]:
        text = "".join(self.parts)
        if self.kind == "tool-call":
            return {"type": "tool-call", "id": self.call_id or "", "name": self.name or "", "arguments": text}
        return {"type": self.kind, "text": text}


# Fast path. Within one stream every chunk repeats the same head (id, object, created, model,
# system_fingerprint) and nearly every chunk is one choice whose delta is a single content or
# reasoning string. Once a chunk has been fully parsed and its head checked, a later payload that is
# byte-for-byte that head + one of these fixed middles + one JSON string token + one of these fixed
# tails is translated from the string token alone (parsed by orjson, which rejects anything but a
# single string). The result is identical to the full parse; anything else takes the full parse.
_MARK = b',"choices":[{"index":0,"delta":{'
_FAST_MIDDLES = (
    (_MARK + b'"role":"assistant","content":null,"reasoning_content":', "reasoning"),
    (_MARK + b'"content":null,"reasoning_content":', "reasoning"),
    (_MARK + b'"reasoning_content":', "reasoning"),
    (_MARK + b'"role":"assistant","content":', "text"),
    (_MARK + b'"content":', "text"),
)
_FAST_TAILS = (
    b'},"logprobs":null,"finish_reason":null}]}',
    b'},"finish_reason":null}]}',
    b'},"logprobs":null,"finish_reason":null}],"usage":null}',
    b'},"finish_reason":null}],"usage":null}',
)
_HEAD_SCALARS = (str, int, float, bool, type(None))
_NOTHING: list[dict[str, Any]] = []


class Translator:
    """Stateful wire → StreamChunk translation: one text block, one reasoning block, one tool-call block
    per wire ``tool_calls[].index``, indices in opening order; ``block-end``s, ``usage`` and ``finish``
    are deferred to ``[DONE]``."""

    def __init__(self, *, secrets: tuple[str, ...] = (), fast: bool = True) -> None:
        self._next = 0
        self._text: _Block | None = None
        self._reasoning: _Block | None = None
        self._tools: dict[Any, _Block] = {}
        self._order: list[_Block] = []
        self._finish: dict[str, Any] | None = None
        self._usage: dict[str, Any] | None = None
        self._secrets = secrets
        self._fast_ok = fast
        self._head: bytes | None = None  # validated head of this stream's chunks
        self._lead: bytes | None = None  # head + middle of the last fast-path chunk
        self._lead_len = 0
        self._tail = b""
        self._tail_len = 0
        self._kind = "text"
        self.error: LlmError | None = None
        self.done = False

    def _open(self, kind: str, out: list[dict[str, Any]]) -> _Block:
        block = _Block(self._next, kind)
        self._next += 1
        self._order.append(block)
        out.append({"type": "block-start", "index": block.index, "blockType": kind})
        return block

    def feed(self, payload: bytes) -> list[dict[str, Any]]:
        """Translate one SSE data payload (not ``[DONE]``)."""
        lead = self._lead
        if lead is not None and payload.startswith(lead) and payload.endswith(self._tail):
            # The same shape as the previous chunk: only the string token differs.
            try:
                text = orjson.loads(payload[self._lead_len : -self._tail_len])
            except orjson.JSONDecodeError:
                text = None
            if type(text) is str:
                return self._emit(self._kind, text)
        head = self._head
        if head is not None and payload.startswith(head):
            out = self._fast(payload, head)
            if out is not None:
                return out
        try:
            chunk = orjson.loads(payload)
        except orjson.JSONDecodeError:
            text = payload.decode("utf-8", "replace")
            try:
                chunk = json.loads(text)  # invalid UTF-8 decodes with U+FFFD, as TextDecoderStream does
            except ValueError:
                raise LlmError(
                    redact(f"malformed SSE payload: {text[:120]}", self._secrets), MALFORMED_RESPONSE
                ) from None
        out: list[dict[str, Any]] = []
        if type(chunk) is not dict:
            return out
        choices = chunk.get("choices")
        if choices:
            for choice in choices:
                if type(choice) is not dict:
                    continue
                delta = choice.get("delta")
                if type(delta) is dict:
                    reasoning = delta.get("reasoning_content")
                    if reasoning is None:
                        reasoning = delta.get("reasoning")  # vLLM / Ollama spelling
                    if type(reasoning) is str and reasoning:
                        self._delta("reasoning", reasoning, out)
                    content = delta.get("content")
                    if type(content) is str and content:
                        self._delta("text", content, out)
                    calls = delta.get("tool_calls")
                    if calls:
                        for call in calls:
                            if type(call) is dict:
                                self._tool_delta(call, out)
                reason = choice.get("finish_reason")
                if type(reason) is str:
                    self._finish = map_finish_reason(reason)
        elif choices is None and type(chunk.get("error")) is dict:
            # In-band error object (vLLM, gateways): classify with the same wording rules.
            err = chunk["error"]
            status = err.get("code") if type(err.get("code")) is int else None
            message = str(err.get("message") or "provider reported an error mid-stream")
            code = http_error_code(status if status and 400 <= status <= 599 else 500, err)
            raise LlmError(redact(message, self._secrets), code, status=status)
        usage = chunk.get("usage")
        if usage and type(usage) is dict:
            self._usage = map_usage(usage)
        if head is None and choices and self._fast_ok:
            self._learn_head(payload)
        return out

    def feed_all(self, events: list[bytes]) -> tuple[list[dict[str, Any]], bool]:
        """Translate the events of one read, each framed as ``b"data: " + payload``
        (``SseDecoder.feed_framed``): returns (chunks, done). ``done`` means ``[DONE]`` was seen and the
        chunks end with the ``finish``; events after it are ignored. A payload that fails sets
        ``self.error`` and ends the batch with the chunks before it. Same output as ``feed`` per
        payload; the common same-shape chunk is matched on the whole line, inline (the hot loop)."""
        out: list[dict[str, Any]] = []
        append = out.append
        loads = orjson.loads
        lead = tail = None
        add = None  # the current fast block's parts.append
        lead_len = tail_len = index = 0
        delta_type = ""
        for event in events:
            if add is not None and event.startswith(lead) and event.endswith(tail):
                try:
                    text = loads(event[lead_len:-tail_len])
                except orjson.JSONDecodeError:
                    text = None
                if type(text) is str:
                    if text:
                        add(text)
                        append({"type": delta_type, "index": index, "text": text})
                    continue
            if event == _FRAMED_DONE:
                out += self.finish()
                return out, True
            try:
                out += self.feed(event[6:])
            except LlmError as err:
                # The chunks before the bad payload are still delivered, then the error.
                self.error = err
                return out, False
            add = None
            if self._lead is not None:
                lead = DATA + self._lead
                lead_len, tail, tail_len = len(lead), self._tail, self._tail_len
                if self._kind == "text":
                    block, delta_type = self._text, "text-delta"
                else:
                    block, delta_type = self._reasoning, "reasoning-delta"
                if block is not None:
                    add, index = block.parts.append, block.index
        return out, False

    def _learn_head(self, payload: bytes) -> None:
        cut = payload.find(_MARK)
        if cut <= 0:
            return
        head = payload[:cut]
        try:
            fields = orjson.loads(head + b"}")
        except orjson.JSONDecodeError:
            return
        if (
            type(fields) is dict
            and not ({"choices", "usage", "error"} & fields.keys())
            and all(isinstance(v, _HEAD_SCALARS) for v in fields.values())
        ):
            self._head = head

    def _fast(self, payload: bytes, head: bytes) -> list[dict[str, Any]] | None:
        start = len(head)
        for tail in _FAST_TAILS:
            if payload.endswith(tail):
                break
        else:
            return None
        for middle, kind in _FAST_MIDDLES:
            if payload.startswith(middle, start):
                try:
                    text = orjson.loads(payload[start + len(middle) : len(payload) - len(tail)])
                except orjson.JSONDecodeError:
                    return None
                if type(text) is not str:
                    continue
                self._lead = lead = head + middle
                self._lead_len = len(lead)
                self._tail = tail
                self._tail_len = len(tail)
                self._kind = kind
                return self._emit(kind, text)
        return None

    def _emit(self, kind: str, text: str) -> list[dict[str, Any]]:
        if not text:
            return _NOTHING
        out: list[dict[str, Any]] = []
        self._delta(kind, text, out)
        return out

    def _delta(self, kind: str, text: str, out: list[dict[str, Any]]) -> None:
        """Append ``text`` (non-empty) to the open text/reasoning block, opening it on first use."""
        if kind == "text":
            block = self._text
            if block is None:
                block = self._text = self._open("text", out)
            block.parts.append(text)
            out.append({"type": "text-delta", "index": block.index, "text": text})
        else:
            block = self._reasoning
            if block is None:
                block = self._reasoning = self._open("reasoning", out)
            block.parts.append(text)
            out.append({"type": "reasoning-delta", "index": block.index, "text": text})

    def _tool_delta(self, call: dict[str, Any], out: list[dict[str, Any]]) -> None:
        key = call.get("index")
        block = self._tools.get(key)
        if block is None:
            block = self._tools[key] = self._open("tool-call", out)
        if call.get("id"):  # some gateways repeat an empty or null id on continuation deltas: keep the first
            block.call_id = str(call["id"])
        fn = call.get("function")
        fragment = ""
        if type(fn) is dict:
            if fn.get("name") is not None:
                block.name = str(fn["name"])
            args = fn.get("arguments")
            if args is not None:
                fragment = args if type(args) is str else json.dumps(args, separators=(",", ":"))
        block.parts.append(fragment)
        chunk: dict[str, Any] = {"type": "tool-call-delta", "index": block.index, "id": block.call_id or ""}
        if block.name is not None:
            chunk["name"] = block.name
        chunk["argumentsDelta"] = fragment
        out.append(chunk)

    def finish(self) -> list[dict[str, Any]]:
        """``[DONE]``: every ``block-end``, then ``usage``, then ``finish``."""
        self.done = True
        out: list[dict[str, Any]] = [
            {"type": "block-end", "index": b.index, "block": b.close()} for b in self._order
        ]
        if self._usage is not None:
            out.append({"type": "usage", "usage": self._usage})
        reason = self._finish or {"kind": "stop"}
        if reason["kind"] == "stop" and not self._order:
            reason = {
                "kind": "error",
                "failure": {
                    "message": "model returned a completed response with no content",
                    "code": EMPTY_RESPONSE,
                },
            }
        out.append({"type": "finish", "reason": reason})
        return out


# --------------------------------------------------------------------------------------------------
# The provider


DRAIN_S = 0.1


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
        self.user_agent = user_agent
        self.label = label or ("DeepSeek" if thinking_format == "deepseek" else name)
        self.thinking_format = thinking_format
        self.thinking = thinking
        self.default_effort = default_effort
        self.default_model = default_model or ModelInfo()
        self._retry = retry or RetryPolicy()
        self.user_id_resolver = user_id_resolver
        self.extra_headers = dict(extra_headers or {})
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    # -- Provider protocol -------------------------------------------------------------------------

    def resolve_model(self, model: str) -> ModelInfo:
        info = self.models.get(model, self.default_model)
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
        return key

    async def _get_client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        client = self._client
        if client is None or client.is_closed or self._client_loop is not loop:
            t = self.idle_timeout_s
            # Building a client loads the TLS trust store (50-80 ms): done in a worker thread so the
            # first request of a session does not stall the event loop (the UI) for that long.
            client = await asyncio.to_thread(
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
        headers.update(self.extra_headers)
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
        )

    async def _stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
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
                decoder = SseDecoder()
                translator = Translator(secrets=secrets)
                feed = decoder.feed_framed
                translate = translator.feed_all
                body = response.aiter_bytes()
                head = b""  # the first bytes, to name what arrived when it is not an event stream
                yielded = False
                async for raw in body:
                    if len(head) < _HEAD_BYTES:
                        head += raw[: _HEAD_BYTES - len(head)]
                    chunks, done = translate(feed(raw))
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
                raise LlmError("SSE stream ended without [DONE]", STREAM_CLOSED)
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

    async def _raise_http_error(self, response: httpx.Response, secrets: tuple[str, ...]) -> None:
        status = response.status_code
        message = f"{self.label} API error (HTTP {status})"
        provider_error = None
        raw = bytearray()
        async for part in response.aiter_bytes():
            raw += part
            if len(raw) > 1 << 20:
                break
        try:
            parsed = orjson.loads(bytes(raw))
            provider_error = parsed.get("error") if type(parsed) is dict else None
            if type(provider_error) is dict and provider_error.get("message"):
                message = str(provider_error["message"])
            elif type(provider_error) is str and provider_error:  # {"error": "text"} (Ollama, llama.cpp)
                message = provider_error
                provider_error = {"message": provider_error}
        except orjson.JSONDecodeError:
            pass
        raise LlmError(
            redact(message, secrets),
            http_error_code(status, provider_error),
            status=status,
            retry_after_ms=parse_retry_after(response.headers.get("retry-after")),
            request_id=request_id_of(response.headers),
        )


_HEAD_BYTES = 120


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
