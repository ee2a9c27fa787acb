"""End to end: fork a recorded dsh session at turn 1 from the browser, resume the child in the chat
with a scripted model, send a message; the parent file stays byte-identical and the child log is the
parent prefix through turn 1's ``turn/end`` + ``session/end-seed`` + the new turn — the prompt the parent had
queued for turn 2 (standalone after turn 1) is neither copied nor run."""

from __future__ import annotations

from dsh_tui.llm import scripted
from dsh_tui.llm.protocol import RetryPolicy
from dsh_tui.llm.scripted import ScriptedProvider
from dsh_tui.session.rows import expand_lines
from dsh_tui.store.open import open_store
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.screens.browser import BrowserScreen, ChoiceModal
from dsh_tui.ui.screens.chat import ChatScreen
from tests.store.test_catalog_support import load_fixture, write_session
from tests.ui.conftest import submit, wait_for

MULTI = "examples/acp-agent/tests/snapshots/multi-turn/session.jsonl"


async def test_fork_at_turn_1_then_resume_the_child_and_send(tmp_path, monkeypatch):
    root = tmp_path / "sessions"
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    header, rows = load_fixture(MULTI, session_id="parent-1", cwd=str(ws))
    parent_path = write_session(root, header, rows, zstd=True, batches=[7, 5])
    parent_bytes = parent_path.read_bytes()
    parent_events = expand_lines(rows)
    turn1_end = next(e["seq"] for e in parent_events if e["type"] == "turn/end")

    provider = ScriptedProvider([scripted.text("child answer")], name="mock", context_window=100_000,
                                retry_policy=RetryPolicy(initial_delay_ms=1, max_delay_ms=2, jitter_ratio=0.0))
    app = DshApp(None, start="chat")
    browser = BrowserScreen(app, roots=[root], db_path=tmp_path / "cat.sqlite", cwd=str(ws),
                            provider_route=lambda: (provider, "mock-model", ""))
    async with app.run_test(size=(110, 32)) as pilot:
        await app.push_screen(browser)
        await wait_for(pilot, lambda: browser.indexed.is_set() and browser.indexing is None)
        await pilot.pause()
        assert [e.row.id for e in browser.list.entries] == ["parent-1"]
        browser.list.focus()
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceModal))
        assert [v for _, v in app.screen.choices] == [2, 1]
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: len(browser.list.entries) == 2)
        child = browser.list.current.row
        assert child.parent == "parent-1" and browser.list.current.depth == 1
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ChatScreen) and app.bridge.harness is not None)
        session = app.bridge.harness.session
        assert session.id == child.id
        await submit(pilot, "hello from the child")
        # dsh's "after turn 1" ends the seed at turn 1's turn/end: the insert of the parent's turn 2 prompt
        # (standalone, right after it) stays with the parent, so the child's first turn is the user's.
        await wait_for(pilot, lambda: sum(1 for e in session.events if e["type"] == "turn/end") == 2)
        await pilot.pause(0.1)
    # after the app closed (writer flushed)
    assert parent_path.read_bytes() == parent_bytes
    assert [e["type"] for e in parent_events[turn1_end + 1:turn1_end + 3]] == ["agent/inbox/spliced", "turn/start"]
    store = open_store(root)
    res = store.inspect(child.id)
    seed_len = res.header["seedLength"]
    assert res.header["parentSession"] == "parent-1"
    assert seed_len == turn1_end + 1
    child_events = res.events
    assert child_events[:seed_len] == parent_events[:seed_len]
    assert child_events[seed_len]["type"] == "session/end-seed"
    tail = child_events[seed_len + 1:]
    types = [e["type"] for e in tail]
    assert "turn/start" in types and types[-1] == "turn/end"
    assert [e["data"] for e in tail if e["type"] == "turn/end"] == [{"turn": 2, "reason": {"kind": "completed"}}]
    users = [e["data"]["content"][0]["text"] for e in tail
             if e["type"] == "user/message" and e["data"]["source"]["kind"] == "user"]
    assert users == ["hello from the child"]
    answers = [e for e in tail if e["type"] == "assistant/message"]
    assert answers[-1]["data"]["message"]["content"][-1]["text"] == "child answer"
    (request,) = provider.requests  # one request: the child's own prompt, after turn 1 of the parent
    sent = repr(request)
    assert "Reply with exactly the word: ONE." in sent and "hello from the child" in sent
    assert "Reply with exactly the word: TWO." not in sent
    titles = [e["data"]["title"] for e in child_events if e["type"] == "session/title"]
    assert titles[-1].endswith(" (1)")
