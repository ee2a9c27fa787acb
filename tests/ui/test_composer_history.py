"""The composer's prompt history (issue #20): Up/Down recall across this session and the workspace's past
sessions, the draft kept, and the incremental history search (Ctrl+L).

Pilot tests on the real app and harness with a scripted model: the past sessions are real logs written
by earlier runs of the app in the same root, read back through the real catalog.
"""

from __future__ import annotations

from pathlib import Path

from dsh_tui.llm import scripted
from dsh_tui.llm.protocol import RetryPolicy
from dsh_tui.llm.scripted import ScriptedProvider
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.harness import HarnessSpec, open_harness
from dsh_tui.ui.history import PromptHistory
from dsh_tui.ui.settings import UiSettings
from tests.ui.conftest import items, submit, wait_for
from tests.ui.screen_text import screen_text


def _app(tmp_path: Path, responses: list, workspace: str = "ws") -> DshApp:
    """The app on the shared root ``tmp_path/sessions``, in workspace ``tmp_path/<workspace>``."""
    ws = tmp_path / workspace
    ws.mkdir(exist_ok=True)
    provider = ScriptedProvider(responses, name="mock", context_window=100_000,
                                retry_policy=RetryPolicy(initial_delay_ms=1, max_delay_ms=2, jitter_ratio=0.0))
    spec = HarnessSpec(root=tmp_path / "sessions", cwd=ws, provider=provider, model="mock-model")
    return DshApp(lambda bridge: open_harness(bridge, spec),
                  settings=UiSettings(values={"ui.theme": "dsh-dark", "ui.show_time": False}))


async def _session(tmp_path: Path, prompts: list[str], workspace: str = "ws") -> None:
    """A past session: ``prompts`` sent one after the other, each answered."""
    app = _app(tmp_path, [scripted.text(f"answer {n}") for n in range(len(prompts))], workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        for n, prompt in enumerate(prompts, 1):
            await submit(pilot, prompt)
            await wait_for(pilot, lambda n=n: len(items(app, "footer")) == n)


async def _up(pilot, composer) -> str:
    await pilot.press("up")
    await pilot.pause()
    return composer.value


async def test_up_and_down_recall_this_and_past_sessions_newest_first_and_the_draft_comes_back(tmp_path):
    await _session(tmp_path, ["old: list the files", "old: explain main.py"])
    await _session(tmp_path, ["other workspace prompt"], workspace="elsewhere")
    await _session(tmp_path, ["newer: run the tests", "old: list the files"])  # a repeat is listed once
    app = _app(tmp_path, [scripted.text("ok")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "this session's prompt")
        await wait_for(pilot, lambda: len(items(app, "footer")) == 1)
        composer = app.chat.composer
        await pilot.press(*"half typed")
        assert await _up(pilot, composer) == "this session's prompt"
        await wait_for(pilot, lambda: composer.prompt_history.loaded)
        seen = [await _up(pilot, composer) for _ in range(4)]
        assert seen == ["old: list the files", "newer: run the tests", "old: explain main.py",
                        "old: explain main.py"]  # the oldest stays; the other workspace never shows
        assert "old: explain main.py" in screen_text(app)
        for expected in ["newer: run the tests", "old: list the files", "this session's prompt", "half typed"]:
            await pilot.press("down")
            await pilot.pause()
            assert composer.value == expected
        await pilot.press("down")  # past the draft: nothing more
        assert composer.value == "half typed"


async def test_up_before_the_past_prompts_are_read_shows_them_when_they_arrive(tmp_path):
    await _session(tmp_path, ["from yesterday"])
    app = _app(tmp_path, [])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        composer = app.chat.composer
        await pilot.press("up")  # nothing in this session: the first Up waits for the catalog
        await wait_for(pilot, lambda: composer.value == "from yesterday")
        await pilot.press("down")
        await pilot.pause()
        assert composer.value == ""


async def test_a_recalled_entry_edited_then_sent_is_the_newest_and_multi_line_entries_browse_whole(tmp_path):
    app = _app(tmp_path, [scripted.text("one"), scripted.text("two"), scripted.text("three")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        composer = app.chat.composer
        await pilot.press(*"first", "ctrl+j", *"second line", "enter")
        await wait_for(pilot, lambda: len(items(app, "footer")) == 1)
        await submit(pilot, "short")
        await wait_for(pilot, lambda: len(items(app, "footer")) == 2)
        assert await _up(pilot, composer) == "short"
        # a recalled entry, unchanged: Up goes on from any row (the cursor is on its last line)
        assert await _up(pilot, composer) == "first\nsecond line"
        assert composer.cursor_location == (1, len("second line"))
        await pilot.press(*" edited")  # now it is the user's text: Up moves the cursor first
        assert await _up(pilot, composer) == "first\nsecond line edited"
        assert composer.cursor_location[0] == 0
        await pilot.press("down", "down")  # last row, then the newer entry; the edit is kept meanwhile
        await pilot.pause()
        assert composer.value == "short"
        assert await _up(pilot, composer) == "first\nsecond line edited"
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(items(app, "footer")) == 3)
        assert composer.value == ""
        assert await _up(pilot, composer) == "first\nsecond line edited"
        assert await _up(pilot, composer) == "short"


async def test_a_recalled_command_opens_no_completion_list_so_up_keeps_browsing(tmp_path):
    app = _app(tmp_path, [scripted.text("ok")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        composer = app.chat.composer
        await submit(pilot, "a prompt")
        await wait_for(pilot, lambda: len(items(app, "footer")) == 1)
        await submit(pilot, "/help")  # a command: in this run's history, not in the log
        await pilot.pause()
        assert await _up(pilot, composer) == "/help"
        assert not app.chat.completion.shown
        assert await _up(pilot, composer) == "a prompt"
        assert await _up(pilot, composer) == "a prompt"
        await pilot.press("down")
        assert composer.recalled
        await pilot.press("ctrl+u", *"/tit")  # edited: the user's text, completed again
        await pilot.pause()
        assert not composer.recalled and app.chat.completion.shown


async def test_history_search_shows_the_match_enter_keeps_it_and_esc_restores_the_draft(tmp_path):
    await _session(tmp_path, ["fix the parser bug", "write the release notes"])
    app = _app(tmp_path, [scripted.text("ok")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "parse the config file")
        await wait_for(pilot, lambda: len(items(app, "footer")) == 1)
        composer = app.chat.composer
        await pilot.press(*"my draft", "ctrl+l")
        await wait_for(pilot, lambda: composer.prompt_history.loaded)
        await pilot.press(*"PARS")  # case-insensitive
        await pilot.pause()
        assert composer.value == "parse the config file" and composer.selected_text == "pars"
        text = screen_text(app)
        # the rank among the matches, not the position among all prompts (issue #26 item 22)
        assert "history search: PARS" in text and "match 1 of 2" in text
        await pilot.press("ctrl+l")  # the search key again: the next older match
        await pilot.pause()
        assert composer.value == "fix the parser bug" and "match 2 of 2" in screen_text(app)
        await pilot.press("ctrl+l", "e", "x")  # no older match, then no match: the last match stays
        await pilot.pause()
        assert composer.value == "fix the parser bug" and "no match" in screen_text(app)
        await pilot.press("backspace", "backspace", "down")  # back to "PARS", Down: the newer match
        await pilot.pause()
        assert composer.value == "parse the config file"
        await pilot.press("escape")  # restores the draft; the turn is not cancelled, the bar is gone
        await pilot.pause()
        assert composer.value == "my draft" and "history search" not in screen_text(app)
        assert composer.search is None
        await pilot.press("ctrl+l", *"notes", "enter")
        await pilot.pause()
        assert composer.value == "write the release notes" and composer.search is None
        assert composer.selected_text == ""
        await pilot.press("down")  # the browse goes on from the accepted entry
        await pilot.pause()
        assert composer.value == "parse the config file"
        await pilot.press("down")
        await pilot.pause()
        assert composer.value == "my draft"


async def test_history_search_key_is_remappable_and_ctrl_r_steps_older_inside_it(tmp_path):
    app = _app(tmp_path, [scripted.text("1"), scripted.text("2")])
    app.settings.set("keymap.composer.history_search", "ctrl+y")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        for n, prompt in enumerate(["deploy staging", "deploy production"], 1):
            await submit(pilot, prompt)
            await wait_for(pilot, lambda n=n: len(items(app, "footer")) == n)
        composer = app.chat.composer
        await pilot.press("ctrl+y", *"deploy")
        await pilot.pause()
        assert composer.value == "deploy production" and "Ctrl+Y/Up older" in screen_text(app)
        await pilot.press("ctrl+r")  # a shell's key: older match, not the reasoning toggle
        await pilot.pause()
        assert composer.value == "deploy staging" and not app.chat.state.reasoning
        await pilot.press("right")  # any other key accepts and then does its job
        await pilot.pause()
        assert composer.search is None and composer.value == "deploy staging"


def test_prompt_history_navigation_keeps_the_draft_and_edits():
    history = PromptHistory(lambda: ["c", "b", "a"])
    history.past = ["z", "b"]
    assert history.older("draft") == "c"
    assert history.older("c*") == "b"  # the edit of "c" is kept for the browse
    assert history.older("b") == "a"
    assert history.older("a") == "z"
    assert history.older("z") is None
    assert [history.newer(t) for t in ("z", "a", "b")] == ["a", "b", "c*"]
    assert history.newer("c*") == "draft"
    assert history.newer("draft") is None
    history.record("  sent  ")
    assert history.older("") == "sent" and history.find("A", 0) == (3, 0)
