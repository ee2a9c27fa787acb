"""The wire translator: the same-shape fast path gives exactly what the full parse gives."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_tui.llm.openai import Translator, map_usage
from dsh_tui.llm.protocol import LlmError

TEXT = st.text(max_size=6)


def _choice(delta: dict, finish, logprobs: bool) -> dict:
    c: dict = {"index": 0, "delta": delta}
    if logprobs:
        c["logprobs"] = None
    c["finish_reason"] = finish
    return c


@st.composite
def wire_chunk(draw) -> bytes:
    kind = draw(
        st.sampled_from(["content", "reasoning", "reasoning-null", "role", "tool", "finish", "usage", "odd"])
    )
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    if draw(st.booleans()):
        head["system_fingerprint"] = draw(st.sampled_from(["fp_1", None]))
    logprobs = draw(st.booleans())
    usage_null = draw(st.booleans())
    if kind == "content":
        delta = {"content": draw(TEXT)}
    elif kind == "reasoning":
        delta = {"reasoning_content": draw(TEXT)}
    elif kind == "reasoning-null":
        delta = {"content": None, "reasoning_content": draw(TEXT)}
    elif kind == "role":
        delta = {"role": "assistant", "content": draw(TEXT)}
    elif kind == "tool":
        i = draw(st.integers(0, 2))
        call = {"index": i, "function": {"arguments": draw(TEXT)}}
        if draw(st.booleans()):
            call["id"] = f"call_{i}"
            call["function"]["name"] = f"tool{i}"
        delta = {"tool_calls": [call]}
    elif kind == "finish":
        delta = {}
    elif kind == "usage":
        obj = dict(
            head, choices=[], usage={"prompt_tokens": 9, "completion_tokens": 3, "prompt_cache_hit_tokens": 4}
        )
        return json.dumps(obj, separators=(",", ":")).encode()
    else:  # content and reasoning together, or extra keys: never the fast shape
        delta = {"content": draw(TEXT), "reasoning_content": draw(TEXT)}
    finish = draw(st.sampled_from(["stop", "tool_calls", "length"])) if kind == "finish" else None
    obj = dict(head, choices=[_choice(delta, finish, logprobs)])
    if usage_null:
        obj["usage"] = None
    ascii_only = draw(st.booleans())
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=ascii_only).encode()


@settings(max_examples=300, deadline=None)
@given(st.lists(wire_chunk(), max_size=25), st.integers(1, 5))
def test_fast_path_equals_full_parse(payloads, batch):
    slow = Translator(fast=False)
    expected = []
    for p in payloads:
        expected += slow.feed(p)
    expected += slow.finish()
    fast = Translator()
    got = []
    items = [b"data: " + p for p in [*payloads, b"[DONE]", b'{"ignored":"after done"}']]
    for i in range(0, len(items), batch):
        out, done = fast.feed_all(items[i : i + batch])
        got += out
        if done:
            break
    assert got == expected


def test_fast_path_is_taken_for_same_shape_chunks():
    def c(text):
        head = '{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
        return (
            head + '"delta":{"content":' + json.dumps(text) + '},"logprobs":null,"finish_reason":null}]}'
        ).encode()

    t = Translator()
    out, done = t.feed_all([b"data: " + c("a"), b"data: " + c('b"}]}'), b"data: " + c("ü\n")])
    assert not done
    assert [x.get("text") for x in out] == [None, "a", 'b"}]}', "ü\n"]
    assert t._lead is not None  # the shape was learned


def test_bad_payload_in_a_batch_keeps_the_chunks_before_it():
    t = Translator()
    good = b'{"choices":[{"index":0,"delta":{"content":"a"}}]}'
    out, done = t.feed_all([b"data: " + good, b"data: {nope", b"data: " + good])
    assert not done
    assert out == [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "a"},
    ]
    assert isinstance(t.error, LlmError) and t.error.code == "MALFORMED_RESPONSE"


def test_lone_surrogate_escape_is_accepted_like_json_parse():
    t = Translator()
    out = t.feed(b'{"choices":[{"index":0,"delta":{"content":"\\ud800x"}}]}')
    assert out[-1] == {"type": "text-delta", "index": 0, "text": "\ud800x"}


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"prompt_tokens": 10, "completion_tokens": 2}, {"inputTokens": 10, "outputTokens": 2}),
        (
            {"prompt_tokens": 10, "completion_tokens": 2, "prompt_cache_hit_tokens": 0},
            {"inputTokens": 10, "outputTokens": 2, "cacheReadTokens": 0},
        ),
        (
            {
                "prompt_tokens": 10,
                "completion_tokens": 2,
                "prompt_tokens_details": {"cached_tokens": None},
                "prompt_cache_hit_tokens": 3,
            },
            {"inputTokens": 7, "outputTokens": 2, "cacheReadTokens": 3},
        ),
    ],
)
def test_usage_mapping(usage, expected):
    assert map_usage(usage) == expected
