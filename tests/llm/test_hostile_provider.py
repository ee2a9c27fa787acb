"""A hostile or sloppy provider, end to end: a real SSE server on 127.0.0.1, ``dsh-tui`` as a subprocess.

Issue 26 item 5 (split surrogate pairs, control sequences), issue 37 items 5 (a lone surrogate), 9 (one huge
SSE line), 10 (key echoes), 11 (nested arguments, duplicate call ids, keep-alive-only streams), 12 (plugin
tool names, a configured Authorization header).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dsh_tui.store.fixture import open_log_file
from tests.llm.sse_server import ScriptServer, chunk, sse_reply

STOP = chunk(finish="stop", usage={"prompt_tokens": 3, "completion_tokens": 1})


def configure(base_url: str, extra: str = "", provider_extra: str = "") -> None:
    from dsh_tui.config import settings_path

    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    # a known context window: compaction measures every message (JavaScript UTF-16 lengths) before each step
    path.write_text(f'[default]\nprovider = "local"\nmodel = "m"\n{extra}'
                    f'[providers.local]\nbase_url = "{base_url}/v1"\ndefault_context_window = 100000\n'
                    f'{provider_extra}')


def dsh(*argv: str, cwd: Path, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dsh_tui", *argv], cwd=cwd, capture_output=True,
                          timeout=timeout, env=env or dict(os.environ))


def the_log(root: Path) -> Path:
    (log,) = list(root.rglob("session*.jsonl*"))
    return log


def raw_delta(text_json: str) -> bytes:
    """One content delta whose JSON string token is given verbatim (escapes and all)."""
    return b'data: {"choices":[{"index":0,"delta":{"content":"' + text_json.encode() + b'"}}]}\n\n'


# -- issue 26 item 5 / issue 37 item 5: surrogates ------------------------------------------------------


def test_a_surrogate_pair_split_across_two_chunks_is_one_character(tmp_path):
    root = tmp_path / "root"
    with ScriptServer() as srv:
        srv.push(sse_reply(raw_delta("a \\ud83d"), raw_delta("\\ude00 b"), STOP))
        configure(srv.base_url)
        p = dsh("run", "--headless", "hi", "--root", str(root), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.decode() == "a \U0001f600 b\n"
    events = open_log_file(the_log(root)).events
    (msg,) = [e for e in events if e["type"] == "assistant/message"]
    assert msg["data"]["message"]["content"][0]["text"] == "a \U0001f600 b"


def test_a_lone_surrogate_is_stored_as_dsh_stores_it_and_the_session_goes_on(tmp_path):
    root = tmp_path / "root"
    with ScriptServer() as srv:
        srv.push(sse_reply(raw_delta("half an emoji \\ud83d then text"), STOP))
        srv.push(sse_reply(chunk("second answer"), STOP))
        configure(srv.base_url)
        p = dsh("run", "--headless", "hi", "--root", str(root), cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        assert p.stdout.decode() == "half an emoji \ufffd then text\n"  # U+FFFD on the terminal, as TextEncoder
        log = the_log(root)
        (msg,) = [e for e in open_log_file(log).events if e["type"] == "assistant/message"]
        assert msg["data"]["message"]["content"][0]["text"] == "half an emoji \ud83d then text"
        # every later turn still works (compaction measures the text: UTF-16 length of a lone surrogate)
        p = dsh("resume", str(log), "--headless", "again", "--root", str(root), cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        assert p.stdout.decode() == "second answer\n"
        # the surrogate went back to the provider as JSON.stringify escapes it
        assert b"half an emoji \\ud83d then text" in srv.requests[-1]["raw"]
    for fmt in ("md", "html", "jsonl"):
        p = dsh("export", str(log), "--format", fmt, "--root", str(root), cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        p.stdout.decode("utf-8")  # well-formed UTF-8
        assert ("half an emoji \\ud83d" if fmt == "jsonl" else "half an emoji \ufffd") in p.stdout.decode()


# -- issue 26 item 5: control sequences never reach the terminal ---------------------------------------

HOSTILE = "ok \x1b]52;c;aGVsbG8=\x07\x1b]0;pwned\x07\x1b[2J\x1b[1;1H\x9b31m\rdone\tend"


def test_control_sequences_from_the_model_never_reach_stdout(tmp_path):
    root = tmp_path / "root"
    with ScriptServer() as srv:
        srv.push(sse_reply(chunk(HOSTILE), STOP))
        configure(srv.base_url)
        p = dsh("run", "--headless", "hi", "--root", str(root), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.decode() == "ok done\tend\n"
    log = the_log(root)
    events = open_log_file(log).events
    (msg,) = [e for e in events if e["type"] == "assistant/message"]
    assert msg["data"]["message"]["content"][0]["text"] == HOSTILE  # the log keeps the text as it came
    for fmt in ("md", "html"):
        p = dsh("export", str(log), "--format", fmt, "--root", str(root), cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        assert b"\x1b" not in p.stdout and b"\x07" not in p.stdout and "\x9b" not in p.stdout.decode()
        assert "ok done\tend" in p.stdout.decode()


def test_for_terminal_strips_every_kind_of_sequence():
    from dsh_tui.session.terminal import for_terminal, js_join, well_formed

    assert for_terminal("a\x1b[31mred\x1b[0m b") == "ared b"
    assert for_terminal("x\x1b]8;;http://e\x1b\\link\x1b]8;;\x1b\\y") == "xlinky"  # OSC 8 with ST
    assert for_terminal("x\x1bPq#0;2;0;0;0\x1b\\y") == "xy"  # DCS (sixel)
    assert for_terminal("x\x1b]52;c;unterminated") == "x"
    assert for_terminal("a\x1bcb\x1b(Bc\x1b") == "abc"
    assert for_terminal("a\r\nb\rc\x00\x08\x7f\x85d") == "a\nbcd"
    assert for_terminal("tab\there\nnew") == "tab\there\nnew"
    assert js_join("\ud83d" + "\ude00") == "\U0001f600" and js_join("x\ud83dy") == "x\ud83dy"
    assert well_formed("x\ud83dy\udc00") == "x\ufffdy\ufffd"


# -- issue 37 item 9: one huge SSE line ------------------------------------------------------------------


def provider_for(srv: ScriptServer, key: str = "sk-hostile-0123456789abcdef", **kw):
    from dsh_tui.llm.openai import OpenAICompatProvider
    from dsh_tui.llm.protocol import ModelInfo

    kw.setdefault("idle_timeout_s", 10)
    return OpenAICompatProvider("local", srv.base_url, lambda: key, {"m": ModelInfo(context_window=100_000)},
                                label="local", **kw)


def request(text: str = "hi") -> dict:
    return {"config": {"provider": "local", "model": "m"}, "system": "s", "tools": [],
            "messages": [{"id": "m1", "role": "user", "content": [{"type": "text", "text": text}],
                          "source": {"kind": "user"}}], "sessionId": "s1", "purpose": "turn"}


async def stream_all(provider) -> list[dict]:
    out = []
    try:
        async for c in provider.stream(request()):
            out.append(c)
    finally:
        await provider.aclose()
    return out


async def test_an_sse_line_longer_than_the_cap_is_a_clear_provider_error():
    import pytest

    from dsh_tui.llm.protocol import MALFORMED_RESPONSE, LlmError

    with ScriptServer() as srv:
        big = b"data: " + b"x" * 65536
        srv.push(sse_reply(chunk("before"), *([big] * 40), b"\n\n", STOP))  # one 2.5 MiB line
        provider = provider_for(srv)
        provider.max_line_bytes = 1 << 20
        with pytest.raises(LlmError) as info:
            await stream_all(provider)
    assert info.value.code == MALFORMED_RESPONSE
    assert str(info.value) == ("local API sent an event-stream line longer than 1 MiB (no event is that long); "
                               "the stream was stopped")


async def test_a_40_mb_content_line_arrives_whole():
    with ScriptServer() as srv:
        text = "y" * (40 << 20)
        srv.push(sse_reply(chunk(text), STOP))
        chunks = await stream_all(provider_for(srv))
    (end,) = [c for c in chunks if c["type"] == "block-end"]
    assert len(end["block"]["text"]) == 40 << 20


# -- issue 37 item 11: provider oddities ------------------------------------------------------------------


def tool_reply(*calls: tuple[str, str, str]):
    """One assistant message calling tools: (id, name, arguments) each."""
    from tests.llm.sse_server import tool_call

    return sse_reply(chunk(tool_calls=[tool_call(i, id=cid, name=name, args=args)
                                       for i, (cid, name, args) in enumerate(calls)]),
                     chunk(finish="tool_calls", usage={"prompt_tokens": 3, "completion_tokens": 1}))


def tool_results(events: list[dict]) -> list[tuple[str, str, dict | None]]:
    out = []
    for e in events:
        if e["type"] == "tool/result":
            from dsh_tui.session.content import tool_result_block

            block = tool_result_block(e["data"]["message"])  # a v0 or a v4 tool result
            out.append((block["toolCallId"], block["content"][0]["text"], e["data"].get("error")))
    return out


def test_tool_arguments_nested_100k_deep_are_one_invalid_args_result_and_the_turn_goes_on(tmp_path):
    root = tmp_path / "root"
    (tmp_path / "a.txt").write_text("A\n")
    deep = '{"file_path":"a.txt","x":' + "[" * 100_000 + "]" * 100_000 + "}"
    with ScriptServer() as srv:
        srv.push(tool_reply(("c1", "read", deep), ("c2", "read", '{"file_path":"a.txt"}')))
        srv.push(sse_reply(chunk("all done"), STOP))
        configure(srv.base_url)
        p = dsh("run", "--headless", "hi", "--root", str(root), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.decode() == "all done\n"
    results = tool_results(open_log_file(the_log(root)).events)
    assert results[0][0] == "c1" and results[0][2] == {"name": "ToolArgsError", "code": "INVALID_ARGS"}
    assert results[0][1] == 'Error: invalid arguments: "arguments" nested more than 256 levels deep'
    assert results[1][0] == "c2" and "A" in results[1][1] and results[1][2] is None


def test_json_depth_skips_strings_and_loads_bounded_refuses_deep_text():
    import pytest

    from dsh_tui.session.jsonutil import NestedTooDeeply, json_depth, loads_bounded

    assert json_depth('{"a":"[[[\\"[[","b":[[1]]}') == 3
    assert loads_bounded('{"a":[[1]]}') == {"a": [[1]]}
    with pytest.raises(NestedTooDeeply):
        loads_bounded("[" * 300 + "]" * 300)
    with pytest.raises(ValueError):  # callers that fall back on bad JSON fall back on this too
        loads_bounded("[" * 100_000)


def test_two_tool_calls_with_one_id_each_get_a_result_and_the_turn_goes_on(tmp_path):
    root = tmp_path / "root"
    (tmp_path / "a.txt").write_text("A\n")
    with ScriptServer() as srv:
        srv.push(tool_reply(("dup", "read", '{"file_path":"a.txt"}'), ("dup", "read", '{"file_path":"a.txt"}')))
        srv.push(sse_reply(chunk("all done"), STOP))
        configure(srv.base_url)
        p = dsh("run", "--headless", "hi", "--root", str(root), cwd=tmp_path)
        follow_up = srv.requests[-1]["body"]
    assert p.returncode == 0, p.stderr
    assert p.stdout.decode() == "all done\n"
    results = tool_results(open_log_file(the_log(root)).events)
    assert [r[0] for r in results] == ["dup", "dup-dup2"]
    assert "A" in results[0][1] and results[0][2] is None
    assert results[1][1] == 'Error: duplicate tool call id "dup" in one response (renamed "dup-dup2"; not run)'
    assert results[1][2] == {"name": "ToolCallIdError", "code": "DUPLICATE_CALL_ID"}
    # the next request pairs each call with its own result
    calls = [c["id"] for m in follow_up["messages"] for c in m.get("tool_calls") or []]
    answered = [m["tool_call_id"] for m in follow_up["messages"] if m["role"] == "tool"]
    assert calls == answered == ["dup", "dup-dup2"]


async def test_a_stream_of_keep_alive_comments_only_times_out():
    import pytest

    from dsh_tui.llm.protocol import TIMEOUT, LlmError

    with ScriptServer() as srv:
        # 30 s of ": keep-alive" every 0.1 s: bytes keep coming, so the 10 s idle timeout never fires
        srv.push(sse_reply(*[step for _ in range(300) for step in (b": keep-alive\n\n", 0.1)], done=False,
                           end="stall"))
        provider = provider_for(srv, event_timeout_s=1.0)
        with pytest.raises(LlmError) as info:
            await stream_all(provider)
    assert info.value.code == TIMEOUT
    assert str(info.value) == "local stream sent no event for 1000ms (only keep-alive comments)"


def test_event_timeout_is_a_provider_setting_with_a_900_s_default(tmp_path):
    from dsh_tui.config import load_settings
    from dsh_tui.llm import registry

    configure("http://127.0.0.1:9", provider_extra="event_timeout_s = 42\n")
    assert registry.build_provider(load_settings()).event_timeout_s == 42
    configure("http://127.0.0.1:9")
    assert registry.build_provider(load_settings()).event_timeout_s == 900


# -- issue 37 item 10: key echoes that escaped redaction ----------------------------------------------------

KEY = "sk-hostile-5f4dcc3b5aa765d61d8327deb882cf99"
PLUGIN = '''
import os


def apply(ctx, config=None):
    raise RuntimeError("cannot use key " + os.environ["LOCAL_KEY"])
'''


def test_key_echoes_never_reach_stderr_or_the_log(tmp_path):
    import base64
    import json

    from tests.llm.sse_server import json_reply

    root = tmp_path / "root"
    (tmp_path / "plugs").mkdir()
    (tmp_path / "plugs" / "leaky_plugin.py").write_text(PLUGIN)
    echoed = base64.b64encode(f"Bearer {KEY}".encode()).decode()
    with ScriptServer() as srv:
        srv.push(json_reply(401, {"error": {"message": f"invalid credentials {echoed}", "type": "auth"}},
                            headers={"x-request-id": f"req-{KEY}"}))
        configure(srv.base_url, provider_extra='api_key_env = "LOCAL_KEY"\n')
        env = dict(os.environ, LOCAL_KEY=KEY, PYTHONPATH=str(tmp_path / "plugs"))
        p = dsh("run", "--headless", "hi", "--root", str(root), "--plugin", "leaky_plugin", cwd=tmp_path, env=env)
        assert {k.lower(): v for k, v in srv.requests[0]["headers"].items()}["authorization"] == f"Bearer {KEY}"
    assert p.returncode == 1
    err = p.stderr.decode()
    assert "leaky_plugin" in err and "cannot use key [REDACTED]" in err  # the plugin's failure, redacted
    assert "invalid credentials [REDACTED]" in err
    log = dsh("export", str(the_log(root)), "--format", "jsonl", "--root", str(root), cwd=tmp_path).stdout.decode()
    (end,) = [json.loads(line) for line in log.splitlines() if '"turn/end"' in line]
    assert end["data"]["reason"]["error"]["requestId"] == "req-[REDACTED]"
    for text in (err, log):
        assert KEY not in text and echoed not in text and KEY[3:20] not in text


def test_redact_covers_base64_url_encoded_and_registered_forms():
    import base64
    from urllib.parse import quote

    from dsh_tui.llm.redact import redact, register_secret

    key = "sk-test/with+odd=chars-0123456789"
    for text in (f"Bearer {key}", f"user:{key}", key, f"x{key}y"):
        for enc in (base64.b64encode, base64.urlsafe_b64encode):
            assert redact(f"got {enc(text.encode()).decode()} back", [key]) == "got [REDACTED] back"
    assert redact(f"url ?k={quote(key, safe='')}", [key]) == "url ?k=[REDACTED]"
    assert redact("base64 of other text: aGVsbG8gd29ybGQ=", [key]) == "base64 of other text: aGVsbG8gd29ybGQ="
    register_secret("sk-registered-9876543210")
    assert redact("oops sk-registered-9876543210") == "oops [REDACTED]"


# -- issue 37 item 12: plugin tool names, a configured Authorization header ------------------------------

TOOL_PLUGIN = '''
from dsh_tui.tools import ToolDefinition


def tool(name):
    async def execute(args, tctx):
        return {"ok": True}
    return ToolDefinition(name=name, description="d", parameters={"type": "object", "properties": {}},
                          execute=execute, render=lambda a, v: [{"type": "text", "text": "ok"}])


def apply(ctx, config=None):
    ctx.tools.register(tool("good_tool"))
    ctx.tools.register(tool(NAME))
'''


def test_a_plugin_tool_with_a_name_providers_refuse_is_refused_at_registration(tmp_path):
    root = tmp_path / "root"
    (tmp_path / "plugs").mkdir()
    bad = ["", "a b", "x" * 101, "näme"]
    for i, name in enumerate(bad):
        (tmp_path / "plugs" / f"named_{i}.py").write_text(TOOL_PLUGIN.replace("NAME", repr(name)))
    with ScriptServer() as srv:
        srv.push(sse_reply(chunk("fine"), STOP))
        configure(srv.base_url)
        env = dict(os.environ, PYTHONPATH=str(tmp_path / "plugs"))
        argv = [a for i in range(len(bad)) for a in ("--plugin", f"named_{i}")]
        p = dsh("run", "--headless", "hi", "--root", str(root), *argv, cwd=tmp_path, env=env)
        sent = [t["function"]["name"] for t in srv.requests[0]["body"].get("tools") or []]
    assert p.returncode == 0, p.stderr
    assert p.stdout.decode() == "fine\n"  # the session works: the bad names never reach a request
    err = p.stderr.decode().splitlines()
    assert len(err) == len(bad)
    for i, name in enumerate(bad):
        assert f"named_{i}" in err[i] and "failed to load" in err[i]
        assert f"tool name {name!r} is not valid: use 1-64 letters, digits, '_' or '-'" in err[i]
    assert "good_tool" not in sent  # a failed plugin's registrations are undone
    assert all(n and len(n) <= 64 and " " not in n for n in sent)


async def test_the_messages_route_redacts_echoed_keys():
    import base64

    import pytest

    from dsh_tui.llm.messages.provider import MessagesProvider
    from dsh_tui.llm.protocol import LlmError, ModelInfo
    from tests.llm.sse_server import json_reply

    echoed = base64.b64encode(f"Bearer {KEY}".encode()).decode()
    with ScriptServer() as srv:
        srv.push(json_reply(401, {"type": "error", "error": {"type": "authentication_error",
                                                             "message": f"bad {echoed}"}},
                            headers={"request-id": f"req-{KEY}"}))
        provider = MessagesProvider("m", srv.base_url, lambda: KEY, {"m": ModelInfo(context_window=1000)},
                                    label="M")
        with pytest.raises(LlmError) as info:
            await stream_all(provider)
        sent = srv.requests[0]["header_list"]
    assert str(info.value) == "bad [REDACTED]" and info.value.request_id == "req-[REDACTED]"
    assert [v for k, v in sent if k.lower() in ("x-api-key", "authorization")] == [KEY]


async def test_the_messages_route_joins_a_surrogate_pair_split_across_deltas():
    from dsh_tui.llm.messages.provider import MessagesProvider
    from dsh_tui.llm.protocol import ModelInfo
    from tests.llm.test_messages import block, delta, end, start, stop

    with ScriptServer() as srv:
        events = [start(), block(0, {"type": "text", "text": ""}),
                  delta(0, {"type": "text_delta", "text": "a \ud83d"}),
                  delta(0, {"type": "text_delta", "text": "\ude00 b"}), stop(0), *end("end_turn")]
        # json.dumps writes each half as its \\uXXXX escape, as a gateway slicing the string would
        import json

        from tests.llm.sse_server import Reply

        steps = [b"event: " + e["type"].encode() + b"\ndata: " + json.dumps(e).encode() + b"\n\n" for e in events]
        srv.push(Reply(headers={"content-type": "text/event-stream"}, steps=steps))
        provider = MessagesProvider("m", srv.base_url, lambda: KEY, {"m": ModelInfo(context_window=1000)}, label="M")
        chunks = await stream_all(provider)
    (done,) = [c for c in chunks if c["type"] == "block-end"]
    assert done["block"]["text"] == "a \U0001f600 b"


async def test_an_sse_payload_nested_100k_deep_is_a_malformed_response_not_a_recursion_error():
    import pytest

    from dsh_tui.llm.protocol import MALFORMED_RESPONSE, LlmError

    deep = b'data: {"choices":[],"junk":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n\n"
    with ScriptServer() as srv:
        srv.push(sse_reply(chunk("before"), deep, STOP))
        with pytest.raises(LlmError) as info:
            await stream_all(provider_for(srv))
    assert info.value.code == MALFORMED_RESPONSE


def test_a_key_a_plugin_logs_is_redacted_on_stderr_and_in_plugins_log(tmp_path):
    root = tmp_path / "root"
    (tmp_path / "plugs").mkdir()
    (tmp_path / "plugs" / "chatty_plugin.py").write_text(
        "import os\nname = 'chatty'\n"
        "def apply(ctx):\n"
        "    ctx.log.info('detail %s', os.environ['LOCAL_KEY'])\n"
        "    ctx.log.warning('the key is ' + os.environ['LOCAL_KEY'])\n")
    with ScriptServer() as srv:
        srv.push(sse_reply(chunk("fine"), STOP))
        configure(srv.base_url, provider_extra='api_key_env = "LOCAL_KEY"\n')
        env = dict(os.environ, LOCAL_KEY=KEY, PYTHONPATH=str(tmp_path / "plugs"))
        p = dsh("run", "--headless", "hi", "--root", str(root), "--plugin", "chatty_plugin", cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr
    assert "dsh-tui: plugin chatty: the key is [REDACTED]" in p.stderr.decode().splitlines()
    from dsh_tui.paths import cache_dir

    log = (cache_dir() / "logs" / "plugins.log").read_text()
    assert "detail [REDACTED]" in log and "the key is [REDACTED]" in log and KEY not in log
