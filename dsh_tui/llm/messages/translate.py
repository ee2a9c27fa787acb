"""Messages stream events → ``StreamChunk``s (dsh 0.2's ``dsh-llm-deepseek`` ``translate``).

Blocks are numbered in arrival order; ``content_block_stop`` closes one with its ``block-end``;
``message_stop`` ends the stream with one ``usage`` (cumulative: ``message_start`` then ``message_delta``)
and one ``finish`` carrying the replay state (each reasoning block's signature). ``ping`` and unknown
events are skipped; an ``error`` event is the provider's failure.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from dsh_tui.llm.messages.errors import provider_error
from dsh_tui.llm.messages.serialize import UNSUPPORTED_CONTENT, replay_state
from dsh_tui.llm.protocol import EMPTY_RESPONSE, MALFORMED_RESPONSE, LlmError
from dsh_tui.llm.redact import redact
from dsh_tui.session.terminal import js_join

_USAGE = {
    "input_tokens": "inputTokens",
    "output_tokens": "outputTokens",
    "cache_read_input_tokens": "cacheReadTokens",
    "cache_creation_input_tokens": "cacheWriteTokens",
}
_STOP = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool-calls", "max_tokens": "max-tokens"}
_KNOWN = {"content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}


def _malformed(detail: str) -> LlmError:
    return LlmError(f"DeepSeek Messages stream: {detail}", MALFORMED_RESPONSE)


def _obj(value: Any) -> dict[str, Any]:
    if type(value) is not dict:
        raise LlmError("DeepSeek Messages expected a JSON object", MALFORMED_RESPONSE)
    return value


def _str(value: Any) -> str:
    if type(value) is not str:
        raise LlmError("DeepSeek Messages expected a string field", MALFORMED_RESPONSE)
    return value


class _Block:
    __slots__ = ("index", "content", "replay", "closed", "json")

    def __init__(self, index: int, content: dict[str, Any], replay: dict[str, Any]) -> None:
        self.index = index
        self.content = content
        self.replay = replay
        self.closed = False
        self.json: list[str] = []


class MessagesTranslator:
    """Stateful translation with the chat translator's interface: ``feed_all(framed events)`` returns
    (chunks, done); a failing event sets ``error`` and ends the batch after the chunks before it."""

    def __init__(self, model: str, *, secrets: tuple[str, ...] = ()) -> None:
        self.model = model
        self._secrets = secrets
        self._blocks: dict[int, _Block] = {}
        self._usage: dict[str, int] = {"inputTokens": 0, "outputTokens": 0}
        self._started = False
        self._reason: dict[str, Any] | None = None
        self.error: LlmError | None = None
        self.done = False
        self.end_message = "DeepSeek Messages stream ended before message_stop"

    def feed_all(self, events: list[bytes]) -> tuple[list[dict[str, Any]], bool]:
        out: list[dict[str, Any]] = []
        for event in events:
            try:
                done = self._feed(event[6:], out)
            except LlmError as err:
                err.message = redact(err.message, self._secrets)
                err.args = (err.message,)
                self.error = err
                return out, False
            if done:
                self.done = True
                return out, True
        return out, False

    def _feed(self, payload: bytes, out: list[dict[str, Any]]) -> bool:
        try:
            event = orjson.loads(payload)
        except orjson.JSONDecodeError:
            try:  # a lone surrogate escape (half an emoji) is valid JSON to JavaScript, not to orjson
                event = json.loads(payload.decode("utf-8", "replace"))
            except (ValueError, RecursionError):
                raise LlmError("DeepSeek Messages SSE contains invalid JSON", MALFORMED_RESPONSE) from None
        event = _obj(event)
        kind = event.get("type")
        if kind == "error":
            raise provider_error(event, None)
        if kind == "message_start":
            if self._started:
                raise _malformed("duplicate message_start")
            self._started = True
            self._update_usage(_obj(event.get("message")).get("usage"))
            return False
        if kind not in _KNOWN:
            return False  # ping, and events a newer API adds
        if not self._started:
            raise _malformed("event precedes message_start")
        if kind == "content_block_start":
            self._start(event, out)
        elif kind in ("content_block_delta", "content_block_stop"):
            block = self._blocks.get(self._index(event))
            if block is None or block.closed:
                raise _malformed("delta/stop without an open block")
            if kind == "content_block_delta":
                self._delta(block, _obj(event.get("delta")), out)
            else:
                block.closed = True
                if block.content["type"] == "tool-call" and block.json:
                    block.content["arguments"] = "".join(block.json)
                for field in ("text", "arguments"):  # a surrogate pair split across deltas: one character
                    if isinstance(block.content.get(field), str):
                        block.content[field] = js_join(block.content[field])
                out.append({"type": "block-end", "index": block.index, "block": dict(block.content)})
        elif kind == "message_delta":
            delta = _obj(event.get("delta"))
            if delta.get("stop_reason") is not None:
                reason = _STOP.get(delta["stop_reason"])
                if reason is None:
                    raise _malformed(f"unsupported stop reason {delta['stop_reason']}")
                self._reason = {"kind": reason}
            if event.get("usage") is not None:
                self._update_usage(event["usage"])
        else:  # message_stop
            self._finish(out)
            return True
        return False

    @staticmethod
    def _index(event: dict[str, Any]) -> int:
        index = event.get("index")
        if type(index) is not int or index < 0:
            raise _malformed("invalid block index")
        return index

    def _update_usage(self, raw: Any) -> None:
        if raw is None:
            return
        for wire, local in _USAGE.items():
            value = _obj(raw).get(wire)
            if value is None:
                continue
            if type(value) is not int or value < 0:
                raise _malformed(f"invalid {wire}")
            self._usage[local] = value

    def _start(self, event: dict[str, Any], out: list[dict[str, Any]]) -> None:
        wire_index = self._index(event)
        if wire_index in self._blocks or self._reason is not None:
            raise _malformed("block starts after settlement or repeats an index")
        native = _obj(event.get("content_block"))
        t = native.get("type")
        if t == "text":
            content: dict[str, Any] = {"type": "text", "text": _str(native.get("text"))}
            replay: dict[str, Any] = {"type": "text"}
        elif t == "thinking":
            content = {"type": "reasoning", "text": _str(native.get("thinking"))}
            replay = {"type": "reasoning"}
            if native.get("signature") is not None:
                replay["signature"] = _str(native["signature"])
        elif t == "tool_use":
            content = {"type": "tool-call", "id": _str(native.get("id")), "name": _str(native.get("name")),
                       "arguments": orjson.dumps(_obj(native.get("input"))).decode()}
            if not content["id"] or not content["name"]:
                raise _malformed("empty tool identity")
            replay = {"type": "tool-call"}
        else:
            raise LlmError(f"DeepSeek Messages does not support response block {t}", UNSUPPORTED_CONTENT)
        block = self._blocks[wire_index] = _Block(len(self._blocks), content, replay)
        out.append({"type": "block-start", "index": block.index, "blockType": content["type"]})
        if content["type"] == "tool-call":
            out.append({"type": "tool-call-delta", "index": block.index, "id": content["id"],
                        "name": content["name"], "argumentsDelta": ""})
        elif content["text"]:
            kind = "text-delta" if content["type"] == "text" else "reasoning-delta"
            out.append({"type": kind, "index": block.index, "text": content["text"]})

    @staticmethod
    def _delta(block: _Block, delta: dict[str, Any], out: list[dict[str, Any]]) -> None:
        t = delta.get("type")
        content = block.content
        if t == "text_delta" and content["type"] == "text":
            text = _str(delta.get("text"))
            content["text"] += text
            out.append({"type": "text-delta", "index": block.index, "text": text})
        elif t == "thinking_delta" and content["type"] == "reasoning":
            text = _str(delta.get("thinking"))
            content["text"] += text
            out.append({"type": "reasoning-delta", "index": block.index, "text": text})
        elif t == "signature_delta" and content["type"] == "reasoning":
            block.replay["signature"] = block.replay.get("signature", "") + _str(delta.get("signature"))
        elif t == "input_json_delta" and content["type"] == "tool-call":
            part = _str(delta.get("partial_json"))
            block.json.append(part)
            out.append({"type": "tool-call-delta", "index": block.index, "id": content["id"], "argumentsDelta": part})
        else:
            raise _malformed(f"unsupported delta {t} for {content['type']}")

    def _finish(self, out: list[dict[str, Any]]) -> None:
        reason = self._reason
        if reason is None or any(not b.closed for b in self._blocks.values()):
            raise _malformed("message_stop without settled blocks and stop reason")
        if not self._blocks and reason["kind"] == "stop":
            raise LlmError("DeepSeek Messages returned no content", EMPTY_RESPONSE)
        if reason["kind"] != "max-tokens":
            for block in self._blocks.values():
                if block.content["type"] == "tool-call":
                    try:
                        parsed = orjson.loads(block.content["arguments"])
                    except orjson.JSONDecodeError:
                        raise _malformed("tool input is invalid JSON") from None
                    _obj(parsed)
        usage: dict[str, int] = dict(self._usage)
        usage["totalTokens"] = (usage["inputTokens"] + usage["outputTokens"] + usage.get("cacheReadTokens", 0)
                                + usage.get("cacheWriteTokens", 0))
        out.append({"type": "usage", "usage": usage})
        out.append({"type": "finish", "reason": reason,
                    "replayState": replay_state(self.model, [b.replay for b in self._blocks.values()])})
