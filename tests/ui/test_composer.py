"""The chat as a person uses it (issue #14): paste, the steer key, focus, kept prompts, scrolling, toasts.

Pilot tests on the real app and harness with a scripted model; each asserts what the user sees or
what reached the session log. Keys and paste were also driven by hand in tmux (see the issue).
"""

from __future__ import annotations

import asyncio
import threading

from textual import events
from textual.app import App, ComposeResult
from textual.notifications import Notify
from textual.widgets import Input
from textual.widgets._toast import Toast

from dsh_tui.llm import scripted
from dsh_tui.llm.scripted import Delay, Hang
from dsh_tui.llm.scripted import text as scripted_text
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.settings import UiSettings
from dsh_tui.ui.widgets.input import LightInput
from tests.ui.conftest import items, scripted_app, submit, wait_for
from tests.ui.screen_text import screen_text

NO_MODEL = "No model configured: set DEEPSEEK_API_KEY (or try `dsh-tui demo`)"


def _footers(app) -> int:
    return len(items(app, "footer"))


def _user_texts(app) -> list[str]:
    return [e["data"]["content"][0]["text"] for e in app.bridge.harness.session.events
            if e["type"] == "user/message" and e["data"]["source"]["kind"] == "user"]


async def _paste(pilot, text: str) -> None:
    # what the terminal driver posts for a bracketed paste (the app forwards it to the focused widget)
    pilot.app.post_message(events.Paste(text))
    await pilot.pause()


# -- 1. paste ------------------------------------------------------------------------------------
async def test_multi_line_paste_arrives_whole_once_and_is_sent_with_its_newlines(tmp_path):
    pasted = "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: bad"
    app = scripted_app(tmp_path, [scripted.text("seen")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await _paste(pilot, pasted)
        assert app.chat.composer.value == pasted
        text = screen_text(app)
        assert "ValueError: bad" in text and "Traceback (most recent call last):" in text  # all lines shown
        await _paste(pilot, " once")
        assert app.chat.composer.value == pasted + " once"  # a single line, not doubled
        await pilot.press("enter")
        await wait_for(pilot, lambda: _footers(app) == 1)
        assert _user_texts(app) == [pasted + " once"]
        assert app.chat.composer.value == ""


async def test_a_terminal_paste_with_carriage_returns_keeps_its_lines(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("seen")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await _paste(pilot, "one\rtwo\r\nthree")  # tmux's paste-buffer turns LF into CR
        await pilot.press("enter")
        await wait_for(pilot, lambda: _footers(app) == 1)
        assert _user_texts(app) == ["one\ntwo\nthree"]


async def test_ten_thousand_line_paste_lands_and_is_sent_whole(tmp_path, monkeypatch):
    from textual.document._wrapped_document import WrappedDocument

    full_wraps: list[int] = []
    wrap = WrappedDocument.wrap

    def counted(self, width, tab_width=None):
        full_wraps.append(self.document.line_count)
        return wrap(self, width, tab_width)

    monkeypatch.setattr(WrappedDocument, "wrap", counted)
    pasted = "\n".join(f"{n:05d} ERROR something failed at step {n}" for n in range(10_000))
    app = scripted_app(tmp_path, [scripted.text("long log read")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        full_wraps.clear()
        await _paste(pilot, pasted)
        composer = app.chat.composer
        # collapsed (issue #26.14): one line in the composer, the whole text behind it
        assert composer.value == "[Pasted text #1 +10000 lines]" and composer.full_text == pasted
        assert [n for n in full_wraps if n > 1] == []
        await pilot.press("f2")  # expanded in place (load_text: two full wrap passes, ~0.5 s each here)
        await pilot.pause()
        assert composer.value == pasted and composer.document.line_count == 10_000
        assert len([n for n in full_wraps if n > 1]) <= 2
        full_wraps.clear()
        await pilot.resize_terminal(90, 30)  # a new width does re-wrap
        await pilot.pause()
        assert 10_000 in full_wraps
        assert composer.region.height <= 8  # grows to a few lines, then scrolls
        assert "09999 ERROR" in screen_text(app)  # the cursor's end of the paste is in view
        await pilot.press("enter")
        await wait_for(pilot, lambda: _footers(app) == 1)
        assert _user_texts(app) == [pasted]


async def test_ctrl_j_inserts_a_newline_and_the_composer_grows(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("ok")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        composer = app.chat.composer
        one_line = composer.region.height
        await pilot.press(*"first", "ctrl+j", *"second")
        await pilot.pause()
        assert composer.value == "first\nsecond" and composer.region.height == one_line + 1
        await pilot.press("enter")
        await wait_for(pilot, lambda: _footers(app) == 1)
        assert _user_texts(app) == ["first\nsecond"]


async def test_ctrl_j_in_a_burst_of_keys_lands_where_it_was_typed(tmp_path):
    app = scripted_app(tmp_path, [])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        # one burst, as a terminal delivers keys sent together (tmux send-keys "one" C-j "two")
        for key, char in [("o", "o"), ("n", "n"), ("e", "e"), ("ctrl+j", "\n"), ("t", "t"), ("w", "w"), ("o", "o")]:
            app.post_message(events.Key(key, char))
        await pilot.pause()
        assert app.chat.composer.value == "one\ntwo"


BURST = [("a", "a"), ("b", "b"), ("c", "c"), ("backspace", "\x7f"), ("d", "d"), ("left", None), ("left", None),
         ("backspace", "\x7f"), ("x", "x"), ("end", None), ("ctrl+w", None), ("z", "z")]


async def test_editing_keys_in_a_burst_act_in_typing_order(tmp_path):
    # a terminal delivers keys typed fast (or sent over ssh) in one read: Backspace then d ran as
    # "insert d, then delete it", because a binding runs once the key has bubbled up to the app
    app = scripted_app(tmp_path, [])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        for key, char in BURST:
            app.post_message(events.Key(key, char))
        await pilot.pause()
        assert app.chat.composer.value == "z"  # abd -> xbd -> (Ctrl+W) "" -> z


async def test_editing_keys_in_a_burst_act_in_typing_order_in_one_line_inputs():
    from dsh_tui.ui.screens.browser.screen import FilterInput

    class Host(App):
        def compose(self) -> ComposeResult:
            yield LightInput(id="light")
            yield FilterInput(id="filter")

    app = Host()
    async with app.run_test(size=(60, 10)) as pilot:
        for box in app.query(Input):
            box.focus()
            await pilot.pause()
            for key, char in BURST[:9]:
                app.post_message(events.Key(key, char))
            await pilot.pause()
            assert box.value == "xbd", box.id


async def test_light_input_paste_is_not_doubled():
    class Host(App):
        def compose(self) -> ComposeResult:
            yield LightInput(id="box")

    app = Host()
    async with app.run_test(size=(60, 10)) as pilot:
        await _paste(pilot, "abc")
        assert app.query_one(LightInput).value == "abc"


# -- 3. steering and the queue -------------------------------------------------------------------
async def test_ctrl_s_steers_into_the_running_turn_and_the_hint_says_so(tmp_path):
    app = scripted_app(tmp_path, [
        scripted.call("c1", "bash", {"command": "sleep 0.6", "description": "wait a bit"}),
        scripted.text("steered answer"),
    ])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        assert "Enter send" in app.chat.composer.border_subtitle
        await submit(pilot, "run the slow thing")
        await wait_for(pilot, lambda: any(i.kind == "tool" and i.state == "running" for i in items(app)))
        assert "Ctrl+S steer" in screen_text(app)  # the composer's hint while a turn runs
        await submit(pilot, "also check the README", key="ctrl+s")
        assert app.chat.composer.value == "" and app.chat.queue == []
        await wait_for(pilot, lambda: _footers(app) == 1)
        events_ = app.bridge.harness.session.events
        splices = [e for e in events_ if e["type"] == "agent/inbox/spliced" and e["data"]["target"] == "next-step"]
        assert splices and splices[0]["data"]["inserted"][0]["content"][0]["text"] == "also check the README"


async def test_queue_shows_its_first_item_highlighted_and_s_steers_it(tmp_path):
    # the command outlasts the key presses below even on a loaded machine (at 1.5 s the turn sometimes
    # ended first and started "later" as the next turn, leaving nothing to steer)
    app = scripted_app(tmp_path, [
        scripted.call("c1", "bash", {"command": "sleep 5", "description": "wait a bit"}),
        scripted.text("answer"), scripted.text("second turn"),
    ])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "run the slow thing")
        await wait_for(pilot, lambda: any(i.kind == "tool" and i.state == "running" for i in items(app)))
        await submit(pilot, "steer me")
        await submit(pilot, "later")
        assert app.chat.queue == ["steer me", "later"]
        await pilot.press("ctrl+down")
        queue = app.chat.queue_list
        assert queue.has_focus and queue.highlighted == 0
        # the composer's hint names the queue's keys while it has the focus (Esc goes back, not cancel)
        assert app.chat.composer.border_subtitle == "s steer now · e edit · Del remove · Esc back"
        await pilot.press("down", "escape", "ctrl+down")  # focused again: the next message, not the last seen
        assert queue.has_focus and queue.highlighted == 0
        await pilot.press("s")
        await pilot.pause()
        assert app.chat.queue == ["later"] and queue.highlighted == 0
        assert app.chat.composer.has_focus  # steered: back to the composer
        assert "Ctrl+S steer" in app.chat.composer.border_subtitle
        await pilot.press("ctrl+down", "escape")  # Esc in the queue goes back too
        assert app.chat.composer.has_focus and "Esc cancel" in app.chat.composer.border_subtitle
        await wait_for(pilot, lambda: _footers(app) == 2)
        events_ = app.bridge.harness.session.events
        splices = [e for e in events_ if e["type"] == "agent/inbox/spliced" and e["data"]["target"] == "next-step"]
        assert splices[0]["data"]["inserted"][0]["content"][0]["text"] == "steer me"
        assert _user_texts(app)[-1] == "later"


async def test_up_from_the_composers_top_row_focuses_the_queue_and_esc_comes_back(tmp_path):
    app = scripted_app(tmp_path, [[Delay(0.05), Hang()]])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "one")
        await wait_for(pilot, lambda: app.chat.running)
        await submit(pilot, "two")
        await submit(pilot, "three")
        composer, queue = app.chat.composer, app.chat.queue_list
        await pilot.press(*"ab", "ctrl+j", "c", "up")  # Up moves within the composer first...
        assert composer.has_focus and composer.cursor_location == (0, 1)
        await pilot.press("up")  # ...then from its top row to the queue, the next message highlighted
        assert queue.has_focus and queue.highlighted == 0
        await pilot.press("escape")  # back to the composer; the turn is not cancelled
        assert composer.has_focus and composer.value == "ab\nc" and app.chat.running
        await pilot.press("ctrl+down", "x")  # a letter the queue does not bind goes to the composer
        assert composer.has_focus and composer.value == "axb\nc" and app.chat.queue == ["two", "three"]  # at the cursor


async def test_editing_a_queued_message_keeps_the_draft_in_the_composer(tmp_path):
    app = scripted_app(tmp_path, [[Delay(0.05), Hang()]])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "one")
        await wait_for(pilot, lambda: app.chat.running)
        await submit(pilot, "queued text")
        await pilot.press(*"my draft", "ctrl+down", "e")
        composer = app.chat.composer
        assert composer.has_focus and app.chat.queue == []
        assert composer.value == "queued text\n\nmy draft"  # the draft typed meanwhile is not thrown away


# -- 4. focus ------------------------------------------------------------------------------------
async def test_focus_returns_to_the_composer_when_the_queue_empties_itself(tmp_path):
    import threading

    from dsh_tui.llm.scripted import Gate

    first_may_end = threading.Event()  # the first turn ends when the test says so (no timed race)
    app = scripted_app(tmp_path, [[Gate(first_may_end), *scripted.text("first")], scripted.text("second")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "one")
        await wait_for(pilot, lambda: app.chat.running)
        await submit(pilot, "two")
        await pilot.press("ctrl+down")
        assert app.chat.queue_list.has_focus
        first_may_end.set()
        await wait_for(pilot, lambda: not app.chat.queue)  # the turn ended and sent "two"
        await pilot.pause()
        assert not app.chat.queue_list.display and app.chat.composer.has_focus
        await pilot.press(*"typed")
        assert app.chat.composer.value == "typed"


async def test_a_key_typed_while_a_hidden_widget_has_focus_lands_in_the_composer(tmp_path):
    app = scripted_app(tmp_path, [[Delay(0.05), Hang()]])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "one")
        await wait_for(pilot, lambda: app.chat.running)
        await submit(pilot, "two")
        await pilot.press("ctrl+down")
        queue = app.chat.queue_list
        queue.display = False  # hidden behind the screen's back: its focus is stale
        await pilot.press(*"hi")
        assert app.chat.composer.has_focus and app.chat.composer.value == "hi"
        app.chat.transcript.focus()  # a click in the transcript, then typing
        await pilot.press("x")
        assert app.chat.composer.value == "hix"


# -- 6. prompts are kept -------------------------------------------------------------------------
async def test_no_model_chat_keeps_the_prompt_and_says_what_to_set_inline():
    app = DshApp(None, settings=UiSettings(values={"ui.theme": "dsh-dark"}), model_hint=NO_MODEL)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "set DEEPSEEK_API_KEY" in str(app.chat.note.render())
        assert "no model configured" in app.chat.composer.border_subtitle
        await pilot.press(*"hello there", "enter")
        await pilot.pause()
        assert app.chat.composer.value == "hello there"
        text = screen_text(app)
        assert "hello there" in text and "set DEEPSEEK_API_KEY" in text


async def test_prompt_typed_while_the_session_starts_is_sent_when_it_is_ready(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("ok")])
    gate = threading.Event()
    opened = app.harness_factory

    async def slow_start(bridge):
        await asyncio.to_thread(gate.wait, 10)
        return await opened(bridge)

    app.harness_factory = slow_start
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press(*"early", "enter")
        await pilot.pause()
        # kept, not thrown away: queued for the session, the composer free for the next message
        assert app.bridge.harness is None and app.chat.steering.queue == ["early"] and app.chat.composer.value == ""
        assert "sent when it is ready" in screen_text(app)
        gate.set()
        await wait_for(pilot, lambda: app.bridge.harness is not None and _footers(app) == 1)
        assert _user_texts(app) == ["early"] and app.chat.composer.value == "" and not app.chat.steering.queue


async def test_prompt_sent_while_the_model_route_resolves_is_sent_once_the_session_starts(tmp_path):
    """`dsh-tui run` paints before the model route is resolved (a thread): Enter in that window keeps the
    text and sends it when the session is ready (it said "No session is open." and never sent it)."""
    source = scripted_app(tmp_path, [scripted_text("ok")])
    gate = threading.Event()

    def resolve():
        gate.wait(10)
        return source.harness_factory, ""

    app = DshApp(None, settings=UiSettings(values={"ui.theme": "dsh-dark"}), resolve=resolve)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press(*"early", "enter")
        await pilot.pause()
        assert app.resolve is not None and app.chat.steering.queue == ["early"]
        assert "sent when it is ready" in screen_text(app) and "No session is open" not in screen_text(app)
        gate.set()
        await wait_for(pilot, lambda: app.bridge.harness is not None and _footers(app) == 1)
        assert _user_texts(app) == ["early"] and app.chat.composer.value == "" and not app.chat.steering.queue


async def test_prompt_sent_while_the_route_resolves_to_no_model_is_kept_with_the_hint(tmp_path):
    gate = threading.Event()

    def resolve():
        gate.wait(10)
        return None, NO_MODEL

    app = DshApp(None, settings=UiSettings(values={"ui.theme": "dsh-dark"}), resolve=resolve)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press(*"early", "enter")
        await pilot.pause()
        gate.set()
        await wait_for(pilot, lambda: app.resolve is None)
        await pilot.pause()
        # no session is coming: the queued text is back in the composer, with the hint
        assert app.chat.composer.value == "early" and not app.chat.steering.queue
        assert "set DEEPSEEK_API_KEY" in screen_text(app)


async def test_read_only_view_says_so_and_enter_resumes_it_and_sends(tmp_path, monkeypatch):
    from dsh_tui.llm.protocol import RetryPolicy
    from dsh_tui.llm.scripted import ScriptedProvider
    from dsh_tui.ui.screens.browser import BrowserScreen
    from dsh_tui.ui.screens.chat import ChatScreen
    from tests.store.test_catalog_support import load_fixture, write_session

    root, ws = tmp_path / "sessions", tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    header, rows = load_fixture("examples/acp-agent/tests/snapshots/multi-turn/session.jsonl",
                                session_id="done-1", cwd=str(ws))
    write_session(root, header, rows)
    provider = ScriptedProvider([scripted.text("resumed answer")] * 3, name="mock", context_window=100_000,
                                retry_policy=RetryPolicy(initial_delay_ms=1, max_delay_ms=2, jitter_ratio=0.0))
    app = DshApp(None, start="chat", settings=UiSettings(values={"ui.theme": "dsh-dark"}))
    browser = BrowserScreen(app, roots=[root], db_path=tmp_path / "cat.sqlite", cwd=str(ws),
                            provider_route=lambda: (provider, "mock-model", ""))
    async with app.run_test(size=(110, 32)) as pilot:
        await app.push_screen(browser)
        await wait_for(pilot, lambda: browser.indexed.is_set() and browser.indexing is None)
        await pilot.pause()
        browser.list.focus()
        await pilot.press("enter")  # open read-only
        await wait_for(pilot, lambda: isinstance(app.screen, ChatScreen) and app.chat.attached)
        view = app.chat
        assert view.read_only and "read-only" in view.composer.border_subtitle
        assert "Read-only view" in screen_text(app)  # the placeholder says it
        await pilot.press(*"please continue", "enter")
        await wait_for(pilot, lambda: app.chat is not view and app.bridge.harness is not None
                       and getattr(app.bridge.harness, "read_only", False) is False)
        session = app.bridge.harness.session
        assert session.id == "done-1"

        def answered() -> bool:  # the typed text in the log, and its turn ended
            events = session.events
            asked = [i for i, e in enumerate(events) if e["type"] == "user/message"
                     and e["data"]["content"][0]["text"] == "please continue"]
            return bool(asked) and any(e["type"] == "turn/end" for e in events[asked[-1]:])

        await wait_for(pilot, answered)
        assert _user_texts(app)[-1] == "please continue"
        assert app.chat.composer.value == ""


async def test_read_only_view_without_a_model_keeps_the_text(tmp_path):
    from dsh_tui.ui.replay import ReplayHarness

    header = {"id": "ro", "version": 0}

    async def factory(_bridge):
        return ReplayHarness(header, [], preload_turns=1 << 30)

    app = DshApp(factory, settings=UiSettings(values={"ui.theme": "dsh-dark"}))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.chat.attached)
        app.chat.resume = lambda text: NO_MODEL
        await pilot.press(*"keep me", "enter")
        await pilot.pause()
        assert app.chat.composer.value == "keep me"
        assert "set DEEPSEEK_API_KEY" in screen_text(app)


# -- 10. scrolling -------------------------------------------------------------------------------
async def test_page_keys_scroll_the_transcript_and_sending_follows_to_the_bottom(tmp_path):
    answer = "\n\n".join(f"Paragraph {n} " + "word " * 30 for n in range(40))
    app = scripted_app(tmp_path, [scripted.text(answer), scripted.text("short")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "long please")
        await wait_for(pilot, lambda: _footers(app) == 1)
        transcript, composer = app.chat.transcript, app.chat.composer
        await wait_for(pilot, lambda: transcript.scroll_y > 0 and transcript.at_bottom())
        bottom, page = transcript.scroll_y, transcript.scrollable_content_region.height
        assert composer.has_focus and bottom > 0
        await pilot.press("pageup")
        await pilot.pause()
        assert transcript.scroll_y < bottom and not transcript.following and composer.has_focus
        await pilot.press("pagedown")
        await wait_for(pilot, lambda: transcript.following and transcript.at_bottom())  # the last page follows
        await pilot.press("pageup", "pageup")
        await pilot.pause()
        assert not transcript.following
        await wait_for(pilot, lambda: "back to bottom" in app.chat.composer.border_title)
        assert transcript.scrollable_content_region.height == page  # the hint takes no row from it
        await pilot.press("pagedown", "pagedown")  # two pages down from two pages up: following again
        await wait_for(pilot, lambda: transcript.following and transcript.at_bottom())
        await pilot.press("pageup", "pageup")
        await pilot.pause()
        assert not transcript.following
        await submit(pilot, "and now")
        await wait_for(pilot, lambda: _footers(app) == 2)
        await wait_for(pilot, lambda: transcript.following and transcript.at_bottom())


# -- 11. toasts and modes ------------------------------------------------------------------------
async def test_display_modes_show_in_the_status_bar_not_in_toasts(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("ok")])
    posted: list[Notify] = []
    async with app.run_test(size=(100, 30), message_hook=lambda m: posted.append(m)
                            if isinstance(m, Notify) else None) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        status = app.chat.status
        await pilot.press("ctrl+o")
        assert "cards expanded" in status.build().plain
        await pilot.press("ctrl+o")
        assert "cards hidden" in status.build().plain
        await pilot.press("ctrl+o")
        assert "cards" not in status.build().plain  # back to the default: nothing to say
        await pilot.press("ctrl+r")
        assert "thinking shown" in status.build().plain
        assert posted == []


async def test_toasts_of_a_kind_replace_each_other_and_stay_off_the_composer_and_approval(tmp_path):
    (tmp_path / "ws").mkdir()
    app = scripted_app(tmp_path, [
        scripted.call("c1", "bash", {"command": "echo hi", "description": "say hi"}), scripted.text("ok"),
    ], preset="workspace-write")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "run it")
        await wait_for(pilot, lambda: app.chat.approval.request is not None)
        for n in range(3):
            app.notify(f"Something failed ({n})", title="Error", severity="error", timeout=30)
        app.notify("Saved", timeout=30)
        await pilot.pause(0.2)
        toasts = list(app.screen.query(Toast))
        shown = sorted(str(t.render()) for t in toasts)
        assert len(shown) == 2 and "Something failed (2)" in shown[0] and "Saved" in shown[1]  # the last error only
        transcript = app.chat.transcript.region
        for toast in toasts:
            region = toast.region
            assert not region.overlaps(app.chat.approval.region)
            assert not region.overlaps(app.chat.status.region)
            assert region.bottom < transcript.bottom  # the transcript's last line stays visible
        await pilot.press("a")
        await wait_for(pilot, lambda: _footers(app) == 1)
        await pilot.pause(0.1)
        for toast in app.screen.query(Toast):
            assert not toast.region.overlaps(app.chat.composer.region)


async def test_an_error_toast_in_a_short_chat_leaves_its_last_line_readable(tmp_path):
    app = scripted_app(tmp_path, [scripted.finish_error("AUTH", "invalid API key", status=401)])
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "hello")
        await wait_for(pilot, lambda: _footers(app) == 1)
        # a failed turn raises no toast of its own any more (its footer and the status bar say it): an
        # error toast of something else must still leave the footer readable
        app.notify("Something else failed", title="Error", severity="error", timeout=30)
        await wait_for(pilot, lambda: app.screen.query(Toast))
        await pilot.pause(0.2)
        last = app.chat.transcript.views[items(app, "footer")[0].key].region
        assert "Failed: AUTH" in screen_text(app)
        for toast in app.screen.query(Toast):
            assert not toast.region.overlaps(last)  # the footer stays readable
            assert not toast.region.overlaps(app.chat.composer.region)


async def test_a_word_typed_in_the_queue_reaches_the_composer_whole(tmp_path):
    app = scripted_app(tmp_path, [[Delay(0.05), Hang()]])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "one")
        await wait_for(pilot, lambda: app.chat.running)
        await submit(pilot, "two")
        await pilot.press("ctrl+down")
        assert app.chat.queue_list.has_focus
        # one burst, as a terminal delivers it: the keys after the first must not go to the queue
        for key in "typed here":
            app.post_message(events.Key("space" if key == " " else key, key))
        await pilot.pause()
        assert app.chat.composer.value == "typed here" and app.chat.queue == ["two"]


async def test_approval_buttons_show_their_keys(tmp_path):
    (tmp_path / "ws").mkdir()
    app = scripted_app(tmp_path, [scripted.call("c1", "bash", {"command": "echo hi", "description": "d"}),
                                  scripted.text("ok")], preset="workspace-write")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "run it")
        await wait_for(pilot, lambda: app.chat.approval.request is not None)
        await wait_for(pilot, lambda: "Allow once [a]" in screen_text(app))  # the panel's first paint
        text = screen_text(app)
        assert "Reject [r]" in text  # "[a]" is not eaten as markup
        await pilot.press("y", "n", "enter")  # no undocumented aliases, and Enter alone does not decide
        await pilot.pause(0.1)
        assert app.chat.approval.request is not None
        await pilot.press("a")
        await wait_for(pilot, lambda: _footers(app) == 1)
        assert app.chat.composer.has_focus


async def test_enter_steers_setting_swaps_enter_and_ctrl_s(tmp_path):
    app = scripted_app(tmp_path, [[Delay(0.05), Hang()]])
    app.settings.set("chat.enter_steers", True)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "one")
        await wait_for(pilot, lambda: app.chat.running)
        assert "Enter steer · Ctrl+S queue" in app.chat.composer.border_subtitle
        await submit(pilot, "for later", key="ctrl+s")
        assert app.chat.queue == ["for later"] and app.chat.composer.value == ""


async def test_a_steer_the_cancelled_turn_never_took_comes_back_to_the_composer(tmp_path):
    app = scripted_app(tmp_path, [[Delay(0.05), Hang()], scripted.text("next")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "one")
        await wait_for(pilot, lambda: app.chat.running)
        await submit(pilot, "use the other file", key="ctrl+s")
        assert app.chat.composer.value == ""
        await wait_for(pilot, lambda: any(e["type"] == "agent/inbox/spliced"
                                          for e in app.bridge.harness.session.events))
        await pilot.press("escape")
        await wait_for(pilot, lambda: _footers(app) == 1 and not app.chat.running)
        assert "use the other file" not in _user_texts(app)  # the runtime discarded it...
        assert app.chat.composer.value == "use the other file"  # ...the composer did not
        assert "back in the composer" in screen_text(app)


async def test_a_steer_that_became_a_message_is_not_given_back(tmp_path):
    app = scripted_app(tmp_path, [
        scripted.call("c1", "bash", {"command": "sleep 0.6", "description": "wait a bit"}),
        scripted.text("steered answer"),
    ])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "run the slow thing")
        await wait_for(pilot, lambda: any(i.kind == "tool" and i.state == "running" for i in items(app)))
        await submit(pilot, "also check the README", key="ctrl+s")
        await wait_for(pilot, lambda: _footers(app) == 1)
        await pilot.pause(0.1)
        assert "also check the README" in _user_texts(app) and app.chat.composer.value == ""


async def test_text_typed_while_a_read_only_view_loads_is_kept_not_sent():
    from dsh_tui.ui.replay import ReplayHarness

    gate = threading.Event()
    resumed: list[str] = []

    async def factory(_bridge):
        await asyncio.to_thread(gate.wait, 10)
        return ReplayHarness({"id": "ro", "version": 0}, [], preload_turns=1 << 30)

    app = DshApp(factory, settings=UiSettings(values={"ui.theme": "dsh-dark"}))
    async with app.run_test(size=(80, 24)) as pilot:
        app.chat.resume = lambda text: resumed.append(text) or ""
        await pilot.press(*"early", "enter")
        await pilot.pause()
        gate.set()
        await wait_for(pilot, lambda: app.chat.read_only)
        await pilot.pause(0.1)
        assert resumed == [] and app.chat.composer.value == "early"  # not resumed behind the user's back
        assert "read-only view" in screen_text(app)
        await pilot.press("enter")  # now it is the user's choice
        assert resumed == ["early"]
