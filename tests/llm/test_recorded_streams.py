"""The translator reproduces what dsh recorded from the real DeepSeek API.

Every model attempt in the dsh fixture logs whose usage carries DeepSeek's cache figure (i.e. it came
from the real API, not a scripted mock) is turned back into the chat-completions SSE payloads that
produced it (reasoning / content / tool-call deltas, usage, finish_reason), then translated again.
The chunks must be identical to the recorded ``assistant/chunk`` rows, key order included.
"""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from dsh_tui.llm.openai import Translator
from tests.session.fixture_logs import fixture_id, load_fixture, session_fixture_paths

_FINISH = {"stop": "stop", "tool-calls": "tool_calls", "max-tokens": "length"}
_HEAD = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1, "model": "deepseek-v4-flash"}


def _attempts(events: list[dict]) -> list[list[dict]]:
    """Recorded attempts (chunk lists ending in ``finish``) that came from the real API."""
    out, current = [], defaultdict(list)
    for e in events:
        if e["type"] != "assistant/chunk":
            continue
        key = (e["data"]["turn"], e["data"]["step"])
        current[key].append(e["data"]["chunk"])
        if e["data"]["chunk"]["type"] == "finish":
            chunks = current.pop(key)
            usage = next((c["usage"] for c in chunks if c["type"] == "usage"), None)
            if usage is not None and "cacheReadTokens" in usage and _consistent(chunks):
                out.append(chunks)
    return out


def _consistent(chunks: list[dict]) -> bool:
    """A streamed attempt: every block got deltas and its block-end is their concatenation. (A few
    fixtures were written by hand, e.g. a block-end with no deltas, or a block ended mid-stream.)"""
    parts: dict[int, list[str]] = defaultdict(list)
    ended = False
    for c in chunks:
        if ended and c["type"] in ("block-start", "text-delta", "reasoning-delta", "tool-call-delta"):
            return False
        if c["type"] in ("text-delta", "reasoning-delta"):
            parts[c["index"]].append(c["text"])
        elif c["type"] == "tool-call-delta":
            parts[c["index"]].append(c["argumentsDelta"])
        elif c["type"] == "block-end":
            ended = True
            block = c["block"]
            text = block.get("arguments") if block["type"] == "tool-call" else block.get("text")
            if c["index"] not in parts or "".join(parts[c["index"]]) != text:
                return False
    return True


def _wire(chunks: list[dict]) -> list[bytes]:
    """The DeepSeek payloads that produce ``chunks``."""
    payloads, wire_index, seen_ids = [], {}, set()

    def emit(delta=None, finish=None, usage=None):
        obj = dict(_HEAD)
        obj["choices"] = (
            [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        )
        if usage is not None:
            obj["usage"] = usage
        payloads.append(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode())

    for c in chunks:
        t = c["type"]
        if t == "reasoning-delta":
            emit({"content": None, "reasoning_content": c["text"]})
        elif t == "text-delta":
            emit({"content": c["text"]})
        elif t == "tool-call-delta":
            i = wire_index.setdefault(c["index"], len(wire_index))
            call = {"index": i, "function": {"arguments": c["argumentsDelta"]}}
            if c["index"] not in seen_ids:
                seen_ids.add(c["index"])
                call = {
                    "index": i,
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["argumentsDelta"]},
                }
            emit({"tool_calls": [call]})
        elif t == "usage":
            u = c["usage"]
            wire = {
                "prompt_tokens": u["inputTokens"] + u["cacheReadTokens"],
                "completion_tokens": u["outputTokens"],
                "prompt_cache_hit_tokens": u["cacheReadTokens"],
                "prompt_cache_miss_tokens": u["inputTokens"],
            }
            if "reasoningTokens" in u:
                wire["completion_tokens_details"] = {"reasoning_tokens": u["reasoningTokens"]}
            emit(usage=wire)
        elif t == "finish":
            r = c["reason"]
            if r["kind"] in _FINISH:
                reason = _FINISH[r["kind"]]
            elif r["kind"] == "error" and r["failure"]["code"] == "EMPTY_RESPONSE":
                reason = "stop"
            else:
                reason = r["failure"]["code"].lower()
            emit({"content": ""}, finish=reason)
    return payloads


RECORDED = [
    (fixture_id(p), n, attempt)
    for p in session_fixture_paths()
    for n, attempt in enumerate(_attempts(load_fixture(p)[1]))
]


def test_there_are_recorded_api_streams():
    # The fixtures hold dozens of real DeepSeek attempts: text, reasoning, parallel tool calls.
    assert len(RECORDED) >= 50
    kinds = {c["type"] for _, _, a in RECORDED for c in a}
    assert {"reasoning-delta", "text-delta", "tool-call-delta", "usage", "finish"} <= kinds


@pytest.mark.parametrize(("fixture", "n", "chunks"), RECORDED, ids=[f"{f}#{n}" for f, n, _ in RECORDED])
def test_recorded_attempt_round_trips(fixture, n, chunks):
    events = [b"data: " + p for p in _wire(chunks)] + [b"data: [DONE]"]
    got, done = Translator().feed_all(events)
    assert done
    assert json.dumps(got, ensure_ascii=False) == json.dumps(chunks, ensure_ascii=False)
