"""End to end, with the real OpenAI-compatible provider against the scripted HTTP server on 127.0.0.1: a parent
of three turns — turn 2's prompt queued while idle after turn 1, turn 3's queued while turn 2 runs — is forked
after turn 1 through the library, through ``dsh-tui fork ID --at-turn 1`` (a subprocess) and from the browser
(pilot). Each child then sends a prompt: the request carries turn 1 and the new prompt, never a later parent
prompt, and the child's log holds exactly one new turn."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from dsh_tui.config import Settings
from dsh_tui.llm.registry import build_provider
from dsh_tui.runtime import Agent, AgentConfig
from dsh_tui.session.headers import make_header
from dsh_tui.store import lifecycle
from dsh_tui.store.open import open_store
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.screens.browser import BrowserScreen, ChoiceModal
from dsh_tui.ui.screens.chat import ChatScreen
from tests.llm.sse_server import ScriptServer, chunk, sse_reply
from tests.ui.conftest import submit, wait_for

KEY = "sk-fork-e2e-0123456789abcdef"
MODEL = "deepseek-v4-flash"
PARENT = "fork-e2e-parent"
LATER = ("PROMPT TWO", "PROMPT THREE", "ANSWER TWO", "ANSWER THREE")


def _reply(text: str):
    return sse_reply(chunk(text), chunk(finish="stop", usage={"prompt_tokens": 10, "completion_tokens": 2}))


def _texts(request: dict) -> list[str]:
    """(role, text) of every message of one chat-completions request body, as strings."""
    out = []
    for m in request["body"]["messages"]:
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content)
        out.append(f"{m['role']}: {content}")
    return out


def _assert_child_request(request: dict, prompt: str) -> None:
    texts = _texts(request)
    assert texts.index("user: PROMPT ONE") < texts.index("assistant: ANSWER ONE") < texts.index(f"user: {prompt}")
    assert texts[-1] == f"user: {prompt}" or texts[-1].startswith("user: Current runtime context.")
    assert not [t for t in texts if any(later in t for later in LATER)], texts


def _assert_child_log(store, child_id: str, end1: int, parent_events: list[dict], prompt: str) -> None:
    res = store.inspect(child_id)
    n = res.header["seedLength"]
    assert res.header["parentSession"] == PARENT and n == end1 + 1
    assert res.events[:n] == parent_events[:n] and res.events[n]["type"] == "session/end-seed"
    tail = res.events[n + 1:]
    assert [e["data"] for e in tail if e["type"] == "turn/end"] == [{"turn": 2, "reason": {"kind": "completed"}}]
    users = [e["data"]["content"][0]["text"] for e in tail
             if e["type"] == "user/message" and e["data"]["source"]["kind"] == "user"]
    assert users == [prompt]


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    with ScriptServer() as srv:
        yield srv


def _provider(server):
    return build_provider(Settings({"providers": {"deepseek-official": {
        "base_url": server.base_url, "retry": {"initial_delay_ms": 1, "max_delay_ms": 2, "jitter_ratio": 0.0}}}}))


def _agent(session, provider, ws, checkpoint=None) -> Agent:
    config = AgentConfig(provider="deepseek-official", model=MODEL, cwd=str(ws), preset="read-only",
                         spill_dir=str(ws / ".spill"))
    return Agent(session, provider, [], config=config, checkpoint=checkpoint)


async def _build_parent(store, provider, server, ws) -> list[dict]:
    session, writer = lifecycle.start(store, make_header(PARENT, cwd=str(ws), created_at=1_780_000_000_000))
    agent = _agent(session, provider, ws, writer.checkpoint)
    loop = asyncio.get_running_loop()

    def queue_three(_sess, ev):  # turn 3's prompt arrives while turn 2 runs (after the event commits)
        if ev["type"] == "turn/start" and ev["data"]["turn"] == 2:
            loop.call_soon(agent.followup, "PROMPT THREE")

    off = session.subscribe(queue_three)
    try:
        server.push(_reply("ANSWER ONE"))
        agent.followup("PROMPT ONE")
        await agent.wait_idle()
        server.push(_reply("ANSWER TWO"), _reply("ANSWER THREE"))
        agent.followup("PROMPT TWO")  # while idle: its inbox insert lands right after turn/end 1
        await agent.wait_idle()
        while any(e["type"] == "turn/end" and e["data"]["turn"] == 3 for e in session.events) is False:
            await agent.wait_idle()
        await agent.dispose()
    finally:
        off()
        writer.close()
    return list(session.events)


async def _send_in_child(store, child_id, provider, server, ws, prompt) -> dict:
    session, writer = lifecycle.resume(store, child_id)
    agent = _agent(session, provider, ws, writer.checkpoint)
    try:
        assert not agent.inbox.pending()
        n = len(server.requests)
        server.push(_reply("CHILD ANSWER"))
        agent.followup(prompt)
        await agent.wait_idle()
        await agent.dispose()
    finally:
        writer.close()
    assert len(server.requests) == n + 1  # one request: the child's prompt, nothing queued before it
    return server.requests[-1]


async def test_fork_after_turn_1_by_library_cli_and_browser_never_sends_later_parent_prompts(tmp_path, server,
                                                                                            monkeypatch):
    root = tmp_path / "sessions"
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    provider = _provider(server)
    try:
        parent = await _build_parent(open_store(root), provider, server, ws)
        ends = [e["seq"] for e in parent if e["type"] == "turn/end"]
        assert len(ends) == 3 and len(server.requests) == 3
        # the parent queued turn 2's prompt after turn/end 1 and turn 3's inside turn 2
        inserts = [e for e in parent if e["type"] == "agent/inbox/spliced" and e["data"]["inserted"]]
        texts = [e["data"]["inserted"][0]["content"][0]["text"] for e in inserts]
        assert texts == ["PROMPT ONE", "PROMPT TWO", "PROMPT THREE"]
        assert ends[0] < inserts[1]["seq"] < ends[1] and ends[1] > inserts[2]["seq"] > ends[0]
        parent_file = open_store(root).locate(open_store(root).inspect(PARENT).header)
        parent_bytes = parent_file.read_bytes()

        # 1. the library
        child = lifecycle.fork(open_store(root), PARENT, at_turn=1)
        request = await _send_in_child(open_store(root), child["id"], provider, server, ws, "CHILD VIA LIBRARY")
        _assert_child_request(request, "CHILD VIA LIBRARY")
        _assert_child_log(open_store(root), child["id"], ends[0], parent, "CHILD VIA LIBRARY")

        # 2. dsh-tui fork ID --at-turn 1, a real subprocess
        proc = subprocess.run([sys.executable, "-m", "dsh_tui", "fork", PARENT, "--at-turn", "1", "--root", str(root)],
                              capture_output=True, text=True, timeout=120, env=dict(os.environ), cwd=ws)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        cli_child = proc.stdout.strip()
        request = await _send_in_child(open_store(root), cli_child, provider, server, ws, "CHILD VIA CLI")
        _assert_child_request(request, "CHILD VIA CLI")
        _assert_child_log(open_store(root), cli_child, ends[0], parent, "CHILD VIA CLI")

        # 3. the browser: f, "after turn 1", r, then send in the chat
        app = DshApp(None, start="chat")
        browser = BrowserScreen(app, roots=[root], db_path=tmp_path / "cat.sqlite", cwd=str(ws),
                                provider_route=lambda: (provider, MODEL, ""))
        server.push(_reply("CHILD ANSWER"))
        async with app.run_test(size=(110, 32)) as pilot:
            await app.push_screen(browser)
            await wait_for(pilot, lambda: browser.indexed.is_set() and browser.indexing is None)
            await pilot.pause()
            assert PARENT in [e.row.id for e in browser.list.entries]
            while browser.list.current.row.id != PARENT:
                await pilot.press("down")
            browser.list.focus()
            before = {e.row.id for e in browser.list.entries}
            await pilot.press("f")
            await wait_for(pilot, lambda: isinstance(app.screen, ChoiceModal))
            assert [v for _, v in app.screen.choices] == [3, 2, 1]
            await pilot.press("down", "down", "enter")
            await wait_for(pilot, lambda: len(browser.list.entries) == len(before) + 1)
            ui_child = browser.list.current.row
            assert ui_child.id not in before and ui_child.parent == PARENT
            await pilot.press("r")
            await wait_for(pilot, lambda: isinstance(app.screen, ChatScreen) and app.bridge.harness is not None)
            session = app.bridge.harness.session
            assert session.id == ui_child.id and not app.bridge.harness.agent.inbox.pending()
            n = len(server.requests)
            await submit(pilot, "CHILD VIA BROWSER")
            await wait_for(pilot, lambda: sum(1 for e in session.events if e["type"] == "turn/end") == 2)
            await pilot.pause(0.1)
        assert len(server.requests) == n + 1
        _assert_child_request(server.requests[-1], "CHILD VIA BROWSER")
        _assert_child_log(open_store(root), ui_child.id, ends[0], parent, "CHILD VIA BROWSER")
        assert parent_file.read_bytes() == parent_bytes  # three forks later, the parent is untouched
    finally:
        await provider.aclose()
