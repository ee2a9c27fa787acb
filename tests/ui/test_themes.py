"""Themes load from the package itself (package data), also when installed away from the repository."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from dsh_tui.ui import themes

REPO = Path(__file__).resolve().parents[2]


def test_the_bundled_themes_are_package_data_only() -> None:
    """One source of truth: the themes ship inside the package (no second copy at the top level)."""
    assert {p.name for p in themes.PACKAGE_THEMES.glob("*.toml")} >= {"dsh-dark.toml", "dsh-light.toml"}
    assert not (REPO / "themes").exists()
    assert themes.theme_dirs()[0] == themes.PACKAGE_THEMES


def test_themes_load_when_the_package_is_installed_away_from_the_repository(tmp_path: Path) -> None:
    # A regular install: the package alone in a site dir, no themes/ beside it, no pyproject.toml.
    site = tmp_path / "site"
    shutil.copytree(REPO / "dsh_tui", site / "dsh_tui", ignore=shutil.ignore_patterns("__pycache__"))
    config = tmp_path / "config"
    env = {**os.environ, "PYTHONPATH": str(site), "XDG_CONFIG_HOME": str(config), "DSH_HOME": str(tmp_path / "h")}
    code = ("import json, dsh_tui.ui.themes as t; "
            "print(json.dumps({'file': t.__file__, 'dirs': [str(d) for d in t.theme_dirs()], "
            "'names': sorted(x.name for x in t.load_themes())}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["file"].startswith(str(site)), out["file"]  # the copy was imported, not the checkout
    assert not any(d.startswith(str(REPO)) for d in out["dirs"]), out["dirs"]
    assert {"dsh-dark", "dsh-light"} <= set(out["names"])


def test_parsed_theme_files_are_kept_between_runs_and_a_changed_file_is_read_again(tmp_path: Path) -> None:
    # importing tomllib and parsing the theme files was ~2 ms of every start-up: a start with the cache
    # imports no tomllib; a user theme edited since is parsed again
    config = tmp_path / "config"
    (config / "dsh-tui" / "themes").mkdir(parents=True)
    user = config / "dsh-tui" / "themes" / "mine.toml"
    user.write_text('name = "mine"\nprimary = "#112233"\n')
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CONFIG_HOME": str(config), "DSH_HOME": str(tmp_path / "h")}
    code = ("import json, sys; from pathlib import Path; import dsh_tui.ui.themes as t; "
            f"th = {{x.name: x for x in t.load_themes(Path({str(tmp_path / 'themes.pickle')!r}))}}; t.save_theme_cache(); "
            "print(json.dumps({'dirs': [str(d) for d in t.theme_dirs()], 'tomllib': 'tomllib' in sys.modules, "
            "'names': sorted(th), 'mine': th['mine'].primary if 'mine' in th else None}))")

    def run() -> dict:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                              timeout=60)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    first = run()
    assert str(user.parent) in first["dirs"], first  # the user's theme folder is read
    assert first["tomllib"] and {"dsh-dark", "dsh-light", "mine"} <= set(first["names"])
    again = run()
    assert not again["tomllib"] and again["names"] == first["names"] and again["mine"] == "#112233"
    user.write_text('name = "mine"\nprimary = "#445566"\n\n')
    edited = run()
    assert edited["tomllib"] and edited["mine"] == "#445566"
