"""The ``lsp`` built-in (dsh_tui/extensions/lsp/): dsh's ``lsp`` tool and diagnostics after write/edit, against a
REAL Python language server (python-lsp-server, a test extra) driven by headless runs with a scripted model on
127.0.0.1.

dsh's recorded ``lsp-definition`` scenario replays in test_conformance.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dsh_tui.extensions.lsp import render
from tests.llm.sse_server import ScriptServer, chunk, sse_reply, tool_call
from tests.llm.test_provider_harness import _env

KEY = "sk-lsp-0123456789abcdefghij"
USAGE = {"prompt_tokens": 30, "completion_tokens": 4}
SHAPES = textwrap.dedent("""\
    class Shape:
        def area(self):
            return 0


    def make_square(side):
        return side * side
    """)
MAIN = textwrap.dedent("""\
    from shapes import make_square

    print(make_square(3))
    total = make_square(4)
    """)


def _pylsp() -> list[str]:
    try:
        import pylsp  # noqa: F401
    except ImportError:  # pragma: no cover - a test extra (pyproject.toml)
        pytest.fail("python-lsp-server is a test extra: pip install -e '.[test]'")
    return [sys.executable, "-m", "pylsp"]


def _settings(tmp_path: Path, extra: str = "", command: list[str] | None = None) -> None:
    cmd = command or _pylsp()
    path = tmp_path / "config" / "dsh-tui" / "settings.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"[lsp]\n{extra}\n[lsp.servers.pylsp]\ncommand = {json.dumps(cmd[0])}\n"
                    f"args = {json.dumps(cmd[1:])}\nextensions = [\".py\"]\n")


def _calls(server: ScriptServer, *calls: tuple[str, dict], answer: str = "Done.") -> None:
    replies = []
    for i, (name, args) in enumerate(calls):
        replies.append(sse_reply(chunk(None, tool_calls=[tool_call(0, id=f"c{i}", name=name, args=json.dumps(args))]),
                                 chunk(None, finish="tool_calls", usage=USAGE)))
    replies.append(sse_reply(chunk(answer), chunk("", finish="stop", usage=USAGE)))
    server.push(*replies)


def _run(tmp_path: Path, server: ScriptServer, prompt: str, *extra: str):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = _env(tmp_path, DEEPSEEK_API_KEY=KEY, DEEPSEEK_BASE_URL=server.base_url, HOME=str(tmp_path / "home"))
    out = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "--preset", "full-access", "--root",
                          str(tmp_path / "s"), *extra, prompt], env=env, cwd=work, capture_output=True, text=True,
                         timeout=180)
    return out, work


def _tool_results(server: ScriptServer) -> list[str]:
    body = server.requests[-1]["body"]
    return [m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
            for m in body["messages"] if m["role"] == "tool"]


def _project(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "shapes.py").write_text(SHAPES)
    (work / "main.py").write_text(MAIN)
    return work


def test_definition_and_references_answer_from_a_real_python_language_server(tmp_path):
    _project(tmp_path)
    _settings(tmp_path)
    with ScriptServer() as server:
        _calls(server, ("lsp", {"operation": "goToDefinition", "file_path": "main.py", "line": 3, "character": 7}),
               ("lsp", {"operation": "findReferences", "file_path": "shapes.py", "line": 6, "character": 5}))
        out, _work = _run(tmp_path, server, "where is make_square?")
        assert out.returncode == 0, out.stderr
        first = server.requests[0]["body"]
        results = _tool_results(server)
    tools = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert tools["lsp"]["description"] == ("Query a language server for precise code navigation. operation is one "
                                           "of goToDefinition, findReferences, goToImplementation, hover. line and "
                                           "character are one-based UTF-16 cursor coordinates. findReferences "
                                           "includes the declaration.")
    system = first["messages"][0]["content"]
    system = system if isinstance(system, str) else json.dumps(system)
    assert system.index("Check the [exit code: N] marker") < system.index("Track every background job id") \
        < system.index("Use search/read for ordinary navigation. Use lsp when")  # dsh's order
    assert results[0] == "shapes.py:6:5"
    assert sorted(results[1].splitlines()) == ["main.py:1:20", "main.py:3:7", "main.py:4:9", "shapes.py:6:5"]


def test_a_write_that_breaks_a_file_returns_its_diagnostic_and_a_setting_turns_it_off(tmp_path):
    _project(tmp_path)
    _settings(tmp_path)
    broken = "from shapes import make_square\n\nx = make_squar(2) + 1\n"
    with ScriptServer() as server:
        _calls(server, ("write", {"file_path": "broken.py", "content": broken}),
               ("write", {"file_path": "fine.py", "content": "y = 1\n"}),
               ("edit", {"file_path": "broken.py", "old_string": "make_squar(", "new_string": "make_square("}),
               ("lsp", {"operation": "goToDefinition", "file_path": "broken.py", "line": 3, "character": 5}))
        out, _work = _run(tmp_path, server, "write it")
        assert out.returncode == 0, out.stderr
        results = _tool_results(server)
    assert "LSP errors detected in this file, please fix:" in results[0]
    assert f'<diagnostics file="{(tmp_path / "work" / "broken.py").resolve()}">' in results[0]
    assert "ERROR [3:5] undefined name 'make_squar'" in results[0]
    assert "LSP errors" not in results[1]  # a clean file: the plain write result
    assert "LSP errors" not in results[2]  # the edit fixed it (the open document changed: didChange)
    assert results[3] == "shapes.py:6:5"
    _settings(tmp_path, "diagnostics = false")
    with ScriptServer() as server:
        _calls(server, ("write", {"file_path": "broken2.py", "content": broken}))
        out, _work = _run(tmp_path, server, "write it again")
        assert out.returncode == 0, out.stderr
        assert "LSP errors" not in _tool_results(server)[0]


def test_a_missing_server_is_one_clear_line_and_no_server_means_no_tool(tmp_path):
    _project(tmp_path)
    _settings(tmp_path, command=["/nonexistent/pylsp-missing"])
    with ScriptServer() as server:
        _calls(server, ("lsp", {"operation": "hover", "file_path": "main.py", "line": 1, "character": 1}),
               ("lsp", {"operation": "hover", "file_path": "notes.txt", "line": 1, "character": 1}),
               ("lsp", {"operation": "hover", "file_path": "../outside.py", "line": 1, "character": 1}))
        (tmp_path / "outside.py").write_text("x = 1\n")
        out, _work = _run(tmp_path, server, "hover")
        assert out.returncode == 0, out.stderr
        results = _tool_results(server)
    assert results[0] == 'Error: language server "pylsp" is not installed: /nonexistent/pylsp-missing not found'
    assert results[1] == 'Error: no LSP provider handles "notes.txt"'
    assert results[2] == 'Error: source "../outside.py" resolves outside the workspace'  # as dsh's host.ts
    (tmp_path / "config" / "dsh-tui" / "settings.toml").write_text("")
    with ScriptServer() as server:
        server.push(sse_reply(chunk("Hi."), chunk("", finish="stop", usage=USAGE)))
        out, _work = _run(tmp_path, server, "hi")
        assert out.returncode == 0, out.stderr
        assert "lsp" not in {t["function"]["name"] for t in server.requests[0]["body"]["tools"]}


def test_the_server_dies_with_the_session(tmp_path):
    _project(tmp_path)
    wrapper = tmp_path / "pylsp-wrapper.sh"
    wrapper.write_text(f"#!/bin/sh\necho $$ > {tmp_path}/server.pid\nexec {' '.join(_pylsp())}\n")
    wrapper.chmod(0o755)
    _settings(tmp_path, command=[str(wrapper)])
    with ScriptServer() as server:
        _calls(server, ("lsp", {"operation": "goToDefinition", "file_path": "main.py", "line": 3, "character": 7}))
        out, _work = _run(tmp_path, server, "go")
        assert out.returncode == 0, out.stderr
    pid = int((tmp_path / "server.pid").read_text())
    ps = subprocess.run(["ps", "-o", "pid=,stat=", "-p", str(pid)], capture_output=True, text=True)
    assert ps.stdout.strip() == "" or ps.stdout.split()[1].startswith("Z"), ps.stdout


def test_rendering_follows_dsh():
    ws = Path("/ws").as_uri()
    locs = [{"uri": "file:///ws/a.py", "range": {"start": {"line": 0, "character": 6}, "end": {"line": 0, "character": 9}}},
            {"uri": "file:///ws/a.py", "range": {"start": {"line": 1, "character": 6}, "end": {"line": 1, "character": 9}}}]
    assert render.format_locations(locs, ws, 1, 16000) == "a.py:1:7\n… 1 more location omitted (limit 1)."
    assert render.format_locations([], ws, 1, 16000) == "No results."
    assert render.render_uri("file:///elsewhere/b.py", ws) == "/elsewhere/b.py"
    assert render.render_uri("jdt://x", ws) == "jdt://x"
    assert render.format_hover(None, 100) == "No hover information."
    assert render.format_hover({"contents": "x" * 100}, 60).endswith("\n… hover truncated (limit 60 characters).")
    with pytest.raises(Exception, match="line must be a positive integer"):
        render.parse_args({"operation": "hover", "file_path": "a.py", "line": 0, "character": 1})
    assert os.sep == "/"


def test_a_server_that_crashes_is_one_clear_line_with_its_last_stderr_line(tmp_path):
    _project(tmp_path)
    _settings(tmp_path, command=["sh", "-c", "echo 'Traceback (most recent call last):' >&2; "
                                             "echo 'ImportError: no module named jedi' >&2; exit 3"])
    with ScriptServer() as server:
        _calls(server, ("lsp", {"operation": "goToDefinition", "file_path": "main.py", "line": 3, "character": 7}))
        out, _work = _run(tmp_path, server, "go")
        assert out.returncode == 0, out.stderr
        assert _tool_results(server)[0] == ('Error: language server "pylsp" exited (exit code 3): '
                                            'ImportError: no module named jedi')


def test_the_tool_schema_and_prompt_section_are_dshs_byte_for_byte():
    from dsh_tui.extensions.lsp import LSP_PROMPT_TEXT, LSP_TOOL_SCHEMA
    from tests.conftest import FIXTURES

    d = FIXTURES / "examples" / "acp-agent" / "tests" / "snapshots" / "lsp-definition"
    recorded = next(t for t in json.loads((d / "tool-schemas.expected.json").read_text())["initial"]
                    if t["name"] == "lsp")
    assert json.dumps(LSP_TOOL_SCHEMA) == json.dumps(recorded)
    prompt = (d / "system-prompt.expected.md").read_text()
    assert f"\n\n{LSP_PROMPT_TEXT}\n\n" in prompt
    assert prompt.index(LSP_PROMPT_TEXT) > prompt.index("Track every background job id you start.")


def test_the_settings_lsp_table_configures_the_builtin_and_plugins_lsp_turns_it_off():
    from dsh_tui.config.settings import Settings
    from dsh_tui.runtime.plugins import discover

    servers = {"pylsp": {"command": "pylsp", "extensions": [".py"]}}
    spec = next(s for s in discover(Settings({"lsp": {"servers": servers, "max_locations": 3}})) if s.id == "lsp")
    assert spec.enabled and spec.config == {"servers": servers, "max_locations": 3}
    off = Settings({"lsp": {"servers": servers}, "plugins": {"lsp": {"enabled": False}}})
    assert not next(s for s in discover(off) if s.id == "lsp").enabled


def test_a_server_that_never_answers_is_bounded_by_the_calls_timeout_and_killed_with_the_session(tmp_path):
    _project(tmp_path)
    _settings(tmp_path, "timeout_ms = 1500", command=["sh", "-c", f"echo $$ > {tmp_path}/hang.pid; exec sleep 600"])
    with ScriptServer() as server:
        _calls(server, ("lsp", {"operation": "goToDefinition", "file_path": "main.py", "line": 3, "character": 7}))
        out, _work = _run(tmp_path, server, "go")
        assert out.returncode == 0, out.stderr
        result = _tool_results(server)[0]
    assert result == "Error: tool call timed out after 1500ms"
    pid = int((tmp_path / "hang.pid").read_text())
    ps = subprocess.run(["ps", "-o", "pid=,stat=", "-p", str(pid)], capture_output=True, text=True)
    assert ps.stdout.strip() == "" or ps.stdout.split()[1].startswith("Z"), ps.stdout


FRAMING_SERVER = r'''
import json, sys
out = sys.stdout.buffer
def send(msg):
    body = json.dumps({"jsonrpc": "2.0", **msg}).encode()
    data = b"Content-Length: %d\r\n\r\n" % len(body) + body
    for i in range(0, len(data), 7):  # split frames across writes
        out.write(data[i:i + 7]); out.flush()
def read():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line: sys.exit(0)
        if line in (b"\r\n", b"\n"): break
        k, _, v = line.decode().partition(":")
        if k.lower() == "content-length": length = int(v)
    return json.loads(sys.stdin.buffer.read(length))
while True:
    m = read()
    if m.get("method") == "initialize":
        send({"id": 99, "method": "workspace/configuration", "params": {"items": [{"section": "x"}, {}]}})
        answer = read()
        if answer != {"jsonrpc": "2.0", "id": 99, "result": [{"answer": 42}, {"answer": 42}]}:
            sys.exit(5)
        send({"id": m["id"], "result": {"capabilities": {"textDocumentSync": 1, "hoverProvider": True},
                                        "echo": answer}})
    elif m.get("method") == "textDocument/hover":
        send({"method": "textDocument/publishDiagnostics", "params": {"uri": "file:///x", "diagnostics": []}})
        send({"id": m["id"], "result": {"contents": [{"language": "python", "value": "def f()"}, "doc"]}})
    elif m.get("method") == "shutdown":
        send({"id": m["id"], "result": None})
    elif m.get("method") == "exit":
        sys.exit(0)
'''


async def test_the_client_frames_answers_server_requests_and_shuts_down(tmp_path):
    from dsh_tui.extensions.lsp.client import LspClient

    (tmp_path / "server.py").write_text(FRAMING_SERVER)
    client = LspClient("fake", sys.executable, [str(tmp_path / "server.py")], str(tmp_path),
                       configuration={"answer": 42}, request_timeout=20)
    try:
        await client.ensure_started()
        assert client.capabilities["hoverProvider"] is True
        mark, opened = await client.sync("file:///x", "python", "x = 1\n")
        hover = await client.request("textDocument/hover", {"textDocument": {"uri": "file:///x"},
                                                            "position": {"line": 0, "character": 0}})
        assert render.normalize_hover(hover) == {"contents": "```python\ndef f()\n```\n\ndoc"}
        assert opened and await client.wait_diagnostics("file:///x", mark, 5) == []
    finally:
        await client.close()
    assert client.proc is not None and client.proc.returncode == 0  # it exited on shutdown/exit, not a kill
