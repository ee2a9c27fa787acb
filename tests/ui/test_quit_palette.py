"""Pilot tests: the palette's two model commands, the resume hint printed after quitting, and the
first-run notices (no model configured; the anonymous id)."""

from __future__ import annotations

import io
from contextlib import redirect_stdout

from dsh_tui.cli.app_cmd import run_and_hint
from dsh_tui.llm import scripted
from dsh_tui.llm.scripted import Hang
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.settings import UiSettings
from tests.ui.conftest import items, scripted_app, submit, wait_for


async def _palette(pilot, query: str) -> None:
    await pilot.press("ctrl+p")
    await pilot.pause(0.2)
    for ch in query:
        await pilot.press(ch if ch != " " else "space")
    await pilot.pause(0.5)
    await pilot.press("enter")
    await pilot.pause(0.3)


async def test_palette_offers_this_session_and_new_sessions_separately(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("one")])
    app.settings.set("models", ["mock-model-2"])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await _palette(pilot, "mock-model-2 this session")
        await wait_for(pilot, lambda: app.bridge.harness.agent.config.model == "mock-model-2")
        assert app.settings.get("default.model") is None  # this session only: nothing saved
        await wait_for(pilot, lambda: "mock-model-2" in app.chat.status.build().plain)
        await _palette(pilot, "v4-flash new sessions")
        await wait_for(pilot, lambda: app.settings.get("default.model") is not None)
        assert app.settings.get("default.model") == "deepseek-v4-flash"
        assert app.settings.get("default.provider") == "deepseek-official"
        assert app.bridge.harness.agent.config.model == "mock-model-2"  # the live session is not switched


async def test_quit_mid_turn_prints_how_to_resume_after_the_app_is_gone(tmp_path):
    app = scripted_app(tmp_path, [[Hang()]])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "long answer")
        await wait_for(pilot, lambda: app.chat.running)
        session_id = app.bridge.harness.session.header["id"]
        await pilot.press("ctrl+q")
        await pilot.pause(0.5)
    assert app.resume_hint() == (f"Session saved. Continue it with: dsh-tui resume {session_id} "
                                 f"--root {tmp_path / 'sessions'}")

    class Ran:  # run_and_hint's contract: print the app's hint once run_app() has returned
        def __init__(self, real: DshApp) -> None:
            self.real, self.ran = real, False

        def run_app(self) -> None:
            self.ran = True

        def resume_hint(self) -> str:
            assert self.ran
            return self.real.resume_hint()

    out = io.StringIO()
    with redirect_stdout(out):
        assert run_and_hint(Ran(app)) == 0
    assert out.getvalue() == app.resume_hint() + "\n"


async def test_quit_before_any_turn_prints_nothing(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("one")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await pilot.press("ctrl+q")
        await pilot.pause(0.3)
    assert app.resume_hint() == ""


async def test_no_model_notice_does_not_repeat_its_title(tmp_path):
    hint = ("No model configured: no API key for provider \"deepseek-official\": export DEEPSEEK_API_KEY=<your key>, "
            "or add [providers.deepseek-official] api_key = \"<your key>\" to credentials.toml")
    app = DshApp(None, start="browser", session_roots=[tmp_path], model_hint=hint,
                 settings=UiSettings(values={"ui.theme": "dsh-dark"}))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.3)
        notes = list(app._notifications)
        assert notes and notes[0].title == "No model configured"
        assert notes[0].message.startswith("no API key for provider")
        assert not notes[0].markup  # its "[providers.x]" is text


async def test_first_run_notice_about_the_anonymous_id(tmp_path):
    notice = "Requests to DeepSeek carry an anonymous random id. Turn it off with [privacy] x = false."
    app = scripted_app(tmp_path, [scripted.text("one")])
    factory, app.harness_factory = app.harness_factory, None
    app.resolve = lambda: (factory, "", notice)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: any(n.message == notice for n in app._notifications))
        assert [n.title for n in app._notifications if n.message == notice] == ["Anonymous id"]
        # "[privacy]" is shown as text, not taken for a markup tag (and dropped)
        assert [n.markup for n in app._notifications if n.message == notice] == [False]
        assert not items(app)
