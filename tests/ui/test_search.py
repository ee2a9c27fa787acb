"""Transcript search (Ctrl+F), item selection and copy, per-card expand, the full-output viewer."""

from __future__ import annotations

from pathlib import Path

from dsh_tui.llm import scripted
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.replay import ReplayHarness
from dsh_tui.ui.screens.output import OutputScreen
from dsh_tui.ui.settings import UiSettings
from dsh_tui.ui.widgets.highlight import CURRENT, Highlighted
from dsh_tui.ui.widgets.item import ItemView
from dsh_tui.ui.widgets.transcript import MAX_MOUNTED
from tests.ui.conftest import items, scripted_app, submit, wait_for
from tests.ui.screen_text import screen_text
from tests.ui.synthetic import long_session


def _replay_app(header, events) -> DshApp:
    async def factory(_bridge):
        return ReplayHarness(header, events, preload_turns=1 << 30)

    return DshApp(factory, settings=UiSettings(values={"ui.theme": "dsh-dark"}))


async def _open(pilot, app):
    await wait_for(pilot, lambda: app.chat is not None and app.chat.fold.items)
    await wait_for(pilot, lambda: not app.chat.loading_head)
    await pilot.pause(0.1)
    return app.chat


async def _type(pilot, text: str) -> None:
    for ch in text:
        await pilot.press("space" if ch == " " else ch)


def _footers(app) -> int:
    return len(items(app, "footer"))


async def test_search_covers_the_whole_session_and_mounts_a_match_outside_the_window():
    header, events = long_session(400, chunks_per_step=20)
    app = _replay_app(header, events)
    async with app.run_test(size=(100, 30)) as pilot:
        chat = await _open(pilot, app)
        transcript, bar = chat.transcript, chat.search_bar
        assert "thing13 " not in {i.key for i in chat.fold.items[-MAX_MOUNTED:]}
        await pilot.press("ctrl+f")
        await pilot.pause()
        assert bar.is_open and bar.input.has_focus
        await _type(pilot, "thing13 src")  # one tool call, far before the mounted window
        await pilot.pause(0.3)
        assert bar.counts == (1, 1) and "1 of 1" in screen_text(app)
        card = next(i for i in chat.fold.items if i.kind == "tool" and "thing13 " in i.arguments)
        view = transcript.views.get(card.key)
        assert view is not None and transcript.detached  # mounted by the jump
        text = screen_text(app)
        assert "$ grep -rn thing13 src/" in text
        assert "src/a.py:13: thing13" in text  # the card holding the current match is shown expanded
        assert isinstance(view._Static__content, Highlighted)
        # the current match is painted in the current-match colour on screen
        options = app.console.options.update_width(view.size.width)
        segments = list(app.console.render(view._Static__content, options))
        marked = [s.text for s in segments if s.style and s.style.bgcolor == CURRENT.bgcolor]
        assert marked == ["thing13 src"]

        # a query matching many prompts: the newest first, Enter goes older, Shift+Enter newer, wrapping
        await pilot.press("ctrl+a", "ctrl+k")
        await _type(pilot, "question 1")
        await pilot.pause(0.3)
        total = 1 + 10 + 100  # Question 1, 10-19, 100-199
        assert bar.counts == (total, total) and f"{total} of {total}" in screen_text(app)
        assert "Question 199:" in screen_text(app)
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert bar.counts == (total - 1, total) and "Question 198:" in screen_text(app)
        await pilot.press("shift+enter", "shift+enter")  # back to the newest, then wrap to the oldest
        await pilot.pause(0.3)
        assert bar.counts == (1, total) and "Question 1:" in screen_text(app)
        await pilot.press("f3")  # older than the oldest: wraps to the newest
        await pilot.pause(0.3)
        assert bar.counts == (total, total)
        await _type(pilot, "99")  # refined: stays on the same match
        await pilot.pause(0.3)
        assert bar.counts == (1, 1) and "Question 199:" in screen_text(app)

        await pilot.press("escape")
        await pilot.pause()
        assert not bar.is_open and chat.composer.has_focus
        assert chat.state.search == "" and not any(isinstance(v._Static__content, Highlighted)
                                                   for v in transcript.views.values() if isinstance(v, ItemView))
        assert "src/a.py:13: thing13" not in screen_text(app)  # the card is collapsed again


async def test_search_counts_follow_a_live_session(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("The word is zebra."), scripted.text("Another zebra, and a zebra.")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "first")
        await wait_for(pilot, lambda: _footers(app) == 1)
        await pilot.press("ctrl+f")
        await pilot.pause()
        await _type(pilot, "zebra")
        await pilot.pause(0.2)
        assert app.chat.search_bar.counts == (1, 1)
        app.chat.composer.value = "second"
        app.chat.sending.submit()
        await wait_for(pilot, lambda: _footers(app) == 2)
        await pilot.pause(0.2)
        assert app.chat.search_bar.counts[1] == 3 and "of 3" in screen_text(app)


ANSWER = ("Two ways:\n\n```python\nprint('one')\n```\n\nor\n\n```sh\necho two\n```\n")


async def test_select_items_copy_answer_code_blocks_and_tool_output(tmp_path):
    app = scripted_app(tmp_path, [
        scripted.call("c1", "bash", {"command": "printf 'alpha\\nbeta\\n'", "description": "print"}),
        scripted.text(ANSWER),
    ])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "show me")
        await wait_for(pilot, lambda: _footers(app) == 1)
        await pilot.pause(0.1)
        chat = app.chat
        await pilot.press("shift+tab")  # from the composer to the latest item (the turn footer)
        await pilot.pause()
        assert chat.focused is chat.transcript.views[items(app, "footer")[0].key]
        await pilot.press("up")
        answer = items(app, "assistant")[-1]
        assert chat.focused is chat.transcript.views[answer.key]
        await pilot.press("c")
        assert app.clipboard == answer.text
        await pilot.press("b")
        assert app.clipboard == "print('one')\n"
        await pilot.press("b")
        assert app.clipboard == "echo two\n"
        await pilot.press("1")
        assert app.clipboard == "print('one')\n"
        await pilot.pause()
        assert any("code block 1 of 2 (python)" in n.message for n in app._notifications)
        await pilot.press("up", "c")  # the bash card: its output
        assert app.clipboard.startswith("alpha\nbeta\n")
        await pilot.press("escape")
        assert chat.composer.has_focus


async def test_a_copy_too_big_for_osc52_goes_to_a_file(tmp_path):
    big = "x" * 150_000
    app = scripted_app(tmp_path, [scripted.text(big)])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "big")
        await wait_for(pilot, lambda: _footers(app) == 1)
        await pilot.pause(0.1)
        await pilot.press("shift+tab", "up", "c")
        await pilot.pause()
        note = next(n.message for n in app._notifications if n.message.startswith("Saved answer"))
        path = Path(note.rsplit(" to ", 1)[1])
        assert path.read_text(encoding="utf-8") == big and app.clipboard != big


async def test_enter_expands_one_card_and_ctrl_o_resets(tmp_path):
    """A collapsed card previews its first output lines (issue #26 item 15); the rest shows when expanded."""
    app = scripted_app(tmp_path, [
        scripted.calls([("c1", "bash", {"command": "printf 'first-out\\n2\\n3\\nfirst-tail\\n'", "description": "a"}),
                        ("c2", "bash", {"command": "printf 'second-out\\n2\\n3\\nsecond-tail\\n'",
                                        "description": "b"})]),
        scripted.text("Done."),
    ])
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "run")
        await wait_for(pilot, lambda: _footers(app) == 1)
        await pilot.pause(0.1)
        lines = [line.strip() for line in screen_text(app).splitlines()]
        assert "first-out" in lines and "second-out" in lines  # the preview
        assert "first-tail" not in lines and "second-tail" not in lines
        await pilot.press("shift+tab", "up", "up")  # footer -> answer -> second card
        second = items(app, "tool")[1]
        assert app.chat.focused is app.chat.transcript.views[second.key]
        await pilot.press("enter")
        await pilot.pause()
        lines = [line.strip() for line in screen_text(app).splitlines()]
        assert "second-tail" in lines
        assert "first-tail" not in lines  # only the focused card opened
        await pilot.press("enter")
        await pilot.pause()
        assert "second-tail" not in [line.strip() for line in screen_text(app).splitlines()]
        await pilot.press("enter", "ctrl+o")  # opened by hand, then every card expanded: the toggle is reset
        await pilot.pause()
        assert app.chat.state.toggled == set() and app.chat.state.card_mode == "expanded"
        lines = [line.strip() for line in screen_text(app).splitlines()]
        assert "second-tail" in lines and "first-tail" in lines


async def test_output_viewer_shows_everything_searches_and_returns(tmp_path):
    app = scripted_app(tmp_path, [
        scripted.call("c1", "bash", {"command": "seq 1 500", "description": "count"}),
        scripted.text("Counted."),
    ])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "count")
        await wait_for(pilot, lambda: _footers(app) == 1)
        await pilot.pause(0.1)
        chat = app.chat
        scroll_before = chat.transcript.scroll_y
        await pilot.press("shift+tab", "up", "up", "v")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, OutputScreen) and screen.view.has_focus
        assert screen.view.row_count >= 500 and "seq 1 500" in screen_text(app)
        await pilot.press("end")
        await pilot.pause()
        assert "500" in screen_text(app).splitlines()[-4:-1][-1] or "500" in screen_text(app)
        await pilot.press("ctrl+f")
        await pilot.pause()
        await _type(pilot, "250")
        await pilot.pause()
        assert screen.bar.counts == (1, 1) and "1 of 1" in screen_text(app)
        assert any(line.strip() == "250" for line in screen_text(app).splitlines())
        await pilot.press("escape")  # closes the search, back on the text
        await pilot.pause()
        assert not screen.bar.is_open and screen.view.has_focus
        await pilot.press("escape")  # back to the chat, on the card, where it was
        await pilot.pause()
        assert app.screen is chat and chat.focused is chat.transcript.views[items(app, "tool")[0].key]
        assert chat.transcript.scroll_y == scroll_before


async def test_closing_the_search_during_an_approval_gives_the_focus_back_to_it(tmp_path):
    app = scripted_app(tmp_path, [scripted.call("c1", "bash", {"command": "echo hi", "description": "hi"}),
                                     scripted.text("ok")],
                       preset="workspace-write")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "say hi")
        await wait_for(pilot, lambda: app.chat.approval.request is not None)
        await pilot.pause(0.1)
        await pilot.press("ctrl+f", "e", "c", "h", "o")
        await pilot.pause(0.1)
        assert app.chat.search_bar.counts == (1, 1)
        await pilot.press("escape", "a")  # Esc closes the search only; "a" then allows the call
        await wait_for(pilot, lambda: _footers(app) == 1)
        card = items(app, "tool")[0]
        assert card.approval == "allowed-once" and card.state == "ok"


async def test_a_click_on_an_item_does_not_select_it_typing_goes_to_the_composer(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("Some answer text.")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "hello")
        await wait_for(pilot, lambda: _footers(app) == 1)
        await pilot.pause(0.1)
        view = app.chat.transcript.views[items(app, "assistant")[0].key]
        await pilot.click(view)
        await pilot.pause()
        assert app.chat.focused is app.chat.transcript
        await pilot.press("c", "y")  # typed, not "copy"
        await pilot.pause()
        assert app.chat.composer.value == "cy" and app.clipboard == ""
