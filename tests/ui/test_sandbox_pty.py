"""The app with the OS sandbox (docs/sandbox.md), in a real terminal: ``dsh-tui run`` in a pseudo-terminal against
a model server on 127.0.0.1 that scripts ``bash`` calls, real bubblewrap. Under workspace-write the status bar
says ``sandbox`` and a command runs without the approval panel; an escalation out of it asks "Run bash without
the sandbox?"."""

from __future__ import annotations

import pytest

from tests.cli.sandbox_support import BashServer, cmd_prompt
from tests.ui.pty_support import PtyApp, app_env, session_events


@pytest.fixture(autouse=True)
def _needs_bwrap():
    from dsh_tui.tools.sandbox import SandboxSettings, probe

    sandbox, note = probe(SandboxSettings(mode="bwrap"))
    if sandbox is None:
        pytest.skip(f"bubblewrap cannot run here: {note}")


def test_the_app_runs_a_command_in_the_sandbox_without_asking(tmp_path):
    ws, root, home, sib = tmp_path / "ws", tmp_path / "sessions", tmp_path / "userhome", tmp_path / "sib"
    for d in (ws, home, sib):
        d.mkdir()
    env = app_env(tmp_path, None, HOME=str(home))
    with BashServer() as server:
        env.update(DEEPSEEK_API_KEY="sk-pty-0123456789abcdef", DEEPSEEK_BASE_URL=server.base_url)
        with PtyApp(["run", "--root", str(root), "--sandbox", "auto"], env=env, cwd=ws, rows=30, cols=120) as app:
            mark = app.after(0, "sandbox")  # the status bar: workspace-write │ sandbox
            assert "no sandbox" not in app.plain()
            app.write(cmd_prompt(f"echo made > a.txt; echo x > {sib}/f.txt; cat a.txt").encode() + b"\r")
            mark = app.after(mark, "RESULT: made")
            assert "Approve bash?" not in app.plain() and (ws / "a.txt").read_text() == "made\n"
            assert not (sib / "f.txt").exists()
            app.write(cmd_prompt(f"echo out > {sib}/e.txt", sandbox_permissions="danger-full-access",
                                 justification="The file is outside the workspace.").encode() + b"\r")
            mark = app.after(mark, "Run bash without the sandbox?")
            app.read(1.0)  # past the panel's grace period
            assert not (sib / "e.txt").exists()
            app.write(b"a")
            mark = app.after(mark, "RESULT: (no output)")
            assert (sib / "e.txt").read_text() == "out\n"
            app.write(b"\x11")  # Ctrl+Q
            assert app.wait_exit() == 0, app.plain()[-2000:]
    events = session_events(root)
    assert [e["data"]["outcome"] for e in events if e["type"] == "approval/decided"] == ["allowed-once"]


def test_the_app_says_when_there_is_no_sandbox(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    import os

    env = app_env(tmp_path, None, PATH=f"{fake}:{os.environ['PATH']}")
    with BashServer() as server:
        env.update(DEEPSEEK_API_KEY="sk-pty-0123456789abcdef", DEEPSEEK_BASE_URL=server.base_url)
        with PtyApp(["run", "--root", str(tmp_path / "s"), "--sandbox", "auto"], env=env, cwd=ws, rows=30,
                    cols=120) as app:
            app.after(0, "no sandbox", timeout=90)
            app.after(0, "bubblewrap cannot create its namespaces here", timeout=90)
            app.write(b"\x11")
            assert app.wait_exit() == 0
