"""The search package's seams: one tree walk (``search.walk._walk_files``) serves both ``grep`` and ``glob``,
so a test or a tool that wraps the walk sees every search."""

from __future__ import annotations

import pytest

from tests.tools.harness import Bench


@pytest.mark.parametrize("tool", ["grep", "glob"])
async def test_both_tools_walk_through_the_one_walk(tmp_path, monkeypatch, tool):
    from dsh_tui.tools import search

    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    (ws / "d" / "f.txt").write_text("needle\n")
    bench = Bench(ws, spill_dir=tmp_path / "spill")
    real, calls = search.walk._walk_files, []

    def counted(*args, **kwargs):
        calls.append(kwargs.get("respect_ignores"))
        return real(*args, **kwargs)

    monkeypatch.setattr(search.walk, "_walk_files", counted)
    out = await bench.run(tool, {"pattern": "needle"} if tool == "grep" else {"pattern": "**/*.txt"})
    assert calls == [tool == "grep"]  # grep honours ignore files, glob does not
    assert "f.txt" in out.text
