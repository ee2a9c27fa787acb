"""Persistent terminals (dsh_tui/extensions/terminals/): dsh's six terminal_* tools over real PTYs, driven by a
scripted model on 127.0.0.1 through real headless runs; the terminals die with the session (checked in
/proc). dsh's recorded ``pty-tools`` scenarios replay in test_conformance.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dsh_tui.extensions import terminals
from dsh_tui.extensions.terminals import local
from tests.conftest import FIXTURES
from tests.llm.sse_server import ScriptServer, chunk, sse_reply, tool_call
from tests.llm.test_provider_harness import _env

KEY = "sk-terminals-0123456789abcdefghij"
USAGE = {"prompt_tokens": 30, "completion_tokens": 4}
PTY_TOOLS = FIXTURES / "examples" / "acp-agent" / "tests" / "snapshots" / "pty-tools"
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PTYs and /proc: Linux")


def _calls(server: ScriptServer, *calls: tuple[str, dict], answer: str = "Done.", last: object = None) -> None:
    """One model step per tool call, then the answer (or ``last``: a reply of the test's own)."""
    for i, (name, args) in enumerate(calls):
        server.push(sse_reply(chunk(None, tool_calls=[tool_call(0, id=f"c{i}", name=name, args=json.dumps(args))]),
                              chunk(None, finish="tool_calls", usage=USAGE)))
    server.push(last if last is not None else sse_reply(chunk(answer), chunk("", finish="stop", usage=USAGE)))


def _settings(tmp_path: Path, extra: str = "") -> None:
    path = tmp_path / "config" / "dsh-tui" / "settings.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[plugins.terminals]\nenabled = true\n" + extra)


def _argv(tmp_path: Path, prompt: str, preset: str) -> list[str]:
    return [sys.executable, "-m", "dsh_tui", "run", "--headless", "--preset", preset, "--root", str(tmp_path / "s"),
            prompt]


def _run(tmp_path: Path, server: ScriptServer, prompt: str, preset: str = "full-access", **env_extra: str):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = _env(tmp_path, DEEPSEEK_API_KEY=KEY, DEEPSEEK_BASE_URL=server.base_url, HOME=str(tmp_path / "home"),
               **env_extra)
    out = subprocess.run(_argv(tmp_path, prompt, preset), env=env, cwd=work, capture_output=True, text=True,
                         timeout=120)
    return out, work


def _results(server: ScriptServer) -> list[str]:
    """The text of each tool result, in order, as the model saw it in the last request."""
    body = server.requests[-1]["body"]
    return [m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
            for m in body["messages"] if m["role"] == "tool"]


def _processes_with(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,stat,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines()[1:] if marker in line and " Z" not in line and "ps -eo" not in line]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_six_tools_and_the_section_are_dshs_byte_for_byte():
    recorded = json.loads((PTY_TOOLS / "tool-schemas.expected.json").read_text())["initial"]
    theirs = {t["name"]: t for t in recorded if t["name"].startswith("terminal_")}
    ours = {s["name"]: s for s in terminals.SCHEMAS}
    assert json.dumps(ours, sort_keys=True) == json.dumps(theirs, sort_keys=True)
    assert set(terminals.TOOL_NAMES) == set(theirs)
    system = (PTY_TOOLS / "system-prompt.expected.md").read_text()
    assert terminals.SECTION in system


def test_rendering_and_bounds_follow_dsh():
    send = {"viewport": "printf 'PTY_OK\\n'\nPTY_OK\ndsh> ", "waitReason": "stdin_read",
            "sessionStatus": {"kind": "running"}, "truncated": False}
    assert terminals.render_send(send, 64) == "K\ndsh> \n[wait: stdin_read]\n[session: running]\n[output truncated]"
    assert terminals.render_send({**send, "viewport": ""}, 1000).startswith("(no new output)\n[wait: stdin_read]")
    exited = {"kind": "exited", "exitCode": None, "signal": "SIGHUP"}
    assert terminals.render_list([{"sessionId": "pty-1", "name": "main", "type": "shell", "pid": 7,
                                   "status": exited}], 1000) == "pty-1 (main) [shell] exited code=null signal=SIGHUP pid=7"
    assert terminals.render_list([], 64) == "(no terminal sessions)"
    assert terminals.render_spawn({"sessionId": "pty-1", "type": "shell", "motd": ""}, 1000) == \
        "started terminal session pty-1 [type: shell]\n(no startup output)"
    assert terminals.bound_terminal_text("é" * 100, 64).endswith("\n[output truncated]")
    # the sanitizer: escapes gone (one split across chunks), the prompt marker seen, CRLF made newlines
    s = local.Sanitizer(1024)
    assert s.push("a\x1b[1") == ("a", False, None)
    text, prompt, tail = s.push("mb\r\n\x1b]133;D;0\x07dsh> ")
    assert (text, prompt, tail) == ("b\ndsh> ", True, "dsh> ")


def test_a_python_repl_driven_through_terminal_tools_across_steps(tmp_path):
    _settings(tmp_path)
    with ScriptServer() as server:
        _calls(server,
               ("terminal_open", {"type": "shell", "name": "py"}),
               ("terminal_send", {"sessionId": "pty-1", "text": "python3 -q"}),
               ("terminal_send", {"sessionId": "pty-1", "text": "1+1"}),
               ("terminal_send", {"sessionId": "pty-1", "text": "x = 20"}),
               ("terminal_send", {"sessionId": "pty-1", "text": "x * 2 + 2"}),
               ("terminal_read", {"sessionId": "pty-1", "offset": 0, "count": 3}),
               ("terminal_list", {}),
               ("terminal_close", {"sessionId": "pty-1"}),
               ("terminal_list", {}))
        out, _work = _run(tmp_path, server, "use a python REPL")
        assert out.returncode == 0, out.stderr
        results = _results(server)
        tools = [t["function"]["name"] if "function" in t else t["name"] for t in server.requests[0]["body"]["tools"]]
        system = json.dumps(server.requests[0]["body"]["messages"][0])
    assert {"terminal_open", "terminal_send", "terminal_read", "terminal_signal", "terminal_close",
            "terminal_list"} <= set(tools)
    assert "Use a terminal session only when work needs persistent terminal state" in system
    assert results[0] == "started terminal session pty-1 (py) [type: shell]\ndsh> "
    assert results[1] == "python3 -q\n>>> \n[wait: stdin_read]\n[session: running]"
    assert results[2] == "1+1\n2\n>>> \n[wait: stdin_read]\n[session: running]"
    assert results[4] == "x * 2 + 2\n42\n>>> \n[wait: stdin_read]\n[session: running]"  # state across steps
    assert results[5] == ">>> x * 2 + 2\n42\n>>> \n[lines: 0-3 of 7]"
    pid = int(results[6].rsplit("pid=", 1)[1])
    assert results[6] == f"pty-1 (py) [shell] running pid={pid}"
    assert results[7] == "closed terminal session pty-1"
    assert results[8] == "(no terminal sessions)"
    assert not Path(f"/proc/{pid}").exists()
    assert _processes_with("python3 -q") == []


def test_a_dev_server_is_watched_across_steps_and_closing_kills_it(tmp_path):
    _settings(tmp_path, "idle_silence_ms = 1000\n")
    port = _free_port()
    fetch = f"python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:{port}/').status)\""
    with ScriptServer() as server:
        _calls(server,
               ("terminal_open", {"type": "shell", "name": "dev"}),
               ("terminal_send", {"sessionId": "pty-1", "text": f"python3 -m http.server {port} --bind 127.0.0.1"}),
               ("bash", {"command": f"sleep 0.5; {fetch}", "description": "fetch the page"}),
               ("terminal_read", {"sessionId": "pty-1"}),
               ("terminal_close", {"sessionId": "pty-1"}),
               ("bash", {"command": f"{fetch} || echo refused", "description": "fetch again"}))
        out, _work = _run(tmp_path, server, "start the dev server and watch it")
        assert out.returncode == 0, out.stderr
        results = _results(server)
    assert f"Serving HTTP on 127.0.0.1 port {port}" in results[1]
    assert results[1].endswith("[wait: inferred_idle]\n[session: running]")  # a server never returns a prompt
    assert results[2].startswith("200")
    assert '"GET / HTTP/1.1" 200' in results[3]
    assert results[4] == "closed terminal session pty-1"
    assert "refused" in results[5]
    assert _processes_with(f"http.server {port}") == []


def test_terminals_end_with_the_session_without_a_close(tmp_path):
    _settings(tmp_path)
    with ScriptServer() as server:
        _calls(server, ("terminal_open", {"type": "shell"}),
               ("terminal_send", {"sessionId": "pty-1", "text": "sleep 1001 & sleep 1002"}))
        _settings(tmp_path, "idle_silence_ms = 500\n")
        out, _work = _run(tmp_path, server, "leave it running")
        assert out.returncode == 0, out.stderr
        assert "[wait: inferred_idle]" in _results(server)[1]
    assert _processes_with("sleep 1001") == [] and _processes_with("sleep 1002") == []


def test_terminals_die_when_dsh_tui_is_sigkilled(tmp_path):
    _settings(tmp_path, "idle_silence_ms = 500\n")
    port = _free_port()
    marker = f"http.server {port}"
    with ScriptServer() as server:
        stall = sse_reply(60.0, chunk("late"), chunk("", finish="stop", usage=USAGE), end="stall")
        _calls(server, ("terminal_open", {"type": "shell"}),
               ("terminal_send", {"sessionId": "pty-1", "text": f"python3 -m {marker} --bind 127.0.0.1"}),
               last=stall)
        work = tmp_path / "work"
        work.mkdir()
        env = _env(tmp_path, DEEPSEEK_API_KEY=KEY, DEEPSEEK_BASE_URL=server.base_url, HOME=str(tmp_path / "home"))
        proc = subprocess.Popen(_argv(tmp_path, "serve", "full-access"), env=env, cwd=work,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(600):  # the third request: the server is up and the model is thinking
                if len(server.requests) >= 3:
                    break
                time.sleep(0.05)
            assert len(server.requests) >= 3 and _processes_with(marker)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
            for _ in range(200):
                if not _processes_with(marker):
                    break
                time.sleep(0.05)
            assert _processes_with(marker) == []
        finally:
            if proc.poll() is None:
                proc.kill()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_terminal_runs_in_the_sandbox_under_workspace_write(tmp_path):
    from dsh_tui.tools.sandbox import SandboxSettings, probe

    if probe(SandboxSettings(mode="bwrap"))[0] is None:
        pytest.skip("bubblewrap cannot create namespaces here")
    _settings(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    with ScriptServer() as server:
        _calls(server, ("terminal_open", {"type": "shell"}),
               ("terminal_send", {"sessionId": "pty-1", "text": f"touch inside.txt {outside}/x.txt; echo rc=$?"}),
               ("terminal_close", {"sessionId": "pty-1"}))
        out, work = _run(tmp_path, server, "touch", preset="workspace-write", DSH_TUI_SANDBOX="bwrap")
        assert out.returncode == 0, out.stderr
        results = _results(server)
    assert "Read-only file system" in results[1] and "rc=1" in results[1]
    assert (work / "inside.txt").exists() and not (outside / "x.txt").exists()


def test_the_plugin_is_off_by_default_and_its_options_are_checked():
    from dsh_tui.runtime.plugins import OFF_BY_DEFAULT, builtin_specs, discover

    assert "terminals" in OFF_BY_DEFAULT
    assert not next(s for s in builtin_specs(features=True) if s.id == "terminals").enabled
    assert next(s for s in discover({"plugins": {"terminals": {"enabled": True}}}) if s.id == "terminals").enabled
    with pytest.raises(Exception, match="unknown option"):
        terminals._config({"nope": 1})
    with pytest.raises(Exception, match="at least 64"):
        terminals._config({"max_result_bytes": 10})


def test_a_prompt_for_input_returns_stdin_read_and_the_answer_goes_through(tmp_path):
    _settings(tmp_path)
    with ScriptServer() as server:
        _calls(server, ("terminal_open", {"type": "shell"}),
               ("terminal_send", {"sessionId": "pty-1", "text": "read -p 'Name? ' n; echo hello $n"}),
               ("terminal_send", {"sessionId": "pty-1", "text": "Bob"}),
               ("terminal_send", {"sessionId": "pty-1", "text": "sleep 30"}),
               ("terminal_signal", {"sessionId": "pty-1", "signal": "SIGKILL"}),
               ("terminal_close", {"sessionId": "pty-1"}))
        _settings(tmp_path, "idle_silence_ms = 1000\n")
        out, _work = _run(tmp_path, server, "ask for a name")
        assert out.returncode == 0, out.stderr
        results = _results(server)
    assert results[1] == "read -p 'Name? ' n; echo hello $n\nName? \n[wait: stdin_read]\n[session: running]"
    assert results[2] == "Bob\nhello Bob\ndsh> \n[wait: stdin_read]\n[session: running]"
    assert results[3] == "sleep 30\n\n[wait: inferred_idle]\n[session: running]"
    assert results[4].startswith("delivered SIGKILL to foreground process group ")
    assert results[5] == "closed terminal session pty-1"


def test_a_background_send_is_a_pty_send_job(tmp_path):
    _settings(tmp_path)
    with ScriptServer() as server:
        _calls(server, ("terminal_open", {"type": "shell"}),
               ("terminal_send", {"sessionId": "pty-1", "text": "sleep 0.5; echo BG_DONE", "run_in_background": True}),
               ("job_output", {"job_id": "pty-send-1", "wait": True, "timeout_ms": 20000}),
               ("terminal_close", {"sessionId": "pty-1"}))
        out, _work = _run(tmp_path, server, "in the background")
        assert out.returncode == 0, out.stderr
        results = _results(server)
    assert results[1] == "started background job pty-send-1"
    assert "BG_DONE\ndsh> " in results[2] and results[2].endswith("[status: completed, wait: stdin_read]")
