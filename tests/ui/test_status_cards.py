"""Pilot tests: the status bar (phases, model, numbers, layout by priority) and the tool cards
(glob/grep counts, write/edit diffs with line numbers, todo checklist, workspace-relative paths), with
the real harness, real tools and a scripted model."""

from __future__ import annotations

from dsh_tui.llm import scripted
from dsh_tui.llm.protocol import RetryPolicy
from dsh_tui.llm.scripted import Hang, ScriptedProvider
from dsh_tui.session.transcript import TranscriptFold
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.harness import HarnessSpec, open_harness
from dsh_tui.ui.settings import UiSettings
from tests.ui.conftest import items, scripted_app, submit, wait_for
from tests.ui.screen_text import screen_text

USAGE = {"inputTokens": 1128, "outputTokens": 80, "cacheReadTokens": 3072}


def _footers(app) -> int:
    return len(items(app, "footer"))


def _status_line(app) -> str:
    return screen_text(app).rstrip("\n").split("\n")[-1]


def _app(tmp_path, responses, *, model="mock-model", context_window=100_000, prices=None, preset="full-access"):
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    provider = ScriptedProvider(responses, name="mock", context_window=context_window,
                                retry_policy=RetryPolicy(initial_delay_ms=1, max_delay_ms=2, jitter_ratio=0.0))
    spec = HarnessSpec(root=tmp_path / "sessions", cwd=workspace, provider=provider, model=model, preset=preset)
    values = {"ui.theme": "dsh-dark"}
    if prices:
        values["prices"] = prices
    return DshApp(lambda bridge: open_harness(bridge, spec), settings=UiSettings(values=values))


# -- status bar ---------------------------------------------------------------------------------------

async def test_status_shows_the_model_before_the_first_turn(tmp_path):
    app = scripted_app(tmp_path, [scripted.text("hi")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await wait_for(pilot, lambda: "mock-model" in app.chat.status.build().plain)
        assert "○ idle" in _status_line(app) and "mock-model" in _status_line(app)
        assert not app.bridge.harness.session.events  # no turn, no request: the route itself is shown
        assert "$?" in _status_line(app) and "$0.0000" not in _status_line(app)  # mock-model has no price


async def test_status_leaves_waiting_for_approval_once_allowed(tmp_path):
    app = scripted_app(tmp_path, [
        scripted.call("c1", "bash", {"command": "sleep 1.5; echo done", "description": "slow"}),
        scripted.text("ok"),
    ], preset="workspace-write")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "run it")
        await wait_for(pilot, lambda: app.chat.approval.request is not None)
        assert "waiting for approval" in app.chat.status.build().plain
        await wait_for(pilot, lambda: "waiting for approval" in screen_text(app))  # painted
        card = screen_text(app)
        # while it waits the card says so, and not "running" as well
        assert "waiting for approval" in card and " running " not in card
        await pilot.press("a")
        await wait_for(pilot, lambda: any(e["type"] == "approval/decided" for e in app.bridge.harness.session.events))
        await pilot.pause(0.2)
        status = app.chat.status.build().plain
        assert "waiting for approval" not in status and "executing 1 tool" in status
        assert "waiting for approval" not in screen_text(app)
        await wait_for(pilot, lambda: _footers(app) == 1)


async def test_context_below_one_percent_is_not_zero(tmp_path):
    app = _app(tmp_path, [scripted.text("hi", usage=USAGE)], context_window=1_000_000)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "hello")
        await wait_for(pilot, lambda: _footers(app) == 1)
        await pilot.pause(0.1)
        line = _status_line(app)
        assert "ctx <1%" in line and "ctx 0%" not in line


async def test_status_bar_at_80_columns_keeps_model_and_cost(tmp_path):
    prices = {"deepseek-v4-flash": {"input": 0.27, "cache_read": 0.07, "output": 1.1}}
    app = _app(tmp_path, [scripted.text("hi", usage=USAGE), [Hang()]], model="deepseek-v4-flash",
               prices=prices)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "hello")
        await wait_for(pilot, lambda: _footers(app) == 1)
        await submit(pilot, "second")
        await wait_for(pilot, lambda: app.chat.running)
        app.chat.queue.append("later")
        app.chat.steering.show_queue()
        await pilot.pause(0.2)
        line = _status_line(app)
        assert len(line.rstrip()) <= 80
        cost = app.chat.fold.usage.cost_usd()
        assert cost is not None and cost > 0
        # by priority: state, model, permission mode and queue stay; cache %, tokens, context and then the
        # cost (after tighter separators) are left out first
        assert "waiting for first token" in line and "deepseek-v4-flash" in line and "full-access" in line
        assert "1 queued" in line and "…" not in line
        assert f"${cost:.4f}" in app.chat.status.build(90).plain
        assert "cache" not in line
        wide = app.chat.status.build(200).plain
        assert "cache 73%" in wide and "↑4.2k ↓80" in wide and "ctx 4.3%" in wide
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.chat.running)


async def test_the_permission_mode_stays_at_80_columns_running_and_after_an_error_with_no_toast(tmp_path):
    """Issue #26 items 20 and 16: at 80 columns the permission mode left the bar while running and after an
    error (``$?`` stayed); a failed turn also raised an error toast repeating the footer and the bar."""
    app = _app(tmp_path, [[Hang()], scripted.finish_error("AUTH", "key revoked by the provider", status=401)],
               preset="workspace-write")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "first")
        await wait_for(pilot, lambda: app.chat.running and "●" in _status_line(app))
        assert "workspace-write" in _status_line(app), _status_line(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.chat.running)
        await submit(pilot, "second")
        await wait_for(pilot, lambda: app.chat.last_failed)
        await wait_for(pilot, lambda: "key revoked" in _status_line(app))
        line = _status_line(app)
        assert "workspace-write" in line and "mock-model" in line and len(line.rstrip()) <= 80, line
        # the footer says it too (painted a frame after the bar, which the notice updates first)
        await wait_for(pilot, lambda: "Failed: AUTH" in screen_text(app) and "key revoked" in
                       screen_text(app).split("Failed: AUTH", 1)[1].split("\n▊", 1)[0])
        await pilot.pause(0.2)
        errors = [n.message for n in app._notifications if n.severity == "error"]
        assert not errors, errors


def _chunk(seq, time, turn, step, chunk):
    return {"seq": seq, "time": time, "type": "assistant/chunk", "data": {"turn": turn, "step": step, "chunk": chunk}}


def _turn_events(first_step_ms: int, tool_wait_ms: int, second_step: bool, cancelled: bool) -> list[dict]:
    """A two-step turn: step 1 streams a tool call in ``first_step_ms``, then approval + tool time,
    then step 2 streams text for a second (or is cancelled with no usage)."""
    ev: list[dict] = []
    seq = iter(range(1, 1000))
    t = 1_000_000
    ev.append({"seq": next(seq), "time": t, "type": "turn/start", "data": {"turn": 1}})
    ev.append({"seq": next(seq), "time": t, "type": "step/start", "data": {"turn": 1, "step": 1}})
    t += 400  # time to first token
    ev.append(_chunk(next(seq), t, 1, 1, {"type": "block-start", "index": 0, "blockType": "tool-call"}))
    ev.append(_chunk(next(seq), t, 1, 1, {"type": "tool-call-delta", "index": 0, "id": "c1", "name": "bash",
                                         "argumentsDelta": "{}"}))
    t += first_step_ms
    ev.append(_chunk(next(seq), t, 1, 1, {"type": "tool-call-delta", "index": 0, "argumentsDelta": " "}))
    ev.append(_chunk(next(seq), t, 1, 1, {"type": "usage", "usage": {"inputTokens": 10, "outputTokens": 80}}))
    t += tool_wait_ms  # approval and the tool run: not decoding
    ev.append({"seq": next(seq), "time": t, "type": "step/start", "data": {"turn": 1, "step": 2}})
    if second_step:
        t += 300
        for _ in range(11):
            ev.append(_chunk(next(seq), t, 1, 2, {"type": "text-delta", "index": 0, "text": "word "}))
            t += 100
        t -= 100
        if not cancelled:
            ev.append(_chunk(next(seq), t, 1, 2, {"type": "usage", "usage": {"inputTokens": 10, "outputTokens": 120}}))
    reason = {"kind": "aborted", "reason": {"kind": "user"}} if cancelled else {"kind": "completed"}
    ev.append({"seq": next(seq), "time": t + 5, "type": "turn/end", "data": {"turn": 1, "reason": reason}})
    return ev


def _rate(events):
    fold = TranscriptFold({"id": "s", "cwd": "/w"})
    fold.apply_all(events)
    return fold.items[-1].tokens_per_s


def test_tokens_per_second_counts_decode_time_only():
    # 80 tokens over 500 ms + 120 tokens over 1000 ms of decoding; 30 s of approval and tool time between
    rate = _rate(_turn_events(500, 30_000, second_step=True, cancelled=False))
    assert rate is not None and abs(rate - 200 * 1000 / 1500) < 1e-6
    # a step whose output came in one burst is left out (it would say 16,000 tok/s)
    rate = _rate(_turn_events(5, 30_000, second_step=True, cancelled=False))
    assert rate is not None and abs(rate - 120) < 1e-6


def test_tokens_per_second_of_a_cancelled_turn_is_not_a_burst_rate():
    # step 1's tool call arrived in one 5 ms burst; step 2 was cancelled (its output tokens are unknown)
    assert _rate(_turn_events(5, 2_000, second_step=True, cancelled=True)) is None
    assert _rate(_turn_events(5, 2_000, second_step=False, cancelled=True)) is None


# -- tool cards ---------------------------------------------------------------------------------------

async def test_cards_count_what_the_tool_found_and_show_paths_in_the_workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("def a():\n    return 1\n\n\ndef b():\n    pass\n")
    (ws / "b.py").write_text("x = 1\n")
    (ws / "notes.md").write_text("def in markdown\n")
    app = scripted_app(tmp_path, [
        scripted.calls([("c1", "glob", {"pattern": "*.py"}),
                        ("c2", "grep", {"pattern": "def ", "include": "*.py"}),
                        ("c3", "read", {"file_path": str(ws / "b.py")})]),
        scripted.text("Done."),
    ])
    async with app.run_test(size=(110, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "look around")
        await wait_for(pilot, lambda: _footers(app) == 1)
        await pilot.pause(0.1)
        text = screen_text(app)
        assert "glob *.py  2 files" in text
        assert "grep def  2 matches in 1 file" in text
        assert "lines" not in text.split("Done.")[0].split("look around")[1]
        assert "read b.py" in text and str(ws) not in text


async def test_write_edit_and_todo_cards(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    lines = [f"line {n}" for n in range(1, 13)]
    content = "\n".join(lines) + "\n"
    app = scripted_app(tmp_path, [
        scripted.call("c1", "write", {"file_path": str(ws / "pkg" / "mod.py"), "content": content}),
        scripted.call("c2", "edit", {"file_path": "pkg/mod.py", "old_string": "line 7\n",
                                     "new_string": "line seven\nline 7b\n"}),
        scripted.call("c3", "todo_write", {"todos": [
            {"content": "Read the code", "status": "completed"},
            {"content": "Fix the bug", "status": "in_progress"},
            {"content": "Add a regression test", "status": "pending"}]}),
        scripted.text("Done."),
    ])
    async with app.run_test(size=(110, 60)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "write then edit")
        await wait_for(pilot, lambda: _footers(app) == 1)
        await pilot.pause(0.1)
        collapsed = screen_text(app)
        assert "write pkg/mod.py" in collapsed and "created +12 −0" in collapsed
        assert "edit pkg/mod.py" in collapsed and "+2 −1" in collapsed
        assert "todo_write · 3 items" in collapsed and "1/3 done" in collapsed
        await pilot.press("ctrl+o")  # expanded
        await pilot.pause(0.2)
        text = screen_text(app)
        assert "<path>" not in text and "<content>" not in text and "<type>" not in text
        assert "   1 + line 1" in text and "  12 + line 12" in text
        # the edit's hunk with its 3 lines of context, numbered in the file
        for row in ("   4   line 4", "   6   line 6", "   7 - line 7", "   7 + line seven", "   8 + line 7b",
                    "   9   line 8", "  11   line 10"):
            assert row in text, row
        assert "✓ Read the code" in text and "▶ Fix the bug" in text and "○ Add a regression test" in text
        assert '"status"' not in text and '"todos"' not in text
        assert (ws / "pkg" / "mod.py").read_text().splitlines()[6:8] == ["line seven", "line 7b"]


async def test_collapsed_cards_preview_diffs_and_output_and_a_failed_write_says_so(tmp_path):
    """Issue #26 items 15 and 20: collapsed cards hid every diff and output (Ctrl+O expanded the whole
    session); they show the first lines with "+N lines", Enter expands one card. A failed write showed its
    ``+`` lines as if written with no error on its line."""
    ws = tmp_path / "ws"
    (ws / "taken").mkdir(parents=True)
    content = "".join(f"line {n}\n" for n in range(1, 13))
    app = scripted_app(tmp_path, [
        scripted.call("c1", "write", {"file_path": "mod.py", "content": content}),
        scripted.call("c2", "bash", {"command": "seq 1 10", "description": "count"}),
        scripted.call("c3", "write", {"file_path": "taken", "content": "new text\nmore\n"}),
        scripted.text("Done."),
    ])
    async with app.run_test(size=(120, 50)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "go")
        await wait_for(pilot, lambda: _footers(app) == 1)
        await pilot.pause(0.1)
        text = screen_text(app)
        assert "   1 + line 1" in text and "   8 + line 8" in text and "   9 + line 9" not in text
        assert "… +4 lines" in text
        assert "exit 0\n       1\n       2\n       3\n       … +7 lines" in text
        failed = next(line for line in text.splitlines() if "write taken" in line)
        assert "not written" in failed and "+2" not in failed
        error = next(i for i in items(app, "tool") if i.call_id == "c3").result.strip().splitlines()[0]
        assert error[:30] in failed  # the error on the card's own line
        assert "+ new text" not in text  # collapsed: a failed write previews nothing as if written
        bash = next(v for v in app.chat.query("ItemView") if getattr(v.item, "call_id", None) == "c2")
        bash.focus()
        await pilot.press("enter")  # this card only
        await pilot.pause(0.2)
        text = screen_text(app)
        assert "10" in text.split("seq 1 10", 1)[1].split("write taken")[0]
        assert "  12 + line 12" not in text  # the other cards stay as they were
        await pilot.press("ctrl+o")  # everything expanded
        await pilot.pause(0.2)
        text = screen_text(app)
        assert "not applied:" in text and "  12 + line 12" in text


def test_skill_and_mcp_cards_show_their_arguments_not_json():
    """Issue #26 item 22: skill and MCP cards showed raw JSON."""
    from dsh_tui.session.transcript.items import ToolItem
    from dsh_tui.ui.widgets.toolcard import tool_title

    skill = ToolItem("t1", "tool", 1, name="skill", arguments='{"name": "deploy"}')
    assert tool_title(skill) == "skill deploy"
    mcp = ToolItem("t2", "tool", 2, name="mcp__files__read_file", arguments='{"path": "a.txt", "limit": 3}')
    assert tool_title(mcp) == "files › read_file path: a.txt, limit: 3"


def test_the_no_model_hint_keeps_what_to_set_at_80_columns():
    from dsh_tui.ui.widgets.status import StatusBar

    bar = StatusBar()
    bar.model_hint = ('No model configured: no API key for provider "deepseek-official": export '
                      'DEEPSEEK_API_KEY=<your key>, or add [providers.deepseek-official] api_key = "<your key>" '
                      'to /home/u/.config/dsh-tui/credentials.toml (chmod 600) (or try `dsh-tui demo`)')
    line = bar.build(78).plain
    assert line == "○ idle  │ No model configured: no API key: export DEEPSEEK_API_KEY=<your key>"
