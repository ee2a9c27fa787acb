"""Snapshots of the browser and timeline screens (one per state; review the report before updating).

Deterministic: a fixed workspace string, fixed event times and a frozen "now", theme from isolated
settings, animations off. Sessions live in a temporary root whose path is never displayed.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from dsh_tui.session.rows import expand_lines
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.screens.browser import BrowserScreen
from dsh_tui.ui.screens.timeline import TimelineScreen
from dsh_tui.ui.settings import UiSettings
from tests.store.test_catalog_support import load_fixture, make_header, user_turn, write_session

WS = "/work/demo"
NOW = 1_780_000_100_000
PARALLEL = "examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl"


def _turns(a: str, b: str, t: int) -> list[dict]:
    ev = user_turn(0, 1, a, "answer one", t=t)
    return ev + user_turn(len(ev), 2, b, "answer two", t=t)


def populate(root) -> None:
    write_session(root, make_header("alpha-0001", WS), _turns("Plan the garden beds", "water the roses", 1_779_999_000_000))
    write_session(root, make_header("beta-0002", WS), _turns("Count the marmalade jars", "how many left", 1_779_990_000_000))
    parent = _turns("Build a shed", "paint it blue", 1_779_900_000_000)
    write_session(root, make_header("gamma-0003", WS), parent)
    seed = parent[:10] + [{"type": "session/end-seed", "seq": 10, "time": 1_779_950_000_000, "data": {}}]
    seed += [{"type": "session/title", "seq": 11, "time": 1_779_950_000_000,
              "data": {"title": "Build a shed (1)", "messageSeqs": [], "source": {"kind": "user"}}}]
    write_session(root, make_header("gamma-fork-0004", WS, parentSession="gamma-0003", seedLength=10), seed)
    write_session(root, make_header("far-0005", "/srv/other"), _turns("Elsewhere marmalade", "x", 1_779_000_000_000))
    bad = root / "--work-demo--" / "broken-log"
    bad.mkdir(parents=True)
    (bad / "session.jsonl").write_text('{"type":"session","version":9,"id":"broken","createdAt":1,"delegationDepth":0}\n')


def browser_app(tmp_path):
    root = tmp_path / "root"
    populate(root)
    app = DshApp(None, start="chat", settings=UiSettings(values={"ui.theme": "dsh-dark", "ui.show_time": False}))
    screen = BrowserScreen(app, roots=[root], db_path=tmp_path / "cat.sqlite", cwd=WS, now_ms=lambda: NOW)
    return app, screen


def before(screen, *keys: str, settle=None):
    async def run(pilot):
        await pilot.app.push_screen(screen)
        screen.query_one("#filter").cursor_blink = False
        end = time.monotonic() + 10
        while not (screen.indexed.is_set() and screen.indexing is None) and time.monotonic() < end:
            await asyncio.sleep(0.02)
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        if settle is not None:
            end = time.monotonic() + 10
            while not settle() and time.monotonic() < end:
                await asyncio.sleep(0.02)
        await pilot.pause()
    return run


STATES = {
    "workspace": ((), None, "this workspace: Plan the garden beds, Count the marmalade jars, Build a shed with its "
                            "fork '↳ fork @10 Build a shed (1)' under it, the unreadable 'broken-log' row in red"),
    "all": (("tab",), None, "All workspaces · 6 sessions, far-0005 from /srv/other included"),
    "search": (("ctrl+f", *"marmalade"), "hits", "content search in this workspace: 'Count the marmalade jars' and its '#2 user: …' hit"),
    "fork-picker": (("down", "f"), "modal", "the fork picker: 'after turn 2: …', 'after turn 1: …'"),
    "delete-confirm": (("down", "d"), "modal", "the delete confirmation: Move to trash / Cancel"),
}


@pytest.mark.parametrize("name", list(STATES))
def test_browser_snapshot(name, snap_compare, tmp_path):
    """You should see the state described in STATES[name][2]."""
    keys, wait, _ = STATES[name]
    app, screen = browser_app(tmp_path)
    settle = None
    if wait == "hits":
        def settle():
            return any(e.hit_seq is not None for e in screen.list.entries)
    elif wait == "modal":
        def settle():
            return app.screen is not screen
    assert snap_compare(app, terminal_size=(110, 24), run_before=before(screen, *keys, settle=settle))


APPROVED = "examples/acp-agent/tests/snapshots/escalation-approved/session.jsonl"
TIMELINE_STATES = {
    # name: (fixture, what is selected, keys)
    "span-tree": (APPROVED, "tool", ()),
    "request-diff": (PARALLEL, "request", ("w",)),
}


@pytest.mark.parametrize("name", list(TIMELINE_STATES))
def test_timeline_snapshot(name, snap_compare):
    """You should see, for span-tree: turn 1 of an approved bash call as a span tree on a time axis (steps,
    requests ░/█, the call's approval wait ▒ split from its execution ▓, its result ◆) with the call
    selected and its arguments, approval and result in the inspector. For request-diff: the parallel-call
    session's second request selected, the inspector wide, showing what changed since the first request
    (the assistant's two calls and their two results, in green) above the collapsed messages, system
    prompt, tools and model sections."""
    rel, kind, keys = TIMELINE_STATES[name]
    header, rows = load_fixture(rel, session_id="tl-snap")
    events = expand_lines(rows)
    for e in events:
        e["time"] = 1_780_000_000_000 + 40 * e["seq"]
    target = next(e["seq"] for e in events if e["type"] == ("tool/call" if kind == "tool" else "assistant/chunk")
                  and (kind == "tool" or e["data"].get("step") == 2))

    class Host(DshApp):
        pass

    app = Host(None, start="chat", settings=UiSettings(values={"ui.theme": "dsh-dark", "ui.show_time": False}))
    screen = TimelineScreen(header=header, events=events, focus_seq=target)

    async def run(pilot):
        await pilot.app.push_screen(screen)
        screen.query_one("#ledger-filter").cursor_blink = False
        end = time.monotonic() + 10
        while not screen.folded.is_set() and time.monotonic() < end:
            await asyncio.sleep(0.02)
        if kind == "request":
            screen.spans.show(screen.fold.requests[1])
        await pilot.press(*keys)
        want = "Messages (" if kind == "request" else "Result"
        end = time.monotonic() + 10
        while not any(c.title.startswith(want) for c in screen.query("#inspect-body Collapsible")) \
                and time.monotonic() < end:
            await asyncio.sleep(0.02)
            await pilot.pause()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(130, 40), run_before=run)
