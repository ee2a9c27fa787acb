"""The prompts of a workspace's past sessions from the catalog (the composer's history, issue #20)."""

from __future__ import annotations

from dsh_tui.store.catalog import Catalog
from dsh_tui.store.catalog.prompts import workspace_prompts
from tests.store.test_catalog_support import make_header, user_turn, write_session


def _session(root, sid, cwd, prompts, *, t, zstd=False):
    events, seq = [], 0
    for turn, text in enumerate(prompts, 1):
        turn_events = user_turn(seq, turn, text, f"answer {turn}", t=t)
        events += turn_events
        seq += len(turn_events)
    return write_session(root, make_header(sid, cwd), events, zstd=zstd)


def test_prompts_of_the_workspace_newest_first_each_once(tmp_path):
    root, ws = tmp_path / "sessions", str(tmp_path / "ws")
    _session(root, "s-old", ws, ["list the files", "explain main.py"], t=1_780_000_000_000)
    _session(root, "s-new", ws, ["run the tests", "list the files"], t=1_790_000_000_000, zstd=True)
    _session(root, "s-other", str(tmp_path / "elsewhere"), ["not this workspace"], t=1_795_000_000_000)
    _session(root, "s-open", ws, ["the open session"], t=1_799_000_000_000)
    _session(root, "s-long", ws, ["x" * 25_000, "after a long one"], t=1_785_000_000_000)
    catalog = Catalog([root], tmp_path / "cat.sqlite")
    assert workspace_prompts(catalog, ws, exclude=["s-open"]) == [
        "list the files", "run the tests",  # the newest session first, its last prompt first
        "after a long one",  # a prompt longer than the index keeps is left out, not recalled cut
        "explain main.py",
    ]
    assert workspace_prompts(catalog, ws, limit=2) == ["the open session", "list the files"]
    assert workspace_prompts(catalog, ws, sessions=1, exclude=["s-open"]) == ["list the files", "run the tests"]
    catalog.close()


def test_a_session_grown_since_it_was_indexed_gives_its_new_prompts(tmp_path):
    root, ws = tmp_path / "sessions", str(tmp_path / "ws")
    _session(root, "s1", ws, ["first"], t=1_780_000_000_000)
    catalog = Catalog([root], tmp_path / "cat.sqlite")
    assert workspace_prompts(catalog, ws) == ["first"]
    _session(root, "s1", ws, ["first", "second"], t=1_780_000_000_000)
    assert workspace_prompts(catalog, ws) == ["second", "first"]
    assert workspace_prompts(catalog, str(tmp_path / "nowhere")) == []
    catalog.close()
