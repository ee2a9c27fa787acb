"""Browser actions at store level: rename, fork with a numbered title, archive, trash and restore."""

from __future__ import annotations

import json

import pytest

from dsh_tui.store import catalog as cat
from dsh_tui.store.catalog import Catalog, CatalogError
from tests.store.test_catalog_support import make_header, user_turn, write_session


@pytest.fixture
def setup(tmp_path):
    root = tmp_path / "sessions"
    ev = user_turn(0, 1, "first question", "a1")
    ev += user_turn(len(ev), 2, "second question", "a2")
    path = write_session(root, make_header("p1"), ev)
    c = Catalog([root], tmp_path / "cat.sqlite")
    rows = c.refresh()
    return c, rows[0], path, ev


def test_rename_appends_a_user_title_event(setup):
    c, row, path, ev = setup
    before = path.read_bytes()
    event = cat.rename(row, "  Better title ")
    after = path.read_bytes()
    assert after.startswith(before)  # append-only
    last = json.loads(after.splitlines()[-1])
    assert last == event
    assert last["type"] == "session/title" and last["seq"] == len(ev)
    assert last["data"] == {"title": "Better title", "messageSeqs": [], "source": {"kind": "user"}}
    (row2,) = c.refresh()
    assert row2.title == "Better title" and row2.title_source == "user"
    with pytest.raises(CatalogError, match="session title must contain visible characters"):
        cat.rename(row2, " \u200b\x1b[0m ")
    # dsh's rename normalization: escapes and invisible characters out, whitespace runs collapsed, 80 bytes
    cat.rename(row2, "\x1b[1mBold\x1b[0m   new\u200b title " + "x" * 100)
    last = json.loads(path.read_bytes().splitlines()[-1])
    assert last["data"]["title"] == ("Bold new title " + "x" * 100)[:80]


def test_completed_turns_and_fork_with_numbered_title(setup):
    c, row, path, ev = setup
    assert [t for t, _ in cat.completed_turns(row)] == [1, 2]
    assert cat.completed_turns(row)[0][1] == "first question"
    parent_bytes = path.read_bytes()
    child = cat.fork_at_turn(row, 1, taken_titles=["first question (1)"])
    assert path.read_bytes() == parent_bytes
    rows = {r.id: r for r in c.refresh()}
    ch = rows[child]
    assert ch.parent == "p1" and ch.is_fork and ch.title == "first question (2)"
    assert ch.turns == 1 and ch.seed_length == next(e["seq"] for e in ev if e["type"] == "turn/end") + 1
    assert cat.numbered_title("x", ["x (1)", "x (2)", None]) == "x (3)"


def test_trash_and_restore_round_trip(setup):
    c, row, path, _ = setup
    data = path.read_bytes()
    dest = cat.move_to_trash(row)
    assert not path.exists() and dest.is_dir()
    assert c.refresh() == []  # out of the list, not deleted
    trashed = cat.bucket_rows(c.roots[0])
    assert [r.id for r in trashed] == ["p1"]
    back = cat.restore(trashed[0])
    assert back == path.parent and path.read_bytes() == data
    assert [r.id for r in c.refresh()] == ["p1"]


def test_archive_moves_out_of_the_list(setup):
    c, row, path, _ = setup
    cat.archive(row)
    assert c.refresh() == []
    assert [r.id for r in cat.bucket_rows(c.roots[0], cat.ARCHIVE_DIR)] == ["p1"]


def test_a_live_writer_blocks_trash(setup):
    c, row, path, _ = setup
    import os

    from dsh_tui.store.lock import SessionInUseError, SessionLock

    # the refusal is the one ``run``, ``resume``, ``fork`` and ``log repair`` give for a held session
    same = f"^session p1 is in use by pid {os.getpid()}$"
    before = path.read_bytes()
    for action in (cat.move_to_trash, cat.archive):
        with SessionLock(path.parent / "session.lock", "p1"), pytest.raises(CatalogError, match=same):
            action(row)
    with SessionLock(path.parent / "session.lock", "p1"), pytest.raises(SessionInUseError, match=same):
        cat.rename(row, "a title")
    assert path.read_bytes() == before
    with SessionLock(path.parent / "session.lock", "p1"):
        assert c.refresh()[0].state == cat.OPEN_ELSEWHERE


def test_every_fork_entry_point_is_a_caller_of_lifecycle_fork(setup, monkeypatch):
    """One fork implementation (issue #28): the browser's fork, rewinding (before a turn, the first one
    included: its empty child) and the CLI all build their child through ``store.lifecycle.fork`` — no copy
    of its logic that could drift from it."""
    import argparse

    from dsh_tui.cli import fork_cmd
    from dsh_tui.runtime.turns import fork_before_turn
    from dsh_tui.store import lifecycle

    c, row, path, ev = setup
    calls: list[dict] = []
    real = lifecycle.fork

    def spy(store, source_id, **kwargs):
        calls.append(kwargs)
        return real(store, source_id, **kwargs)

    monkeypatch.setattr(lifecycle, "fork", spy)
    store = cat.store_for(row)
    cat.fork_at_turn(row, 1)
    fork_before_turn(store, row.id, 2)
    first = fork_before_turn(store, row.id, 1)  # nothing precedes the first prompt: an empty child
    fork_cmd.run(argparse.Namespace(session=row.id, root=row.root, backend=None,
                                    at_seq=None, at_turn=2))
    assert [k.get("at_turn") or k.get("before_turn") for k in calls] == [1, 2, 1, 2]
    assert first["seedLength"] == 0 and first["parentSession"] == "p1"
    assert store.inspect(first["id"]).events[-1]["type"] == "session/end-seed"
