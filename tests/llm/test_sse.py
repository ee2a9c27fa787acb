"""SSE framing: line endings, comments, multi-line data, and splits at any byte."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_tui.llm.redact import redact, redact_url
from dsh_tui.llm.sse import SseDecoder


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


EVENT = st.one_of(
    st.tuples(
        st.just("data"),
        st.text(
            alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=20
        ),
    ),
    st.tuples(
        st.just("comment"),
        st.text(
            alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=10
        ),
    ),
)


@settings(max_examples=150, deadline=None)
@given(
    events=st.lists(EVENT, max_size=12),
    eol=st.sampled_from(["\n", "\r\n", "\r"]),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8),
)
def test_any_split_gives_the_same_events(events, eol, cuts):
    text = ""
    expected = []
    for kind, value in events:
        if kind == "data":
            text += f"data: {value}{eol}{eol}"
            expected.append(value.encode())
        else:
            text += f":{value}{eol}"
    raw = text.encode()
    points = sorted({c % (len(raw) + 1) for c in cuts})
    parts = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)])]
    assert decode_all(parts)[0] == expected
    assert decode_all([raw])[0] == expected


def test_redact_whole_and_partial_keys_and_bearer():
    key = "sk-0123456789abcdefABCDEF"
    assert redact(f"key {key} bad", [key]) == "key [REDACTED] bad"
    assert key[:10] not in redact(f"provided: {key[:10]}****{key[-4:]}", [key])
    assert redact("Authorization: Bearer abc.def", []) == "Authorization: Bearer [REDACTED]"
    assert redact("nothing to hide here", [key]) == "nothing to hide here"
    assert (
        redact_url("https://user:pw@host/v1?api_key=zzz") == "https://[REDACTED]@host/v1?api_key=[REDACTED]"
    )
