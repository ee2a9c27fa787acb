"""``dsh-tui demo --root DIR`` never writes over what exists (issue 37, item 1), and its options are checked."""

from __future__ import annotations

from dsh_tui.cli import build_parser


def _run_demo(root, monkeypatch, capsys):
    from dsh_tui.cli import demo_cmd

    opened = []  # the app itself is not what is tested here: the files are written before it opens
    monkeypatch.setattr("dsh_tui.ui.app.DshApp.run_app", lambda self, *a, **kw: opened.append(self))
    assert demo_cmd.run(build_parser().parse_args(["demo", "--pace", "0", "--root", str(root)])) == 0
    assert len(opened) == 1
    return capsys.readouterr().out


def test_demo_root_with_a_workspace_project_leaves_it_alone(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    project = home / "workspace"
    project.mkdir(parents=True)
    mine = {"README.md": "my readme\n", "stats.py": "my code\n", "test_stats.py": "my tests\n", "notes.txt": "x\n"}
    for name, text in mine.items():
        (project / name).write_text(text)
    (home / "workspace-2").write_text("a file, not a directory\n")
    out = _run_demo(home, monkeypatch, capsys)
    assert {p.name: p.read_text() for p in project.iterdir()} == mine  # untouched
    assert (home / "workspace-2").read_text() == "a file, not a directory\n"
    demo = home / "workspace-3"
    from dsh_tui.demo import STATS_PY

    assert (demo / "stats.py").read_text() == STATS_PY and (demo / "test_stats.py").is_file()
    assert f"the workspace in {demo}" in out
    # run again: another fresh workspace, the first demo's files are not rewritten either
    (demo / "stats.py").write_text("edited in the first demo\n")
    _run_demo(home, monkeypatch, capsys)
    assert (demo / "stats.py").read_text() == "edited in the first demo\n"
    assert (home / "workspace-4" / "stats.py").is_file()


def test_demo_root_that_is_fresh_uses_workspace(tmp_path, monkeypatch, capsys):
    out = _run_demo(tmp_path / "demo", monkeypatch, capsys)
    assert (tmp_path / "demo" / "workspace" / "stats.py").is_file()
    assert "the session log and workspace are in" in out
