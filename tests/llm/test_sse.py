"""SSE framing: line endings, comments, multi-line data, and splits at any byte."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_tui.llm.openai.sse import SseDecoder
from dsh_tui.llm.redact import redact, redact_url


def decode_all(parts: list[bytes]) -> tuple[list[bytes], int]:
    d = SseDecoder()
    out: list[bytes] = []
    for p in parts:
        out += d.feed(p)
    out += d.close()
    return out, d.comments


def test_basic_events_comments_and_fields():
    stream = (
        b": hello\n\n"
        b'data: {"a":1}\n\n'
        b"event: message\nid: 7\nretry: 100\ndata:no-space\n\n"
        b"data: line1\ndata: line2\n\n"
        b"data\n\n"
        b"data: [DONE]\n\n"
    )
    out, comments = decode_all([stream])
    assert out == [b'{"a":1}', b"no-space", b"line1\nline2", b"", b"[DONE]"]
    assert comments == 1


def test_blank_lines_without_data_dispatch_nothing():
    out, _ = decode_all([b"\n\n\nevent: x\n\n: c\n\n"])
    assert out == []


def test_crlf_and_lone_cr_line_endings():
    out, _ = decode_all([b"data: a\r\n\r\ndata: b\r\rdata: c\n\n"])
    assert out == [b"a", b"b", b"c"]


def test_cr_split_from_its_lf_across_reads():
    out, _ = decode_all([b"data: a\r", b"\n\r", b"\ndata: b\r", b"\r"])
    assert out == [b"a", b"b"]


def test_unterminated_event_is_dropped_at_close():
    out, _ = decode_all([b"data: a\n\ndata: [DONE]\n"])
    assert out == [b"a"]


def test_utf8_split_inside_a_character():
    raw = 'data: {"t":"héllo→"}\n\n'.encode()
    out, _ = decode_all([raw[:12], raw[12:13], raw[13:]])
    assert out == ['{"t":"héllo→"}'.encode()]


def reference(raw: bytes) -> list[bytes]:
    """The WHATWG algorithm, line by line on the whole stream (events dispatched at blank lines)."""
    text = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    lines = text.split(b"\n")
    lines.pop()  # the unterminated last line never counts
    out, data = [], None
    for line in lines:
        if line == b"":
            if data is not None:
                out.append(b"\n".join(data))
            data = None
            continue
        if line.startswith(b":"):
            continue
        name, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            data = [*(data or []), value]
    return out


VALUE = st.text(
    alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=20
)
LINE = st.one_of(
    VALUE.map(lambda v: f"data: {v}"),
    VALUE.map(lambda v: f"data:{v}"),
    st.just("data"),
    VALUE.map(lambda v: f":{v}"),
    VALUE.map(lambda v: f"event: {v}"),
    st.just("id: 3"),
    st.just(""),
)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(LINE, max_size=30),
    eol=st.sampled_from(["\n", "\r\n", "\r"]),
    cuts=st.lists(st.integers(min_value=0, max_value=1000), max_size=8),
)
def test_any_split_matches_the_reference_algorithm(lines, eol, cuts):
    raw = "".join(line + eol for line in lines).encode()
    expected = reference(raw)
    points = sorted({c % (len(raw) + 1) for c in cuts})
    parts = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)])]
    assert decode_all(parts)[0] == expected
    assert decode_all([raw])[0] == expected


def test_long_run_without_blank_lines_is_parsed_incrementally():
    d = SseDecoder()
    out = []
    for _ in range(3000):
        out += d.feed(b": keep-alive\ndata: part\n")
    assert out == [] and d.comments == 3000
    out += d.feed(b"\n")
    assert out == [b"\n".join([b"part"] * 3000)]
    assert len(d._buf) < 100


def test_redact_whole_and_partial_keys_and_bearer():
    key = "sk-0123456789abcdefABCDEF"
    assert redact(f"key {key} bad", [key]) == "key [REDACTED] bad"
    assert key[:10] not in redact(f"provided: {key[:10]}****{key[-4:]}", [key])
    assert redact("Authorization: Bearer abc.def", []) == "Authorization: Bearer [REDACTED]"
    assert redact("nothing to hide here", [key]) == "nothing to hide here"
    assert (
        redact_url("https://user:pw@host/v1?api_key=zzz") == "https://[REDACTED]@host/v1?api_key=[REDACTED]"
    )
