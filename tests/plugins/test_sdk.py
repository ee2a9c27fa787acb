"""The Python SDK (``from dsh_tui import Harness``) in-process against the local HTTP model server: dsh's
``DeepSeekHarness(...).run(prompt)`` shape, ``base_url``/``api_key``, continuing a session, ``on_event``,
the ``async`` twin, content-block input and plugin objects."""

from __future__ import annotations

import json
import types

from dsh_tui.plugins import user_message
from tests.llm.sse_server import ScriptServer, chunk, sse_reply


def _text(text: str):
    return sse_reply(chunk(text, role="assistant"), chunk(finish="stop", usage={"prompt_tokens": 5,
                                                                                "completion_tokens": 2}))


def test_run_takes_base_url_and_api_key_and_continues_a_session(tmp_path):
    from dsh_tui import DeepSeekHarness, Harness, RunResult

    assert DeepSeekHarness is Harness
    ws = tmp_path / "ws"
    ws.mkdir()
    root = tmp_path / "sessions"
    seen: list[dict] = []
    with ScriptServer() as srv:
        srv.push(_text("first answer"), _text("second answer"))
        with Harness(provider="deepseek-official", model="deepseek-v4-flash", cwd=ws, session_root=root,
                     preset="workspace-write", base_url=srv.base_url, api_key="sk-sdk-test") as h:
            first = h.run("hello there", session_id=None, on_event=seen.append)
            second = h.run("and again", session_id=first.session_id)
        requests = [r for r in srv.requests]
    assert isinstance(first, RunResult)
    assert (first.final_response, first.finish_reason, first.session_root) == ("first answer", "completed",
                                                                               str(root))
    assert first.events == seen and "turn/end" in [e["type"] for e in seen]  # on_event saw every event
    assert (second.final_response, second.finish_reason) == ("second answer", "completed")
    assert second.session_id == first.session_id and second.events[0]["seq"] > first.events[-1]["seq"]
    assert all({k.lower(): v for k, v in r["headers"].items()}["authorization"] == "Bearer sk-sdk-test"
               for r in requests)
    continued = json.dumps(requests[1]["body"]["messages"])
    assert "hello there" in continued and "first answer" in continued and "and again" in continued
    assert len(list(root.rglob("session*.jsonl*"))) == 1  # one ordinary dsh session under session_root


async def test_arun_takes_content_blocks_and_plugin_objects(tmp_path):
    from dsh_tui import Harness

    plugin = types.ModuleType("sdk_note_plugin")
    plugin.name = "sdk-note"
    applied = []

    def apply(ctx, config):
        applied.append(dict(config))

        async def pre_step(payload, next):
            decision = await next()
            note = user_message("note from the SDK plugin", source={"kind": "plugin", "plugin": "sdk-note"})
            return {**decision, "messages": [*decision["messages"], note]}

        ctx.on("agent/pre-step", pre_step)

    plugin.apply = apply
    ws = tmp_path / "ws"
    ws.mkdir()
    with ScriptServer() as srv:
        srv.push(_text("block answer"))
        async with Harness(cwd=ws, session_root=tmp_path / "sessions", plugins=[plugin], base_url=srv.base_url,
                           api_key="sk-sdk-test") as h:
            result = await h.arun([{"type": "text", "text": "a prompt as content blocks"}])
        body = json.dumps(srv.requests[0]["body"]["messages"])
    assert (result.final_response, result.finish_reason) == ("block answer", "completed")
    assert applied == [{}]
    assert "a prompt as content blocks" in body and "note from the SDK plugin" in body


def test_an_unknown_session_id_is_a_harness_error(tmp_path):
    import pytest

    from dsh_tui import Harness, HarnessError

    with ScriptServer() as srv, Harness(cwd=tmp_path, session_root=tmp_path / "sessions", base_url=srv.base_url,
                                        api_key="sk-sdk-test") as h:
        with pytest.raises(HarnessError, match="cannot continue session no-such-session: session no-such-session "
                                               "not found"):
            h.run("hi", session_id="no-such-session")
        assert srv.requests == []
