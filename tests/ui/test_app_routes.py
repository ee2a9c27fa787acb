"""`dsh-tui run` in the app: --cwd/--preset/--replay/--root honoured, the route resolved after the first
paint; model choice saves the provider; the provider is closed when the harness stops."""

from __future__ import annotations

import argparse

from dsh_tui.cli.app_cmd import _chat_resolver, _cwd
from dsh_tui.llm import scripted
from dsh_tui.session.content import tool_result_block
from dsh_tui.store.fixture import open_log_file
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.settings import UiSettings
from tests.conftest import FIXTURES
from tests.ui.conftest import items, scripted_app, submit, wait_for

SNAP = FIXTURES / "examples" / "acp-agent" / "tests" / "snapshots"


def _args(tmp_path, **kw) -> argparse.Namespace:
    base = dict(prompt=None, headless=False, cwd=None, root=str(tmp_path / "root"), replay=None,
                preset="workspace-write", model=None)
    base.update(kw)
    return argparse.Namespace(**base)


async def test_run_chat_honours_cwd_preset_replay_and_root(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    args = _args(tmp_path, prompt="run it", cwd=str(ws), preset="full-access",
                 replay=str(SNAP / "tool-call-turn" / "session.jsonl"))
    app = DshApp(None, resolve=_chat_resolver(args, _cwd(args)), settings=UiSettings(values={"ui.theme": "dsh-dark"}))
    async with app.run_test(size=(100, 30)) as pilot:
        assert app.chat is not None  # the chat is up before the route is known
        await wait_for(pilot, lambda: len(items(app, "footer")) == 1, 30)
        assert app.bridge.harness.agent.config.preset == "full-access"
    logs = list((tmp_path / "root").rglob("session*.jsonl*"))
    assert len(logs) == 1
    log = open_log_file(logs[0])
    assert log.header["cwd"] == str(ws.resolve())
    result = [e for e in log.events if e["type"] == "tool/result"][0]
    # full-access ran the call (workspace-write would have asked for an approval first)
    assert tool_result_block(result["data"]["message"])["content"][0]["text"] == "SNAPSHOT_OK\n"


async def test_run_chat_without_a_model_says_how_to_configure_one(tmp_path, monkeypatch):
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    args = _args(tmp_path)
    app = DshApp(None, resolve=_chat_resolver(args, _cwd(args)), settings=UiSettings(values={"ui.theme": "dsh-dark"}))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: "DEEPSEEK_API_KEY" in app.chat.status.model_hint)
        assert app.bridge.harness is None


def test_cwd_must_be_a_directory(tmp_path):
    import pytest

    from dsh_tui.session.errors import DshError

    with pytest.raises(DshError, match="not a directory"):
        _cwd(_args(tmp_path, cwd=str(tmp_path / "missing")))


async def test_choosing_a_model_of_another_provider_saves_the_provider(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("one")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        app.palette.choose_model("other-model", "other-provider")
        await pilot.pause(0.1)
        assert app.settings.get("default.model") == "other-model"
        assert app.settings.get("default.provider") == "other-provider"
        assert app.bridge.harness.agent.config.model == "mock-model"  # the live session keeps its provider
        app.palette.choose_model("mock-model-2", "mock")  # "for new sessions": the live session is not switched
        await pilot.pause(0.1)
        assert app.settings.get("default.provider") == "mock" and app.settings.get("default.model") == "mock-model-2"
        assert app.bridge.harness.agent.config.model == "mock-model"


async def test_the_provider_is_closed_when_the_harness_stops(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("one")])
    closed: list[bool] = []

    async def aclose() -> None:
        closed.append(True)

    app.provider.aclose = aclose  # type: ignore[attr-defined]
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "hi")
        await wait_for(pilot, lambda: len(items(app, "footer")) == 1)
        assert not closed
    assert closed == [True]


async def test_a_prompt_sent_while_the_route_resolves_is_sent_once_the_session_opens(tmp_path):
    """The chat paints before its model route is known (a browser tab's first second under `dsh-tui serve`):
    Enter then waits for the session, as while the session starts, instead of refusing the prompt."""
    import threading

    ws = tmp_path / "ws"
    ws.mkdir()
    args = _args(tmp_path, cwd=str(ws), preset="full-access", replay=str(SNAP / "tool-call-turn" / "session.jsonl"))
    inner = _chat_resolver(args, _cwd(args))
    gate = threading.Event()

    def resolve():
        gate.wait(30)
        return inner()

    app = DshApp(None, resolve=resolve, settings=UiSettings(values={"ui.theme": "dsh-dark"}))
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            assert app.resolve is not None and app.bridge.harness is None and app.bridge.loop is None
            await submit(pilot, "run it")
            await pilot.pause()
            note = str(app.chat.note.render())
            assert "No session is open" not in note and "Starting the session" in note, note
            # waiting in the queue, the composer free: a second message typed on is a second message (it was
            # appended to the first, sent as one prompt)
            assert app.chat.composer.text == "" and app.chat.steering.queue == ["run it"]
            await submit(pilot, "then this")
            await pilot.pause()
            assert app.chat.steering.queue == ["run it", "then this"]
            app.chat.composer.value = "a draft"
            gate.set()
            await wait_for(pilot, lambda: len(items(app, "footer")) == 2, 30)
            harness = app.bridge.harness
            prompts = [e["data"] for e in harness.session.events
                       if e["type"] == "user/message" and e["data"]["source"]["kind"] == "user"]
            assert [p["content"] for p in prompts] == [[{"type": "text", "text": "run it"}],
                                                       [{"type": "text", "text": "then this"}]]
            assert app.chat.composer.text == "a draft" and not app.chat.steering.queue
    finally:
        gate.set()
