"""The roots the app was started with reach its browser: `dsh-tui --root DIR` (the default root plus every DIR),
`run --root R`, `resume --last --root R` and the demo's temporary root (issue #14 item 5)."""

from __future__ import annotations

from pathlib import Path

from dsh_tui.cli import app_cmd, build_parser
from dsh_tui.paths import default_sessions_root
from dsh_tui.ui.screens.browser import BrowserScreen


def test_top_level_root_reaches_the_browser(tmp_path, monkeypatch):
    opened = []
    monkeypatch.setattr("dsh_tui.ui.app.DshApp.run", lambda self, *a, **kw: opened.append(self))
    args = build_parser().parse_args(["--root", str(tmp_path / "a"), "--root", str(tmp_path / "b")])
    assert args.command is None
    assert app_cmd.run(args) == 0
    (app,) = opened
    assert [Path(r) for r in app.session_roots] == [tmp_path / "a", tmp_path / "b"]
    screen = BrowserScreen(app, db_path=tmp_path / "catalog.sqlite", cwd=str(tmp_path))
    assert screen.catalog.roots == [default_sessions_root(), tmp_path / "a", tmp_path / "b"]


def test_a_command_keeps_its_own_root_option(tmp_path):
    args = build_parser().parse_args(["sessions", "--root", str(tmp_path)])
    assert args.command == "sessions"
    assert args.app_roots == []


def test_run_root_reaches_the_browser_of_the_chat(tmp_path, monkeypatch):
    """`dsh-tui run --root R`: Ctrl+B's browser lists R (the live session's root), not only the default."""
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(["run", "--root", str(tmp_path / "r")])
    app = app_cmd.chat_app(args)
    screen = BrowserScreen(app, db_path=tmp_path / "catalog.sqlite", cwd=str(tmp_path))
    assert tmp_path / "r" in screen.catalog.roots


def test_resume_last_root_reaches_the_browser_of_the_chat(tmp_path, monkeypatch):
    """`dsh-tui resume --last --root R`: Ctrl+B's browser lists R (where the resumed session lives)."""
    from dsh_tui.cli import resume_cmd
    from tests.store.test_catalog_display import untitled_turn
    from tests.store.test_catalog_support import make_header, write_session

    ws, root = tmp_path / "ws", tmp_path / "r"
    ws.mkdir()
    monkeypatch.chdir(ws)
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test-not-real")
    write_session(root, make_header("kept", str(ws)), untitled_turn(0, 1, "hello", "ok"))
    opened = []
    monkeypatch.setattr(app_cmd, "run_and_hint", lambda app: opened.append(app) or 0)
    args = build_parser().parse_args(["resume", "--last", "--root", str(root)])
    assert resume_cmd.run(args) == 0
    (app,) = opened
    screen = BrowserScreen(app, db_path=tmp_path / "catalog.sqlite", cwd=str(ws))
    assert root in screen.catalog.roots


def test_the_demo_root_reaches_the_browser(tmp_path, monkeypatch):
    """`dsh-tui demo`: Ctrl+B's browser lists the demo's sessions root (a temporary directory)."""
    from dsh_tui.cli import demo_cmd

    opened = []
    monkeypatch.setattr("dsh_tui.ui.app.DshApp.run_app", lambda self, *a, **kw: opened.append(self))
    args = build_parser().parse_args(["demo", "--root", str(tmp_path / "demo")])
    assert demo_cmd.run(args) == 0
    (app,) = opened
    screen = BrowserScreen(app, db_path=tmp_path / "catalog.sqlite", cwd=str(tmp_path))
    assert tmp_path / "demo" / "sessions" in screen.catalog.roots
