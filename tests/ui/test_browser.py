"""The session browser through the real app: scopes, filter, content hits, lineage, unreadable rows,
fork picker, rename, delete confirmation and trash restore, all against real files on disk."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import pytest

from dsh_tui.store import catalog as cat
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.screens.browser import BrowserScreen, ChoiceModal, TextModal
from dsh_tui.ui.screens.chat import ChatScreen
from dsh_tui.ui.screens.timeline import TimelineScreen
from tests.store.test_catalog_support import make_header, user_turn, write_session

NOW = 1_780_000_100_000


async def until(pilot, cond, timeout: float = 10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        await pilot.pause()
        if cond():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached")


def two_turn(text1: str, text2: str) -> list[dict]:
    ev = user_turn(0, 1, text1, "answer one")
    return ev + user_turn(len(ev), 2, text2, "answer two")


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A root with sessions here and elsewhere, a fork, a subagent child and an unreadable log."""
    root = tmp_path / "root"
    here = tmp_path / "ws"
    here.mkdir()
    monkeypatch.chdir(here)
    ws = str(here)
    write_session(root, make_header("alpha", ws), two_turn("alpha plans the garden", "water the roses"))
    write_session(root, make_header("beta", ws), two_turn("beta counts marmalade jars", "how many left"))
    parent_ev = two_turn("gamma builds a shed", "paint it blue")
    write_session(root, make_header("gamma", ws), parent_ev)
    seed = parent_ev[:10] + [{"type": "session/end-seed", "seq": 10, "time": 5, "data": {}}]
    write_session(root, make_header("gamma-fork", ws, parentSession="gamma", seedLength=10), seed)
    write_session(root, make_header("gamma-sub", ws, parentSession="gamma", origin="subagent", delegationDepth=1),
                  user_turn(0, 1, "subagent measures wood", "done"))
    write_session(root, make_header("far-1", "/elsewhere"), two_turn("far away marmalade", "x"))
    write_session(root, make_header("far-2", "/elsewhere"), two_turn("far away two", "y"))
    bad = root / "--broken--" / "bad"
    bad.mkdir(parents=True)
    (bad / "session.jsonl").write_text('{"type":"session","version":9,"id":"bad","createdAt":1,"delegationDepth":0}\n')
    return {"root": root, "cwd": ws, "tmp": tmp_path}


def make_app(world, **kw):
    app = DshApp(None, start="chat")
    screen = BrowserScreen(app, roots=[world["root"]], db_path=world["tmp"] / "catalog.sqlite", cwd=world["cwd"],
                           now_ms=lambda: NOW, **kw)
    return app, screen


async def open_browser(pilot, app, screen):
    await app.push_screen(screen)
    await until(pilot, lambda: screen.indexed.is_set() and screen.indexing is None)
    await pilot.pause()


def ids(screen) -> list:
    return [(e.row.id, e.depth, e.hit_seq) for e in screen.list.entries]


def scope_text(screen) -> str:
    return str(screen.query_one("#scope").render())


async def test_scopes_counts_lineage_and_unreadable(world):
    app, screen = make_app(world)
    async with app.run_test(size=(110, 30)) as pilot:
        await open_browser(pilot, app, screen)
        got = ids(screen)
        # this workspace: alpha, beta, gamma with its fork nested; the subagent is not mixed in;
        # the unreadable log (no workspace known) is listed with its reason
        assert ("gamma-fork", 1, None) in got
        assert got.index(("gamma-fork", 1, None)) == got.index(("gamma", 0, None)) + 1
        assert "gamma-sub" not in [i for i, _, _ in got]
        assert {i for i, d, _ in got if d == 0} == {"alpha", "beta", "gamma", None}
        bad = next(e.row for e in screen.list.entries if e.row.id is None)
        assert bad.state == cat.UNREADABLE and "newer harness" in bad.reason
        assert "This workspace" in scope_text(screen) and "all workspaces: 7" in scope_text(screen)
        fork_entry = next(e for e in screen.list.entries if e.row.id == "gamma-fork")
        assert fork_entry.fork_point == 10
        await pilot.press("tab")
        await pilot.pause()
        assert {i for i, _, _ in ids(screen)} >= {"far-1", "far-2"}
        assert "All workspaces" in scope_text(screen) and "this workspace: 5" in scope_text(screen)
        # subagent children are reachable from the parent
        await pilot.press("tab", "down")
        screen.list.move_to([i for i, _, _ in ids(screen)].index("gamma"))
        await pilot.press("c")
        await pilot.pause()
        got = ids(screen)
        assert got[got.index(("gamma", 0, None)) + 2] == ("gamma-sub", 1, None)


async def test_filter_is_instant_and_matches_title_workspace_id(world):
    app, screen = make_app(world)
    async with app.run_test(size=(110, 30)) as pilot:
        await open_browser(pilot, app, screen)
        await pilot.press(*"marma")
        assert [i for i, _, _ in ids(screen)] == ["beta"]  # synchronous: no pause needed
        await pilot.press("tab")
        await pilot.pause()
        assert sorted(i for i, _, _ in ids(screen)) == ["beta", "far-1"]
        for _ in range(5):
            await pilot.press("backspace")
        await pilot.press(*"elsewhere")
        await pilot.pause()
        assert sorted(i for i, _, _ in ids(screen)) == ["far-1", "far-2"]


async def test_content_hit_opens_the_session_at_the_matching_event(world):
    app, screen = make_app(world)
    async with app.run_test(size=(110, 30)) as pilot:
        await open_browser(pilot, app, screen)
        await pilot.press("ctrl+f", *"roses")
        await until(pilot, lambda: any(h is not None for _, _, h in ids(screen)))
        got = ids(screen)
        assert got[0] == ("alpha", 0, None)
        hit = got[1]
        assert hit[0] == "alpha" and hit[2] is not None
        await pilot.press("enter")  # to the list
        screen.list.move_to(1)
        # the timeline opens at the hit too
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, TimelineScreen))
        assert app.screen.ledger.current_seq == hit[2]
        assert "water the roses" in json.dumps(app.screen.events[hit[2]])
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen)
        await pilot.press("enter")
        await until(pilot, lambda: screen.opened_at == hit[2])
        chat = app.screen
        assert isinstance(chat, ChatScreen)
        shown = [i for i in chat.fold.items if i.seq <= hit[2]][-1]
        assert shown.kind == "user" and "water the roses" in shown.text
        view = chat.transcript.views.get(shown.key)
        assert view is not None  # mounted (windowed around the hit)


async def test_fork_picker_forks_at_the_chosen_turn(world):
    app, screen = make_app(world)
    root = world["root"]
    async with app.run_test(size=(110, 30)) as pilot:
        await open_browser(pilot, app, screen)
        parent = next(e.row for e in screen.list.entries if e.row.id == "alpha")
        before = Path(parent.path).read_bytes()
        screen.list.focus()
        screen.list.move_to([i for i, _, _ in ids(screen)].index("alpha"))
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, ChoiceModal))
        picker = app.screen
        assert [v for _, v in picker.choices] == [2, 1]  # every completed turn, newest first
        await pilot.press("down", "enter")  # turn 1
        await until(pilot, lambda: any(e.row.parent == "alpha" for e in screen.list.entries))
        child = next(e for e in screen.list.entries if e.row.parent == "alpha")
        assert child.depth == 1 and child.row.title == "alpha plans the garden (1)"
        assert child.row.turns == 1
        assert screen.list.current.row.id == child.row.id
        assert Path(parent.path).read_bytes() == before
    assert len(list(root.rglob("session.jsonl"))) == 9


async def test_rename_delete_confirmation_and_trash_restore(world):
    app, screen = make_app(world)
    async with app.run_test(size=(110, 30)) as pilot:
        await open_browser(pilot, app, screen)
        screen.list.focus()
        screen.list.move_to([i for i, _, _ in ids(screen)].index("beta"))
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, TextModal))
        app.screen.query_one("#text").value = "Jam inventory"
        await pilot.press("enter")
        await until(pilot, lambda: any(e.row.title == "Jam inventory" for e in screen.list.entries))
        assert screen.list.current.row.id == "beta"
        # delete asks first; cancelling keeps the session
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, ChoiceModal))
        assert "trash" in app.screen.title_text
        await pilot.press("escape")
        await pilot.pause()
        assert "beta" in [i for i, _, _ in ids(screen)]
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, ChoiceModal))
        await pilot.press("enter")
        await until(pilot, lambda: "beta" not in [i for i, _, _ in ids(screen)])
        # the trash lists it; Enter restores it
        await pilot.press("T")
        await pilot.pause()
        assert [i for i, _, _ in ids(screen)] == ["beta"]
        assert "Trash" in scope_text(screen)
        await pilot.press("enter")
        await pilot.pause()
        assert ids(screen) == []
        await pilot.press("escape")
        await until(pilot, lambda: screen.indexed.is_set() and screen.indexing is None)
        await pilot.pause()
        assert "beta" in [i for i, _, _ in ids(screen)]
        row = next(e.row for e in screen.list.entries if e.row.id == "beta")
        assert row.title == "Jam inventory"


async def test_list_opens_before_indexing_finishes(world):
    """With background indexing off, rows come from headers alone, then fill in on refresh."""
    app, screen = make_app(world, index_in_background=False)
    async with app.run_test(size=(110, 30)) as pilot:
        await app.push_screen(screen)
        await until(pilot, lambda: screen.loaded.is_set())
        rows = [e.row for e in screen.list.entries if e.row.id]
        assert rows and all(not r.indexed for r in rows)
        assert all(r.turns == 0 for r in rows)
        screen.index_in_background = True
        screen.indexed.clear()
        await pilot.press("f5")
        await until(pilot, lambda: screen.indexed.is_set() and screen.indexing is None)
        await pilot.pause()
        rows = {e.row.id: e.row for e in screen.list.entries if e.row.id}
        assert rows["alpha"].indexed and rows["alpha"].turns == 2


async def test_catalog_deleted_while_open_loses_no_rows(world):
    app, screen = make_app(world)
    async with app.run_test(size=(110, 30)) as pilot:
        await open_browser(pilot, app, screen)
        before = sorted(str(i) for i, _, _ in ids(screen))
        for p in world["tmp"].glob("catalog.sqlite*"):
            p.unlink()
        screen.indexed.clear()
        screen.list.focus()
        await pilot.press("f5")
        await until(pilot, lambda: screen.indexed.is_set() and screen.indexing is None)
        await pilot.pause()
        assert sorted(str(i) for i, _, _ in ids(screen)) == before
        assert (world["tmp"] / "catalog.sqlite").exists()
        assert all(e.row.indexed for e in screen.list.entries)


async def test_first_paint_lists_what_is_on_disk_then_revalidation_corrects_it(world):
    """The second open paints from the directory listing + the index snapshot: a log the index has
    never seen is listed at once; a log deleted since (its directory kept) goes on revalidation."""
    app, screen = make_app(world)
    async with app.run_test(size=(110, 30)) as pilot:
        await open_browser(pilot, app, screen)  # indexes everything, writes the snapshot
        await app.pop_screen()
        alpha = next(r for r in screen.rows if r.id == "alpha")
        Path(alpha.path).unlink()
        write_session(world["root"], make_header("delta", world["cwd"]), two_turn("delta digs a pond", "deeper"))
        second = BrowserScreen(app, roots=[world["root"]], db_path=world["tmp"] / "catalog.sqlite",
                               cwd=world["cwd"], now_ms=lambda: NOW)
        gate = threading.Event()
        scan = second.catalog.scan
        second.catalog.scan = lambda: (gate.wait(10), scan())[1]  # hold the revalidation
        await app.push_screen(second)
        await until(pilot, lambda: second.loaded.is_set())
        await pilot.pause()
        rows = {e.row.id: e.row for e in second.list.entries}
        assert {"alpha", "beta", "gamma", "delta"} <= rows.keys()
        assert rows["delta"].indexed is False  # from its header: shown as "…" until indexed
        assert rows["beta"].indexed and rows["beta"].turns == 2  # facts from the snapshot
        assert second.list.paints > 0
        gate.set()
        await until(pilot, lambda: second.indexed.is_set() and second.indexing is None)
        await pilot.pause()
        rows = {e.row.id: e.row for e in second.list.entries}
        assert "alpha" not in rows
        assert rows["delta"].indexed and rows["delta"].turns == 2
        assert "8 logs on disk" in str(second.query_one("#progress").render())
