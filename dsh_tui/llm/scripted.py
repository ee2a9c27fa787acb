"""A scripted in-process provider for tests, benchmarks and the offline demo.

A script is a list of *responses*; each ``stream(request)`` call consumes the next one. A response is
a list of steps: a chunk dict (yielded as is), ``Delay(seconds)``, ``Hang()`` (wait until cancelled),
``Raise(error)`` (raise an ``LlmError`` mid-stream), or a callable ``fn(request) -> list`` producing
the steps from the request. Helpers build the usual shapes: ``text("hi")``, ``call("c1", "echo",
{"text": "ping"})``, ``finish_error("AUTH", "bad key", status=401)``, ``empty()``, ``max_tokens(...)``.

``ScriptedProvider.from_json`` accepts a JSON-friendly form for bundled demo scripts::

    [{"text": "hello", "reasoning": "thinking...", "delay": 0.02},
     {"calls": [{"id": "c1", "name": "read", "arguments": {"file_path": "README.md"}}]},
     {"error": {"code": "RATE_LIMIT", "message": "busy", "status": 429}}]
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from dsh_tui.llm.protocol import UNKNOWN, LlmError, ModelInfo, RetryPolicy


@dataclass(frozen=True)
class Delay:
    seconds: float


@dataclass(frozen=True)
class Hang:
    """Block until the consumer cancels the stream."""


@dataclass(frozen=True)
class Gate:
    """Block until ``event`` (a ``threading.Event``, set from any thread, e.g. a test's) is set: a step
    boundary a test controls instead of a timed ``Delay``."""

    event: Any


@dataclass(frozen=True)
class Raise:
    error: BaseException


DEFAULT_USAGE = {"inputTokens": 10, "outputTokens": 5}


def _chunked(text: str, size: int | None) -> list[str]:
    if not size or size <= 0 or len(text) <= size:
        return [text]
    return [text[i : i + size] for i in range(0, len(text), size)]


def _text_block(
    steps: list, index: int, kind: str, s: str, chunk_size: int | None = None, delay: float = 0.0
) -> None:
    """A complete ``text``/``reasoning`` block: start, its deltas (each after ``Delay(delay)``), end."""
    steps.append({"type": "block-start", "index": index, "blockType": kind})
    for part in _chunked(s, chunk_size):
        if delay:
            steps.append(Delay(delay))
        steps.append({"type": f"{kind}-delta", "index": index, "text": part})
    steps.append({"type": "block-end", "index": index, "block": {"type": kind, "text": s}})


def text(
    s: str,
    *,
    usage: dict | None = None,
    reasoning: str | None = None,
    chunk_size: int | None = None,
    finish: str = "stop",
    delay: float = 0.0,
) -> list:
    steps: list = []
    index = 0
    if reasoning:
        _text_block(steps, index, "reasoning", reasoning, chunk_size, delay)
        index += 1
    _text_block(steps, index, "text", s, chunk_size, delay)
    steps.append({"type": "usage", "usage": dict(usage or DEFAULT_USAGE)})
    steps.append({"type": "finish", "reason": {"kind": finish}})
    return steps


def call(call_id: str, name: str, args: Any = None, *, usage: dict | None = None) -> list:
    return calls([(call_id, name, args)], usage=usage)


def calls(
    items: list[tuple[str, str, Any]], *, usage: dict | None = None, text_before: str | None = None
) -> list:
    steps: list = []
    index = 0
    if text_before:
        _text_block(steps, 0, "text", text_before)
        index = 1
    for call_id, name, args in items:
        raw = (
            args
            if isinstance(args, str)
            else json.dumps(args if args is not None else {}, separators=(",", ":"))
        )
        steps.append({"type": "block-start", "index": index, "blockType": "tool-call"})
        steps.append(
            {"type": "tool-call-delta", "index": index, "id": call_id, "name": name, "argumentsDelta": raw}
        )
        steps.append(
            {
                "type": "block-end",
                "index": index,
                "block": {"type": "tool-call", "id": call_id, "name": name, "arguments": raw},
            }
        )
        index += 1
    steps.append({"type": "usage", "usage": dict(usage or DEFAULT_USAGE)})
    steps.append({"type": "finish", "reason": {"kind": "tool-calls"}})
    return steps


def finish_error(
    code: str,
    message: str,
    *,
    status: int | None = None,
    retry_after_ms: int | None = None,
    kind: str = "error",
) -> list:
    failure: dict[str, Any] = {"message": message, "code": code}
    if status is not None:
        failure["status"] = status
    if retry_after_ms is not None:
        failure["providerRetryAfterMs"] = retry_after_ms
    return [{"type": "finish", "reason": {"kind": kind, "failure": failure}}]


def empty(usage: dict | None = None) -> list:
    """What the DeepSeek adapter emits for a completed response with no content."""
    return [
        {"type": "usage", "usage": dict(usage or DEFAULT_USAGE)},
        *finish_error("EMPTY_RESPONSE", "model returned a completed response with no content"),
    ]


def max_tokens(partial_text: str = "", *, partial_call: tuple[str, str, str] | None = None) -> list:
    steps: list = []
    index = 0
    if partial_text:
        steps += [
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": partial_text},
        ]
        index = 1
    if partial_call:
        cid, name, raw = partial_call
        steps += [
            {"type": "block-start", "index": index, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": index, "id": cid, "name": name, "argumentsDelta": raw},
        ]
    steps += [
        {"type": "usage", "usage": dict(DEFAULT_USAGE)},
        {"type": "finish", "reason": {"kind": "max-tokens"}},
    ]
    return steps


class ScriptedProvider:
    """Plays a fixed list of responses; records every request it served in ``requests``."""

    def __init__(
        self,
        responses: list | None = None,
        *,
        name: str = "mock",
        context_window: int | None = None,
        retry_policy: RetryPolicy | None = None,
        default_max_tokens: int | None = None,
        fallback: Callable[[dict], list] | None = None,
        record: bool = True,
        titles: list | None = None,
    ) -> None:
        """``titles``: the responses to session-title requests (``purpose: "session-title"``), which run
        beside the turn and never take a turn's response; without one a title request fails (the session
        keeps its fallback title)."""
        self.name = name
        self.responses: list = list(responses or [])
        self.requests: list[dict] = []
        self.context_window = context_window
        self._retry_policy = retry_policy or RetryPolicy()
        self.default_max_tokens = default_max_tokens
        self.fallback = fallback
        self.record = record  # keep every served request in ``requests`` (off for long benchmarks)
        self.calls = 0
        self.active = 0  # streams currently open (to test prompt release on cancel)
        self.titles: list = list(titles or [])
        self.title_requests: list[dict] = []

    def add(self, *responses: list) -> ScriptedProvider:
        self.responses.extend(responses)
        return self

    def resolve_model(self, model: str) -> ModelInfo:
        return ModelInfo(context_window=self.context_window, default_max_tokens=self.default_max_tokens)

    def retry_policy(self) -> RetryPolicy:
        return self._retry_policy

    async def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        if request.get("purpose") == "session-title":
            self.title_requests.append(request)
            if not self.titles:
                raise LlmError("scripted provider has no title response", UNKNOWN)
            response = self.titles.pop(0)
            for step in response(request) if callable(response) else response:
                if isinstance(step, Delay):
                    await asyncio.sleep(step.seconds)
                elif not isinstance(step, (Hang, Raise)):
                    yield step
            return
        self.calls += 1
        if self.record:
            self.requests.append(request)
        if self.responses:
            response = self.responses.pop(0)
        elif self.fallback is not None:
            response = self.fallback(request)
        else:
            raise LlmError("scripted provider has no more responses", UNKNOWN)
        if callable(response):
            response = response(request)
        self.active += 1
        try:
            for step in response:
                if isinstance(step, Delay):
                    await asyncio.sleep(step.seconds)
                elif isinstance(step, Hang):
                    await asyncio.Event().wait()
                elif isinstance(step, Gate):
                    while not step.event.is_set():  # polled: a cancelled stream stops waiting at once
                        await asyncio.sleep(0.01)
                elif isinstance(step, Raise):
                    raise step.error
                else:
                    yield step
        finally:
            self.active -= 1

    # ---- JSON scripts (offline demo) -----------------------------------------------------------------
    @classmethod
    def from_json(cls, script: list[dict], **kwargs: Any) -> ScriptedProvider:
        responses = []
        for item in script:
            delay = float(item.get("delay", 0) or 0)
            chunk_size = item.get("chunkSize", 8 if delay else None)
            if "error" in item:
                e = item["error"]
                responses.append(
                    finish_error(e.get("code", UNKNOWN), e.get("message", "error"), status=e.get("status"))
                )
            elif "calls" in item:
                steps = calls(
                    [(c["id"], c["name"], c.get("arguments", {})) for c in item["calls"]],
                    text_before=item.get("text"),
                )
                responses.append(([Delay(delay)] if delay else []) + steps)
            elif "chunks" in item:
                responses.append(list(item["chunks"]))
            else:
                responses.append(
                    text(
                        item.get("text", ""),
                        reasoning=item.get("reasoning"),
                        chunk_size=chunk_size,
                        delay=delay,
                    )
                )
        return cls(responses, **kwargs)
