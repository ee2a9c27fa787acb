"""jsonutil (JS-compatible JSON text, lossless rule), event vocabulary and session headers."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_tui.session import events, headers, jsonutil
from dsh_tui.session.errors import SessionFormatUnsupportedError, SessionValidationError
from dsh_tui.session.surface import FrozenDict

# JavaScript Number#toString outputs, written down from the ECMAScript algorithm.
JS_NUMBERS = [
    (1.0, "1"), (0.5, "0.5"), (1e21, "1e+21"), (1e20, "100000000000000000000"), (1e-7, "1e-7"),
    (1e-6, "0.000001"), (1.5e16, "15000000000000000"), (-2.5, "-2.5"), (5e-324, "5e-324"),
    (0.1 + 0.2, "0.30000000000000004"), (123456789.125, "123456789.125"), (1.2345e-5, "0.000012345"),
    (-0.0, "0"), (2.5e25, "2.5e+25"),
]


@pytest.mark.parametrize(("value", "text"), JS_NUMBERS)
def test_js_number_formatting(value, text):
    assert jsonutil.js_number(value) == text
    assert jsonutil.dumps(value) == text


def test_dumps_is_compact_unescaped_and_keeps_order():
    obj = {"z": 1, "a": ["é", "日本", None, True, False], "c": {"q": "\x01\n\"\\"}}
    assert jsonutil.dumps(obj) == '{"z":1,"a":["é","日本",null,true,false],"c":{"q":"\\u0001\\n\\"\\\\"}}'


def test_dumps_lone_surrogates_are_escaped_like_js():
    assert jsonutil.dumps("a\ud800b") == '"a\\ud800b"'
    assert jsonutil.dumps("\udfff") == '"\\udfff"'
    # a pair of separate code units is one character in JavaScript
    assert jsonutil.dumps("\ud83d\ude00") == '"😀"'
    assert jsonutil.dumps_bytes({"x": "\ud800"}) == b'{"x":"\\ud800"}'
    assert jsonutil.loads(jsonutil.dumps("a\ud800b")) == "a\ud800b"


def test_dumps_float_inside_strings_takes_slow_path_correctly():
    obj = {"t": "1.5 and 2e+5", "n": 1e-7, "m": [3.0]}
    assert jsonutil.dumps(obj) == '{"t":"1.5 and 2e+5","n":1e-7,"m":[3]}'


def test_loads_rejects_nan_literals_and_accepts_surrogate_escapes():
    with pytest.raises(ValueError):
        jsonutil.loads("NaN")
    with pytest.raises(ValueError):
        jsonutil.loads(b'{"a":Infinity}')
    assert jsonutil.loads(b'"\\udc00"') == "\udc00"
    assert jsonutil.loads("-0") == 0 and isinstance(jsonutil.loads("-0"), int)
    assert math.copysign(1, jsonutil.loads("-0.0")) < 0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not (f == 0 and math.copysign(1, f) < 0))
    | st.text(),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=5), c, max_size=4),
    max_leaves=20,
)


def _num_norm(v):
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, list):
        return [_num_norm(x) for x in v]
    return {k: _num_norm(x) for k, x in v.items()}


@settings(deadline=None)
@given(json_values)
def test_dumps_round_trips(value):
    text = jsonutil.dumps(value)
    jsonutil.check_lossless(value)
    back = jsonutil.loads(text)
    assert _num_norm(back) == _num_norm(value)
    assert jsonutil.dumps(back) == text
    # same text as the stdlib wherever no float is involved
    if "e" not in json.dumps(value) and "." not in json.dumps(value):
        assert text == json.dumps(value, ensure_ascii=False, separators=(",", ":")) or "\\ud" in text


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"usage": {"inputTokens": float("nan")}}, "data.usage.inputTokens: NaN is not lossless JSON"),
        ({"a": [1, float("inf")]}, "data.a[1]: Infinity is not lossless JSON"),
        ({"a": -0.0}, "data.a: -0 is not lossless JSON"),
        ({"a": (1, 2)}, "data.a: tuple is not lossless JSON"),
        ({"a": {1, 2}}, "data.a: set is not lossless JSON"),
        ({"a": object()}, "data.a: object is not lossless JSON"),
        ({1: "x"}, "data: key 1 is not a string"),
        ({"a": 2**53}, "data.a: integer 9007199254740992 is beyond 2^53"),
        ({"a b": {"c": float("-inf")}}, 'data["a b"].c: Infinity'),
    ],
)
def test_check_lossless_rejections_name_the_path(value, message):
    with pytest.raises(SessionValidationError) as err:
        jsonutil.check_lossless(value)
    assert str(err.value).startswith(message)


def test_find_bad_float_scans_parser_output_for_negative_zero():
    assert jsonutil.find_bad_float(jsonutil.loads('{"a":[0,{"b":-0.0}]}')) == "data.a[1].b: -0 is not lossless JSON"
    assert jsonutil.find_bad_float(jsonutil.loads('{"a":[-0,0.0,{"b":1.5}]}')) is None


def test_event_vocabulary():
    assert len(events.KNOWN_EVENT_TYPES) == 48
    assert {"user/message", "assistant/message", "tool/result"} == events.SURFACE_TYPES
    assert "assistant/attempt" not in events.KNOWN_EVENT_TYPES
    assert not (events.ROW_TAGS & events.KNOWN_EVENT_TYPES)


def test_make_header_key_order_and_validation():
    h = headers.make_header("s1", cwd="/w", created_at=5, parent_session="p", seed_length=3,
                            origin="subagent", delegation_depth=1, agent_preset="x")
    assert list(h) == ["type", "version", "id", "createdAt", "cwd", "parentSession", "seedLength", "origin",
                       "delegationDepth", "agentPreset"]
    assert jsonutil.dumps(headers.make_header("s", created_at=7)) == (
        '{"type":"session","version":0,"id":"s","createdAt":7,"delegationDepth":0}'
    )


@pytest.mark.parametrize(
    ("patch", "needle"),
    [
        ({"cwd": "relative/dir"}, "absolute"),
        ({"cwd": "{{cwd}}"}, "absolute"),
        ({"delegationDepth": None}, "delegationDepth"),
        ({"delegationDepth": -0.0}, "-0"),
        ({"createdAt": -0.0}, "-0"),
        ({"createdAt": 1.5}, "createdAt"),
        ({"createdAt": True}, "createdAt"),
        ({"origin": "fork"}, "origin"),
        ({"agentPreset": 3}, "agentPreset"),
        ({"sandboxMode": "x"}, "retired"),
        ({"approvalPolicy": "x"}, "retired"),
        ({"id": ""}, "id"),
    ],
)
def test_validate_header_rejections(patch, needle):
    h = {"type": "session", "version": 0, "id": "s", "createdAt": 0, "cwd": "/w", "delegationDepth": 0}
    for k, v in patch.items():
        if v is None:
            h.pop(k)
        else:
            h[k] = v
    with pytest.raises(SessionValidationError, match="invalid session header") as err:
        headers.validate_header(h)
    assert needle in str(err.value)


def test_make_header_created_at_defaults_to_now():
    import time

    before = time.time_ns() // 1_000_000
    h = headers.make_header("s")
    assert before <= h["createdAt"] <= time.time_ns() // 1_000_000


def test_validate_header_lenient_accepts_fixture_placeholders():
    h = {"type": "session", "version": 0, "id": "{{sessionId}}", "createdAt": 0, "cwd": "{{cwd}}"}
    assert headers.validate_header(h, lenient=True) is h


@pytest.mark.parametrize(("version", "needle"), [(5, "newer"), (1, "reads 0 and 4"), (-1, "no upgrade path")])
def test_version_refusal_precedes_shape_checks(version, needle):
    with pytest.raises(SessionFormatUnsupportedError, match=needle):
        headers.validate_header({"type": "session", "version": version, "createdAt": "garbage"})


@settings(deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_js_number_round_trips_and_uses_exponents_only_outside_js_range(f):
    text = jsonutil.js_number(f)
    assert float(text) == f
    if f != 0 and (abs(f) >= 1e21 or abs(f) < 1e-6):
        assert "e" in text
    else:
        assert "e" not in text
    if f == int(f) and abs(f) < 1e21:
        assert "." not in text
    assert jsonutil.dumps([f, {"k": f}]) == f"[{text},{{\"k\":{text}}}]"


# ---------------------------------------------------------------- the orjson fast path is byte-exact

any_text = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=()), max_size=12)
wide_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(-(2**64), 2**64)
    | st.floats(allow_nan=False, allow_infinity=False) | any_text
    | st.sampled_from(["\ud83d\ude00", "\ud800", "a\udfffb", "\x7f", "\u2028\u2029", "\x00\x1f\b\f\n\r\t", "</", "1.5"]),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(any_text, c, max_size=4)
    | st.tuples(c, c) | st.builds(lambda d: FrozenDict(d), st.dictionaries(st.text(max_size=3), c, max_size=3))
    | st.builds(lambda d: {1: d}, c) | st.builds(lambda d: {True: d, "k": d}, c),
    max_leaves=25,
)


@settings(deadline=None)
@given(wide_values)
def test_dumps_fast_path_equals_the_exact_encoder(value):
    try:
        want = jsonutil._dumps_exact(value)
    except (TypeError, ValueError, RecursionError) as err:
        with pytest.raises(type(err)):
            jsonutil.dumps(value)
        with pytest.raises(type(err)):
            jsonutil.dumps_bytes(value)
        return
    assert jsonutil.dumps(value) == want
    assert jsonutil.dumps_bytes(value) == want.encode("utf-8")


def test_dumps_fast_path_edge_cases():
    deep: list = []
    cur = deep
    for _ in range(300):  # deeper than orjson's limit: the exact encoder takes over
        cur.append([])
        cur = cur[0]
    for value in (deep, {"n": 2**64}, {"n": -(2**63) - 1}, ["\ud800"], {"\udc00": 1}, ["\ud83d\ude00"],
                  {"f": 1e21, "g": 5.0, "h": 1e-7}, [True, False, None, 0, -1], {"\x7f\u2028": "\x00"}):
        assert jsonutil.dumps(value) == jsonutil._dumps_exact(value)
        assert jsonutil.dumps_bytes(value) == jsonutil._dumps_exact(value).encode("utf-8")
    assert jsonutil.dumps(["\ud83d\ude00", "\ud800"]) == '["\U0001f600","\\ud800"]'
    for bad in ({"a": object()}, {"a": {1, 2}}, {"a": float("nan")}):
        with pytest.raises((TypeError, ValueError)):
            jsonutil.dumps(bad)
