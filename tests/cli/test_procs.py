"""Issues #26 item 4, #37 item 4 and #35 item 4: no process dsh-tui started outlives it, and a signal ends the
running turn truthfully (``turn/end`` aborted, cause ``user``; exit ``128 + N``).

Everything is real: ``dsh-tui run --headless`` as a subprocess against the local scripted model server, real
``bash`` commands that record their pids, a hostile stdio MCP server (ignores SIGTERM and stdin's end, starts
a child of its own), real signals (``os.kill``), and the process table (``/proc``) as the judge."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dsh_tui.config import settings_path
from dsh_tui.store.fixture import open_log_file
from tests.llm.sse_server import ScriptServer, chunk, sse_reply, tool_call

USAGE = {"prompt_tokens": 3, "completion_tokens": 1}


def _settings(srv: ScriptServer) -> None:
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[default]\nprovider = "local"\nmodel = "m"\n'
                    f'[providers.local]\nbase_url = "{srv.base_url}/v1"\n')


def bash_call(cid: str, command: str, **extra) -> object:
    args = json.dumps({"command": command, "description": "run it", **extra})
    return sse_reply(chunk(tool_calls=[tool_call(0, id=cid, name="bash", args=args)]),
                     chunk(finish="tool_calls", usage=USAGE))


def answer(text: str = "done") -> object:
    return sse_reply(chunk(text), chunk(finish="stop", usage=USAGE))


def start(tmp_path: Path, *argv: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "dsh_tui", "run", "--headless", "go", "--root",
                             str(tmp_path / "root"), "--cwd", str(tmp_path), "--preset", "full-access", *argv],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ), start_new_session=True)


def wait_for(*paths: Path, proc: subprocess.Popen, timeout: float = 60) -> list[int]:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if all(p.exists() and p.read_text().strip() for p in paths):
            return [int(p.read_text().split()[0]) for p in paths]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError(f"never written: {paths}")


def alive(pid: int) -> bool:
    """A live (not zombie) process with this pid (the processes the tests watch are never reaped by us)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def gone(*pids: int, timeout: float = 10) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


def cleanup(*pids: int) -> None:
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def turn_end(tmp_path: Path) -> dict:
    logs = [p for p in (tmp_path / "root").rglob("session*.jsonl*")]
    assert len(logs) == 1, logs
    ends = [e for e in open_log_file(logs[0]).events if e["type"] == "turn/end"]
    return ends[-1]["data"]["reason"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_during_a_bash_call_ends_the_turn_as_aborted_and_kills_the_command(tmp_path, sig):
    """#26 item 4, #37 item 4: the running command (and what it started in the background) dies with the
    run, the log says the turn was aborted by the user, the exit code is 128 + N."""
    fg, bg = tmp_path / "fg.pid", tmp_path / "bg.pid"
    command = f"sleep 1001 > /dev/null 2>&1 & echo $! > {bg}; echo $$ > {fg}; sleep 1002"
    with ScriptServer() as srv:
        srv.push(bash_call("c1", command), answer(), answer())
        _settings(srv)
        p = start(tmp_path)
        pids = wait_for(fg, bg, proc=p)
        try:
            os.kill(p.pid, sig)
            out, err = p.communicate(timeout=60)
            assert p.returncode == 128 + sig, err
            assert "Traceback" not in err
            assert f"interrupted by {signal.Signals(sig).name}" in err
            assert gone(*pids), [alive(x) for x in pids]
        finally:
            cleanup(*pids)
            if p.poll() is None:
                p.kill()
    assert turn_end(tmp_path) == {"kind": "aborted", "reason": {"kind": "user"}}


def test_what_a_finished_foreground_call_left_running_ends_with_the_run(tmp_path):
    """#37 item 4: ``sleep 1001 > /dev/null 2>&1 &`` in a completed call no longer outlives ``run``."""
    bg = tmp_path / "bg.pid"
    with ScriptServer() as srv:
        srv.push(bash_call("c1", f"sleep 1001 > /dev/null 2>&1 & echo $! > {bg}"), answer(), answer())
        _settings(srv)
        p = start(tmp_path)
        try:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            assert out == "done\n"
            (pid,) = wait_for(bg, proc=p)
            assert gone(pid)
        finally:
            if bg.exists():
                cleanup(int(bg.read_text()))


def test_a_background_job_and_a_foreground_call_die_on_sigterm(tmp_path):
    """#37 item 4: a ``run_in_background`` job survived SIGTERM (``atexit`` never ran on a death by signal)."""
    job, fg = tmp_path / "job.pid", tmp_path / "fg.pid"
    with ScriptServer() as srv:
        srv.push(bash_call("c1", f"echo $$ > {job}; exec sleep 1003", run_in_background=True),
                 bash_call("c2", f"echo $$ > {fg}; exec sleep 1004"), answer(), answer())
        _settings(srv)
        p = start(tmp_path)
        pids = wait_for(job, fg, proc=p)
        try:
            os.kill(p.pid, signal.SIGTERM)
            _, err = p.communicate(timeout=60)
            assert p.returncode == 128 + signal.SIGTERM, err
            assert gone(*pids)
        finally:
            cleanup(*pids)
    assert turn_end(tmp_path) == {"kind": "aborted", "reason": {"kind": "user"}}


HOSTILE_MCP = textwrap.dedent("""
    import json, os, signal, subprocess, sys
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # hostile: ignores SIGTERM and the end of its stdin
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    out = sys.stdout
    def send(obj):
        out.write(json.dumps(obj) + "\\n"); out.flush()
    for line in sys.stdin:
        msg = json.loads(line)
        mid, method = msg.get("id"), msg.get("method")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "hang", "version": "1"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [{"name": "hang", "description": "hangs",
                  "inputSchema": {"type": "object", "properties": {}}}]}})
        elif method == "tools/call":
            child = subprocess.Popen(["sleep", "1005"])
            with open(sys.argv[1], "w") as f:
                f.write(f"{os.getpid()} {child.pid}\\n")
    signal.pause()
""")


def test_an_mcp_server_and_its_child_end_with_a_run_stopped_during_a_call(tmp_path):
    """#35 item 4: SIGTERM of ``run --headless`` while an MCP call waits: the server (which ignores SIGTERM
    and its stdin's end) and the process it started are gone after the run; the turn is aborted."""
    server, pids_file = tmp_path / "hang_server.py", tmp_path / "mcp.pid"
    server.write_text(HOSTILE_MCP)
    call = sse_reply(chunk(tool_calls=[tool_call(0, id="m1", name="mcp__hang__hang", args="{}")]),
                     chunk(finish="tool_calls", usage=USAGE))
    with ScriptServer() as srv:
        srv.push(call, answer(), answer())
        _settings(srv)
        p = start(tmp_path, "--mcp", f"hang={sys.executable} {server} {pids_file}")
        end = time.monotonic() + 60
        while not (pids_file.exists() and len(pids_file.read_text().split()) == 2):
            assert p.poll() is None and time.monotonic() < end, p.communicate()
            time.sleep(0.05)
        pids = [int(x) for x in pids_file.read_text().split()]
        try:
            os.kill(p.pid, signal.SIGTERM)
            _, err = p.communicate(timeout=60)
            assert p.returncode == 128 + signal.SIGTERM, err
            assert "Traceback" not in err
            assert gone(*pids), [alive(x) for x in pids]
        finally:
            cleanup(*pids)
    assert turn_end(tmp_path) == {"kind": "aborted", "reason": {"kind": "user"}}


def test_ctrl_c_during_a_foreground_subagents_command_cancels_the_whole_tree(tmp_path):
    """#26 item 4: Ctrl+C (SIGINT) of ``run --headless`` while a foreground subagent's ``bash`` runs. Before,
    the command was killed but reported to the model as "timed out", the child and the parent went on and
    the run exited 0. Now the command dies, the child's and the parent's turns end aborted, exit 130."""
    fg = tmp_path / "child.pid"
    spawn = json.dumps({"description": "child", "prompt": "run it", "run_in_background": False})
    with ScriptServer() as srv:
        srv.push(sse_reply(chunk(tool_calls=[tool_call(0, id="s1", name="subagent", args=spawn)]),
                           chunk(finish="tool_calls", usage=USAGE)),
                 bash_call("c1", f"echo $$ > {fg}; exec sleep 1006"), answer(), answer(), answer(), answer())
        _settings(srv)
        p = start(tmp_path)
        (pid,) = wait_for(fg, proc=p)
        try:
            os.kill(p.pid, signal.SIGINT)
            out, err = p.communicate(timeout=60)
            assert p.returncode == 130, err
            assert "interrupted by SIGINT" in err and "Traceback" not in err
            assert gone(pid)
            assert len(srv.requests) == 2, [r["body"]["messages"][-1] for r in srv.requests]  # nobody went on
        finally:
            cleanup(pid)
    reasons = {}
    for log in (tmp_path / "root").rglob("session*.jsonl*"):
        opened = open_log_file(log)
        ends = [e["data"]["reason"] for e in opened.events if e["type"] == "turn/end"]
        reasons["child" if opened.header.get("parentSession") else "root"] = ends
    assert reasons["root"] == [{"kind": "aborted", "reason": {"kind": "user"}}], reasons
    assert len(reasons["child"]) == 1 and reasons["child"][0]["kind"] == "aborted", reasons


def test_resume_headless_handles_a_signal_as_run_does(tmp_path):
    """``resume --headless``: SIGTERM while the model streams ends the turn as aborted (user), exit 143."""
    with ScriptServer() as srv:
        srv.push(answer("first"), sse_reply(chunk("partial"), done=False, end="stall"), answer())
        _settings(srv)
        first = start(tmp_path)
        out, err = first.communicate(timeout=120)
        assert first.returncode == 0 and out == "first\n", err
        p = subprocess.Popen([sys.executable, "-m", "dsh_tui", "resume", "--last", "--headless", "again", "--root",
                              str(tmp_path / "root")], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=dict(os.environ), start_new_session=True)
        end = time.monotonic() + 60
        while len(srv.requests) < 2:
            assert p.poll() is None and time.monotonic() < end, p.communicate()
            time.sleep(0.05)
        time.sleep(0.3)  # the partial chunk is in
        os.kill(p.pid, signal.SIGTERM)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 143, err
        assert "interrupted by SIGTERM" in err and "Traceback" not in err
    assert turn_end(tmp_path) == {"kind": "aborted", "reason": {"kind": "user"}}


def test_a_signal_while_stream_json_input_waits_for_the_next_prompt(tmp_path):
    """``--input-format stream-json`` with stdin still open: SIGTERM between prompts ends the run (143) at once;
    the pending read of stdin no longer holds the exit."""
    read_end, write_end = os.pipe()
    with ScriptServer() as srv:
        srv.push(answer("one"), answer())
        _settings(srv)
        p = subprocess.Popen([sys.executable, "-m", "dsh_tui", "run", "--headless", "--input-format", "stream-json",
                              "--root", str(tmp_path / "root"), "--cwd", str(tmp_path)], cwd=tmp_path, stdin=read_end,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
                             start_new_session=True)
        os.close(read_end)
        try:
            os.write(write_end, b'"first"\n')
            end = time.monotonic() + 60
            while not list((tmp_path / "root").rglob("session*.jsonl*")) or not any(
                    e["type"] == "turn/end" for e in open_log_file(
                        next((tmp_path / "root").rglob("session*.jsonl*"))).events):
                assert p.poll() is None and time.monotonic() < end, p.communicate()
                time.sleep(0.1)
            os.kill(p.pid, signal.SIGTERM)
            out, err = p.communicate(timeout=30)
            assert p.returncode == 143, err
            assert out == "one\n" and "interrupted by SIGTERM" in err
        finally:
            os.close(write_end)
            if p.poll() is None:
                p.kill()
