"""The OS sandbox for commands (docs/sandbox.md): real bubblewrap, real bash, real files, a real listening port.

An agent with the built-in tools and a sandbox, under ``workspace-write`` and nobody to answer an approval:
a ``bash`` call runs without asking and changes the workspace, and every way out (a sibling directory, $HOME,
a loopback port, a symlink, ``/proc/self/root``, a hard link, ``..``, dsh-tui's own settings, git hooks) is
refused by the kernel — the model reads dsh's denial marker.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from pathlib import Path

import pytest

from dsh_tui.llm.scripted import ScriptedProvider, call, text
from dsh_tui.tools import builtin_tools
from dsh_tui.tools.sandbox import SandboxSettings, probe
from tests.runtime.helpers import make_agent

DENIED = "[sandbox: file access denied under workspace-write mode]"
HINT = ("[sandbox: escalation available — retry this exact command once with sandbox_permissions (the narrowest "
        "wider mode that suffices) + justification; the approval prompt asks the user]")


def real_sandbox(**settings):
    sandbox, note = probe(SandboxSettings(mode="bwrap", **settings))
    if sandbox is None:
        pytest.skip(f"bubblewrap cannot run here: {note}")
    return sandbox


@pytest.fixture
def sandbox():
    return real_sandbox()


@pytest.fixture
def place(tmp_path, monkeypatch):
    """A workspace beside a sibling directory, and a $HOME, all real directories."""
    ws, sib, home = tmp_path / "ws", tmp_path / "sib", tmp_path / "home"
    for d in (ws, sib, home):
        d.mkdir()
    (sib / "f.txt").write_text("sibling\n")
    (home / "notes.txt").write_text("home\n")
    monkeypatch.setenv("HOME", str(home))
    return ws, sib, home


def run_commands(ws: Path, sandbox, commands: list[str], *, preset: str = "workspace-write", **cfg):
    """One turn per command, each a ``bash`` call; returns (agent, [(result text, isError)])."""
    responses = []
    for i, command in enumerate(commands):
        responses.append(call(f"c{i}", "bash", {"command": command, "description": "run it"}))
        responses.append(text("done"))
    agent = make_agent(responses, builtin_tools(sandbox=sandbox, escalation=True), tmp_path=ws, preset=preset,
                       **cfg)

    async def go():
        for _ in commands:
            agent.followup("go")
            await asyncio.wait_for(agent.wait_idle(), 60)

    asyncio.run(go())
    out = []
    for e in agent.session.events:
        if e["type"] == "tool/result":
            block = e["data"]["message"]["content"][0]
            out.append(("".join(c.get("text", "") for c in block["content"]), block["isError"]))
    return agent, out


def approvals(agent) -> list[dict]:
    return [e["data"] for e in agent.session.events if e["type"].startswith("approval/")]


def test_a_command_runs_without_asking_and_changes_the_workspace(place, sandbox):
    ws, _sib, _home = place
    agent, results = run_commands(ws, sandbox, ["echo made > a.txt && cat a.txt && mktemp"])
    out, is_error = results[0]
    assert not is_error and out.startswith("made\n"), out
    assert (ws / "a.txt").read_text() == "made\n"
    assert approvals(agent) == []  # nobody was asked
    assert "/sandbox-tmp/cmd-" in out  # the command's own temp dir ($TMPDIR), removed afterwards
    assert not Path(out.splitlines()[1]).exists()


def test_a_sibling_directory_and_home_are_read_only(place, sandbox):
    ws, sib, home = place
    agent, results = run_commands(ws, sandbox, [f"echo x > {sib}/new.txt", "echo x >> ~/notes.txt",
                                                f"cat {sib}/f.txt ~/notes.txt"])
    for out, _ in results[:2]:
        assert out.endswith(f"{DENIED}\n{HINT}\n[exit code: 1]"), out
    assert results[2][0] == "sibling\nhome\n"  # readable, as everything else
    assert not (sib / "new.txt").exists() and (home / "notes.txt").read_text() == "home\n"
    assert approvals(agent) == []


def test_no_connection_to_a_listening_loopback_port(place, sandbox):
    ws, _sib, _home = place
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        port = srv.getsockname()[1]
        _agent, results = run_commands(ws, sandbox, [f"echo hi > /dev/tcp/127.0.0.1/{port} && echo CONNECTED"])
    out, _ = results[0]
    assert "CONNECTED" not in out and "[exit code: 1]" in out, out


def test_network_setting_lets_the_command_connect(place):
    ws, _sib, _home = place
    sandbox = real_sandbox(network=True)
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        port = srv.getsockname()[1]
        _agent, results = run_commands(ws, sandbox, [f"echo hi > /dev/tcp/127.0.0.1/{port} && echo CONNECTED"])
    assert results[0][0] == "CONNECTED\n"


def test_escape_attempts_are_refused(place, sandbox, monkeypatch):
    ws, sib, home = place
    (ws / "out").symlink_to(sib)  # a symlink the workspace already had
    config = ws / "conf"  # dsh-tui's settings inside the workspace: still read-only for a command
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    (config / "dsh-tui").mkdir(parents=True)
    (config / "dsh-tui" / "settings.toml").write_text('[sandbox]\nmode = "bwrap"\n')
    (ws / ".git" / "hooks").mkdir(parents=True)
    commands = [
        "echo x > out/f.txt",  # through the symlink
        f"ln -s {sib} link2 && echo x > link2/f.txt",  # a symlink the command makes
        f"echo x > /proc/self/root{sib}/f.txt",  # /proc/self/root is the sandbox's root
        f"ln {sib}/f.txt hard && echo x >> hard",  # a hard link across the sandbox's mounts
        "echo x > ../sib/f.txt",  # ..
        'echo "[sandbox]" > conf/dsh-tui/settings.toml; echo \'mode = "off"\' >> conf/dsh-tui/settings.toml',
        "echo evil > .git/hooks/pre-commit",  # a hook runs outside the sandbox later
        "echo x > ~/.bashrc",
    ]
    _agent, results = run_commands(ws, sandbox, commands)
    assert (sib / "f.txt").read_text() == "sibling\n"
    assert (config / "dsh-tui" / "settings.toml").read_text() == '[sandbox]\nmode = "bwrap"\n'
    assert not (ws / ".git" / "hooks" / "pre-commit").exists() and not (home / ".bashrc").exists()
    for (out, _), command in zip(results, commands, strict=True):
        assert "[exit code: 1]" in out, (command, out)
    assert "Invalid cross-device link" in results[3][0]
    assert (ws / "link2").is_symlink()  # the workspace itself stays writable


def test_home_secrets_are_hidden(place, sandbox):
    ws, _sib, home = place
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (home / ".netrc").write_text("machine x password y\n")
    _agent, results = run_commands(ws, sandbox, ["ls -A ~/.ssh; cat ~/.netrc; echo end"])
    assert results[0][0] == "end\n"
    _agent, results = run_commands(ws, real_sandbox(readable=("~/.netrc",)), ["cat ~/.netrc; echo x >> ~/.netrc"])
    assert results[0][0].startswith("machine x password y\n") and "Read-only file system" in results[0][0]


def test_git_dir_of_a_worktree_outside_the_workspace_is_writable(tmp_path, sandbox, monkeypatch):
    import subprocess

    monkeypatch.setenv("HOME", str(tmp_path))
    main, wt = tmp_path / "main", tmp_path / "wt"
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "init", "-q", str(main)], check=True, env=env)
    subprocess.run(["git", "-C", str(main), "commit", "-q", "--allow-empty", "-m", "one"], check=True, env=env)
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", str(wt)], check=True, env=env)
    _agent, results = run_commands(wt, sandbox, [
        "echo a > a.txt && git add a.txt && git -c user.name=t -c user.email=t@t commit -q -m two && git log "
        "--format=%s | head -1"])
    assert results[0][0] == "two\n", results


def test_read_only_preset_runs_commands_read_only(place, sandbox):
    ws, _sib, _home = place
    agent, results = run_commands(ws, sandbox, ["echo x > a.txt", "echo ok"], preset="read-only")
    assert "[sandbox: file access denied under read-only mode]" in results[0][0]
    assert results[1][0] == "ok\n" and not (ws / "a.txt").exists()
    assert approvals(agent) == []


def escalate(command: str, mode: str = "danger-full-access") -> dict:
    return {"command": command, "description": "write outside", "sandbox_permissions": mode,
            "justification": "The file lives outside the workspace."}


def test_an_escalation_asks_and_is_refused_without_an_answer(place, sandbox):
    ws, sib, _home = place
    agent = make_agent([call("c0", "bash", escalate(f"echo x > {sib}/e.txt")), text("done")],
                       builtin_tools(sandbox=sandbox, escalation=True), tmp_path=ws, preset="workspace-write")
    asyncio.run(_once(agent))
    out = _results(agent)[0]
    assert out == ('Error: sandbox escalation to "danger-full-access" requires approval, but no approval channel '
                   "is available")
    asked = approvals(agent)[0]
    assert asked["reason"] == "escalate sandbox to danger-full-access: The file lives outside the workspace."
    assert not (sib / "e.txt").exists()


def test_an_allowed_escalation_runs_that_call_outside_the_sandbox(place, sandbox):
    ws, sib, _home = place
    agent = make_agent([call("c0", "bash", escalate(f"echo x > {sib}/e.txt")), text("done"),
                        call("c1", "bash", {"command": f"echo y > {sib}/g.txt", "description": "again"}),
                        text("done")],
                       builtin_tools(sandbox=sandbox, escalation=True), tmp_path=ws, preset="workspace-write",
                       allow_escalation=True)

    async def two():
        await _once(agent)
        await _once(agent)

    asyncio.run(two())
    assert (sib / "e.txt").read_text() == "x\n"
    assert not (sib / "g.txt").exists()  # one call only: the next is confined again
    assert [a.get("outcome") for a in approvals(agent)] == [None, "allowed-once"]


def test_an_escalation_that_is_not_wider_is_refused_without_asking(place, sandbox):
    ws, _sib, _home = place
    agent = make_agent([call("c0", "bash", escalate("true", "workspace-write")), text("done")],
                       builtin_tools(sandbox=sandbox, escalation=True), tmp_path=ws, preset="workspace-write")
    asyncio.run(_once(agent))
    assert _results(agent)[0] == ('Error: sandbox escalation to "workspace-write" is not strictly wider than this '
                                  'call\'s current "workspace-write" mode')
    assert approvals(agent) == []


def test_background_jobs_run_in_the_sandbox(place, sandbox):
    ws, sib, _home = place
    from dsh_tui.extensions.jobs import BashJobs, JobRegistry

    registry = JobRegistry()
    jobs = BashJobs(registry)
    tools = builtin_tools(sandbox=sandbox, escalation=True, background=True, jobs=jobs)
    agent = make_agent([call("c0", "bash", {"command": f"echo in > a.txt; echo x > {sib}/j.txt",
                                            "description": "bg", "run_in_background": True}), text("done")],
                       tools, tmp_path=ws, preset="workspace-write")

    async def go():
        await _once(agent)
        job = registry.list()[0]
        await registry.wait(job.id, 60_000)
        return job

    job = asyncio.run(go())
    assert _results(agent)[0].startswith("started background job")
    assert job.status == "failed"  # the write outside the workspace failed
    output, _job = registry.read(job.id)
    assert output.endswith(f"{DENIED}\n{HINT}\n"), output
    assert (ws / "a.txt").read_text() == "in\n" and not (sib / "j.txt").exists()


async def _once(agent) -> None:
    agent.followup("go")
    await asyncio.wait_for(agent.wait_idle(), 60)


def _results(agent) -> list[str]:
    return ["".join(c.get("text", "") for c in e["data"]["message"]["content"][0]["content"])
            for e in agent.session.events if e["type"] == "tool/result"]


def test_the_schemas_advertise_escalation_under_a_sandbox(sandbox):
    bash = next(t for t in builtin_tools(sandbox=sandbox, escalation=True) if t.name == "bash")
    assert bash.sandboxed and "sandbox_permissions" in bash.parameters["properties"]
    assert json.dumps(bash.parameters["properties"]["sandbox_permissions"]["enum"]) == \
        '["workspace-write", "danger-full-access"]'


def test_no_bwrap_says_so_in_one_line(monkeypatch, tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    sandbox, note = probe(SandboxSettings(mode="auto"))
    assert sandbox is None
    assert note == ("sandbox: bubblewrap cannot create its namespaces here (bwrap: No permissions to create a new "
                    "namespace); bash commands ask for approval as before")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert probe(SandboxSettings(mode="auto"))[1] == ("sandbox: bubblewrap (bwrap) is not installed; bash commands "
                                                      "ask for approval as before (install the bubblewrap package)")
    assert probe(SandboxSettings(mode="off")) == (None, None)



def test_sandbox_and_notify_settings_are_checked():
    from dsh_tui.config.base import SettingsError
    from dsh_tui.config.check import check_settings

    check_settings({"sandbox": {"mode": "bwrap", "network": True, "writable": ["~/.npm"], "readable": ["~/.npmrc"]},
                    "ui": {"notify": "bell"}})
    for bad, said in (({"sandbox": {"mode": "on"}}, "sandbox.mode must be one of auto, bwrap, off"),
                      ({"sandbox": {"network": "yes"}}, "sandbox.network must be true or false"),
                      ({"sandbox": {"writable": "~/.npm"}}, "sandbox.writable must be a list of paths"),
                      ({"sandbox": {"netwrok": True}}, "sandbox.netwrok is not a sandbox setting (did you mean network?)"),
                      ({"ui": {"notify": "loud"}}, "ui.notify must be one of auto, bell, off")):
        with pytest.raises(SettingsError) as err:
            check_settings(bad)
        assert said in str(err.value)


def test_a_daemon_that_leaves_with_setsid_dies_with_the_command(place, sandbox):
    import subprocess

    ws, _sib, _home = place
    marker = f"sleep 1001{os.getpid() % 1000}"
    _agent, results = run_commands(ws, sandbox, [f"(setsid bash -c 'exec {marker}' > /dev/null 2>&1 &) ; echo started"])
    assert results[0][0] == "started\n"
    left = subprocess.run(["pgrep", "-f", f"^{marker}"], capture_output=True, text=True).stdout.split()
    assert left == [], left


def test_the_write_tool_asks_before_a_git_hook_as_a_command_cannot_write_one(place):
    ws, _sib, _home = place
    (ws / ".git" / "hooks").mkdir(parents=True)
    agent = make_agent([call("c0", "write", {"file_path": ".git/hooks/pre-commit", "content": "evil\n"}), text("x"),
                        call("c1", "write", {"file_path": "notes.txt", "content": "fine\n"}), text("y")],
                       builtin_tools(), tmp_path=ws, preset="workspace-write")

    async def two():
        await _once(agent)
        await _once(agent)

    asyncio.run(two())
    assert not (ws / ".git" / "hooks" / "pre-commit").exists() and (ws / "notes.txt").read_text() == "fine\n"
    asked = [a for a in approvals(agent) if "reason" in a]
    assert len(asked) == 1 and "git hook or configuration" in asked[0]["reason"]


def test_a_timed_out_sandboxed_command_ends_with_everything_it_started(place, sandbox):
    import subprocess

    ws, _sib, _home = place
    marker = f"sleep 1002{os.getpid() % 1000}"
    agent = make_agent([call("c0", "bash", {"command": f"(setsid {marker} &); {marker}", "description": "hang",
                                            "timeoutMs": 1000}), text("done")],
                       builtin_tools(sandbox=sandbox, escalation=True, bash_grace_ms=500), tmp_path=ws,
                       preset="workspace-write")
    asyncio.run(_once(agent))
    assert "[timed out after 1000ms]" in _results(agent)[0]
    assert subprocess.run(["pgrep", "-f", f"^{marker}"], capture_output=True, text=True).stdout.split() == []


def test_the_macos_seam_builds_dsh_s_seatbelt_profile(tmp_path):
    from dsh_tui.tools.sandbox import SeatbeltBackend

    argv = SeatbeltBackend().profile(mode="workspace-write", workspace=str(tmp_path), cwd=str(tmp_path),
                                     tmpdir="/tmp/x", settings=SandboxSettings(), home="/Users/me")
    assert argv[:2] == ["/usr/bin/sandbox-exec", "-p"]
    assert argv[2] == ('(version 1) (allow default) (deny file-write*) (allow file-write* (literal "/dev/null")) '
                       f'(allow file-write* (subpath "{os.path.realpath(tmp_path)}") (subpath "/tmp/x")) '
                       "(deny network*)")


def test_the_model_is_told_commands_run_in_a_sandbox(place, sandbox):
    ws, _sib, _home = place
    provider = ScriptedProvider([text("ok")], name="mock")
    agent = make_agent(provider=provider, tools=builtin_tools(sandbox=sandbox, escalation=True), tmp_path=ws,
                       preset="workspace-write", runtime_context=True)
    asyncio.run(_once(agent))
    said = json.dumps(provider.requests[0]["messages"])
    assert "shell commands run without approval in a sandbox that may write only the workspace" in said
    assert "shell commands and anything outside the workspace ask the user first" not in said
