"""The browser in the running app: the roots it lists, the way back to the chat, keys that follow the
focus, what a row says (first prompt, fork turn, true states), the trash and search hits, the footer at
80 columns. Real files, the real catalog, the real harness with a scripted model."""

from __future__ import annotations

from pathlib import Path

from dsh_tui.llm import scripted
from dsh_tui.llm.protocol import RetryPolicy
from dsh_tui.llm.scripted import ScriptedProvider
from dsh_tui.store import catalog as cat
from dsh_tui.ui.app import DshApp
from dsh_tui.ui.screens.browser import BrowserScreen, ChoiceModal, KeysFooter
from dsh_tui.ui.screens.chat import ChatScreen
from tests.store.test_catalog_display import ended, untitled_turn
from tests.store.test_catalog_support import make_header, write_session
from tests.ui.conftest import scripted_app, submit, wait_for
from tests.ui.screen_text import screen_text

NOW = 1_780_000_100_000


def footer(screen) -> str:
    return screen.query_one(KeysFooter).render().plain


def line(screen, i: int, width: int = 110) -> str:
    return "".join(text for text, _style in screen.list._format(i, width))


def lines(screen, width: int = 110) -> list[str]:
    return [line(screen, i, width) for i in range(len(screen.list.entries))]


async def indexed(pilot, screen) -> None:
    await wait_for(pilot, lambda: screen.is_attached and screen.indexed.is_set() and screen.indexing is None)
    await pilot.pause()


def provider(*answers: str) -> ScriptedProvider:
    return ScriptedProvider([scripted.text(a) for a in answers], name="mock", context_window=100_000,
                            retry_policy=RetryPolicy(initial_delay_ms=1, max_delay_ms=2, jitter_ratio=0.0))


def world(tmp_path, monkeypatch) -> dict:
    """A root: an untitled two-turn session, a fork of it after turn 1, a session whose only turn failed."""
    root = tmp_path / "root"
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    parent = untitled_turn(0, 1, "Plan the garden beds", "ok")
    parent += untitled_turn(len(parent), 2, "water the roses", "ok")
    write_session(root, make_header("garden", str(ws)), parent)
    cut = next(e["seq"] for e in parent if e["type"] == "turn/end") + 1
    write_session(root, make_header("garden-fork", str(ws), parentSession="garden", seedLength=cut),
                  parent[:cut] + [{"type": "session/end-seed", "seq": cut, "time": 5, "data": {}}])
    write_session(root, make_header("broken", str(ws)),
                  ended(0, 1, "Fix the parser", {"kind": "error", "error": {"message": "boom"}}))
    write_session(root, make_header("far", "/elsewhere"), untitled_turn(0, 1, "Far away work", "ok"))
    return {"root": root, "ws": ws, "tmp": tmp_path}


def browser(app, w, **kw) -> BrowserScreen:
    return BrowserScreen(app, roots=[w["root"]], db_path=w["tmp"] / "catalog.sqlite", cwd=str(w["ws"]),
                         now_ms=lambda: NOW, **kw)


async def test_ctrl_b_lists_the_live_sessions_root_and_esc_or_ctrl_b_return_to_the_chat(tmp_path, monkeypatch):
    """`dsh-tui run --root R`: R is not the default root; the browser still lists the live session, as
    "open here", and Esc / Ctrl+B go back to the same chat (never a browser over a browser)."""
    app = scripted_app(tmp_path, [scripted.text("hello back")])
    monkeypatch.chdir(tmp_path)  # not the session's workspace (as the demo's): "this workspace" is the chat's
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None)
        await submit(pilot, "say hi")
        await wait_for(pilot, lambda: "turn/end" in [e["type"] for e in app.bridge.harness.session.events])
        chat = app.screen
        live = app.bridge.harness.session.id
        await pilot.press("ctrl+b")
        await wait_for(pilot, lambda: isinstance(app.screen, BrowserScreen))
        screen = app.screen
        await indexed(pilot, screen)
        assert tmp_path / "sessions" in screen.catalog.roots
        assert [e.row.id for e in screen.list.entries] == [live]
        assert "say hi" in line(screen, 0) and "open here" in line(screen, 0)
        header = str(screen.query_one("#scope").render())
        assert header.startswith("This workspace (") and "/ws) · 1 session " in header  # the chat's workspace
        assert "esc Back" in footer(screen)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is chat)
        await pilot.press("ctrl+b")
        await wait_for(pilot, lambda: isinstance(app.screen, BrowserScreen))
        await pilot.press("ctrl+b")  # Ctrl+B on the browser: back, not another browser
        await wait_for(pilot, lambda: app.screen is chat)
        assert not any(isinstance(s, BrowserScreen) for s in app.screen_stack)
        await pilot.press("ctrl+b")
        await wait_for(pilot, lambda: isinstance(app.screen, BrowserScreen))
        screen = app.screen
        await indexed(pilot, screen)
        screen.list.focus()
        await pilot.press("r")  # resuming the chat's own session: back to that chat
        await wait_for(pilot, lambda: app.screen is chat)
        assert app.bridge.harness.session.id == live


async def test_keys_follow_the_focus_and_the_browser_keeps_scope_focus_and_selection(tmp_path, monkeypatch):
    w = world(tmp_path, monkeypatch)
    app = DshApp(None, start="chat")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = browser(app, w)
        await app.push_screen(screen)
        await indexed(pilot, screen)
        # the filter has the focus: its keys, no list command (those letters type)
        text = footer(screen)
        assert "↓ List" in text and "^f Search content" in text and "^n New session" in text
        assert "Resume" not in text and "Rename" not in text
        await pilot.press("down")
        assert screen.focused is screen.list
        text = footer(screen)
        for key in ("⏎ Open", "r Resume", "f Fork", "n Rename", "d Delete", "/ Filter", "esc Back", "f1 Help"):
            assert key in text, (key, text)
        # a character that is no command types nothing anywhere and the focus stays in the list
        await pilot.press("x", "z")
        assert screen.focused is screen.list and screen.query_one("#filter").value == ""
        assert [n.message for n in app._notifications].count("Letters are commands in the list: / filters.") == 1
        await pilot.press("slash")
        assert screen.focused is screen.query_one("#filter")
        await pilot.press("tab", "down")  # all workspaces, into the list
        rows = [e.row.id for e in screen.list.entries]
        screen.list.move_to(rows.index("far"))
        await pilot.press("escape")  # back to the chat
        await wait_for(pilot, lambda: isinstance(app.screen, ChatScreen))
        again = browser(app, w)
        await app.push_screen(again)
        await indexed(pilot, again)
        assert again.scope_all is True  # the scope is kept
        assert again.focused is again.list  # and the focus: list keys work at once
        assert again.list.current.row.id == "far"
        assert "r Resume" in footer(again)


async def test_rows_show_first_prompt_fork_turn_and_true_states(tmp_path, monkeypatch):
    w = world(tmp_path, monkeypatch)
    app = DshApp(None, start="chat")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = browser(app, w)
        await app.push_screen(screen)
        await indexed(pilot, screen)
        shown = lines(screen)
        assert not any("(untitled)" in text for text in shown)
        garden = next(text for text in shown if "Plan the garden beds" in text and "fork" not in text)
        fork = next(text for text in shown if "↳ fork" in text)
        broken = next(text for text in shown if "Fix the parser" in text)
        assert "completed" in garden
        assert "↳ fork after turn 1 Plan the garden beds" in fork and "@" not in fork
        assert broken.rstrip().endswith("failed")
        # the filter finds the first prompt
        await pilot.press(*"parser")
        assert [e.row.id for e in screen.list.entries] == ["broken"]
        await pilot.press("escape")
        # a fork from the browser is titled after the prompt, not the session id
        screen.list.focus()
        screen.list.move_to([e.row.id for e in screen.list.entries].index("garden"))
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceModal))
        await pilot.press("enter")  # after turn 2
        await wait_for(pilot, lambda: app.screen is screen and sum(
            1 for e in screen.list.entries if e.row.parent == "garden") == 2)
        child = screen.list.current.row
        assert child.title == "Plan the garden beds (1)" and child.fork_turn == 2
        assert "↳ fork after turn 2" in line(screen, screen.list.cursor)


async def test_trash_counts_and_refuses_resume_and_fork(tmp_path, monkeypatch):
    w = world(tmp_path, monkeypatch)
    app = DshApp(None, start="chat")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = browser(app, w, provider_route=lambda: (provider("x"), "mock-model", ""))
        await app.push_screen(screen)
        await indexed(pilot, screen)
        for row in [r for r in screen.rows if r.id in ("garden", "broken", "far")]:
            cat.move_to_trash(row)
        screen.list.focus()
        await pilot.press("T")
        await pilot.pause()
        assert "Trash · 3 sessions" in str(screen.query_one("#scope").render())
        assert "3 logs in" in str(screen.query_one("#progress").render())
        assert {e.row.id for e in screen.list.entries} == {"garden", "broken", "far"}
        assert all("in trash" in text for text in lines(screen))
        text = footer(screen)
        assert "⏎ Restore" in text and "Resume" not in text and "Fork" not in text
        await pilot.press("r", "f")
        await pilot.pause()
        assert app.screen is screen and screen.trash_mode  # no chat, no fork picker
        assert any("restore it first" in n.message for n in app._notifications)
        left = [p for p in w["root"].rglob("session.jsonl") if cat.TRASH_DIR not in p.parts]
        assert [p.parent.name for p in left] == ["garden-fork"]  # nothing was resumed out of the trash
        await pilot.press("enter")  # restore one
        await pilot.pause()
        assert "Trash · 2 sessions" in str(screen.query_one("#scope").render())
        screen.list.move_to(0)
        await pilot.press("enter")
        await pilot.pause()
        assert "Trash · 1 session " in str(screen.query_one("#scope").render())


async def test_esc_in_a_read_only_view_goes_back_to_the_browser(tmp_path, monkeypatch):
    """Issue #26 item 22: Esc did nothing in a read-only view opened from the browser."""
    w = world(tmp_path, monkeypatch)
    app = DshApp(None, start="chat")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = browser(app, w, provider_route=lambda: (provider("x"), "mock-model", ""))
        await app.push_screen(screen)
        await indexed(pilot, screen)
        screen.list.focus()
        screen.list.move_to([e.row.id for e in screen.list.entries].index("garden"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ChatScreen) and app.screen.read_only
                       and "water the roses" in screen_text(app))
        depth = len(app.screen_stack)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen)
        assert len(app.screen_stack) == depth - 1  # back where it was opened, not a browser over it


async def test_the_empty_browser_on_a_fresh_machine_says_ctrl_n_starts_one(tmp_path, monkeypatch):
    """Issue #26 item 22: a fresh machine's browser said only "No sessions"."""
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    w = {"root": tmp_path / "root", "ws": ws, "tmp": tmp_path}
    app = DshApp(None, start="chat")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = browser(app, w)
        await app.push_screen(screen)
        await indexed(pilot, screen)
        await wait_for(pilot, lambda: "No sessions yet: Ctrl+N to start one here." in screen_text(app))
        await pilot.press(*"zz")
        await wait_for(pilot, lambda: "No session matches (Esc clears the filter)." in screen_text(app))


async def test_the_fork_picker_marks_cancelled_and_failed_turns(tmp_path, monkeypatch):
    """Issue #26 item 22: the fork picker offered a cancelled turn as if it had completed."""
    from textual.widgets import OptionList

    w = world(tmp_path, monkeypatch)
    ev = ended(0, 1, "Stop this one", {"kind": "aborted", "reason": {"kind": "user"}})
    ev += ended(len(ev), 2, "This failed", {"kind": "error", "error": {"message": "x"}})
    ev += untitled_turn(len(ev), 3, "Then this worked", "ok")
    write_session(w["root"], make_header("mixed", str(w["ws"])), ev)
    app = DshApp(None, start="chat")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = browser(app, w, provider_route=lambda: (provider("x"), "mock-model", ""))
        await app.push_screen(screen)
        await indexed(pilot, screen)
        screen.list.focus()
        screen.list.move_to([e.row.id for e in screen.list.entries].index("mixed"))
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceModal))
        options = app.screen.query_one(OptionList)
        labels = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert labels == ["after turn 3: Then this worked", "after turn 2: This failed (failed)",
                          "after turn 1: Stop this one (cancelled)"]
        await pilot.press("escape")


async def test_archive_view_lists_the_archived_and_enter_unarchives(tmp_path, monkeypatch):
    """Issue #26 item 21: ``a`` archived a session out of every view for good. ``A`` lists the archive,
    Enter unarchives, Esc goes back to the list (which has the session again)."""
    w = world(tmp_path, monkeypatch)
    app = DshApp(None, start="chat")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = browser(app, w, provider_route=lambda: (provider("x"), "mock-model", ""))
        await app.push_screen(screen)
        await indexed(pilot, screen)
        screen.list.focus()
        screen.list.move_to(next(i for i, e in enumerate(screen.list.entries) if e.row.id == "broken"))
        await pilot.press("a")
        await wait_for(pilot, lambda: "broken" not in {e.row.id for e in screen.list.entries})
        await pilot.press("A")
        await pilot.pause()
        assert "Archive · 1 session" in str(screen.query_one("#scope").render())
        assert [e.row.id for e in screen.list.entries] == ["broken"]
        assert "archived" in lines(screen)[0]
        text = footer(screen)
        assert "⏎ Unarchive" in text and "Leave archive" in text and "Resume" not in text
        await pilot.press("r")
        await pilot.pause()
        assert any("unarchive it first" in n.message for n in app._notifications)
        await pilot.press("enter")
        await pilot.pause()
        assert "Archive · 0 sessions" in str(screen.query_one("#scope").render())
        assert not list((w["root"] / cat.ARCHIVE_DIR).rglob("session.jsonl"))
        await pilot.press("escape")
        await wait_for(pilot, lambda: "broken" in {e.row.id for e in screen.list.entries})
        assert not screen.trash_mode


async def test_search_hits_highlight_the_match_without_brackets(tmp_path, monkeypatch):
    w = world(tmp_path, monkeypatch)
    write_session(w["root"], make_header("steer", str(w["ws"])),
                  untitled_turn(0, 1, "the [steer] and the attempt", "ok"))
    app = DshApp(None, start="chat")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = browser(app, w)
        await app.push_screen(screen)
        await indexed(pilot, screen)
        await pilot.press("ctrl+f", *"attempt")
        await wait_for(pilot, lambda: any(e.hit_seq is not None for e in screen.list.entries))
        i = next(i for i, e in enumerate(screen.list.entries) if e.hit_seq is not None)
        spans = screen.list._format(i, 120)
        text = "".join(t for t, _ in spans)
        assert "user: the [steer] and the attempt" in text  # the log's own brackets, none added
        assert [t for t, style in spans if "reverse" in style] == ["attempt"]


async def test_ctrl_n_starts_a_new_session_in_the_apps_root(tmp_path, monkeypatch):
    w = world(tmp_path, monkeypatch)
    app = DshApp(None, start="chat")
    model = provider("fresh answer")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = browser(app, w, provider_route=lambda: (model, "mock-model", ""))
        await app.push_screen(screen)
        await indexed(pilot, screen)
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: isinstance(app.screen, ChatScreen) and app.bridge.harness is not None)
        session = app.bridge.harness.session
        assert session.id not in {r.id for r in screen.rows}
        await submit(pilot, "a brand new question")
        await wait_for(pilot, lambda: "turn/end" in [e["type"] for e in session.events])
        assert Path(app.bridge.harness.writer.store.root) == w["root"].resolve()
        assert session.header["cwd"] == str(w["ws"])


async def test_footer_at_80_columns_shows_whole_keys_by_priority(tmp_path, monkeypatch):
    w = world(tmp_path, monkeypatch)
    app = DshApp(None, start="chat")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = browser(app, w)
        await app.push_screen(screen)
        await indexed(pilot, screen)
        for focus in (screen.list, screen.query_one("#filter")):
            focus.focus()
            await pilot.pause()
            text = footer(screen)
            assert len(text) == 80 and "f1 Help" in text and "^p palette" in text
            left = text.split("▏")[0].rstrip()
            labels = [d for _b, _e, d, _p in screen.query_one(KeysFooter).keys()[0]]
            assert any(left.endswith(label) for label in labels), text  # no key cut in half
        screen.list.focus()
        await pilot.pause()
        text = footer(screen)
        assert "⏎ Open" in text and "r Resume" in text and "esc Back" in text


async def test_first_open_in_a_workspace_without_sessions_shows_all_workspaces(tmp_path, monkeypatch):
    """`dsh-tui --root <demo>/sessions` from another directory: the demo's session is on screen at once."""
    w = world(tmp_path, monkeypatch)
    empty = tmp_path / "empty"
    empty.mkdir()
    app = DshApp(None, start="chat")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = BrowserScreen(app, roots=[w["root"]], db_path=w["tmp"] / "catalog.sqlite", cwd=str(empty),
                               now_ms=lambda: NOW)
        await app.push_screen(screen)
        await indexed(pilot, screen)
        assert screen.scope_all and "far" in {e.row.id for e in screen.list.entries}
        await pilot.press("tab")  # the user's choice is kept from then on
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ChatScreen))
        again = BrowserScreen(app, roots=[w["root"]], db_path=w["tmp"] / "catalog.sqlite", cwd=str(empty),
                              now_ms=lambda: NOW)
        await app.push_screen(again)
        await indexed(pilot, again)
        assert not again.scope_all and len(again.list.entries) == 0


async def test_palette_goes_back_to_the_chat_and_the_header_fits_80_columns(tmp_path, monkeypatch):
    w = world(tmp_path, monkeypatch)
    deep = w["ws"] / "a-rather-long-directory-name" / "and-another-one-below-it" / "project"
    deep.mkdir(parents=True)
    app = DshApp(None, start="chat")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = BrowserScreen(app, roots=[w["root"]], db_path=w["tmp"] / "catalog.sqlite", cwd=str(deep),
                               now_ms=lambda: NOW)
        await app.push_screen(screen)
        await indexed(pilot, screen)
        assert screen.scope_all  # nothing in that workspace
        await pilot.press("tab")
        header = str(screen.query_one("#scope").render())
        assert header.startswith("This workspace (…") and "/project) · 0 sessions" in header
        assert header.endswith("[Tab] all workspaces: 4") and len(header) <= 78
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"back to chat")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ChatScreen))


async def test_down_down_from_the_filter_moves_to_the_second_row(tmp_path, monkeypatch):
    """Keys typed faster than the focus moves: ↓ ↓ from the filter selects the second row, as it reads."""
    w = world(tmp_path, monkeypatch)
    app = DshApp(None, start="chat")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = browser(app, w)
        await app.push_screen(screen)
        await indexed(pilot, screen)
        assert screen.focused is screen.query_one("#filter") and screen.list.cursor == 0
        await pilot.press("down", "down")
        await pilot.pause()
        assert screen.focused is screen.list and screen.list.cursor == 1
