"""`dsh-tui --root DIR` (no command) opens the browser over the default root plus every DIR given."""

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
