"""The timeline screen with the real app: the span tree and its keys, the request diff in the inspector,
the ledger and its filters, copying a request, and following a running turn."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

from textual.app import App
from textual.widgets import Collapsible

from dsh_tui.session.rows import expand_lines
from dsh_tui.session.spans import Node
from dsh_tui.ui.screens.timeline import TimelineScreen, parse_filter
from dsh_tui.ui.screens.timeline.inspector import curl_command
from tests.store.test_catalog_support import load_fixture

PARALLEL = "examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl"
APPROVED = "examples/acp-agent/tests/snapshots/escalation-approved/session.jsonl"
T0 = 1_780_000_000_000


async def until(pilot, cond, timeout: float = 10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        await pilot.pause()
        if cond():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached")


def fixture_screen(rel: str = PARALLEL, **kw):
    header, rows = load_fixture(rel, session_id="tl-1")
    events = expand_lines(rows)
    for e in events:
        e["time"] = T0 + 40 * e["seq"]
    return header, events, TimelineScreen(header=header, events=events, **kw)


class Host(App):
    def __init__(self, screen):
        super().__init__()
        self._tl = screen

    def on_mount(self) -> None:
        self.push_screen(self._tl)


def tree_lines(screen) -> list[str]:
    tree = screen.spans
    return ["".join(t for t, _ in tree._format(i, 100)) for i in range(tree.count)]


def sections(screen) -> list[tuple[str, bool]]:
    return [(c.title, c.collapsed) for c in screen.query("#inspect-body Collapsible").results(Collapsible)]


def section_text(screen, title_start: str) -> str:
    for c in screen.query("#inspect-body Collapsible").results(Collapsible):
        if c.title.startswith(title_start):
            return str(c.query_one(".section-body").render())
    raise AssertionError(f"no section {title_start!r}: {sections(screen)}")


async def test_the_span_tree_shows_steps_requests_and_parallel_tools_on_a_time_axis():
    header, events, screen = fixture_screen()
    async with Host(screen).run_test(size=(120, 40)) as pilot:
        await until(pilot, screen.folded.is_set)
        lines = tree_lines(screen)
        assert lines[0].startswith("▾ Turn 1 completed")
        assert [r.kind for r in screen.spans.rows] == ["turn", "step", "request", "tool", "execution", "result",
                                                       "tool", "execution", "result", "step", "request"]
        assert "[0]" in lines[3] and "[1]" in lines[6]  # parallel calls, each in its slot
        assert lines[3].index("▓") < lines[6].index("▓") <= lines[3].rindex("▓")  # the bars overlap
        assert "░" in lines[2] and "█" in lines[2]  # waiting then decoding
        axis = str(screen.query_one("#axis").render())
        assert axis.startswith("Turn 1 · axis 1.20 s") and "│0" in axis and "│1s" in axis
        assert screen.spans.cursor == len(lines) - 1  # opens at the end (the latest request)


async def test_keys_move_collapse_expand_and_inspect():
    header, events, screen = fixture_screen()
    async with Host(screen).run_test(size=(120, 40)) as pilot:
        await until(pilot, screen.folded.is_set)
        tree = screen.spans
        tree.move_to(3)  # the first read call
        await pilot.pause()
        assert tree.current.kind == "tool" and tree.current.open
        await pilot.press("left")  # collapse the call
        await pilot.pause()
        assert not tree.current.open and tree.count == 9  # its execution and result rows are gone
        await pilot.press("right")  # open again: execution/result rows appear
        await pilot.pause()
        kinds = [r.kind for r in tree.rows if isinstance(r, Node)]
        assert kinds[3:6] == ["tool", "execution", "result"]
        await pilot.press("left", "left")  # closed, then to its parent (the step)
        await pilot.pause()
        assert tree.current.kind == "step"
        await pilot.press("left")
        await pilot.pause()
        assert tree.current.kind == "step" and tree.count == 4  # turn, step 1 (closed), step 2, its request
        await pilot.press("down")
        await pilot.press("down", "right")  # the step-2 request: open it
        await pilot.pause()
        assert [r.kind for r in tree.rows[tree.cursor + 1:]] == ["waiting", "decoding", "usage", "message"]
        await pilot.press("end", "right")  # open the message: its chunks are listed under it
        await pilot.pause()
        chunk_rows = [r for r in tree.rows if isinstance(r, int)]
        assert chunk_rows == [e["seq"] for e in events if e["type"] == "assistant/chunk" and e["data"]["step"] == 2]
        await pilot.press("down", "enter")  # a chunk: the inspector shows its raw event, and takes the focus
        await until(pilot, lambda: screen.query_one("#inspector").has_focus)
        assert str(screen.query_one("#inspect-head").render()).startswith(f"#{chunk_rows[0]} assistant/chunk")
        await pilot.press("escape")
        assert tree.has_focus
        await pilot.press("left_square_bracket")
        assert tree.current.kind == "turn"
        await pilot.press("w")
        assert screen.has_class("-wide")
        await pilot.press("w")
        assert screen.has_class("-full") and not screen.query_one("#left").display
        await pilot.press("escape")  # leaves full screen before leaving the timeline
        assert not screen.has_class("-full") and not screen.has_class("-wide")


async def test_the_inspector_of_a_request_shows_what_changed_since_the_previous_one():
    header, events, screen = fixture_screen()
    async with Host(screen).run_test(size=(140, 50)) as pilot:
        await until(pilot, screen.folded.is_set)
        second = screen.fold.requests[1]
        assert screen.spans.current is second  # opens on the last request
        await until(pilot, lambda: any(t.startswith("Messages (") for t, _ in sections(screen)))
        assert sections(screen) == [
            ("What changed since the previous request", False),  # the default view
            ("Messages (5)", True), ("System prompt (10 chars)", True), ("Tools (?)", True), ("Model", True),
            (f"Sent before event #{second.first_chunk}", True),
        ]
        from dsh_tui.session.log import Session

        before = Session(header, events[:screen.fold.requests[0].first_chunk]).derive_messages().to_list()
        now = Session(header, events[:second.first_chunk]).derive_messages().to_list()
        assert now[:len(before)] == before and len(now) - len(before) == 3  # the calls and their two results
        diff = section_text(screen, "What changed")
        assert diff.startswith(f"Since the previous request (#{screen.fold.requests[0].seq}): 3 new message(s), "
                               f"{len(before)} unchanged.")
        for m in now[len(before):]:
            assert "  " + json.dumps(m, indent=2, ensure_ascii=False).replace("\n", "\n  ") in diff
        assert "+ assistant (model): → read, read\n" in diff and "+ user (tool): <path>" in diff
        assert "call_read_b" in diff and "Surface rewrite" not in diff
        # the item first: the head names the request and its timings
        head = str(screen.query_one("#inspect-head").render())
        assert head.startswith("request deepseek-v4-flash\nturn 1 · step 2")
        assert "waiting 40 ms · decoding 160 ms · 5 chunks" in head
        # the first request of the session says so
        screen.spans.show(screen.fold.requests[0])
        await until(pilot, lambda: section_text(screen, "What changed").startswith("The first request"))
        # a tool call: arguments and result, approval wait split out for an approved call
        screen.spans.move_to(3)
        await until(pilot, lambda: sections(screen) and sections(screen)[0][0] == "Arguments")
        assert '"file_path": "a.txt"' in section_text(screen, "Arguments")
        result = section_text(screen, "Result · ok")  # the text the model read, not the block JSON
        assert result.startswith("<path>{{cwd}}/a.txt</path>") and "alpha" in result and "toolCallId" not in result


async def test_a_rewritten_surface_shows_the_removed_messages():
    from dsh_tui.ui.screens.timeline.inspector import request_changes

    prev = {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
            "header": {"system": "S", "tools": [{"name": "read"}], "config": {"model": "m"}}}
    cur = {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "summary"}],
           "header": {"system": "S2", "tools": [{"name": "read"}, {"name": "bash"}], "config": {"model": "m"}}}
    ch = request_changes(prev, cur)
    assert ch["kept"] == 1 and ch["removed"] == [prev["messages"][1]] and ch["new"] == [cur["messages"][1]]
    assert ch["header"] == ["system prompt changed (1 → 2 chars)", "tools added: bash"]


async def test_ledger_lists_every_event_and_filters_by_type_turn_and_text():
    assert parse_filter("type:tool/ turn:3 hello world") == ("tool/", 3, "hello world")
    header, events, screen = fixture_screen()
    async with Host(screen).run_test(size=(120, 40)) as pilot:
        await until(pilot, screen.folded.is_set)
        ledger = screen.ledger
        assert ledger.count == len(events) and ledger.current_seq == len(events) - 1
        await pilot.press("slash", *"type:tool/")
        await pilot.pause()
        assert screen.has_class("-ledger") and ledger.display
        shown = [ledger.seq_at(i) for i in range(ledger.count)]
        assert [events[s]["type"] for s in shown] == ["tool/call", "tool/call", "tool/result", "tool/result"]
        screen.query_one("#ledger-filter").value = "type:assistant/message turn:1 DONE"
        await pilot.pause()
        shown = [ledger.seq_at(i) for i in range(ledger.count)]
        assert len(shown) == 1 and events[shown[0]]["type"] == "assistant/message"
        await pilot.press("escape")
        await pilot.pause()
        assert ledger.count == len(events)
        ledger.move_to(0)
        await until(pilot, lambda: str(screen.query_one("#inspect-head").render()).startswith(
            "#0 agent/inbox/spliced"))
        await pilot.press("e")
        assert not screen.has_class("-ledger") and screen.spans.has_focus


async def test_copy_a_request_as_json_and_as_curl():
    header, events, screen = fixture_screen()
    async with Host(screen).run_test(size=(120, 40)) as pilot:
        await until(pilot, screen.folded.is_set)
        await pilot.press("c")
        await until(pilot, lambda: screen.last_copy is not None)
        assert screen.last_copy.startswith("Copied request JSON to the clipboard")
        body = json.loads(pilot.app.clipboard)
        assert body["model"] == "deepseek-v4-flash" and body["stream"] is True
        assert body["messages"][0] == {"role": "system", "content": "{{system}}"}
        assert any(m.get("tool_call_id") == "call_read_b" for m in body["messages"])
        screen.last_copy = None
        await pilot.press("C")
        await until(pilot, lambda: screen.last_copy is not None)
        text = pilot.app.clipboard
        assert text.startswith("curl -sSN https://api.deepseek.com/chat/completions \\\n")
        assert "-H 'authorization: Bearer [REDACTED]'" in text
        assert json.loads(text.split("<<'DSH_REQUEST'\n", 1)[1].rsplit("DSH_REQUEST", 1)[0]) == body


def test_curl_redacts_every_credential_header():
    text = curl_command({"model": "m"}, "http://127.0.0.1:9/chat/completions",
                        {"content-type": "application/json", "authorization": "Bearer sk-live-123456789",
                         "x-api-key": "sk-other-987654321", "user-agent": "dsh-tui"})
    assert "sk-live" not in text and "sk-other" not in text
    assert "-H 'x-api-key: [REDACTED]'" in text and "-H 'user-agent: dsh-tui'" in text


def test_a_copy_too_big_for_osc52_goes_to_a_file(tmp_path, monkeypatch):
    from dsh_tui.ui import clipboard

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))

    class Fake:
        copied = None

        def copy_to_clipboard(self, text):
            self.copied = text

    app = Fake()
    assert clipboard.copy_text(app, "small", name="request JSON") == "Copied request JSON to the clipboard (5 B)"
    big = "x" * (clipboard.OSC52_LIMIT + 1)
    app.copied = None
    msg = clipboard.copy_text(app, big, name="request JSON")
    assert app.copied is None and msg.startswith("Saved request JSON (97.7 KiB, too big for the clipboard) to ")
    path = msg.rsplit(" to ", 1)[1]
    assert path.startswith(str(tmp_path)) and Path(path).read_text() == big


async def test_opened_from_a_browser_hit_it_selects_that_event():
    header, events, screen = fixture_screen(APPROVED, focus_seq=134)
    async with Host(screen).run_test(size=(120, 40)) as pilot:
        await until(pilot, screen.folded.is_set)
        assert screen.ledger.current_seq == 134
        assert screen.spans.current.kind == "approval"
        await until(pilot, lambda: str(screen.query_one("#inspect-head").render()).startswith(
            "approval approval wait · allowed-once"))
        head = str(screen.query_one("#inspect-head").render())
        assert "#134–#135 · 40 ms · allowed-once" in head


async def test_follows_a_running_turn_live(tmp_path):
    """Ctrl+T mid-turn: the timeline shows the running request, then the tool call and the end of the turn
    appear without reopening it (the app's EventsReady wake-up)."""
    from dsh_tui.llm import scripted
    from tests.ui.conftest import scripted_app, submit, wait_for

    gate = threading.Event()
    app = scripted_app(tmp_path, [[scripted.Gate(gate), *scripted.call("c1", "bash", {"command": "echo hi"})],
                                  scripted.text("all done")])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "run it")
        session = app.bridge.harness.session
        await wait_for(pilot, lambda: any(e["type"] == "request/header" for e in session.events))
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.folded.is_set())
        screen = app.screen
        turn = screen.fold.turns[-1]
        assert turn.state == "running" and turn.end is None
        assert [n.kind for n in turn.walk()][:3] == ["turn", "step", "request"]
        assert not any(n.kind == "tool" for n in turn.walk())
        gate.set()

        def node_kinds() -> list[str]:
            return [r.kind for r in screen.spans.rows if isinstance(r, Node)]

        # the end of the turn, then the rows and the ledger catch up (each on its own wake-up)
        def caught_up() -> bool:
            return (screen.fold.turns[-1].state == "completed" and node_kinds().count("step") == 2
                    and screen.ledger.count == len(session.events))

        try:
            await wait_for(pilot, caught_up)
        except AssertionError:
            raise AssertionError(f"state {screen.fold.turns[-1].state}, kinds {node_kinds()}, ledger "
                                 f"{screen.ledger.count} of {len(session.events)}: "
                                 f"{[e['type'] for e in session.events][-6:]}") from None
        kinds = node_kinds()
        assert kinds.count("tool") == 1 and kinds.count("step") == 2
        assert "▾ Turn 1 completed" in tree_lines(screen)[0]
        assert screen.spans.cursor == screen.spans.count - 1  # still following the end
        assert screen.ledger.count == len(session.events)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.chat)


async def test_curl_from_the_browser_uses_the_sessions_provider_or_a_placeholder(tmp_path, monkeypatch):
    """Issue #26 item 17: the timeline opened from the browser (no live provider) put api.deepseek.com in every
    ``curl``. It uses the base URL the settings give the session's provider, or a placeholder when that
    provider is not configured here — never another vendor's URL."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    from dsh_tui.paths import config_dir

    config_dir().mkdir(parents=True)
    (config_dir() / "settings.toml").write_text('[providers.gateway]\nbase_url = "http://127.0.0.1:9/v1"\n')
    header, rows = load_fixture(PARALLEL, session_id="tl-1")
    events = expand_lines(rows)
    for provider, expected in (("gateway", "http://127.0.0.1:9/v1/chat/completions"),
                               ("elsewhere", "https://PROVIDER-BASE-URL/chat/completions")):
        moved = json.loads(json.dumps(events).replace('"deepseek-official"', json.dumps(provider)))
        screen = TimelineScreen(header=header, events=moved)
        async with Host(screen).run_test(size=(120, 40)) as pilot:
            await until(pilot, screen.folded.is_set)
            await pilot.press("C")
            await until(pilot, lambda screen=screen: screen.last_copy is not None)
            assert pilot.app.clipboard.startswith(f"curl -sSN {expected} \\\n")
            assert "deepseek.com" not in pilot.app.clipboard.split("\n", 1)[0]
