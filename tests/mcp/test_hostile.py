"""Hostile MCP servers (tests/mcp/hostile.py: raw JSON-RPC over stdio, real processes): nothing hangs,
nothing floods, nothing prints a traceback; MCP calls ask for approval like the built-in tools; the first
request waits (bounded) for the servers so it already offers their tools."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from dsh_tui.llm import scripted
from tests.conftest import REPO
from tests.llm.sse_server import ScriptServer, chunk, sse_reply
from tests.mcp.helpers import (
    call_chunks,
    mcp_agent,
    results,
    run_headless,
    server,
    tool_messages,
    until,
    write_settings,
)

HOSTILE = str(REPO / "tests" / "mcp" / "hostile.py")
USAGE = {"prompt_tokens": 3, "completion_tokens": 1}


def hostile(mode: str, n: int = 0, **extra) -> dict:
    return {"command": sys.executable, "args": [HOSTILE, mode, str(n)], **extra}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def server_pids(tmp_path: Path) -> list[int]:
    """Processes still running hostile.py (this test's servers: none may outlive the test)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if HOSTILE.encode() in cmd:
                out.append(int(entry.name))
    return out


async def turn(agent, prompt: str = "go", timeout: float = 60) -> None:
    agent.followup(prompt)
    await asyncio.wait_for(agent.wait_idle(), timeout)


# ---- #35.1: every request is bounded ------------------------------------------------------------
@pytest.mark.parametrize(("mode", "stage"), [("noinit", "initialize"), ("nolist", "tools/list")])
async def test_a_server_that_never_answers_fails_the_call_within_its_startup_timeout(tmp_path, mode, stage):
    cfg = hostile(mode, startup_timeout_ms=500, reconnect={"enabled": False})
    agent = mcp_agent([scripted.call("c1", "mcp__h__echo", {"text": "hi"}), scripted.text("done")], {"h": cfg},
                      tmp_path)
    await turn(agent)  # on the old code: waits for good (the first attempt never ends)
    text, is_error = results(agent)["c1"]
    assert is_error
    assert text == f"Error: MCP server h is not available (failed: no answer to {stage} within 0.5 s)"
    assert agent.session.events[-1]["data"]["reason"] == {"kind": "completed"}
    rows = {r.name: r.text for r in agent.mcp.status()}
    assert rows["h"] == f"h  failed: no answer to {stage} within 0.5 s"
    await agent.dispose()
    assert server_pids(tmp_path) == []


async def test_a_call_the_server_never_answers_times_out_and_esc_cancels_one(tmp_path):
    cfg = hostile("nocall", tool_call_timeout_ms=500)
    agent = mcp_agent([scripted.call("c1", "mcp__h__echo", {"text": "a"}), scripted.text("one"),
                       scripted.call("c2", "mcp__h__echo", {"text": "b"})], {"h": cfg}, tmp_path,
                      tool_grace_s=5)
    await turn(agent)
    text, is_error = results(agent)["c1"]
    assert is_error and "timed out" in text
    cfg2 = server(agent, "h").config
    cfg2.tool_call_timeout_ms = 600_000
    agent.followup("again")
    await until(lambda: any(e["type"] == "tool/call" and e["data"]["callId"] == "c2" for e in agent.session.events))
    await asyncio.sleep(0.1)
    agent.cancel({"kind": "user"})  # Esc
    await asyncio.wait_for(agent.wait_idle(), 30)
    assert results(agent)["c2"] == ("Error: tool call aborted", True)
    await agent.dispose()


async def test_invalid_utf8_and_garbage_lines_on_stdout_are_skipped_and_counted(tmp_path):
    agent = mcp_agent([scripted.call("c1", "mcp__h__echo", {"text": "héllo"}), scripted.text("done")],
                      {"h": hostile("badutf8")}, tmp_path)
    await turn(agent)
    assert results(agent)["c1"] == ("echo: héllo", False)
    srv = server(agent, "h")
    assert srv.state == "ready"
    assert srv.stats.bad_lines >= 6  # two per reply: initialize, tools/list, the call
    await agent.dispose()


# ---- #35.2: no traceback in the terminal --------------------------------------------------------

def test_garbage_on_stdout_prints_no_traceback_and_goes_to_the_mcp_log(tmp_path):
    with ScriptServer() as srv:
        srv.push(sse_reply(*call_chunks(("c1", "mcp__g__echo", {"text": "through"})), chunk(finish="tool_calls",
                                                                                      usage=USAGE)),
                 sse_reply(chunk("ok"), chunk(finish="stop", usage=USAGE)))
        write_settings(srv)
        p = run_headless(tmp_path, "go", "--preset", "full-access", "--mcp",
                 "g=" + shlex.join([sys.executable, HOSTILE, "garbage", "3"]))
        assert p.returncode == 0, p.stderr
        assert tool_messages(srv.requests[1]) == {"c1": "echo: through"}
    assert p.stdout == "ok\n"
    assert p.stderr == ""  # the old code: 9 tracebacks from the mcp library's logging
    from dsh_tui.extensions.mcp import log_path

    logged = log_path().read_text()
    assert "mcp server g: skipped a stdout line: not JSON: 'garbage line 0 <not json>'" in logged


def test_headless_names_a_broken_server_in_one_line_and_ends_within_its_timeout(tmp_path):
    with ScriptServer() as srv:
        srv.push(sse_reply(*call_chunks(("c1", "mcp__dead__echo", {"text": "x"})), chunk(finish="tool_calls", usage=USAGE)),
                 sse_reply(chunk("ok"), chunk(finish="stop", usage=USAGE)))
        write_settings(srv, f"[mcp.servers.dead]\ncommand = {json.dumps(sys.executable)}\n"
                       f"args = [{json.dumps(HOSTILE)}, \"noinit\"]\nstartup_timeout_ms = 500\n"
                       "reconnect = { enabled = false }\n")
        p = run_headless(tmp_path, "go", "--preset", "full-access", timeout=60)  # the old code: still running at 90 s
        assert p.returncode == 0, p.stderr
        assert tool_messages(srv.requests[1]) == {
            "c1": "Error: MCP server dead is not available (failed: no answer to initialize within 0.5 s)"}
    assert p.stdout == "ok\n"
    assert p.stderr == "dsh-tui: MCP server dead: failed: no answer to initialize within 0.5 s\n"


# ---- #35.3: a huge result is spilled ------------------------------------------------------------
async def test_a_60_mb_result_is_spilled_and_the_model_gets_head_tail_and_path(tmp_path):
    agent = mcp_agent([scripted.call("c1", "mcp__h__big"), scripted.text("done")], {"h": hostile("big", 60)},
                      tmp_path)
    await turn(agent, timeout=120)
    text, is_error = results(agent)["c1"]
    assert not is_error
    # the runtime's spill of a large result (as for every tool): head, tail, the path of the whole
    assert text.startswith("BEGIN\n0123456789")
    assert len(text.encode()) < 70_000
    assert "\nEND\n\n(Omitted " in text
    path = Path(text.split("Full formatted result stored at: ")[1].split(". Use read")[0])
    assert path.stat().st_size > 60_000_000
    with path.open("rb") as fh:
        fh.seek(-4, os.SEEK_END)
        assert fh.read() == b"\nEND"
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    log_size = sum(len(json.dumps(e)) for e in agent.session.events)
    assert log_size < 200_000  # the log keeps the bounded text, not 60 MB
    await agent.dispose()


# ---- #35.6: caps --------------------------------------------------------------------------------
async def test_twenty_thousand_tools_are_capped_and_named_in_one_line(tmp_path):
    agent = mcp_agent([scripted.text("ok")], {"h": hostile("many", 20_000)}, tmp_path)
    srv = server(agent, "h")
    await until(lambda: srv.state == "ready")
    assert len(srv.tools) == 128
    assert srv.status().notes == ["20003 tools listed; only the first 128 are used"]
    await turn(agent)
    assert len([t for t in agent.provider.requests[0]["tools"] if t["name"].startswith("mcp__h__")]) == 128
    await agent.dispose()


async def test_a_result_nested_100000_deep_is_an_error_result(tmp_path):
    agent = mcp_agent([scripted.call("c1", "mcp__h__deep"), scripted.text("one"),
                       scripted.call("c2", "mcp__h__echo", {"text": "still here"}), scripted.text("two")],
                      {"h": hostile("deep", 100_000)}, tmp_path)
    await turn(agent)
    assert results(agent)["c1"] == ("Error: the MCP server's reply is nested more than 256 levels deep: discarded",
                                    True)
    await turn(agent, "again")
    assert results(agent)["c2"] == ("echo: still here", False)
    await agent.dispose()


async def test_a_flood_of_list_changed_notices_is_coalesced(tmp_path):
    agent = mcp_agent([scripted.call("c1", "mcp__h__flood"), scripted.text("one"),
                       scripted.call("c2", "mcp__h__lists"), scripted.text("two")],
                      {"h": hostile("flood", 5000)}, tmp_path)
    await turn(agent)
    assert results(agent)["c1"] == ("flooded", False)
    srv = server(agent, "h")
    await until(lambda: not srv._resync_tasks)
    await turn(agent, "count")
    lists = int(results(agent)["c2"][0])
    assert 2 <= lists <= 4  # the first listing, then one (or two) re-syncs: not 5000
    await agent.dispose()


async def test_a_flood_of_stderr_is_drained_and_only_its_tail_kept(tmp_path):
    agent = mcp_agent([scripted.call("c1", "mcp__h__echo", {"text": "x"}), scripted.text("ok")],
                      {"h": hostile("stderr", 200)}, tmp_path)
    await turn(agent, timeout=120)
    assert results(agent)["c1"] == ("echo: x", False)
    srv = server(agent, "h")
    assert srv.stats.stderr_bytes > 200 * 1024 * 1024
    assert len(srv.stats.stderr_tail) <= 4096
    assert srv.stats.stderr_last_line() == "last stderr line"
    await agent.dispose()


async def test_crafted_names_and_schemas_are_left_out_one_by_one_and_named(tmp_path):
    agent = mcp_agent([scripted.text("ok")], {"h": hostile("crafted")}, tmp_path)
    srv = server(agent, "h")
    await until(lambda: srv.state == "ready")
    names = sorted(srv.tools)
    assert "bash" not in names and "mcp__h__bash" in names  # prefixed: no clash with the built-in
    assert all(len(n) <= 64 and all(c.isalnum() or c in "_-" for c in n) for n in names)
    notes = srv.status().notes
    assert 'tool "long_description": description cut to 4096 characters' in notes
    assert 'tool "string_schema" left out: its input schema is not an object schema (type "string")' in notes
    assert 'tool "deep_schema" left out: its input schema is nested more than 32 levels deep' in notes
    assert any(n.startswith('tool "huge_schema" left out: its input schema is ') for n in notes)
    assert any(n.startswith("tools/list entry 13 left out: not a valid tool") for n in notes)  # name 42
    assert any(n.startswith("tools/list entry 14 left out: not a valid tool") for n in notes)  # no name
    assert any(n.startswith('tool "list_schema" left out') for n in notes)
    assert all("\n" not in n for n in notes)
    assert len(srv.tools["mcp__h__long_description"].description) == 4096
    await turn(agent)
    sent = {t["name"] for t in agent.provider.requests[0]["tools"]}
    assert sent >= set(names)
    await agent.dispose()


# ---- #26.3: MCP calls under the approval rules --------------------------------------------------
@pytest.mark.parametrize("preset", ["read-only", "workspace-write"])
async def test_an_mcp_call_asks_and_without_an_answer_is_refused(tmp_path, preset):
    agent = mcp_agent([scripted.call("c1", "mcp__h__echo", {"text": "x"}), scripted.text("ok")],
                      {"h": hostile("echo")}, tmp_path, preset=preset)
    await turn(agent)
    asked = [e["data"] for e in agent.session.events if e["type"] == "approval/asked"]
    assert asked and asked[0]["toolName"] == "mcp__h__echo"
    assert asked[0]["reason"] == f"mcp__h__echo is an MCP server's tool (under the {preset} preset)"
    assert results(agent)["c1"] == ('Error: tool "mcp__h__echo" requires approval, but no approval channel is '
                                    "available", True)
    await agent.dispose()


async def test_allowed_tools_and_trusted_read_only_annotations_run_without_asking(tmp_path):
    calls = [("c1", "mcp__a__echo", {"text": "allowed"}), ("c2", "mcp__a__pid", {}),
             ("c3", "mcp__t__pid", {}), ("c4", "mcp__t__echo", {"text": "not read-only"}),
             ("c5", "mcp__s__echo", {"text": "star"})]
    agent = mcp_agent([scripted.calls(calls), scripted.text("ok")],
                      {"a": hostile("echo", allowed_tools=["echo"]), "t": hostile("echo", trust_annotations=True),
                       "s": hostile("echo", allowed_tools=["*"])}, tmp_path, preset="read-only")
    await turn(agent)
    got = results(agent)
    assert got["c1"] == ("echo: allowed", False)
    assert got["c2"][1] is True  # readOnlyHint, but server a's annotations are not trusted: asks
    assert got["c3"][1] is False  # trusted and annotated read-only
    assert got["c4"][1] is True  # trusted, but not annotated read-only: asks
    assert got["c5"] == ("echo: star", False)
    asked = sorted(e["data"]["toolName"] for e in agent.session.events if e["type"] == "approval/asked")
    assert asked == ["mcp__a__pid", "mcp__t__echo"]
    await agent.dispose()


async def test_an_answered_approval_runs_the_mcp_call(tmp_path):
    agent = mcp_agent([scripted.call("c1", "mcp__h__echo", {"text": "yes"}), scripted.text("ok")],
                      {"h": hostile("echo")}, tmp_path, preset="workspace-write")
    agent.bus.on("approval/request", lambda payload, next_: "allowed-once", scope=agent.id)
    await turn(agent)
    assert results(agent)["c1"] == ("echo: yes", False)
    await agent.dispose()


def test_headless_refuses_an_unapproved_mcp_call_as_it_refuses_bash(tmp_path):
    with ScriptServer() as srv:
        srv.push(sse_reply(*call_chunks(("c1", "mcp__h__echo", {"text": "x"}), ("c2", "bash", {"command": "true"})),
                           chunk(finish="tool_calls", usage=USAGE)),
                 sse_reply(chunk("ok"), chunk(finish="stop", usage=USAGE)))
        write_settings(srv)
        p = run_headless(tmp_path, "go", "--preset", "read-only", "--mcp",
                 "h=" + shlex.join([sys.executable, HOSTILE, "echo"]))
        assert p.returncode == 0, p.stderr
        got = tool_messages(srv.requests[1])
    assert got["c1"] == 'Error: tool "mcp__h__echo" requires approval, but no approval channel is available'
    assert got["c2"] == 'Error: tool "bash" requires approval, but no approval channel is available'


# ---- #30.1: the first request waits for the servers ---------------------------------------------
async def test_the_first_request_already_offers_a_slow_servers_tools(tmp_path):
    agent = mcp_agent([scripted.text("hello")], {"h": hostile("slowstart", 1500)}, tmp_path)
    await turn(agent)
    names = [t["name"] for t in agent.provider.requests[0]["tools"]]
    assert "mcp__h__echo" in names  # the old code: the first request went out before the server was ready
    await agent.dispose()


async def test_a_hung_server_costs_the_first_request_its_timeout_once(tmp_path):
    agent = mcp_agent([scripted.text("one"), scripted.text("two")],
                      {"hang": hostile("noinit", startup_timeout_ms=400), "ok": hostile("echo")}, tmp_path)
    await turn(agent)
    names = [t["name"] for t in agent.provider.requests[0]["tools"]]
    assert "mcp__ok__echo" in names and not any(n.startswith("mcp__hang__") for n in names)
    hang = server(agent, "hang")
    assert hang.error == "no answer to initialize within 0.4 s"
    assert agent.mcp.waited
    hang.config.startup_timeout_ms = 600_000  # a later attempt hangs for good: a later turn does not wait
    await until(lambda: hang.attempts >= 2)
    await turn(agent, "again", timeout=30)
    assert agent.session.events[-1]["data"]["reason"] == {"kind": "completed"}
    await agent.dispose()
