"""The one agent host: the app (``dsh-tui run``) and ``run --headless`` open the same agent and send the
same request for the same input; the host closes what it opened."""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys

from dsh_tui.config import settings_path
from dsh_tui.runtime.host import AgentHost, HostSpec
from tests.llm.sse_server import ScriptServer, chunk, sse_reply


def _reply():
    return sse_reply(chunk("hello"), chunk(finish="stop", usage={"prompt_tokens": 3, "completion_tokens": 1}))


def _settings(base_url: str) -> None:
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[default]\nprovider = "local"\nmodel = "m"\n[providers.local]\nbase_url = "{base_url}/v1"\n')


_IDS = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _normal(body: dict) -> dict:
    """The request with ids and the session's own directory names blanked (they differ per session)."""
    text = _IDS.sub("<id>", repr(body))
    return {"text": text}


async def test_app_and_headless_send_the_same_request(tmp_path, monkeypatch):
    from dsh_tui.cli.app_cmd import chat_app
    from tests.ui.conftest import submit, wait_for

    ws = tmp_path / "ws"
    ws.mkdir()
    with ScriptServer() as srv:
        srv.push(_reply(), _reply())
        _settings(srv.base_url)
        env = dict(os.environ)
        p = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "hi", "--root",
                            str(tmp_path / "r1"), "--cwd", str(ws)], cwd=tmp_path, capture_output=True, text=True,
                           timeout=120, env=env)
        assert p.returncode == 0, p.stderr
        args = argparse.Namespace(prompt=None, cwd=str(ws), root=str(tmp_path / "r2"), preset=None, model=None,
                                  replay=None, resume_id=None)
        app = chat_app(args)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: app.bridge.harness is not None, 20)
            await submit(pilot, "hi")
            await wait_for(pilot, lambda: len(srv.requests) == 2, 20)
            await wait_for(pilot, lambda: app.bridge.harness.agent.status == "idle", 20)
        headless, tui = (r["body"] for r in srv.requests)
    assert headless["messages"][0]["role"] == "system"
    # the one intended difference: a human answers in the app, so it offers ask_user_question (issue #32; dsh's
    # headless profile has no such tool either)
    names = [t["function"]["name"] for t in tui["tools"]]
    assert "ask_user_question" in names and "ask_user_question" not in [t["function"]["name"]
                                                                        for t in headless["tools"]]
    tui = {**tui, "tools": [t for t in tui["tools"] if t["function"]["name"] != "ask_user_question"]}
    assert _normal(headless) == _normal(tui)


async def test_the_host_closes_the_provider_and_the_writer(tmp_path):
    from dsh_tui.llm import scripted
    from dsh_tui.llm.scripted import ScriptedProvider

    closed = []

    class Provider(ScriptedProvider):
        async def aclose(self):
            closed.append(True)

    provider = Provider([scripted.text("ok")], name="mock")
    host = await AgentHost.open(HostSpec(root=tmp_path / "root", cwd=tmp_path, provider=provider, model="m"))
    result = await host.run_turn("hi")
    await host.close()
    assert result.answer == "ok" and result.reason["kind"] == "completed"
    assert closed == [True]
    # resumed through the host (the resume path used to leave the provider open)
    provider2 = Provider([scripted.text("again")], name="mock")
    host2 = await AgentHost.open(HostSpec(root=tmp_path / "root", cwd=None, provider=provider2, model="m",
                                          resume_id=result.session_id))
    assert str(host2.agent.config.cwd) == str(tmp_path.resolve())
    r2 = await host2.run_turn("more")
    await host2.close()
    assert r2.answer == "again" and closed == [True, True]
    await asyncio.sleep(0)


async def test_a_new_session_without_a_cwd_starts_in_the_process_directory(tmp_path, monkeypatch):
    """``HostSpec.cwd`` None on a new session (not a resume) means the process's directory, as the plugins'
    workspace and the agent already took it; the header's cwd used to be ``Path(None)`` (a TypeError)."""
    from dsh_tui.llm import scripted
    from dsh_tui.llm.scripted import ScriptedProvider

    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    host = await AgentHost.open(HostSpec(root=tmp_path / "root", cwd=None,
                                         provider=ScriptedProvider([scripted.text("ok")], name="mock"), model="m"))
    try:
        result = await host.run_turn("hi")
    finally:
        await host.close()
    assert result.answer == "ok"
    assert host.session.header["cwd"] == str(work.resolve())
    assert str(host.agent.config.cwd) == str(work.resolve())
