"""Pilot tests: the chat screen driving the real harness with a scripted model.

Each asserts widget state AND the session log the harness wrote.
"""

from __future__ import annotations

from dsh_tui.llm import scripted
from dsh_tui.llm.scripted import Delay, Hang
from dsh_tui.ui.widgets.answer import AnswerView
from dsh_tui.ui.widgets.item import ItemView
from tests.ui.conftest import items, log_types, scripted_app, submit, wait_for
from tests.ui.screen_text import screen_text


def _footers(app) -> int:
    return len(items(app, "footer"))


async def test_send_streams_markdown_and_status_counts_tokens(tmp_path):
    answer = "Hello **there**.\n\n" + "\n\n".join(f"Paragraph {n} " + "word " * 40 for n in range(30))
    app = scripted_app(tmp_path, [scripted.text(answer, reasoning="Let me think.\nSecond line.", chunk_size=16,
                                                delay=0.001, usage={"inputTokens": 1200, "outputTokens": 300,
                                                                    "cacheReadTokens": 800})])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "say hello")
        await wait_for(pilot, lambda: _footers(app) == 1)
        await pilot.pause(0.1)
        chat = app.chat
        assert [i.kind for i in chat.fold.items] == ["user", "context", "thinking", "assistant", "footer"]
        assert chat.fold.items[3].text == answer and chat.fold.items[3].state == "final"
        # coalesced: far fewer UI drains than streamed chunks
        chunks = sum(1 for t in log_types(app) if t == "assistant/chunk")
        assert chunks > 100 and chat.flushes < chunks / 3
        # the long answer was frozen into Markdown segments, only the tail re-renders; the segments are
        # lines of the one AnswerView widget (no child widgets for the screen's reflow to walk)
        view = chat.transcript.views[chat.fold.items[3].key]
        assert isinstance(view, AnswerView) and view.segment_count > 3 and len(view.children) == 0
        status = chat.status.build().plain
        assert "○ idle" in status and "mock-model" in status and "↑2.0k ↓300" in status and "cache 40%" in status
        chat.transcript.scroll_home(animate=False)
        await pilot.pause(0.3)
        assert "Thinking · Second line." in screen_text(app)
        assert not chat.transcript.following and "back to bottom" in screen_text(app)
        events = app.bridge.harness.session.events
        assert events[-1]["type"] == "turn/end" and events[-1]["data"]["reason"] == {"kind": "completed"}
        msg = next(e for e in events if e["type"] == "assistant/message")
        assert msg["data"]["message"]["content"][-1]["text"] == answer
        await pilot.press("ctrl+r")  # the reasoning toggle expands thinking rows
        await pilot.pause()
        assert "Let me think." in screen_text(app)
        await pilot.press("ctrl+end")
        await pilot.pause(0.3)
        assert chat.transcript.following and "back to bottom" not in screen_text(app)


async def test_tool_round_cards_cycle_collapsed_expanded_hidden(tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "notes.txt").write_text("alpha\nbeta\n")
    app = scripted_app(tmp_path, [
        scripted.calls([("c1", "read", {"file_path": str(tmp_path / "ws" / "notes.txt")}),
                        ("c2", "bash", {"command": "echo out; exit 3", "description": "exit three"})]),
        scripted.text("Done."),
    ])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "read and run")
        await wait_for(pilot, lambda: _footers(app) == 1)
        await pilot.pause(0.1)
        cards = items(app, "tool")
        assert [(c.tool, c.state) for c in cards] == [("read", "ok"), ("bash", "ok")]
        text = screen_text(app)
        assert "read " in text and "notes.txt" in text and "$ echo out; exit 3" in text and "exit 3" in text
        assert "1: alpha" not in text  # collapsed
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert app.chat.state.card_mode == "expanded" and "alpha" in screen_text(app)
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert app.chat.state.card_mode == "hidden" and app.chat.transcript.has_class("-cards-hidden")
        assert "notes.txt" not in screen_text(app)
        types = log_types(app)
        assert types.count("tool/call") == 2 and types.count("tool/result") == 2


async def test_cancel_mid_stream_keeps_partial_answer_marked(tmp_path):
    partial = [{"type": "block-start", "index": 0, "blockType": "text"},
               {"type": "text-delta", "index": 0, "text": "Partial answ"},
               {"type": "text-delta", "index": 0, "text": "er so far"}, Hang()]
    app = scripted_app(tmp_path, [partial])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "start something long")
        await wait_for(pilot, lambda: any(i.kind == "assistant" for i in items(app)))
        assert app.chat.running and "● " in app.chat.status.build().plain
        await pilot.press("escape")
        await wait_for(pilot, lambda: _footers(app) == 1)
        await pilot.pause(0.1)
        answer = items(app, "assistant")[0]
        assert answer.state == "interrupted" and answer.text == "Partial answer so far"
        assert items(app, "footer")[0].reason_text == "Stopped by you"
        text = screen_text(app)
        assert "interrupted: the answer above is partial" in text and "Stopped by you" in text
        events = app.bridge.harness.session.events
        msg = next(e for e in events if e["type"] == "assistant/message")
        assert msg["data"].get("interrupted") is True
        assert events[-1]["data"]["reason"] == {"kind": "aborted", "reason": {"kind": "user"}}
        assert not app.chat.running


async def test_queue_while_running_then_sent_as_next_turn(tmp_path):
    app = scripted_app(tmp_path, [[Delay(0.6), *scripted.text("first")], scripted.text("second")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "one")
        await wait_for(pilot, lambda: app.chat.running)
        await submit(pilot, "two (queued)")
        assert app.chat.queue == ["two (queued)"]
        assert app.chat.queue_list.display and "1 queued" in app.chat.status.build().plain
        await wait_for(pilot, lambda: _footers(app) == 2)
        assert app.chat.queue == []
        users = [i.text for i in items(app, "user")]
        assert users == ["one", "two (queued)"]
        events = app.bridge.harness.session.events
        turn_of = {e["data"]["id"]: None for e in events if e["type"] == "user/message"}
        assert len(turn_of) >= 2
        assert [e["data"]["turn"] for e in events if e["type"] == "turn/start"] == [1, 2]


async def test_steer_goes_into_the_running_turn(tmp_path):
    app = scripted_app(tmp_path, [
        scripted.call("c1", "bash", {"command": "sleep 0.6", "description": "wait a bit"}),
        scripted.text("steered answer"),
    ])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "run the slow thing")
        await wait_for(pilot, lambda: any(i.kind == "tool" and i.state == "running" for i in items(app)))
        await submit(pilot, "also check the README", key="ctrl+enter")
        await wait_for(pilot, lambda: _footers(app) == 1)
        events = app.bridge.harness.session.events
        splices = [e for e in events if e["type"] == "agent/inbox/spliced" and e["data"]["target"] == "next-step"]
        assert splices and splices[0]["data"]["inserted"][0]["content"][0]["text"] == "also check the README"
        step2 = next(i for i, e in enumerate(events) if e["type"] == "step/start" and e["data"]["step"] == 2)
        steered = [e for e in events[step2:] if e["type"] == "user/message"
                   and e["data"]["source"]["kind"] == "user"]
        assert steered and steered[0]["data"]["content"][0]["text"] == "also check the README"
        assert [e["data"]["turn"] for e in events if e["type"] == "turn/start"] == [1]
        assert app.chat.queue == []


async def test_approval_allow_and_reject(tmp_path):
    (tmp_path / "ws").mkdir()
    app = scripted_app(tmp_path, [
        scripted.call("c1", "bash", {"command": "echo allowed > a.txt", "description": "write a"}),
        scripted.call("c2", "bash", {"command": "echo rejected > b.txt", "description": "write b"}),
        scripted.text("ok"),
    ], preset="workspace-write")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "write two files")
        await wait_for(pilot, lambda: app.chat.approval.request is not None)
        assert not app.chat.composer.display
        assert "waiting for approval" in app.chat.status.build().plain
        await wait_for(pilot, lambda: "Approve bash?" in screen_text(app))  # the panel's first paint
        text = screen_text(app)
        assert "$ echo allowed > a.txt" in text and "Allow once" in text
        await pilot.press("a")
        await wait_for(pilot, lambda: app.chat.approval.request is not None
                       and "b.txt" in app.chat.approval.request.arguments)
        await pilot.press("r")
        await wait_for(pilot, lambda: _footers(app) == 1)
        assert (tmp_path / "ws" / "a.txt").read_text() == "allowed\n"
        assert not (tmp_path / "ws" / "b.txt").exists()
        assert app.chat.composer.display
        decided = [e["data"]["outcome"] for e in app.bridge.harness.session.events if e["type"] == "approval/decided"]
        assert decided == ["allowed-once", "rejected"]
        cards = items(app, "tool")
        assert [c.approval for c in cards] == ["allowed-once", "rejected"]
        assert cards[1].state == "error"


async def test_provider_error_shows_footer_and_notice(tmp_path):
    app = scripted_app(tmp_path, [scripted.finish_error("AUTH", "bad key", status=401)])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "hello")
        await wait_for(pilot, lambda: _footers(app) == 1)
        await pilot.pause(0.1)
        footer = items(app, "footer")[0]
        assert footer.reason == "error" and footer.reason_text == "Failed: AUTH: bad key"
        assert "Failed: AUTH: bad key" in screen_text(app)
        events = app.bridge.harness.session.events
        assert events[-1]["data"]["reason"]["kind"] == "error"
        assert "AUTH" in app.chat.status.info.notice


async def test_retry_row_then_answer(tmp_path):
    app = scripted_app(tmp_path, [scripted.empty(), scripted.text("Recovered.")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "hello")
        await wait_for(pilot, lambda: _footers(app) == 1)
        await pilot.pause(0.1)
        retry = items(app, "retry")
        assert len(retry) == 1 and retry[0].describe().startswith("Retrying model request (1/5)")
        assert [i.text for i in items(app, "assistant")] == ["Recovered."]
        assert "Retrying model request (1/5)" in screen_text(app)
        types = log_types(app)
        assert "llm/retry" in types and "llm/retry-started" in types


async def test_compaction_row_keeps_history_visible(tmp_path):
    app = scripted_app(tmp_path, [
        scripted.text("first answer " * 50),
        scripted.finish_error("CONTEXT_WINDOW_EXCEEDED", "too long"),
        scripted.text("Summary of the earlier work."),
        scripted.text("answer after compaction"),
    ])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "first question " * 30)
        await wait_for(pilot, lambda: _footers(app) == 1)
        await submit(pilot, "second question")
        await wait_for(pilot, lambda: _footers(app) == 2)
        await pilot.pause(0.1)
        types = log_types(app)
        assert "compaction/start" in types and "compaction/end" in types
        rows = items(app, "compaction")
        assert len(rows) == 1 and rows[0].state == "done" and rows[0].describe().startswith("Compacted ")
        assert [i.text for i in items(app, "user")][0].startswith("first question")  # history stays
        assert items(app, "assistant")[-1].text == "answer after compaction"
        assert any(isinstance(v, ItemView) and v.item is rows[0] for v in app.chat.transcript.views.values())


async def test_rarely_shown_widgets_are_mounted_on_first_use_in_their_place(tmp_path):
    """The plan strip, queue and approval panel are not on the first screen; whatever order they are
    first needed in, each is mounted in its place between the transcript and the composer."""
    from dsh_tui.session.transcript import PlanState

    app = scripted_app(tmp_path, [scripted.text("ok")])
    async with app.run_test(size=(100, 30)) as pilot:
        # attaching the session shows its (empty) plan: wait for it, or it can land after the plan this
        # test shows and replace it (it did, once, in a CI run)
        await wait_for(pilot, lambda: app.bridge.harness is not None and app.chat.attached)
        chat = app.chat

        def ids() -> list[str]:
            return [w.id for w in chat.children if w.id in
                    ("transcript", "plan", "queue", "approval", "composer", "status")]

        assert ids() == ["transcript", "composer", "status"]
        chat.show_plan(PlanState([]))  # an empty plan mounts nothing
        assert ids() == ["transcript", "composer", "status"]
        chat.ensure_mounted(chat.approval)
        chat.queue.append("later")
        chat.steering.show_queue()
        chat.show_plan(PlanState([{"content": "step one", "status": "in_progress"}]))
        await pilot.pause()
        assert ids() == ["transcript", "plan", "queue", "approval", "composer", "status"]
        # painted once the layout has settled (one pause was not always enough in a full parallel run)
        await wait_for(pilot, lambda: "Plan: 0 completed · 1 in progress · 0 pending  ▶ step one" in screen_text(app))
        assert "⏳ later" in screen_text(app)
        chat.ensure_mounted(chat.plan_strip)  # mounted once
        assert ids().count("plan") == 1


async def test_events_that_arrive_before_the_chat_is_composed_wait_for_its_mount(tmp_path):
    """The bridge can post "events ready" before a new chat screen has composed its widgets (a fork or
    /new opening one while a turn streams): nothing is flushed then, and the mount drains what came."""
    from dsh_tui.ui.screens.chat import ChatScreen

    app = scripted_app(tmp_path, [scripted.text("ok")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None and app.chat.attached)
        screen = ChatScreen(app.bridge)
        screen.events_ready()  # not composed yet: this raised AttributeError ('composer')
        await app.push_screen(screen)
        await wait_for(pilot, lambda: screen.is_mounted and screen.composer.has_focus)


def _asks_once(tmp_path):
    """An app whose model runs one bash command (asked about under workspace-write), then answers."""
    (tmp_path / "ws").mkdir()
    return scripted_app(tmp_path, [
        scripted.call("c1", "bash", {"command": "echo hi", "description": "say hi"}),
        scripted.text("ok"),
    ], preset="workspace-write")


async def test_a_paste_while_an_approval_waits_lands_in_the_composer(tmp_path):
    """The composer is hidden while the approval panel asks; a paste then is kept in its draft (it was
    dropped), and the approval keys still work."""
    from textual import events

    app = _asks_once(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "run it")
        await wait_for(pilot, lambda: app.chat.approval.request is not None and app.focused is not None)
        assert not app.chat.composer.display
        app.post_message(events.Paste("line one\nline two"))  # as the terminal's: to what has the focus then
        await wait_for(pilot, lambda: app.chat.composer.text == "line one\nline two")
        await pilot.press("a")
        await wait_for(pilot, lambda: _footers(app) == 1)
        assert app.chat.composer.display and app.chat.composer.text == "line one\nline two"


async def test_a_paste_that_reaches_the_approval_panel_is_never_dropped(tmp_path):
    """A paste is delivered to the widget focused when it arrived; if the focus has moved to a text box
    meanwhile (here the reason line), the paste that reached the panel still lands in the draft."""
    from textual import events

    app = _asks_once(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "run it")
        await wait_for(pilot, lambda: app.chat.approval.request is not None)
        await pilot.press("e")  # reject with a reason: the reason line takes the focus
        await wait_for(pilot, lambda: app.chat.approval.asking_reason)
        app.chat.approval.post_message(events.Paste("pasted draft"))
        await wait_for(pilot, lambda: app.chat.composer.text == "pasted draft")


async def test_a_very_long_prompt_is_sent_whole_and_shown_as_its_head_and_tail(tmp_path):
    """A pasted 3,000-line log goes to the model whole; the transcript shows its first 40 and last 5 lines
    (laid out whole, it held the UI thread for seconds), and the viewer has all of it."""
    from dsh_tui.ui.widgets.render import render_user

    lines = [f"log line {i}" for i in range(3000)]
    app = scripted_app(tmp_path, [scripted.text("ok")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "\n".join(lines))
        await wait_for(pilot, lambda: _footers(app) == 1)
        sent = [e for e in app.bridge.harness.session.events if e["type"] == "user/message"]
        assert sent[0]["data"]["content"][0]["text"] == "\n".join(lines)
        (user,) = items(app, "user")
        shown = render_user(user).plain.splitlines()
        assert shown == [*lines[:40], "… 2955 more lines …", *lines[-5:]]
