"""``dsh-tui run --headless`` under ``workspace-write`` with the OS sandbox (docs/sandbox.md): a real subprocess,
a model server on 127.0.0.1 scripting the ``bash`` calls, real bubblewrap.

Today's main refuses every such call headless ("requires approval, but no approval channel is available");
with the sandbox it runs without asking, inside walls."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.sandbox_support import BashServer, cmd_prompt
from tests.ui.pty_support import app_env, session_events


@pytest.fixture(autouse=True)
def _needs_bwrap():
    from dsh_tui.tools.sandbox import SandboxSettings, probe

    if probe(SandboxSettings(mode="bwrap"))[0] is None:
        pytest.skip(f"bubblewrap cannot run here: {probe(SandboxSettings(mode='bwrap'))[1]}")


def headless(tmp_path: Path, server: BashServer, prompt: str, *flags: str, env: dict | None = None):
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    run_env = app_env(tmp_path, server.base_url, HOME=str(tmp_path / "userhome"), **(env or {}))
    run_env.pop("DSH_TUI_SANDBOX", None)  # the default: "auto" (the suite turns it off elsewhere)
    p = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", prompt, "--root",
                        str(tmp_path / "root"), *flags], cwd=ws, capture_output=True, text=True, timeout=120,
                       env=run_env)
    return p, ws


def decided(tmp_path: Path) -> list[str]:
    return [e["data"].get("outcome") for e in session_events(tmp_path / "root") if e["type"] == "approval/decided"]


@pytest.fixture
def dirs(tmp_path):
    (tmp_path / "sib").mkdir()
    (tmp_path / "userhome").mkdir()
    return tmp_path


def test_a_bash_call_runs_without_approval_and_stays_in_the_workspace(dirs):
    tmp_path = dirs
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        command = (f"echo made > a.txt; echo x > {tmp_path}/sib/f.txt; echo x > ~/f.txt; "
                   f"(echo hi > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo CONNECTED; cat a.txt")
        with BashServer() as server:
            p, ws = headless(tmp_path, server, cmd_prompt(command))
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""  # the sandbox works here: nothing to say
    assert (ws / "a.txt").read_text() == "made\n"
    assert not (tmp_path / "sib" / "f.txt").exists() and not (tmp_path / "userhome" / "f.txt").exists()
    assert "CONNECTED" not in p.stdout and p.stdout.startswith("RESULT: made\n"), p.stdout
    assert p.stdout.count("Read-only file system") == 2
    assert decided(tmp_path) == []  # nobody was asked


def test_headless_refuses_an_escalation_unless_allowed(dirs):
    tmp_path = dirs
    prompt = cmd_prompt(f"echo out > {tmp_path}/sib/e.txt", sandbox_permissions="danger-full-access",
                        justification="The file is outside the workspace.")
    with BashServer() as server:
        p, _ws = headless(tmp_path, server, prompt)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == ('RESULT: Error: sandbox escalation to "danger-full-access" requires approval, but '
                                "no approval channel is available")
    assert not (tmp_path / "sib" / "e.txt").exists() and decided(tmp_path) == ["unavailable"]
    import shutil

    shutil.rmtree(tmp_path / "root")
    with BashServer() as server:
        p, _ws = headless(tmp_path, server, prompt, "--allow-escalation")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "sib" / "e.txt").read_text() == "out\n" and decided(tmp_path) == ["allowed-once"]


def test_sandbox_off_asks_as_before(dirs):
    tmp_path = dirs
    with BashServer() as server:
        p, ws = headless(tmp_path, server, cmd_prompt("echo made > a.txt"), "--sandbox", "off")
        tools = {t["function"]["name"]: t["function"] for t in server.requests[0]["tools"]}
    assert p.stdout.strip() == 'RESULT: Error: tool "bash" requires approval, but no approval channel is available'
    assert not (ws / "a.txt").exists()
    assert "sandbox_permissions" not in tools["bash"]["parameters"]["properties"]


def test_without_a_working_bwrap_one_line_says_so_and_commands_ask(dirs):
    tmp_path = dirs
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    with BashServer() as server:
        p, ws = headless(tmp_path, server, cmd_prompt("echo made > a.txt"),
                         env={"PATH": f"{fake}:{os.environ['PATH']}"})
    assert p.stderr == ("dsh-tui: sandbox: bubblewrap cannot create its namespaces here (bwrap: setting up uid map: "
                        "Permission denied); bash commands ask for approval as before\n")
    assert p.stdout.strip() == 'RESULT: Error: tool "bash" requires approval, but no approval channel is available'
    assert not (ws / "a.txt").exists()


def test_settings_choose_the_sandbox(dirs):
    tmp_path = dirs
    cfg = tmp_path / "cfg" / "dsh-tui"
    cfg.mkdir(parents=True)
    (cfg / "settings.toml").write_text('[sandbox]\nmode = "off"\n')
    with BashServer() as server:
        p, ws = headless(tmp_path, server, cmd_prompt("echo made > a.txt"))
    assert "requires approval" in p.stdout and not (ws / "a.txt").exists()
    (cfg / "settings.toml").write_text('[sandbox]\nmode = "bwrap"\nwritable = ["../sib"]\n')
    with BashServer() as server:
        p, ws = headless(tmp_path, server, cmd_prompt(f"echo made > {tmp_path}/sib/w.txt"))
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "sib" / "w.txt").read_text() == "made\n"
    (cfg / "settings.toml").write_text('[sandbox]\nmode = "sometimes"\n')
    with BashServer() as server:
        p, _ws = headless(tmp_path, server, cmd_prompt("true"))
    assert p.returncode != 0 and p.stderr.count("\n") == 1 and "sandbox.mode must be one of auto, bwrap, off" in \
        p.stderr and "Traceback" not in p.stderr



def test_the_sdk_runs_commands_in_the_sandbox(dirs, monkeypatch):
    from dsh_tui import Harness

    tmp_path = dirs
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "userhome"))
    command = f"echo made > a.txt; echo x > {tmp_path}/sib/f.txt; echo x > ~/f.txt; cat a.txt"
    with BashServer() as server, Harness(cwd=ws, session_root=tmp_path / "root", base_url=server.base_url,
                                         api_key="sk-test", sandbox="auto") as h:
        result = h.run(cmd_prompt(command))
        escalated = h.run(cmd_prompt(f"echo out > {tmp_path}/sib/e.txt", sandbox_permissions="danger-full-access",
                                     justification="It is outside."))
    assert result.sandbox == "bwrap" and result.sandbox_note is None
    assert result.final_response.startswith("RESULT: made\n") and result.final_response.count("Read-only") == 2
    assert (ws / "a.txt").read_text() == "made\n"
    assert not (tmp_path / "sib" / "f.txt").exists() and not (tmp_path / "userhome" / "f.txt").exists()
    assert not [e for e in result.events if e["type"].startswith("approval/")]
    assert "requires approval, but no approval channel is available" in escalated.final_response
    assert not (tmp_path / "sib" / "e.txt").exists()


def test_resume_and_demo_take_sandbox(dirs):
    tmp_path = dirs
    with BashServer() as server:
        p, ws = headless(tmp_path, server, cmd_prompt("echo one > a.txt"), "--sandbox", "off")
        assert not (ws / "a.txt").exists()
        from dsh_tui.store.open import open_store

        (header,) = open_store(tmp_path / "root").list()
        run_env = app_env(tmp_path, server.base_url, HOME=str(tmp_path / "userhome"))
        run_env.pop("DSH_TUI_SANDBOX", None)
        p = subprocess.run([sys.executable, "-m", "dsh_tui", "resume", header["id"], "--headless",
                            cmd_prompt("echo two > b.txt"), "--root", str(tmp_path / "root"), "--sandbox", "bwrap"],
                           cwd=ws, capture_output=True, text=True, timeout=120, env=run_env)
    assert p.returncode == 0, p.stderr
    assert (ws / "b.txt").read_text() == "two\n"
    from dsh_tui.cli import parse_args

    assert parse_args(["demo", "--sandbox", "off"]).sandbox == "off"
    assert parse_args(["--sandbox", "bwrap"]).app_sandbox == "bwrap"


def test_a_sandboxed_command_dies_with_a_killed_dsh_tui(dirs):
    """``--die-with-parent``: even SIGKILL of dsh-tui (nothing of it runs then) ends its sandboxed command."""
    import signal
    import time

    tmp_path = dirs
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = f"sleep 1004{os.getpid() % 1000}"
    with BashServer() as server:
        run_env = app_env(tmp_path, server.base_url, HOME=str(tmp_path / "userhome"))
        run_env.pop("DSH_TUI_SANDBOX", None)
        proc = subprocess.Popen([sys.executable, "-m", "dsh_tui", "run", "--headless", cmd_prompt(marker), "--root",
                                 str(tmp_path / "root")], cwd=ws, env=run_env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            def running() -> list[str]:
                return subprocess.run(["pgrep", "-f", f"^{marker}"], capture_output=True, text=True).stdout.split()

            for _ in range(600):
                if running():
                    break
                time.sleep(0.05)
            assert running(), "the command never started"
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            for _ in range(200):
                if not running():
                    break
                time.sleep(0.05)
            assert running() == []
        finally:
            if proc.poll() is None:
                proc.kill()
