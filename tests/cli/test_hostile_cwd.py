"""No process dsh-tui starts imports Python from the workspace (a cloned repository): the console script
in the repository as its cwd, a headless turn with a tool (the tools run in-process or as ``bash``), the
served tabs (``tests/cli/test_serve.py::test_a_tab_never_imports_from_the_servers_cwd``)."""

from __future__ import annotations

import os
import subprocess

from tests.cli.serve_support import DSH_TUI
from tests.tools.test_grep_hostile_files import GrepModel

PLANTED = ("textual.py", "platformdirs.py", "yaml.py", "httpx.py", "dsh_tui/__init__.py", "dsh_tui/__main__.py")


def test_a_headless_turn_in_a_hostile_repository_imports_nothing_from_it(tmp_path):
    repo = tmp_path / "repo"
    (repo / "dsh_tui").mkdir(parents=True)
    marker = tmp_path / "imported"
    for name in PLANTED:
        (repo / name).write_text(f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n")
    (repo / "notes.txt").write_text("the NEEDLE-77 is here\n")
    model = GrepModel()
    env = {**os.environ, "DEEPSEEK_API_KEY": "sk-test", "DEEPSEEK_BASE_URL": model.base_url,
           "DSH_HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    try:
        p = subprocess.run([str(DSH_TUI), "run", "--headless", "find the needle", "--root", str(tmp_path / "s")],
                           cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    finally:
        model.close()
    assert p.returncode == 0 and "NEEDLE-77 is here" in p.stdout, (p.stdout, p.stderr)
    assert not marker.exists(), marker.read_text()
