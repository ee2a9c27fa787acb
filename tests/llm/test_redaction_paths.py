"""The API key never reaches an error message, on every error path of the chat-completions adapter.

Each test makes a real server on 127.0.0.1 echo a distinctive key (bare, without a ``Bearer`` prefix, so
only the key-based redaction can catch it) into one failure: an HTTP error body, an in-band ``{"error":
...}`` mid-stream, a malformed SSE payload, a broken response head and a broken chunk (transport errors,
before and after the stream started), and a gateway key sent under a mixed-case header name. The check
is for any 8-character window of the key, so a partial or truncated echo counts as a leak too.
"""

from __future__ import annotations

import json
import socket
import threading

import pytest

from dsh_tui.llm import protocol as P
from dsh_tui.llm.openai import OpenAICompatProvider
from dsh_tui.llm.protocol import LlmError, ModelInfo
from dsh_tui.llm.redact import REDACTED, redact, redact_url
from tests.llm.sse_server import Reply, ScriptServer, chunk, json_reply, sse, sse_reply

KEY = "sk-QzX9vLw2Kp7Rt4Ym8Nb3Hd6Fj1Gs5Ac0"
GATEWAY = "gw-Vb7Nq2Lx9Pz4Wc6Ks1Mr3Td8"


def windows(secret: str, n: int = 8) -> list[str]:
    return [secret[i : i + n] for i in range(len(secret) - n + 1)]


def assert_clean(err: LlmError, *secrets: str) -> None:
    seen = [err.message, str(err), json.dumps(err.failure())]
    for secret in secrets:
        for text in seen:
            leaked = [w for w in windows(secret) if w in text]
            assert not leaked, f"{secret!r} leaked via {leaked} in {text!r}"


@pytest.fixture
def server():
    with ScriptServer() as srv:
        yield srv


def make(base_url: str, **kw) -> OpenAICompatProvider:
    kw.setdefault("idle_timeout_s", 5)
    return OpenAICompatProvider("deepseek-official", base_url, lambda: KEY,
                                {"deepseek-v4-flash": ModelInfo(context_window=1_000_000)}, **kw)


def req() -> dict:
    return {
        "config": {"provider": "deepseek-official", "model": "deepseek-v4-flash"},
        "system": "s",
        "tools": [],
        "messages": [{"id": "m1", "role": "user", "content": [{"type": "text", "text": "hi"}],
                      "source": {"kind": "user"}}],
        "sessionId": "sess-1",
        "purpose": "turn",
    }


async def fail(provider: OpenAICompatProvider) -> LlmError:
    with pytest.raises(LlmError) as info:
        try:
            async for _ in provider.stream(req()):
                pass
        finally:
            await provider.aclose()
    return info.value


# ---- HTTP error body ------------------------------------------------------------------------------------
@pytest.mark.parametrize("body", [
    {"error": {"message": f"invalid key {KEY}"}},
    {"error": f"invalid key {KEY}"},  # {"error": "text"} (Ollama, llama.cpp)
    {"error": {"message": f"key {KEY[:20]}...{KEY[-6:]} rejected"}},  # a truncated echo
])
async def test_http_error_body(server, body):
    server.push(json_reply(401, body))
    err = await fail(make(server.base_url))
    assert err.code == P.AUTH and REDACTED in err.message
    assert_clean(err, KEY)


# ---- in-band error mid-stream -----------------------------------------------------------------------------
async def test_in_band_stream_error(server):
    server.push(sse_reply(chunk(content="partial"), {"error": {"message": f"upstream refused {KEY}", "code": 401}},
                          done=False))
    err = await fail(make(server.base_url))
    assert err.code == P.AUTH and err.message == f"upstream refused {REDACTED}"
    assert_clean(err, KEY)


async def test_in_band_stream_error_first_event(server):
    server.push(sse_reply({"error": {"message": f"{KEY} is not allowed here"}}, done=False))
    err = await fail(make(server.base_url))
    assert err.message == f"{REDACTED} is not allowed here"
    assert_clean(err, KEY)


# ---- malformed SSE payload --------------------------------------------------------------------------------
@pytest.mark.parametrize("first", [False, True])
async def test_malformed_payload(server, first):
    bad = b"data: {\"echo\": \"" + KEY.encode() + b"\" oops\n\n"
    steps = [bad] if first else [sse(chunk(content="a")), sse(chunk(content="b")), bad]
    server.push(Reply(steps=steps))
    err = await fail(make(server.base_url))
    assert err.code == P.MALFORMED_RESPONSE
    assert err.message.startswith("malformed SSE payload: ") and REDACTED in err.message
    assert_clean(err, KEY)


# ---- transport errors: a server that breaks HTTP while echoing the key ------------------------------------
class EchoBreaker:
    """A raw HTTP/1.1 server on 127.0.0.1 that answers with broken framing quoting the bare key it received."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                part = conn.recv(65536)
                if not part:
                    return
                data += part
            auth = next(line for line in data.split(b"\r\n") if line.lower().startswith(b"authorization:"))
            key = auth.split(b" ")[-1]  # the bare key, without "Bearer"
            if self.mode == "head":
                conn.sendall(b"HTTP/1.1 200 OK\r\nX-Echo " + key + b"\r\n\r\n")
            else:
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                             + b"%x\r\n%s\r\n" % (len(sse(chunk(content="hi"))), sse(chunk(content="hi")))
                             + key + b"\r\n")

    def close(self) -> None:
        self.sock.close()
        self.thread.join(5)


@pytest.mark.parametrize("mode", ["head", "chunk"])
async def test_transport_error(mode):
    srv = EchoBreaker(mode)
    try:
        err = await fail(make(srv.base_url))
    finally:
        srv.close()
    assert err.code == P.TRANSPORT, err.message
    what = "request to" if mode == "head" else "stream from"
    assert err.message.startswith(f"DeepSeek API {what} http://127.0.0.1:") and REDACTED in err.message
    assert_clean(err, KEY)


# ---- a gateway key under a mixed-case header name, and mixed-case bearer echoes ---------------------------
async def test_mixed_case_extra_header_value_redacted_everywhere(server):
    headers = {"X-Gateway-Token": GATEWAY}
    server.push(json_reply(403, {"error": {"message": f"x-gateway-token {GATEWAY} revoked"}}))
    err = await fail(make(server.base_url, extra_headers=headers))
    assert err.message == f"x-gateway-token {REDACTED} revoked"
    assert_clean(err, GATEWAY, KEY)
    server.push(sse_reply({"error": {"message": f"X-GATEWAY-TOKEN={GATEWAY}"}}, done=False))
    err = await fail(make(server.base_url, extra_headers=headers))
    assert_clean(err, GATEWAY, KEY)
    assert {k.lower(): v for k, v in server.requests[0]["headers"].items()}.get("x-gateway-token") == GATEWAY


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
async def test_echoed_authorization_header_any_case(server, scheme):
    other = "tok-Hq4Jn8Rw2Zs6Xv0Lc3"  # not our key: only the bearer pattern can catch it
    server.push(json_reply(400, {"error": {"message": f"AUTHORIZATION: {scheme} {other}; authorization: {scheme} {KEY}"}}))
    err = await fail(make(server.base_url))
    assert err.message == f"AUTHORIZATION: {scheme} {REDACTED}; authorization: {scheme} {REDACTED}"
    assert_clean(err, KEY, other)


def test_redact_unit_cases():
    assert redact(f"a {KEY} b", [KEY]) == f"a {REDACTED} b"
    assert redact(f"x{KEY[3:15]}y", [KEY]) == f"x{REDACTED}y"  # an inner fragment of 8+ chars
    assert redact(f"{KEY[:6]}", [KEY]) == KEY[:6]  # too short to be sure it is the key
    assert redact("Bearer abc.def", []) == f"Bearer {REDACTED}"
    assert redact("nothing secret here", [KEY, None, ""]) == "nothing secret here"
    # a short secret (4-7 characters: no fragment rule) is still replaced whole, wherever it sits
    assert redact("token=Zq7x9 and Zq7x9!", ["Zq7x9"]) == f"token={REDACTED} and {REDACTED}!"
    assert redact("pin=Ab1z.", ["Ab1z"]) == f"pin={REDACTED}."  # 4 characters: the shortest secret
    assert redact("abc", ["abc"]) == "abc"  # under 4 characters: too common to redact
    # a secret inside a longer one: the longer is replaced first, whole (one marker, no leftover pieces)
    assert redact(f"x {KEY} y", [KEY[:5], KEY]) == f"x {REDACTED} y"
    # the key's last 8 characters alone are a fragment; its last 7 are not
    assert redact(f"tail ...{KEY[-8:]}.", [KEY]) == f"tail ...{REDACTED}."
    assert redact(f"tail ...{KEY[-7:]}.", [KEY]) == f"tail ...{KEY[-7:]}."
    # an 8-character key is its own only fragment
    assert redact("k=Ab3dE6gH;", ["Ab3dE6gH"]) == f"k={REDACTED};"


def test_redact_url_cases():
    assert redact_url("https://user:pw@host/v1?api_key=zzz&x") == f"https://{REDACTED}@host/v1?api_key={REDACTED}&x"
    assert redact_url("http://[::1/v1") == REDACTED  # urlsplit refuses it: nothing of it is shown
    assert redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"


@pytest.mark.parametrize("echo,expected", [
    # A truncated key glued to a parameter name: the whole token is no fragment of the key, its tail is.
    (f"api_key={KEY[:16]}****", f"api_key={REDACTED}****"),
    (f"key={KEY[:20]}", f"key={REDACTED}"),
    (f"key={KEY[:17]}!", f"key={REDACTED}!"),  # an odd-length run: nothing past its end is taken
    (f"token:{KEY[4:30]}.", f"token:{REDACTED}."),
    (f"{KEY[:10]}{KEY[:10]}", f"{REDACTED}{REDACTED}"),
    (f"provided: {KEY[:8]}**********{KEY[-5:]}", f"provided: {REDACTED}**********{KEY[-5:]}"),
])
def test_fragment_anywhere_in_a_token(echo, expected):
    assert redact(echo, [KEY]) == expected


async def test_truncated_key_after_a_parameter_name_in_an_error_body(server):
    server.push(json_reply(401, {"error": {"message": f"invalid api_key={KEY[:18]}... (truncated)"}}))
    err = await fail(make(server.base_url))
    assert err.message == f"invalid api_key={REDACTED}... (truncated)"
    assert_clean(err, KEY)
