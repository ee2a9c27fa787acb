"""bash: real subprocesses — markers (B.3/C9), truncation + spill, timeout and cancellation kill the group."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.tools.harness import Bench


@pytest.fixture
def bench(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return Bench(ws, options={"bash_grace_ms": 300}, spill_dir=tmp_path / "spill")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


async def wait_dead(pid: int) -> bool:
    for _ in range(100):
        if not alive(pid):
            return True
        await asyncio.sleep(0.02)
    return False


def sh(command, **extra):
    return {"command": command, "description": "Run a test command", **extra}


@pytest.mark.parametrize(
    "command,text",
    [
        ("echo TERMINAL_OK", "TERMINAL_OK\n"),
        ("true", "(no output)"),
        ("false", "(no output)\n[exit code: 1]"),
        ("printf out; printf err >&2; exit 4", "out\n[stderr]\nerr\n[exit code: 4]"),
        ("echo out; echo err >&2", "out\n[stderr]\nerr\n"),
        ("echo err >&2", "[stderr]\nerr\n"),
        ("printf 'no newline'; exit 2", "no newline\n[exit code: 2]"),
        ("kill -USR1 $$", "(no output)\n[killed by signal: SIGUSR1]"),
    ],
)
async def test_render_markers(bench, command, text):
    out = await bench.run("bash", sh(command))
    assert out.text == text
    assert out.is_error is False and out.meta is None


async def test_runs_in_session_cwd_and_workdir(bench):
    (bench.workspace / "sub").mkdir()
    assert (await bench.run("bash", sh("pwd"))).text == f"{bench.workspace}\n"
    assert (await bench.run("bash", sh("pwd", workdir="sub"))).text == f"{bench.workspace / 'sub'}\n"
    out = await bench.run("bash", sh("pwd", workdir=".."))
    assert out.text == "Error: [sandbox: file access denied under workspace-write mode]"
    assert out.error == {"name": "FsError", "code": "FS_SANDBOX_DENIED"}
    out = await bench.run("bash", sh("pwd", workdir="nope"))
    assert out.is_error and "nope" in out.text


async def test_fresh_shell_and_model_friendly_env(bench, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-secret")
    monkeypatch.setenv("DSH_STALE", "old")
    home = os.environ["DSH_HOME"]
    bench = Bench(bench.workspace, options={"bash_env": {"DSH_SESSION_JSONL": "/x/s.jsonl"}})
    await bench.run("bash", sh("export FOO=1; cd /"))
    out = await bench.run(
        "bash",
        sh(
            'echo "$FOO|$NO_COLOR|$TERM|$PAGER|$GIT_PAGER|${DEEPSEEK_API_KEY-unset}|$PWD|'
            '${DSH_STALE-gone}|$DSH_SHELL|$DSH_HOME|$DSH_SESSION_JSONL"'
        ),
    )
    assert out.text == f"|1|dumb|cat|cat|unset|{bench.workspace}|gone|1|{home}|/x/s.jsonl\n"


async def test_stdin_is_closed(bench):
    out = await bench.run("bash", sh("cat; echo done"))
    assert out.text == "done\n"


async def test_timeout_kills_the_whole_process_group(bench):
    out = await bench.run("bash", sh("sleep 30 & echo $! > child.pid; wait", timeoutMs=400))
    assert out.text == "(no output)\n[timed out after 400ms]\n[killed by signal: SIGTERM]"
    child = int((bench.workspace / "child.pid").read_text())
    assert await wait_dead(child)


async def test_sigterm_ignored_escalates_to_sigkill(bench):
    out = await bench.run("bash", sh("trap '' TERM; echo started; sleep 30", timeoutMs=300))
    assert out.text == "started\n[timed out after 300ms]\n[killed by signal: SIGKILL]"


async def test_timeout_default_and_cap(tmp_path):
    ws = tmp_path / "w"
    ws.mkdir()
    bench = Bench(ws, options={"bash_timeout_ms": 250, "bash_max_timeout_ms": 350, "bash_grace_ms": 200})
    assert (await bench.run("bash", sh("sleep 10"))).text.endswith(
        "[timed out after 250ms]\n[killed by signal: SIGTERM]"
    )
    assert "[timed out after 350ms]" in (await bench.run("bash", sh("sleep 10", timeoutMs=999999))).text
    assert "[timed out after 300.5ms]" in (await bench.run("bash", sh("sleep 10", timeoutMs=300.5))).text


async def test_cancellation_aborts_and_kills_the_group(bench):
    cancelled = asyncio.Event()
    task = asyncio.create_task(bench.run("bash", sh("sleep 30 & echo $! > child.pid; wait"), cancelled))
    pid_file = bench.workspace / "child.pid"
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.01)
    cancelled.set()
    out = await asyncio.wait_for(task, 5)
    assert out.text == "Error: tool call aborted"
    assert out.error == {"name": "AbortError", "code": "ABORTED"}
    assert await wait_dead(int(pid_file.read_text()))


async def test_background_descendant_holding_the_pipe_is_ended(bench):
    out = await bench.run("bash", sh("(sleep 30; echo late) & echo $! > child.pid; echo hi"))
    assert out.text == "hi\n"
    assert await wait_dead(int((bench.workspace / "child.pid").read_text()))


async def test_output_cap_keeps_tail_and_spills_everything(bench):
    out = await bench.run("bash", sh("for i in $(seq 1 20000); do echo line-$i; done"))
    full = "".join(f"line-{i}\n" for i in range(1, 20001))
    head, marker = out.text.rsplit("\n[output truncated; full output: ", 1)
    spill = marker.rstrip("]")
    assert head == full.encode()[-64_000:].decode()
    assert Path(spill).read_text() == full
    assert oct(os.stat(spill).st_mode & 0o777) == "0o600"
    assert out.value["stdout"]["truncated"] is True and out.value["stderr"]["truncated"] is False


async def test_tail_never_starts_inside_a_utf8_sequence(tmp_path):
    ws = tmp_path / "w"
    ws.mkdir()
    bench = Bench(ws, options={"bash_max_output_bytes": 10}, spill_dir=tmp_path / "s")
    out = await bench.run("bash", sh("printf 'éééééééééx'"))  # 19 bytes; the last 10 start mid-character
    assert out.text.split("\n")[0] == "ééééx"


async def test_spill_unavailable(tmp_path):
    ws = tmp_path / "w"
    ws.mkdir()
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    bench = Bench(ws, options={"bash_max_output_bytes": 100}, spill_dir=blocker)
    out = await bench.run("bash", sh("seq 1 1000 >&2"))
    assert out.text.startswith("[stderr]\n")
    assert out.text.endswith("\n1000\n\n[output truncated; full output: (unavailable)]")


@pytest.mark.parametrize(
    "args,message",
    [
        ({"command": "  ", "description": "x"}, "invalid command: expected a non-empty string"),
        ({"command": "ls", "description": ""}, "invalid description: expected a non-empty string"),
        (
            {"command": "ls", "description": "x", "timeoutMs": -5},
            "invalid timeoutMs: expected a positive number, got -5",
        ),
        (
            {"command": "ls", "description": "x", "timeoutMs": 0},
            "invalid timeoutMs: expected a positive number, got 0",
        ),
        (
            {"command": "ls", "description": "x", "run_in_background": True},
            "run_in_background is disabled for this deployment (enableRunInBackground: false)",
        ),
        (
            {
                "command": "ls",
                "description": "x",
                "sandbox_permissions": "danger-full-access",
                "justification": "j",
            },
            "sandbox_permissions is not available in this composition (no sandboxing executor to escalate)",
        ),
    ],
)
async def test_argument_errors(bench, args, message):
    out = await bench.run("bash", args)
    assert out.text == f"Error: {message}" and out.error is None


async def test_background_without_jobs_service(tmp_path):
    bench = Bench(tmp_path, options={"background": True})
    out = await bench.run("bash", sh("sleep 1", run_in_background=True))
    assert (
        out.text
        == "Error: background jobs unavailable: load @deepseek-ai/dsh-jobs and @deepseek-ai/dsh-tool-jobs"
    )


async def test_background_start_through_jobs(tmp_path):
    started = []

    class Jobs:
        async def start(self, command, *, cwd, env, label=None):
            started.append((command, cwd, env["TERM"], label))
            return "bash-1"

    bench = Bench(tmp_path, options={"background": True, "jobs": Jobs()})
    out = await bench.run("bash", sh("sleep 1", run_in_background=True))
    assert out.text == "started background job bash-1"
    assert started == [("sleep 1", str(tmp_path), "dumb", "sleep 1")]  # labelled by its command, as in dsh


async def test_event_loop_keeps_running_during_a_command(bench):
    """The command waits for the event loop to create ``go``: were the tool blocking the loop, it would time out."""

    async def release():
        for _ in range(5):
            await asyncio.sleep(0)
        (bench.workspace / "go").touch()

    helper = asyncio.create_task(release())
    out = await bench.run("bash", sh("while [ ! -e go ]; do sleep 0.01; done; echo ok", timeoutMs=20_000))
    await helper
    assert out.text == "ok\n"


async def test_session_id_from_the_calling_agent(tmp_path):
    from dataclasses import dataclass
    from types import SimpleNamespace

    from dsh_tui.tools import builtin_tools
    from dsh_tui.tools.base import ToolContext

    @dataclass
    class AgentContext(ToolContext):
        agent: object = None

    bash = builtin_tools(names=["bash"])[0]
    ctx = AgentContext(
        call_id="c",
        name="bash",
        cwd=tmp_path,
        workspace=tmp_path,
        agent=SimpleNamespace(session=SimpleNamespace(id="sess-42")),
    )
    value = await bash.execute(sh("echo $DSH_SESSION_ID"), ctx)
    assert bash.render({}, value)[0]["text"] == "sess-42\n"


class _Backend:
    """A sandbox provider as dsh's test-only ones: a wrapper in front of the command, its own dialects."""

    name = "test"
    denial_signatures = ("permission denied",)

    def __init__(self, prefix, rules):
        self.prefix, self.runner_failure_rules = prefix, rules

    def profile(self, *, mode, workspace, cwd, tmpdir, settings, home):
        return list(self.prefix)


def _sandboxed(tmp_path, prefix, rules, **options):
    from dsh_tui.tools.sandbox import Sandbox, SandboxSettings

    bench = Bench(tmp_path, options={"sandbox": Sandbox(_Backend(prefix, rules), SandboxSettings()), **options})
    make = bench.ctx

    def ctx(name, cancelled=None):
        c = make(name, cancelled)
        c.sandbox_mode = "read-only"  # the session's mode: commands run confined
        return c

    bench.ctx = ctx
    return bench


async def test_a_runner_that_cannot_be_spawned_is_dshs_sandbox_unavailable_error(tmp_path):
    missing = str(tmp_path / ".missing-runner")
    bench = _sandboxed(tmp_path, [missing], ({"fatal_signatures": ("snapshot-runner: ",)},))
    out = await bench.run("bash", sh("true"))
    assert out.is_error and out.text.endswith(
        f"otherwise switch the consumer to danger-full-access. Runner failure: Error: spawn {missing} ENOENT")
    assert out.text.startswith('Error: sandbox mode "read-only" is requested but no sandbox backend is usable')


async def test_runner_failure_rules_are_the_backends_with_dshs_informational_lines_and_exit_gate():
    from dsh_tui.tools.sandbox import runner_failure

    rules = ({"allowed_exit_codes": (125,), "fatal_signatures": ("landlock-run: ",),
              "informational_lines": ("landlock-run: partial enforcement (older Landlock ABI)",)},)
    notice = "landlock-run: partial enforcement (older Landlock ABI)"
    assert runner_failure(1, f"{notice}\nlandlock-run: boom", rules) is None  # exit 1 is the command's own
    assert runner_failure(125, notice, rules) is None  # the notice alone is information
    assert runner_failure(125, f"{notice}\nLandlock-Run: no ruleset", rules) == "Landlock-Run: no ruleset"
    assert runner_failure(1, "x\nbwrap: setting up uid map: Permission denied") == \
        "bwrap: setting up uid map: Permission denied"  # bwrap's rule by default, anywhere in a line
