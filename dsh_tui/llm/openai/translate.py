"""The stateful wire → ``StreamChunk`` translation (dsh-llm-deepseek ``translate.ts``): one block per
text, reasoning and tool call, usage and finish mapping, and the same-shape fast path."""

from __future__ import annotations

import json
from typing import Any

import orjson

from dsh_tui.llm.openai.errors import http_error_code
from dsh_tui.llm.openai.sse import DATA
from dsh_tui.llm.protocol import (
    EMPTY_RESPONSE,
    MALFORMED_RESPONSE,
    LlmError,
)
from dsh_tui.llm.redact import redact
from dsh_tui.session.terminal import js_join

_FRAMED_DONE = b"data: [DONE]"


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
        # A surrogate pair split across two deltas (a gateway slicing strings by length) is one
        # character in the assembled block, as JavaScript's string concatenation reads it.
        text = js_join("".join(self.parts))
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
        self.end_message = "SSE stream ended without [DONE]"

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
            fast = self._fast(payload, head)
            if fast is not None:
                return fast
        try:
            chunk = orjson.loads(payload)
        except orjson.JSONDecodeError:
            text = payload.decode("utf-8", "replace")
            try:
                chunk = json.loads(text)  # invalid UTF-8 decodes with U+FFFD, as TextDecoderStream does
            except (ValueError, RecursionError):  # not JSON, or nested past what Python's parser takes
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
        lead = tail = b""  # read only while ``add`` is set
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

