"""The transcript window on long and replayed sessions: tail-first, bounded DOM, load earlier, jump to event."""

from __future__ import annotations

from dsh_tui.ui.app import DshApp
from dsh_tui.ui.replay import ReplayHarness
from dsh_tui.ui.settings import UiSettings
from dsh_tui.ui.widgets.transcript import MAX_MOUNTED, PAGE
from tests.fixture_logs import fixture_path, read_fixture
from tests.ui.conftest import wait_for
from tests.ui.screen_text import screen_text
from tests.ui.synthetic import long_session


def _replay_app(header, events) -> DshApp:
    async def factory(_bridge):
        return ReplayHarness(header, events, preload_turns=1 << 30)

    return DshApp(factory, settings=UiSettings(values={"ui.theme": "dsh-dark"}))


async def test_long_session_mounts_only_the_tail_and_loads_earlier(monkeypatch):
    import dsh_tui.ui.screens.chat_stream as chat_mod

    monkeypatch.setattr(chat_mod, "TAIL_EVENTS", 3_000)  # small enough to exercise the background head fold
    header, events = long_session(400, chunks_per_step=20)
    app = _replay_app(header, events)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.chat is not None and app.chat.fold.items)
        chat = app.chat
        await wait_for(pilot, lambda: not chat.loading_head)
        total = len(chat.fold.items)
        assert total == 200 + 400 + 300 + 200  # prompts + answers + tool cards + footers (synthetic shape)
        assert len(chat.transcript.views) == MAX_MOUNTED
        assert len(chat.screen.query("ItemView, AnswerView")) <= MAX_MOUNTED
        assert chat.transcript.hidden_before() == total - MAX_MOUNTED
        label = chat.transcript.query_one("#earlier")
        assert str(label.render()).startswith(f"▲ {total - MAX_MOUNTED} earlier items")
        assert "Step 399" in screen_text(app)  # the latest turn is what the user sees first
        assert chat.fold.usage.total.output == 400 * 80  # head + tail usage merged
        await pilot.press("ctrl+home")
        await pilot.pause()
        assert len(chat.transcript.views) == MAX_MOUNTED + PAGE
        first = chat.fold.items[0]
        assert chat.scroll_to_seq(first.seq)
        await pilot.pause(0.2)
        assert first.key in chat.transcript.views and chat.transcript.detached
        assert "Question 1:" in screen_text(app)
        await pilot.press("ctrl+end")  # back to bottom reloads the tail window and follows again
        await pilot.pause(0.2)
        assert not chat.transcript.detached and chat.transcript.following
        assert len(chat.transcript.views) == MAX_MOUNTED and "Step 399" in screen_text(app)


async def test_fixture_replay_is_read_only_and_matches_the_cold_fold():
    header, events = read_fixture(fixture_path("parallel-tool-calls"))
    app = _replay_app(header, events)
    notes: list[str] = []
    async with app.run_test(size=(100, 30), message_hook=lambda m: notes.append(type(m).__name__)) as pilot:
        await wait_for(pilot, lambda: app.chat is not None and app.chat.fold.items)
        await pilot.pause(0.1)
        kinds = [i.kind for i in app.chat.fold.items]
        assert kinds == ["user", "context", "tool", "tool", "assistant", "footer"]
        text = screen_text(app)
        assert "read a.txt" in text and "DONE" in text
        assert app.chat.read_only and "read-only" in app.chat.composer.border_subtitle
        app.chat.composer.value = "more"
        await pilot.press("enter")
        await pilot.pause()
        # nothing sent, the text kept, and why said above the composer (not in a toast)
        assert app.chat.composer.value == "more" and not app.chat.running and "Notify" not in notes
        assert "read-only view" in screen_text(app)


async def test_jump_requested_before_the_session_is_folded_happens_after(monkeypatch):
    import dsh_tui.ui.screens.chat_stream as chat_mod

    monkeypatch.setattr(chat_mod, "TAIL_EVENTS", 2_000)
    header, events = long_session(200, chunks_per_step=10)
    target = next(e["seq"] for e in events if e["type"] == "user/message" and e["data"]["id"] == "u3")

    async def factory(_bridge):
        return ReplayHarness(header, events, preload_turns=1 << 30)

    app = DshApp(None, settings=UiSettings(values={"ui.theme": "dsh-dark"}))
    async with app.run_test(size=(100, 30)) as pilot:
        chat = app.open_chat(factory)  # what the browser does for a content-search hit
        assert chat.scroll_to_seq(target)  # not attached yet: remembered
        await wait_for(pilot, lambda: chat.attached and not chat.loading_head)
        await pilot.pause(0.3)
        assert chat.transcript.detached
        assert "Question 3:" in screen_text(app)
