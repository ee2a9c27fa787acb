"""SSE framing: line endings, comments, multi-line data, and splits at any byte."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_tui.llm.openai.sse import SseDecoder, SseLineTooLong
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


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(LINE, max_size=12), eol=st.sampled_from(["\n", "\r\n", "\r"]),
       sizes=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=6))
def test_tiny_reads_match_the_reference_algorithm(lines, eol, sizes):
    """Reads of 1-4 bytes: a line spread over many reads (kept as a list of reads) decodes the same."""
    raw = "".join(line + eol for line in lines).encode()
    parts, i, k = [], 0, 0
    while i < len(raw):
        n = sizes[k % len(sizes)]
        parts.append(raw[i:i + n])
        i, k = i + n, k + 1
    assert decode_all(parts)[0] == reference(raw)


@pytest.mark.timeout(120)
def test_one_huge_line_in_small_reads_is_linear():
    """Issue #37 item 9: a 32 MB data line in 4 KB reads (8,192 reads). Buffering was ``buf + chunk`` per
    read (quadratic: ~128 GB of copying here, minutes); it is now one join. Bounded by the timeout only."""
    payload = b'{"x":"' + b"a" * (32 << 20) + b'"}'
    raw = b"data: " + payload + b"\n\n"
    d = SseDecoder()
    out = []
    for i in range(0, len(raw), 4096):
        out += d.feed(raw[i:i + 4096])
    assert out == [payload]


def test_a_line_longer_than_the_cap_is_refused():
    d = SseDecoder(max_line=1 << 20)
    d.feed(b"data: ok\n\ndata: ")
    with pytest.raises(SseLineTooLong, match="longer than 1 MiB"):
        for _ in range(40):
            d.feed(b"x" * 32768)
    # a line that arrives whole in one read is held to the same cap
    with pytest.raises(SseLineTooLong):
        SseDecoder(max_line=1 << 20).feed(b"data: " + b"x" * (2 << 20))
