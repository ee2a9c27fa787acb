"""The built-in ``mcp`` plugin against real MCP servers (tests/mcp/server.py, on the ``mcp`` SDK) over stdio
and streamable HTTP on 127.0.0.1: what the model receives, list changes, crashes, reconnects, timeouts,
cancellation and the connections' lifetime."""

from __future__ import annotations

import asyncio
import os

import pytest

from dsh_tui.llm import scripted
from tests.mcp.helpers import (
    blocks,
    image_unavailable,
    mcp_agent,
    results,
    server,
    start_http_server,
    stdio,
    until,
)

NO_STORE = image_unavailable("mock-model")  # a text-only model (tests/mcp/helpers.py)


def tool_names(request: dict) -> list[str]:
    return [t["name"] for t in request.get("tools") or []]


async def test_results_reach_the_model_as_dsh_converts_them(tmp_path):
    calls = [("c1", "mcp__t__echo", {"text": "hi"}), ("c2", "mcp__t__image", {}), ("c3", "mcp__t__blocks", {}),
             ("c4", "mcp__t__fail", {"why": "bad input"}), ("c5", "mcp__t__structured", {}),
             ("c6", "mcp__t__empty", {}), ("c7", "mcp__t__task", {}), ("c8", "mcp__t__echo", "[1]")]
    agent = mcp_agent([scripted.calls(calls), scripted.text("done")], {"t": stdio()}, tmp_path)
    # the first request may go out before the server is ready: the calls wait for its first attempt
    agent.followup("go")
    await agent.wait_idle()
    got = results(agent)
    assert got["c1"] == ("echo: hi", False)
    assert blocks(agent, "c2") == [{"type": "text", "text": "before"}, {"type": "text", "text": NO_STORE},
                                   {"type": "text", "text": "after"}]
    assert got["c3"] == ("Resource link: notes (file:///tmp/notes.txt)\n"
                         "[embedded resource unsupported; raw resource data remains available to programmatic callers]\n"
                         "[audio result unsupported: audio/wav; raw audio data remains available to programmatic "
                         "callers]\ndone", False)
    assert got["c4"] == ("Error: it failed: bad input", True)
    assert got["c5"] == ('{"n":1}', False)
    assert got["c6"] == ("(empty returned no model-visible content)", False)
    assert got["c7"] == ('Error: Tool "task" requires task-based execution, which this bridge does not support', True)
    assert got["c8"][1] is True and got["c8"][0].startswith("Error: invalid arguments")  # a non-object: refused
    # exclusive: each call's result is committed before the next call starts
    kinds = [(e["type"], e["data"]["callId"] if e["type"] == "tool/call" else
              e["data"]["message"]["content"][0]["toolCallId"])
             for e in agent.session.events if e["type"] in ("tool/call", "tool/result")]
    assert kinds == [(k, c) for c, _n, _a in calls for k in ("tool/call", "tool/result")]
    # the second request carries the server's tools with their schemas as listed
    second = agent.provider.requests[1]
    echo = next(t for t in second["tools"] if t["name"] == "mcp__t__echo")
    assert echo == {"name": "mcp__t__echo", "description": "Echo the text back",
                    "parameters": {"type": "object", "properties": {"text": {"type": "string"}},
                                   "required": ["text"]}}
    await agent.dispose()


async def test_a_list_change_resyncs_the_tools(tmp_path):
    agent = mcp_agent([scripted.call("c1", "mcp__t__change"), scripted.call("c2", "mcp__t__added"),
                       scripted.text("done")], {"t": stdio()}, tmp_path)
    await until(lambda: server(agent, "t").state == "ready")
    assert "mcp__t__added" not in agent.tools.tools
    agent.followup("go")
    await agent.wait_idle()
    assert results(agent)["c2"] == ("I was added", False)  # a call waits for the re-sync in flight
    assert "mcp__t__added" in tool_names(agent.provider.requests[2])
    await agent.dispose()


async def test_a_crash_mid_call_fails_the_call_then_the_server_is_reconnected(tmp_path):
    cfg = stdio(reconnect={"initial_delay_ms": 1, "max_delay_ms": 50})
    agent = mcp_agent([scripted.call("c1", "mcp__t__crash"), scripted.text("one"),
                       scripted.call("c2", "mcp__t__echo", {"text": "back"}), scripted.text("two")],
                      {"t": cfg}, tmp_path)
    srv = server(agent, "t")
    await until(lambda: srv.state == "ready")
    agent.followup("crash it")
    await agent.wait_idle()
    text, is_error = results(agent)["c1"]
    assert is_error and text == "Error: Connection closed"
    assert "mcp__t__echo" in agent.tools.tools  # tools stay registered during the outage
    await until(lambda: srv.failed_attempts >= 1)
    assert "crashing on purpose" in srv.error  # the server's last stderr line names the cause
    await until(lambda: srv.state == "ready")
    agent.followup("again")
    await agent.wait_idle()
    assert results(agent)["c2"] == ("echo: back", False)
    await agent.dispose()


async def test_a_call_during_an_outage_fails_with_not_connected(tmp_path):
    cfg = stdio(reconnect={"enabled": False})
    agent = mcp_agent([scripted.call("c1", "mcp__t__crash"), scripted.text("one"),
                       scripted.call("c2", "mcp__t__echo", {"text": "x"}), scripted.text("two")], {"t": cfg}, tmp_path)
    srv = server(agent, "t")
    await until(lambda: srv.state == "ready")
    agent.followup("a")
    await agent.wait_idle()
    await until(lambda: srv.state == "failed")
    agent.followup("b")
    await agent.wait_idle()
    assert results(agent)["c2"] == ("Error: Not connected", True)
    await agent.dispose()


async def test_a_server_that_keeps_failing_is_given_up_and_its_tools_unregistered(tmp_path):
    cfg = stdio(env={"MCP_TEST_EXIT": "1"}, reconnect={"initial_delay_ms": 1, "max_delay_ms": 2, "max_attempts": 2})
    agent = mcp_agent([scripted.text("fine")], {"t": cfg}, tmp_path)
    srv = server(agent, "t")
    await until(lambda: srv.state == "failed")
    assert srv.error.startswith("gave up after 2 consecutive failed reconnect attempts (")
    assert "refusing to start" in srv.error
    assert srv.tools == {} and not any(n.startswith("mcp__") for n in agent.tools.tools)
    # by hand: a fresh budget
    srv.config.env.pop("MCP_TEST_EXIT")
    assert agent.mcp.reconnect("t")
    await until(lambda: srv.state == "ready")
    assert "mcp__t__echo" in agent.tools.tools
    await agent.dispose()


async def test_a_server_that_never_answers_costs_the_first_turn_its_startup_timeout_only(tmp_path):
    agent = mcp_agent([scripted.text("hello"), scripted.text("again")],
                      {"t": stdio(env={"MCP_TEST_HANG": "1"}, startup_timeout_ms=300),
                       "bad": {"command": str(tmp_path / "no-such-program")}}, tmp_path)
    agent.followup("hi")
    await agent.wait_idle()
    assert agent.session.events[-1]["data"]["reason"] == {"kind": "completed"}
    hang = server(agent, "t")
    assert hang.error == "no answer to initialize within 0.3 s"
    bad = server(agent, "bad")
    await until(lambda: bad.failed_attempts >= 1)
    assert f"cannot start {tmp_path / 'no-such-program'}: no such file or directory" in bad.error
    # reconnecting one that is stuck connecting starts a new attempt (the stuck one is dropped)
    hang.config.startup_timeout_ms = 600_000
    attempts = hang.attempts
    assert agent.mcp.reconnect("t")
    await until(lambda: hang.attempts == attempts + 1)
    assert hang.state == "connecting"
    rows = {r.name: r.text for r in agent.mcp.status()}
    assert rows["t"] == "t  connecting"
    agent.followup("later turns never wait for it")
    await asyncio.wait_for(agent.wait_idle(), 30)
    assert agent.session.events[-1]["data"]["reason"] == {"kind": "completed"}
    await agent.dispose()


async def test_a_slow_call_is_cancelled_with_the_turn_and_a_timeout_is_an_error(tmp_path):
    agent = mcp_agent([scripted.call("c1", "mcp__t__slow", {"seconds": 60}),  # the turn is cancelled: no reply
                       scripted.call("c2", "mcp__t__slow", {"seconds": 60}), scripted.text("y")],
                      {"t": stdio(tool_call_timeout_ms=300)}, tmp_path, tool_grace_s=5)
    await until(lambda: server(agent, "t").state == "ready")
    agent.followup("wait")
    await until(lambda: any(e["type"] == "tool/call" for e in agent.session.events))
    await asyncio.sleep(0.05)
    agent.cancel({"kind": "user"})
    await agent.wait_idle()
    assert results(agent)["c1"] == ("Error: tool call aborted", True)
    agent.followup("again")  # c2 times out after 300 ms (the SDK's error)
    await agent.wait_idle()
    text, is_error = results(agent)["c2"]
    assert is_error and "timed out" in text
    await agent.dispose()


async def test_the_environment_is_scrubbed_and_the_server_closes_with_the_agent(tmp_path, monkeypatch):
    from dsh_tui.config import config_dir

    monkeypatch.setenv("MY_API_KEY", "k")
    monkeypatch.setenv("DSH_SOMETHING", "d")
    monkeypatch.setenv("PLAIN_VALUE", "p")
    # a provider's key in a variable whose name does not look secret (the bash tool scrubs it too)
    config_dir().mkdir(parents=True, exist_ok=True)
    (config_dir() / "settings.toml").write_text(
        '[providers.gateway]\nbase_url = "http://127.0.0.1:9/v1"\napi_key_env = "GW_CRED"\n')
    monkeypatch.setenv("GW_CRED", "gw-secret")
    monkeypatch.setenv("HOLDS_THE_KEY", "gw-secret")
    agent = mcp_agent([scripted.calls([("c1", "mcp__t__env", {}), ("c2", "mcp__t__pid", {})]), scripted.text("ok")],
                      {"t": stdio(env={"GIVEN_TOKEN": "g"})}, tmp_path)
    agent.followup("env")
    await agent.wait_idle()
    names = results(agent)["c1"][0].split()
    assert "PLAIN_VALUE" in names and "GIVEN_TOKEN" in names
    assert "MY_API_KEY" not in names and "DSH_SOMETHING" not in names and "DSH_TUI_CHECK_REQUESTS" not in names
    assert "GW_CRED" not in names and "HOLDS_THE_KEY" not in names
    pid = int(results(agent)["c2"][0])
    os.kill(pid, 0)  # alive
    await agent.dispose()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert agent.mcp is None  # the manager is gone with the agent
    assert not any(n.startswith("mcp__") for n in agent.tools.tools)


async def test_streamable_http_with_headers(tmp_path):
    proc, url = start_http_server()
    try:
        agent = mcp_agent([scripted.call("c1", "mcp__web__echo", {"text": "over http"}), scripted.text("ok")],
                          {"web": {"url": url, "headers": {"X-Test": "1"}}}, tmp_path)
        agent.followup("go")
        await agent.wait_idle()
        assert results(agent)["c1"] == ("echo: over http", False)
        rows = agent.mcp.status()
        assert rows[0].transport == "streamable-http" and rows[0].state == "ready" and rows[0].target == url
        await agent.dispose()
    finally:
        proc.kill()
        proc.wait()


async def test_a_duplicate_name_fails_the_later_server(tmp_path):
    agent = mcp_agent([scripted.text("ok")], {"t": stdio()}, tmp_path,
                      cli=("t=python -m tests.mcp.server stdio",))
    rows = agent.mcp.status()
    assert [(r.name, r.state, r.error, r.source) for r in rows][1] == ("t", "failed", 'duplicate MCP server name "t"',
                                                                     "cli")
    await agent.dispose()


async def test_streamable_http_sends_the_configured_headers_and_a_refusal_is_the_reason(tmp_path):
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            seen.append({k.lower(): v for k, v in self.headers.items()})
            self.send_response(403)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/mcp"
        agent = mcp_agent([scripted.text("ok")], {"web": {"url": url, "headers": {"Authorization": "Bearer abc"},
                                                          "reconnect": {"enabled": False}}}, tmp_path)
        srv = server(agent, "web")
        await until(lambda: srv.state == "failed")
        assert seen and seen[0]["authorization"] == "Bearer abc"
        assert srv.error  # the SDK's reason, shown in the listing
        await agent.dispose()
    finally:
        httpd.shutdown()
        httpd.server_close()
