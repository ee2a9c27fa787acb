"""``dsh-tui run --headless --mcp ...`` as a real subprocess against the local model server: the reference
MCP server (server-everything, Node 22 from npm) and the test server; what the model receives is exactly
dsh's conversion. Plus the command line's refusals."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.llm.sse_server import ScriptServer, chunk, sse_reply
from tests.mcp.helpers import call_chunks, image_unavailable, run_headless, tool_messages, write_settings

USAGE = {"prompt_tokens": 3, "completion_tokens": 1}
NO_STORE = image_unavailable("m")  # the text-only model "m" (tests/mcp/helpers.py)



@pytest.mark.interop
def test_server_everything_through_run_headless(tmp_path, everything):
    calls = [("e1", "mcp__everything__echo", {"message": "hello"}),
             ("e2", "mcp__everything__get-sum", {"a": 2, "b": 3}),
             ("e3", "mcp__everything__get-tiny-image", {}),
             ("e4", "mcp__everything__get-resource-links", {"count": 2}),
             ("e5", "mcp__everything__get-resource-reference", {"resourceType": "Text", "resourceId": 1}),
             ("e6", "mcp__everything__get-structured-content", {"location": "Chicago"}),
             ("e7", "mcp__everything__simulate-research-query", {"topic": "x"}),
             ("e8", "mcp__everything__get-sum", {"a": "two"})]
    with ScriptServer() as srv:
        srv.push(sse_reply(*call_chunks(*calls), chunk(finish="tool_calls", usage=USAGE)),
                 sse_reply(chunk("done"), chunk(finish="stop", usage=USAGE)))
        write_settings(srv)
        p = run_headless(tmp_path, "use the tools", "--preset", "full-access", "--mcp",
                 "everything=" + shlex.join(everything))
        assert p.returncode == 0, p.stderr
        assert p.stdout == "done\n"
        got = tool_messages(srv.requests[1])
        tools = {t["function"]["name"]: t["function"] for t in srv.requests[1]["body"]["tools"]}
    assert got["e1"] == "Echo: hello"
    assert got["e2"] == "The sum of 2 and 3 is 5."
    assert got["e3"] == "Here's the image you requested:" + NO_STORE + "The image above is the MCP logo."
    assert got["e4"] == ("Here are 2 resource links to resources available in this server:\n"
                         "Resource link: Blob Resource 1 (demo://resource/dynamic/blob/1)\n"
                         "Resource link: Text Resource 2 (demo://resource/dynamic/text/2)")
    assert got["e5"] == ("Returning resource reference for Resource 1:\n[embedded resource unsupported; raw "
                         "resource data remains available to programmatic callers]\nYou can access this resource "
                         "using the URI: demo://resource/dynamic/text/1")
    weather = json.loads(got["e6"])  # the text block; structuredContent never reaches the model
    assert set(weather) == {"temperature", "conditions", "humidity"}
    assert got["e7"] == ('Error: Tool "simulate-research-query" requires task-based execution, which this bridge '
                         "does not support")
    assert got["e8"].startswith("Error: invalid arguments")  # refused against the listed schema
    assert tools["mcp__everything__echo"]["description"] == "Echoes back the input string"
    assert tools["mcp__everything__echo"]["parameters"]["properties"]["message"]["type"] == "string"


def test_a_test_server_from_settings_and_a_broken_one_that_costs_its_startup_timeout(tmp_path):
    server = f'command = {json.dumps(sys.executable)}\nargs = ["-m", "tests.mcp.server", "stdio"]\n' \
             f'cwd = {json.dumps(str(REPO))}\n'
    with ScriptServer() as srv:
        srv.push(sse_reply(*call_chunks(("c1", "mcp__t__echo", {"text": "from settings"})),
                           chunk(finish="tool_calls", usage=USAGE)),
                 sse_reply(chunk("ok"), chunk(finish="stop", usage=USAGE)))
        write_settings(srv, f"[mcp.servers.t]\n{server}allowed_tools = [\"echo\"]\n"
                       f"[mcp.servers.hang]\n{server}env = {{ MCP_TEST_HANG = \"1\" }}\nstartup_timeout_ms = 500\n")
        p = run_headless(tmp_path, "go")
        assert p.returncode == 0, p.stderr
        assert tool_messages(srv.requests[1]) == {"c1": "echo: from settings"}


def test_a_required_server_that_fails_stops_the_run_with_one_line(tmp_path):
    with ScriptServer() as srv:
        write_settings(srv, f"[mcp.servers.req]\ncommand = {json.dumps(str(tmp_path / 'missing'))}\n"
                       "fail_on_startup_error = true\n")
        p = run_headless(tmp_path, "go")
    assert p.returncode == 1
    assert p.stderr == (f"dsh-tui: MCP server req failed to start: cannot start {tmp_path / 'missing'}: "
                        "no such file or directory\n")
    assert srv.requests == []


def test_bad_mcp_settings_and_flags_are_one_line(tmp_path):
    with ScriptServer() as srv:
        srv.push(sse_reply(chunk("ok"), chunk(finish="stop", usage=USAGE)))
        write_settings(srv, '[mcp.servers.x]\ncommand = "a"\ntool_call_timeout_ms = "soon"\n')
        p = run_headless(tmp_path, "go")
    assert p.returncode == 0, p.stderr  # a plugin that fails to load is reported; the run goes on
    assert p.stderr == ("dsh-tui: plugin mcp (builtin) failed to load: settings: "
                        "mcp.servers.x.tool_call_timeout_ms: Input should be a valid integer\n")
    p = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "x", "--mcp", "no-equals"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert p.stderr.startswith("dsh-tui: run: argument --mcp: expected NAME=COMMAND")
    assert p.stderr.count("\n") == 1


def test_mcp_in_headless_mode_prints_the_server_list(tmp_path):
    server = shlex.join([sys.executable, str(REPO / "tests" / "mcp" / "server.py"), "stdio"])
    with ScriptServer() as srv:
        write_settings(srv)
        p = run_headless(tmp_path, "/mcp", "--mcp", f"t={server}", "--mcp", f"gone={tmp_path / 'missing'}")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[:3] == ["2 MCP server(s):", "t  ready · 12 tools", f"  stdio: {server}"]
    assert lines[3].startswith("  tools: ") and "echo" in lines[3].split(", ")[0] + lines[3]  # the names
    assert len(lines[3].removeprefix("  tools: ").split(", ")) == 12
    lines.pop(3)
    assert lines.pop(3) == "  prompts: /mcp__t__greet, /mcp__t__review"  # its prompts as slash commands
    assert lines[3].startswith("gone  reconnecting (attempt ") and \
        lines[3].endswith(f"· cannot start {tmp_path / 'missing'}: no such file or directory")
    assert srv.requests == []  # a command, not a prompt
