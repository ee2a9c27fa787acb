"""Pilot tests: rewind (Esc Esc), retry (F5), approvals that remember or carry a reason, the permission mode
(F4) and /model with an effort, on the real harness with a scripted model; each checks the log it wrote."""

from __future__ import annotations

import json

from dsh_tui.llm import scripted
from dsh_tui.llm.scripted import Hang
from dsh_tui.runtime.turns import prompts
from dsh_tui.session.content import tool_result_block
from dsh_tui.store.open import open_store
from dsh_tui.ui.screens.rewind import RewindModal
from tests.ui.conftest import items, scripted_app, submit, wait_for
from tests.ui.screen_text import screen_text


def _footers(app) -> int:
    return len(items(app, "footer"))


def _events(app, kind):
    return [e for e in app.bridge.harness.session.events if e["type"] == kind]


async def test_esc_esc_rewinds_to_an_earlier_prompt_in_a_fork(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("one"), scripted.text("two"), scripted.text("three"),
                                  scripted.text("edited answer")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        for n, prompt in enumerate(("first prompt", "second prompt", "third prompt"), 1):
            await submit(pilot, prompt)
            await wait_for(pilot, lambda n=n: _footers(app) == n)
        parent_chat, parent = app.chat, app.bridge.harness.session.id
        await pilot.press("escape")
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RewindModal))
        text = screen_text(app)
        assert "first prompt" in text and "second prompt" in text and "third prompt" in text
        await pilot.press("up")  # from the latest (third) to the second
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.chat is not parent_chat and app.bridge.harness is not None
                       and app.chat.attached)
        child = app.bridge.harness.session
        assert child.header["parentSession"] == parent
        assert [p.text for p in prompts(list(child.events))] == ["first prompt"]
        assert app.chat.composer.text == "second prompt"
        app.chat.composer.value = "second prompt, edited"
        await pilot.press("enter")
        await wait_for(pilot, lambda: any(i.kind == "assistant" and i.text == "edited answer"
                                          for i in app.chat.fold.items))
        # the original is untouched: three turns, its own prompts
        stored = open_store(tmp_path / "sessions").inspect(parent).events
        assert [p.text for p in prompts(stored)] == ["first prompt", "second prompt", "third prompt"]


async def test_rewind_keeps_a_draft_typed_in_the_composer(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("one")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "first prompt")
        await wait_for(pilot, lambda: _footers(app) == 1)
        parent_chat = app.chat
        await pilot.press(*"my draft", "escape", "escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RewindModal))
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.chat is not parent_chat and app.chat.attached)
        assert app.chat.composer.text == "first prompt\n\nmy draft"  # the prompt to edit, and the draft kept


async def test_esc_still_cancels_a_running_turn(tmp_path):
    app = scripted_app(tmp_path, [[{"type": "block-start", "index": 0, "blockType": "text"},
                                   {"type": "text-delta", "index": 0, "text": "partial"}, Hang()]])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "go")
        await wait_for(pilot, lambda: any(i.kind == "assistant" for i in app.chat.fold.items))
        await pilot.press("escape")
        await wait_for(pilot, lambda: _footers(app) == 1)
        assert _events(app, "turn/end")[-1]["data"]["reason"]["kind"] == "aborted"
        assert not isinstance(app.screen, RewindModal)


async def test_f5_retries_a_failed_turn_with_the_same_prompt(tmp_path):
    app = scripted_app(tmp_path, [scripted.finish_error("AUTH", "key revoked", status=401),
                                  scripted.text("worked this time")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "build the thing")
        await wait_for(pilot, lambda: _footers(app) == 1)
        await wait_for(pilot, lambda: app.chat.last_failed)
        assert "F5 retry" in app.chat.composer.border_subtitle
        await pilot.press("f5")
        await wait_for(pilot, lambda: _footers(app) == 2)
        ps = prompts(list(app.bridge.harness.session.events))
        assert [(p.text, p.ended) for p in ps] == [("build the thing", "error"), ("build the thing", "completed")]
        assert not app.chat.last_failed and "F5 retry" not in app.chat.composer.border_subtitle


async def test_allow_for_the_session_then_the_same_command_runs_without_asking(tmp_path):
    cmd = {"command": "echo hi >> log.txt", "description": "append"}
    app = scripted_app(tmp_path, [scripted.call("c1", "bash", cmd), scripted.call("c2", "bash", cmd),
                                  scripted.call("c3", "bash", {"command": "echo other", "description": "x"}),
                                  scripted.text("done")], preset="workspace-write")
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "append twice")
        await wait_for(pilot, lambda: app.chat.approval.request is not None)
        await wait_for(pilot, lambda: "s allows this command for the rest of this session" in screen_text(app))
        await pilot.press("s")
        # the second, identical command is not asked about; the third, different one is
        await wait_for(pilot, lambda: app.chat.approval.request is not None
                       and "echo other" in app.chat.approval.request.arguments)
        assert (tmp_path / "ws" / "log.txt").read_text() == "hi\nhi\n"
        await pilot.press("a")
        await wait_for(pilot, lambda: _footers(app) == 1)
        assert [e["data"]["outcome"] for e in _events(app, "approval/decided")] == ["allowed-once"] * 3


async def test_reject_with_a_reason_the_next_request_carries(tmp_path):
    app = scripted_app(tmp_path, [scripted.call("c1", "bash", {"command": "rm -rf build", "description": "clean"}),
                                  scripted.text("ok, using make clean")], preset="workspace-write")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "clean")
        await wait_for(pilot, lambda: app.chat.approval.request is not None)
        await pilot.press("e")
        await wait_for(pilot, lambda: app.chat.approval.asking_reason)
        await pilot.press(*"use make clean")
        await pilot.press("enter")
        await wait_for(pilot, lambda: _footers(app) == 1)
        assert [e["data"] for e in _events(app, "approval/decided")][0]["outcome"] == "rejected"
        result = tool_result_block(_events(app, "tool/result")[0]["data"]["message"])["content"][0]["text"]
        assert result == 'Error: the user rejected tool "bash". The user\'s reason: use make clean'
        assert "use make clean" in json.dumps(app.provider.requests[-1]["messages"])


async def test_f4_cycles_the_permission_mode_logged_and_shown(tmp_path):
    app = scripted_app(tmp_path, [scripted.call("c1", "write", {"file_path": "a.txt", "content": "x"}),
                                  scripted.text("done")], preset="workspace-write")
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await wait_for(pilot, lambda: "workspace-write" in app.chat.status.build().plain)
        await pilot.press("f4")
        await wait_for(pilot, lambda: _events(app, "approval/policy"))
        assert "full-access" in app.chat.status.build().plain
        await pilot.press("f4")
        await wait_for(pilot, lambda: len(_events(app, "approval/policy")) == 2)
        assert [e["data"] for e in _events(app, "sandbox/mode")] == [{"mode": "danger-full-access"},
                                                                      {"mode": "read-only"}]
        assert "read-only" in app.chat.status.build().plain
        await submit(pilot, "write a")  # read-only now: the write asks
        await wait_for(pilot, lambda: app.chat.approval.request is not None)
        await pilot.press("r")
        await wait_for(pilot, lambda: _footers(app) == 1)
        assert not (tmp_path / "ws" / "a.txt").exists()


async def test_model_command_with_effort_shows_in_the_status_bar_before_a_turn(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("hi")])
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await wait_for(pilot, lambda: "mock-model" in app.chat.status.build().plain)
        await submit(pilot, "/model other-model high")
        await wait_for(pilot, lambda: "other-model (high)" in app.chat.status.build().plain)
        await submit(pilot, "hello")
        await wait_for(pilot, lambda: _footers(app) == 1)
        header = _events(app, "request/header")[-1]["data"]["header"]["config"]
        assert header["model"] == "other-model" and header["reasoningEffort"] == "high"


async def test_palette_offers_rewind_retry_modes_and_this_sessions_effort(tmp_path):
    from dsh_tui.llm.protocol import ModelInfo

    app = scripted_app(tmp_path, [scripted.text("hi")], preset="workspace-write")
    app.provider.resolve_model = lambda model: ModelInfo(context_window=100_000, efforts=("low", "high"))
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        assert {"Rewind", "Retry failed turn", "Permission mode: read-only", "Permission mode: full-access",
                "Reasoning effort: low · this session", "Reasoning effort: high · this session"} <= set(commands)
        commands["Reasoning effort: low · this session"].callback()
        await wait_for(pilot, lambda: "mock-model (low)" in app.chat.status.build().plain)
        commands["Permission mode: read-only"].callback()
        await wait_for(pilot, lambda: "read-only" in app.chat.status.build().plain)
        assert [e["data"] for e in _events(app, "permission/preset")] == [{"preset": "read-only"}]
        await submit(pilot, "hello")
        await wait_for(pilot, lambda: _footers(app) == 1)
        assert _events(app, "request/header")[-1]["data"]["header"]["config"]["reasoningEffort"] == "low"


async def test_esc_esc_with_nothing_to_rewind_says_so(tmp_path):
    app = scripted_app(tmp_path, [])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await pilot.press("escape", "escape")
        await wait_for(pilot, lambda: app.chat.note.is_attached and "Nothing to rewind" in str(app.chat.note.render()))
        assert not isinstance(app.screen, RewindModal)
