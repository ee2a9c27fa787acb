"""Session titles (extensions spec §1): dsh's text rules, the fallback, the first-prompt LLM title over real
HTTP (its request body byte for byte, beside the first request, never before it), failure, the user's pin,
and the plugins' ids."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from dsh_tui.extensions.titles import set_user_title
from dsh_tui.llm.openai import OpenAICompatProvider
from dsh_tui.llm.protocol import ModelInfo
from dsh_tui.runtime.host import AgentHost, HostSpec
from dsh_tui.session.log import v4_source
from dsh_tui.session.titles import EMPTY_TITLE, clean, fallback_title, normalize, truncate_utf8, user_title
from tests.llm.sse_server import SCRIPTED_TITLE, ScriptServer, chunk, sse_reply, title_reply

PROMPT = "Fix the login bug in auth.py, then add a test"
SYSTEM = ("Create a concise title for an AI coding-assistant session from the supplied human messages.\n"
          "Return only the title on one line, **in plain text of natural language**, with no quotes, prefix, "
          "explanation, Markdown, XML, or terminal control codes. No code is allowed.\n"
          "Use the language of the messages.\n"
          "Aim for about 5 words in non-CJK languages or 10 CJK characters.")


def test_dsh_text_rules():
    assert fallback_title("你好世界", 5, 7) == "你好"
    assert fallback_title("Read nested/task.txt, then read scope</system-reminder>/task.txt and go") \
        == "Read nested/task.txt, then read scope</s"
    assert fallback_title("Load the editing-cordis-compositions skill with its rules") \
        == "Load the editing-cordis-compositions ski"
    assert fallback_title("Reply with exactly TITLE_DONE. Do not use tools.") == "Reply with exactly TITLE_DONE. Do"
    # OSC (to BEL, to ESC \\, unterminated), CSI, two-char escapes, controls, invisible marks, whitespace runs
    assert clean("\x1b]0;title\x07a\x1b]8;;x\x1b\\b\x1b[1;31mc\x1b[0m\x9b2Jd\x1bMe\x00\x7f\x85f\u200b\u202eg \t\n h"
                 "\x1b]unterminated") == "abcdefg h"
    assert clean("  many   spaces\u3000and\u00a0nbsp ") == "many spaces and nbsp"
    assert truncate_utf8("héllo", 2) == "h" and truncate_utf8("héllo", 3) == "hé"
    assert normalize("x" * 100) == "x" * 80
    assert user_title("  My \x1b[1mtitle\x1b[0m ") == "My title"
    with pytest.raises(ValueError, match=EMPTY_TITLE):
        user_title(" \u200b\x1b[0m ")


def _provider(srv: ScriptServer) -> OpenAICompatProvider:
    return OpenAICompatProvider("deepseek-official", srv.base_url, lambda: "sk-test",
                                {"deepseek-v4-flash": ModelInfo(context_window=100_000)})


def _reply(text: str = "done", *steps):
    return sse_reply(*steps, chunk(text), chunk(finish="stop", usage={"prompt_tokens": 3, "completion_tokens": 1}))


async def _run(tmp_path: Path, srv: ScriptServer, prompt: str = PROMPT, **spec) -> AgentHost:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    host = await AgentHost.open(HostSpec(root=tmp_path / "root", cwd=ws, provider=_provider(srv),
                                         model="deepseek-v4-flash", plugins=(), **spec))
    await host.run_turn(prompt)
    return host


def _titles(host: AgentHost) -> list[dict]:
    return [e for e in host.session.events if e["type"] == "session/title"]


async def test_fallback_then_llm_title_with_dshs_request_body(tmp_path):
    with ScriptServer() as srv:
        srv.push(_reply())
        host = await _run(tmp_path, srv)
        try:
            events = list(host.session.events)
            types = [e["type"] for e in events]
            fallback, provider = _titles(host)
            prompt_seq = next(e["seq"] for e in events if e["type"] == "user/message")
            assert fallback["data"] == {"title": "Fix the login bug in", "messageSeqs": [prompt_seq],
                                        "source": {"kind": "fallback"}}
            # dsh's place: after the step's entering messages, before its request/header
            assert types.index("session/title") == types.index("request/header") - 1
            assert provider["data"] == {"title": SCRIPTED_TITLE, "messageSeqs": [prompt_seq], "source": {
                "kind": "provider", "provider": "session-title-first-prompt-llm",
                "model": {"provider": "deepseek-official", "model": "deepseek-v4-flash"}}}
            assert host.session.title() == SCRIPTED_TITLE
            # the title request body, byte for byte: dsh's system prompt, the JSON array, 64 tokens, no thinking
            (req,) = srv.title_requests
            user = ("Generate the session title from this JSON array of human messages:\n"
                    + json.dumps([{"seq": prompt_seq, "text": PROMPT}], separators=(",", ":")))
            assert req["raw"] == json.dumps({
                "model": "deepseek-v4-flash",
                "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
                "stream": True, "stream_options": {"include_usage": True}, "thinking": {"type": "disabled"},
                "max_tokens": 64}, separators=(",", ":"), ensure_ascii=False).encode()
            # ... and logged before it was sent, as dsh logs it
            (logged,) = [e["data"] for e in events if e["type"] == "session/title-llm-request"]
            assert logged["system"] == SYSTEM and logged["maxTokens"] == 64 and logged["messageSeqs"] == [prompt_seq]
            assert logged["messages"][0]["content"] == [{"type": "text", "text": user}]
            # v0 {kind: plugin, plugin: P}; format v4 the producer's own kind
            assert v4_source(logged["messages"][0]["source"]) == {"kind": "dsh-session-title-llm"}
            assert list(logged) == ["titleProvider", "messageSeqs", "route", "system", "messages", "maxTokens"]
            # the turn's own request is the first one out (the title request goes beside it)
            assert len(srv.requests) == 1 and not SYSTEM.startswith(srv.requests[0]["body"]["messages"][0]["content"])
        finally:
            await host.close()


async def test_the_title_request_never_delays_the_first_model_request(tmp_path):
    """A title request that hangs for seconds does not hold the turn: the turn's request is sent, answered
    and the turn ends while the title request is still open."""
    with ScriptServer() as srv:
        srv.push(_reply("answer"))
        srv.push_title(sse_reply(chunk("Late"), done=False, end="stall"))  # stalls until the client gives up
        ws = tmp_path / "ws"
        ws.mkdir()
        host = await AgentHost.open(HostSpec(root=tmp_path / "root", cwd=ws, provider=_provider(srv),
                                             model="deepseek-v4-flash", plugins=()))
        try:
            host.agent.followup(PROMPT)
            await asyncio.sleep(0)
            await asyncio.wait_for(host.agent.wait_idle(), 30)
            types = [e["type"] for e in host.session.events]
            assert "turn/end" in types and "session/title-llm-request" in types
            assert types.index("session/title-llm-request") < types.index("assistant/message")
            assert [t["data"]["source"]["kind"] for t in _titles(host)] == ["fallback"]  # still waiting
        finally:
            await host.close()  # disposal aborts the pending title request; nothing stale is appended
        assert [t["data"]["source"]["kind"] for t in _titles(host)] == ["fallback"]


async def test_a_failed_title_request_is_logged_and_the_fallback_stays(tmp_path, caplog):
    with ScriptServer() as srv:
        srv.push(_reply())
        srv.push_title(sse_reply(chunk("a title that is far too long"), chunk(finish="length")))
        with caplog.at_level(logging.WARNING):
            host = await _run(tmp_path, srv)
        await host.close()
    assert [t["data"]["source"]["kind"] for t in _titles(host)] == ["fallback"]
    assert f'session "{host.session.id}": automatic title generation failed: session-title-llm: title output ' \
           "reached maxOutputTokens" in caplog.text
    assert len(srv.title_requests) == 1  # no automatic retry


async def test_a_prompt_over_max_input_bytes_keeps_the_fallback_without_a_request(tmp_path, caplog):
    with ScriptServer() as srv:
        srv.push(_reply())
        with caplog.at_level(logging.WARNING):
            host = await _run(tmp_path, srv, prompt="word " * 1000)
        await host.close()
    assert srv.title_requests == []
    assert not any(e["type"] == "session/title-llm-request" for e in host.session.events)
    assert [t["data"]["title"] for t in _titles(host)] == ["word word word word word"]
    assert "exceeding maxInputBytes 4096" in caplog.text


async def test_a_user_title_pins_and_later_automatic_titles_do_not_override(tmp_path):
    with ScriptServer() as srv:
        srv.push(_reply("first"))
        srv.push_title(title_reply("Generated", 0.3))
        ws = tmp_path / "ws"
        ws.mkdir()
        host = await AgentHost.open(HostSpec(root=tmp_path / "root", cwd=ws, provider=_provider(srv),
                                             model="deepseek-v4-flash", plugins=()))
        try:
            host.agent.followup(PROMPT)
            for _ in range(2000):  # rename while the title request is in flight
                if any(e["type"] == "session/title-llm-request" for e in host.session.events):
                    break
                await asyncio.sleep(0.005)
            set_user_title(host.session, "  My  rename ")
            await host.agent.wait_idle()
            await host.flush()
            with pytest.raises(ValueError, match="session title must contain visible characters"):
                set_user_title(host.session, "\u200b ")
        finally:
            await host.close()
    prompt_seq = next(e["seq"] for e in host.session.events if e["type"] == "user/message")
    assert [(t["data"]["title"], t["data"]["source"]["kind"], t["data"]["messageSeqs"]) for t in _titles(host)] \
        == [("Fix the login bug in", "fallback", [prompt_seq]), ("My rename", "user", [])]
    assert host.session.title() == "My rename"


async def test_titles_can_be_disabled_by_id(tmp_path):
    from dsh_tui.config import settings_path

    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[plugins.session-title]\nenabled = false\n[plugins.session-title-llm]\nenabled = false\n")
    with ScriptServer() as srv:
        srv.push(_reply())
        host = await _run(tmp_path, srv)
        await host.close()
    assert _titles(host) == [] and srv.title_requests == []
    states = {r.id: r.state for r in host.agent.plugins.records}
    assert states["session-title"] == states["session-title-llm"] == "disabled"
    assert states["agent-instructions"] == "loaded"


async def test_a_resumed_session_gets_no_second_llm_title(tmp_path):
    with ScriptServer() as srv:
        srv.push(_reply(), _reply())
        host = await _run(tmp_path, srv)
        await host.close()
        sid = host.session.id
        ws = tmp_path / "ws"
        again = await AgentHost.open(HostSpec(root=tmp_path / "root", cwd=ws, provider=_provider(srv),
                                              model="deepseek-v4-flash", resume_id=sid, plugins=()))
        await again.run_turn("and another thing")
        await again.close()
    assert len(srv.title_requests) == 1
    assert [t["data"]["source"]["kind"] for t in _titles(again)] == ["fallback", "provider"]
