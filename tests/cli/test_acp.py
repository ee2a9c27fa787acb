"""``dsh-tui acp`` driven by the official ACP Python SDK as the client (a real subprocess over stdio, a
scripted model server on 127.0.0.1): initialize, a new session, a streamed prompt, a tool call whose
permission request the client answers, a cancelled prompt, and ``session/load`` of that session in a
fresh agent process replaying its history."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, text_block
from acp.schema import AllowedOutcome, ClientCapabilities, DeniedOutcome, RequestPermissionResponse
from acp.stdio import spawn_agent_process

from tests.llm.sse_server import ScriptServer, chunk, sse_reply, tool_call
from tests.llm.test_provider_harness import _env

KEY = "sk-acp-0123456789abcdefghij"
USAGE = {"prompt_tokens": 50, "completion_tokens": 5}


class Client:
    def __init__(self, answer: str = "allow-once") -> None:
        self.updates: list[Any] = []
        self.asked: list[Any] = []
        self.answer = answer

    async def session_update(self, session_id: str, update: Any, **_kw: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, options: Any, session_id: str, tool_call: Any, **_kw: Any) -> Any:
        self.asked.append((tool_call, [o.option_id for o in options]))
        if self.answer == "cancel":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.answer))

    def kinds(self) -> list[str]:
        return [u.session_update for u in self.updates]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.updates if u.session_update == kind)


async def _agent(tmp_path, server, client):
    env = _env(tmp_path, DEEPSEEK_API_KEY=KEY, DEEPSEEK_BASE_URL=server.base_url)
    return spawn_agent_process(lambda _agent: client, sys.executable, "-m", "dsh_tui", "acp", env=env, cwd=tmp_path)


async def test_a_prompt_streams_a_tool_call_asks_permission_and_load_replays_it(tmp_path):
    work = tmp_path / "ws"
    work.mkdir()
    with ScriptServer() as server:
        server.push(
            sse_reply(chunk(None, reasoning="Shell needed."),
                      chunk(None, tool_calls=[tool_call(0, id="c1", name="bash",
                                                        args='{"command": "echo hi", "description": "say hi"}')]),
                      chunk(None, finish="tool_calls", usage=USAGE)),
            sse_reply(chunk("It printed "), chunk("hi."), chunk("", finish="stop", usage=USAGE)),
        )
        client = Client("allow-once")
        async with await _agent(tmp_path, server, client) as (conn, _proc):
            init = await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
            assert init.agent_capabilities.load_session is True and init.agent_info.name == "dsh-tui"
            new = await conn.new_session(cwd=str(work), mcp_servers=[])
            assert new.modes.current_mode_id == "workspace-write"
            done = await conn.prompt(session_id=new.session_id, prompt=[text_block("run echo hi")])
            assert done.stop_reason == "end_turn"
            await asyncio.sleep(0.2)
        assert client.text("agent_thought_chunk") == "Shell needed."
        assert client.text() == "It printed hi."
        (tool, options), = client.asked
        assert tool.tool_call_id == "c1" and tool.kind == "execute" and options == ["allow-once", "allow-always", "reject-once"]
        starts = [u for u in client.updates if u.session_update == "tool_call"]
        ends = [u for u in client.updates if u.session_update == "tool_call_update"]
        assert starts[0].kind == "execute" and ends[-1].status == "completed"
        assert "hi" in ends[-1].content[0].content.text
        # a fresh agent process loads the session and replays its history
        replay = Client()
        async with await _agent(tmp_path, server, replay) as (conn, _proc):
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
            await conn.load_session(cwd=str(work), session_id=new.session_id, mcp_servers=[])
            await asyncio.sleep(0.2)
        assert replay.text("user_message_chunk").startswith("run echo hi")
        assert replay.text() == "It printed hi." and "tool_call" in replay.kinds()


async def test_a_rejected_permission_reaches_the_model_and_cancel_stops_a_turn(tmp_path):
    work = tmp_path / "ws"
    work.mkdir()
    with ScriptServer() as server:
        server.push(
            sse_reply(chunk(None, tool_calls=[tool_call(0, id="c2", name="bash",
                                                        args='{"command": "rm -rf x", "description": "rm"}')]),
                      chunk(None, finish="tool_calls", usage=USAGE)),
            sse_reply(chunk("Not run."), chunk("", finish="stop", usage=USAGE)),
            sse_reply(chunk("slow"), 30.0, chunk("", finish="stop", usage=USAGE)),
        )
        client = Client("reject-once")
        async with await _agent(tmp_path, server, client) as (conn, _proc):
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
            new = await conn.new_session(cwd=str(work), mcp_servers=[])
            done = await conn.prompt(session_id=new.session_id, prompt=[text_block("delete x")])
            assert done.stop_reason == "end_turn"
            result = [u for u in client.updates if u.session_update == "tool_call_update"][-1]
            assert result.status == "failed" and "rejected" in result.content[0].content.text
            turn = asyncio.ensure_future(conn.prompt(session_id=new.session_id, prompt=[text_block("go slow")]))
            for _ in range(200):
                if "slow" in client.text():
                    break
                await asyncio.sleep(0.05)
            await conn.cancel(session_id=new.session_id)
            assert (await asyncio.wait_for(turn, 20)).stop_reason == "cancelled"


async def test_a_write_over_a_file_shows_its_old_text_and_paths_are_absolute(tmp_path):
    """Found driving Toad: a write's permission request showed no diff. ACP's diff of a write carries the file's
    old text (absent only for a new file), and its paths, like every ACP path, are absolute; a session/load
    replay still resolves them against the session's directory."""
    work = tmp_path / "ws"
    work.mkdir()
    (work / "notes.txt").write_text("old line\n")
    args = '{"file_path": "notes.txt", "content": "new line\\n"}'
    with ScriptServer() as server:
        server.push(
            sse_reply(chunk(None, tool_calls=[tool_call(0, id="r1", name="read", args='{"file_path": "notes.txt"}')]),
                      chunk(None, finish="tool_calls", usage=USAGE)),
            sse_reply(chunk(None, tool_calls=[tool_call(0, id="w1", name="write", args=args)]),
                      chunk(None, finish="tool_calls", usage=USAGE)),
            sse_reply(chunk(None, tool_calls=[tool_call(0, id="w2", name="write",
                                                        args='{"file_path": "sub/fresh.txt", "content": "x"}')]),
                      chunk(None, finish="tool_calls", usage=USAGE)),
            sse_reply(chunk("Written."), chunk("", finish="stop", usage=USAGE)),
        )
        client = Client("allow-once")
        async with await _agent(tmp_path, server, client) as (conn, _proc):
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
            new = await conn.new_session(cwd=str(work), mcp_servers=[])
            await conn.set_session_mode(session_id=new.session_id, mode_id="read-only")  # writes ask
            done = await conn.prompt(session_id=new.session_id, prompt=[text_block("rewrite notes")])
            assert done.stop_reason == "end_turn"
            await asyncio.sleep(0.2)
        assert (work / "notes.txt").read_text() == "new line\n"
        starts = {u.tool_call_id: u for u in client.updates if u.session_update == "tool_call"}
        (diff,) = starts["w1"].content
        assert (diff.type, diff.path, diff.old_text, diff.new_text) == ("diff", str(work / "notes.txt"),
                                                                        "old line\n", "new line\n")
        assert [loc.path for loc in starts["w1"].locations] == [str(work / "notes.txt")]
        (fresh,) = starts["w2"].content
        assert fresh.path == str(work / "sub" / "fresh.txt") and fresh.old_text is None
        assert [t.tool_call_id for t, _ in client.asked] == ["w1", "w2"]
        replay = Client()
        async with await _agent(tmp_path, server, replay) as (conn, _proc):
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
            await conn.load_session(cwd=str(tmp_path), session_id=new.session_id, mcp_servers=[])
            await asyncio.sleep(0.2)
        replayed = {u.tool_call_id: u for u in replay.updates if u.session_update == "tool_call"}
        assert replayed["w1"].content[0].path == str(work / "notes.txt")


async def test_the_model_is_a_config_option_the_client_can_change(tmp_path):
    work = tmp_path / "ws"
    work.mkdir()
    (tmp_path / "config" / "dsh-tui").mkdir(parents=True)
    (tmp_path / "config" / "dsh-tui" / "settings.toml").write_text(
        '[default]\nmodel = "deepseek-v4-flash"\n'
        '[providers.deepseek-official.models.deepseek-v4-flash]\ncontext_window = 1000000\n'
        '[providers.deepseek-official.models.deepseek-v4-pro]\ncontext_window = 1000000\n')
    with ScriptServer() as server:
        server.push(sse_reply(chunk("Pro here."), chunk("", finish="stop", usage=USAGE)))
        client = Client()
        async with await _agent(tmp_path, server, client) as (conn, _proc):
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
            new = await conn.new_session(cwd=str(work), mcp_servers=[])
            (model,) = new.config_options
            model = model.root if hasattr(model, "root") else model
            assert model.id == "model" and model.current_value == "deepseek-v4-flash"
            assert [o.value for o in model.options] == ["deepseek-v4-flash", "deepseek-v4-pro"]
            changed = await conn.set_config_option(config_id="model", session_id=new.session_id,
                                                   value="deepseek-v4-pro")
            option = changed.config_options[0]
            assert (option.root if hasattr(option, "root") else option).current_value == "deepseek-v4-pro"
            with pytest.raises(RequestError) as refused:
                await conn.set_config_option(config_id="model", session_id=new.session_id, value="gpt-9")
            assert "not one of" in str(refused.value.data)
            done = await conn.prompt(session_id=new.session_id, prompt=[text_block("who are you")])
            assert done.stop_reason == "end_turn"
        assert server.requests[0]["body"]["model"] == "deepseek-v4-pro"


async def test_an_inline_image_prompt_reaches_an_image_model_and_is_refused_for_a_text_model(tmp_path):
    """dsh's ACP image admission: advertised only when the configured model takes images; the image goes to the
    model as an ``image_url`` part; a non-canonical image is refused (``invalid_params``)."""
    import base64
    import io

    from acp import RequestError, image_block
    from PIL import Image

    work = tmp_path / "ws"
    work.mkdir()
    buf = io.BytesIO()
    Image.new("RGB", (8, 6), (0, 128, 0)).save(buf, "PNG")
    data = base64.b64encode(buf.getvalue()).decode()
    for model, takes in (("deepseek-flash", True), ("deepseek-v4-flash", False)):
        conf = tmp_path / "config" / "dsh-tui"
        conf.mkdir(parents=True, exist_ok=True)
        (conf / "settings.toml").write_text(f'[default]\nmodel = "{model}"\n')
        with ScriptServer() as server:
            server.push(sse_reply(chunk("A green box."), chunk("", finish="stop", usage=USAGE)))
            client = Client()
            async with await _agent(tmp_path, server, client) as (conn, _proc):
                init = await conn.initialize(protocol_version=PROTOCOL_VERSION,
                                             client_capabilities=ClientCapabilities())
                assert init.agent_capabilities.prompt_capabilities.image is takes
                new = await conn.new_session(cwd=str(work), mcp_servers=[])
                prompt = [text_block("what is this?"), image_block(data, "image/png")]
                if not takes:
                    try:
                        await conn.prompt(session_id=new.session_id, prompt=prompt)
                    except RequestError as err:
                        assert "inline image prompts were not advertised by this connection" in str(err.data)
                    else:
                        raise AssertionError("an image prompt to a text-only model was accepted")
                    assert server.requests == []
                    continue
                done = await conn.prompt(session_id=new.session_id, prompt=prompt)
                assert done.stop_reason == "end_turn"
                try:
                    await conn.prompt(session_id=new.session_id, prompt=[image_block(data + "\n", "image/png")])
                except RequestError as err:
                    assert "image data must be canonical base64" in str(err.data)
                else:
                    raise AssertionError("a non-canonical image was accepted")
            user = [m for m in server.requests[0]["body"]["messages"] if m["role"] == "user"][0]["content"]
            assert user[0] == {"type": "text", "text": "what is this?"}
            assert user[2]["image_url"]["url"] == f"data:image/png;base64,{data}"
