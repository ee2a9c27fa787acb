"""App-level behaviour: themes, keymap, help, quit flushing, queue editing, no-model hint."""

from __future__ import annotations

from dsh_tui.config import load_settings, settings_path
from dsh_tui.llm import scripted
from dsh_tui.llm.scripted import Delay, Hang
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.settings import UiSettings
from dsh_tui.ui.themes import load_themes
from tests.ui.conftest import items, scripted_app, submit, wait_for
from tests.ui.screen_text import screen_text


def test_project_themes_load_from_toml():
    themes = {t.name: t for t in load_themes()}
    assert {"dsh-dark", "dsh-light"} <= set(themes)
    assert themes["dsh-dark"].dark and not themes["dsh-light"].dark
    assert themes["dsh-light"].primary == "#2156C9"


async def test_theme_choice_persists_in_settings():
    app = DshApp(None, settings=UiSettings.load())
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.theme == "dsh-dark"
        assert "textual-dark" in app.available_themes and "dsh-light" in app.available_themes
        app.theme = "dsh-light"
        await pilot.pause()
    assert load_settings().get("ui.theme") == "dsh-light"
    again = DshApp(None, settings=UiSettings.load())
    async with again.run_test(size=(80, 24)):
        assert again.theme == "dsh-light"


async def test_bindings_are_remappable_by_id(tmp_path):
    app = scripted_app(tmp_path, [scripted.calls([("c1", "bash", {"command": "echo hi", "description": "d"})]),
                                  scripted.text("done")])
    app.settings.set("keymap.chat.cards", "f6")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "go")
        await wait_for(pilot, lambda: len(items(app, "footer")) == 1)
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert app.chat.state.card_mode == "collapsed"  # the old key no longer cycles
        await pilot.press("f6")
        await pilot.pause()
        assert app.chat.state.card_mode == "expanded"


async def test_f1_shows_help_and_no_model_hint_in_status_bar():
    hint = "Set DEEPSEEK_API_KEY to use deepseek-official"
    app = DshApp(None, settings=UiSettings(values={"ui.theme": "dsh-dark"}), model_hint=hint)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert hint in app.chat.status.build().plain
        await pilot.press("f1")
        await pilot.pause(0.2)
        assert app.screen.query("HelpPanel")
        assert "Enter sends while" in screen_text(app)  # the chat screen's HELP
        await pilot.press("f1")
        await pilot.pause(0.2)
        assert not app.screen.query("HelpPanel")
        app.chat.composer.value = "hello"
        await pilot.press("enter")
        await pilot.pause()
        assert not app.chat.running  # nothing to send to: the hint is shown instead


async def test_ctrl_q_flushes_the_session_to_disk(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("persist me")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "hello")
        await wait_for(pilot, lambda: len(items(app, "footer")) == 1)
        session_id = app.bridge.harness.session.id
        expected = len(app.bridge.harness.session.events)
        await pilot.press("ctrl+q")
    from dsh_tui.store.open import open_store

    stored = open_store(tmp_path / "sessions").inspect(session_id)
    assert len(stored.events) == expected
    assert stored.events[-1]["type"] == "turn/end"
    assert any(e["type"] == "assistant/message" and e["data"]["message"]["content"][0]["text"] == "persist me"
               for e in stored.events)


async def test_queue_edit_remove_and_steer(tmp_path):
    app = scripted_app(tmp_path, [[Delay(0.05), Hang()], scripted.text("second")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "one")
        await wait_for(pilot, lambda: app.chat.running)
        for text in ("a", "b", "c"):
            await submit(pilot, text)
        assert app.chat.queue == ["a", "b", "c"]
        await pilot.press("ctrl+down")
        assert app.chat.queue_list.has_focus
        app.chat.queue_list.highlighted = 1
        await pilot.press("delete")  # remove "b"
        await pilot.pause()
        assert app.chat.queue == ["a", "c"]
        app.chat.queue_list.highlighted = 1
        await pilot.press("e")  # edit "c": back into the composer
        await pilot.pause()
        assert app.chat.queue == ["a"] and app.chat.composer.value == "c"
        await pilot.press("escape")  # cancel the running turn: the queued follow-up goes next
        await wait_for(pilot, lambda: len(items(app, "footer")) == 2)
        assert items(app, "footer")[0].reason_text == "Stopped by you"
        assert [i.text for i in items(app, "user")] == ["one", "a"]


def test_model_route_says_how_to_configure_or_builds_the_provider(monkeypatch):
    from dsh_tui.cli.app_cmd import model_route

    provider, model, hint = model_route()
    assert provider is None and model == "" and "DEEPSEEK_API_KEY" in hint and "dsh-tui demo" in hint
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test-not-real")
    provider, model, hint = model_route()
    assert provider is not None and provider.name == "deepseek-official" and model and hint == ""
    assert model_route("deepseek-v4-pro")[1] == "deepseek-v4-pro"


async def test_command_palette_runs_chat_actions_and_switches_models(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("one"), scripted.text("two")])
    app.settings.set("models", ["mock-model-2"])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await pilot.press("ctrl+p")
        await pilot.pause(0.2)
        await pilot.press(*"Cycle tool cards")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert app.chat.state.card_mode == "expanded"
        await pilot.press("ctrl+p")
        await pilot.pause(0.2)
        await pilot.press(*"Model: mock-model-2")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.bridge.harness.agent.config.model == "mock-model-2")
        await submit(pilot, "hi")
        await wait_for(pilot, lambda: len(items(app, "footer")) == 1)
        assert app.provider.requests[-1]["config"]["model"] == "mock-model-2"


async def test_a_harness_that_cannot_start_is_reported_not_raised():
    from dsh_tui.session.errors import DshError

    async def factory(_bridge):
        raise DshError("session abc is open in another process")

    app = DshApp(factory, settings=UiSettings(values={"ui.theme": "dsh-dark"}))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: "open in another process" in app.chat.status.info.notice)
        assert app.bridge.harness is None
        app.chat.composer.value = "hello"
        await pilot.press("enter")
        await pilot.pause()
        assert not app.chat.running


def test_price_table_from_settings():
    settings = UiSettings(values={"prices": {"my-model": {"input": 1.0, "cache_read": 0.5, "output": 4.0}}})
    table = settings.prices()
    assert table["my-model"] == (1.0, 0.5, 4.0)
    # no provider's prices are built in (README: without them the cost shows as unknown)
    assert "deepseek-v4-flash" not in table and "deepseek-chat" not in table


def test_cost_is_unknown_without_a_configured_price():
    from dsh_tui.session.stats import UsageFold

    fold = UsageFold(UiSettings(values={}).prices())
    fold.apply({"type": "request/header", "data": {"header": {"config": {"model": "deepseek-v4-flash"}}}})
    assert fold.cost_usd() is None  # not "$0.0000" before the first usage either
    fold.apply({"type": "assistant/chunk", "data": {"turn": 1, "step": 1, "chunk": {
        "type": "usage", "usage": {"inputTokens": 4200, "outputTokens": 80}}}})
    assert fold.total.output == 80 and fold.cost_usd() is None


SETTINGS_WITH_COMMENTS = """\
# My dsh-tui settings: hand-written, please keep my notes.

[ui]
theme = "dsh-dark"   # dark for the evening
show_time = true

# the model I use most
[default]
model = "deepseek-v4-flash"  # fast one

[keymap]
chat.cards = "ctrl+k"   # dotted keys stay dotted

[providers.local]  # a vLLM box under the desk
base_url = "http://127.0.0.1:8000/v1"
models = ["qwen"]

[some-future-plugin.section]
flags = [1, 2, 3]  # unknown to this version: kept as is
"""


async def test_saving_the_theme_and_model_keeps_comments_and_unknown_tables():
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(SETTINGS_WITH_COMMENTS.encode())
    app = DshApp(None, settings=UiSettings.load())
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.theme == "dsh-dark"
        app.theme = "dsh-light"
        await pilot.pause()
        # exactly the one value changed, every other byte as the user wrote it
        assert path.read_bytes() == SETTINGS_WITH_COMMENTS.replace(
            'theme = "dsh-dark"   #', 'theme = "dsh-light"   #').encode()
        app.palette.choose_model("qwen", "local")  # the command palette's "save as default" path
        await pilot.pause()
    assert path.read_bytes() == SETTINGS_WITH_COMMENTS.replace(
        'theme = "dsh-dark"   #', 'theme = "dsh-light"   #').replace(
        'model = "deepseek-v4-flash"  # fast one', 'model = "qwen"  # fast one\nprovider = "local"').encode()
    settings = load_settings()
    assert settings.get("ui.theme") == "dsh-light" and settings.default_provider == "local"
    assert settings.get("some-future-plugin.section.flags") == [1, 2, 3]
