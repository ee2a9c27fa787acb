"""The first-paint listing: session directories on disk joined with the index's listing snapshot."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import dsh_tui.store.catalog.index as mod
from dsh_tui.store.catalog import COMPLETED, INDEXING, UNREADABLE
from tests.store.test_catalog_support import append_events, cat, make_header, user_turn, write_session

FIELDS = ("id", "cwd", "title", "updated_at", "turns", "tokens", "state", "reason", "parent", "seed_length",
          "origin", "children", "indexed", "path", "root")


def session(root, sid, cwd="/work/project", zstd=False, **hdr):
    ev = user_turn(0, 1, f"{sid} asks about marmalade", "an answer")
    ev += user_turn(len(ev), 2, "and a second question", "a second answer")
    return write_session(root, make_header(sid, cwd, **hdr), ev, zstd=zstd), ev


def build(c):
    """What the browser's worker does after a revalidation: index, then write the listing snapshot."""
    rows = c.refresh()
    c.save_snapshot()
    return rows


def listed(rows):
    return {r.id: r for r in rows}


def test_listing_shows_what_the_index_knows_the_way_scan_does(root, tmp_path):
    session(root, "a")
    session(root, "b", zstd=True)
    session(root, "c", "/work/other", parentSession="a", seedLength=4)
    c = cat(root, tmp_path)
    full = listed(build(c))
    first = listed(cat(root, tmp_path).listing())  # a new process: only the database is shared
    assert first.keys() == full.keys()
    for sid, row in first.items():
        for f in FIELDS:
            assert getattr(row, f) == getattr(full[sid], f), (sid, f)
    assert first["a"].children == ["c"] and first["a"].state == COMPLETED and first["a"].turns == 2


def test_a_log_missing_from_the_index_is_listed_from_its_header(root, tmp_path):
    session(root, "old")
    c = cat(root, tmp_path)
    build(c)
    session(root, "new", "/work/new")
    bad = root / "--p--" / "bad"
    bad.mkdir(parents=True)
    (bad / "session.jsonl").write_bytes(b"not json\n")
    rows = listed(c.listing())
    assert set(rows) == {"old", "new", None}
    assert rows["new"].indexed is False and rows["new"].cwd == "/work/new" and rows["new"].turns == 0
    assert rows[None].state == UNREADABLE and "not JSON" in rows[None].reason  # a row with its reason
    # the worker's revalidation indexes it; the next listing has its facts
    c.index(c.scan())
    c.save_snapshot()
    rows = listed(c.listing())
    assert rows["new"].indexed and rows["new"].turns == 2
    assert rows[None].state == UNREADABLE and "not JSON" in rows[None].reason


def test_many_unknown_directories_are_placeholders_until_scanned(root, tmp_path, monkeypatch):
    monkeypatch.setattr(mod, "_LISTING_HEADERS", 1)
    for sid in ("x", "y", "z"):
        session(root, sid)
    (root / "--p--" / "empty-dir").mkdir(parents=True)  # no log in it
    c = cat(root, tmp_path)
    rows = c.listing()
    assert len(rows) == 4 and all(r.state == INDEXING and r.id is None for r in rows)
    assert sorted(r.id for r in c.scan()) == ["x", "y", "z"]


def test_a_deleted_directory_is_never_listed_a_deleted_log_only_until_revalidation(root, tmp_path):
    p1, _ = session(root, "gone-dir")
    p2, _ = session(root, "gone-log")
    session(root, "kept")
    c = cat(root, tmp_path)
    build(c)
    shutil.rmtree(p1.parent)
    p2.unlink()  # its directory stays
    assert set(listed(c.listing())) == {"gone-log", "kept"}
    assert set(listed(c.scan())) == {"kept"}
    c.save_snapshot()
    assert set(listed(c.listing())) == {"kept"}


def test_a_grown_log_shows_old_facts_until_reindexed_then_new_ones(root, tmp_path):
    path, ev = session(root, "grows")
    c = cat(root, tmp_path)
    build(c)
    append_events(path, user_turn(len(ev), 3, "third", "answer"))
    assert c.listing()[0].turns == 2  # stale facts: the index only fills in
    assert build(c)[0].turns == 3
    assert c.listing()[0].turns == 3


def test_the_snapshot_is_rewritten_when_the_index_changed_or_it_is_unusable(root, tmp_path):
    session(root, "s")
    c = cat(root, tmp_path)
    build(c)
    db = sqlite3.connect(c.db_path)
    db.execute("UPDATE snapshot SET data = x'00'")  # a damaged snapshot is ignored, never trusted
    db.commit()
    rows = c.listing()
    assert [r.id for r in rows] == ["s"] and rows[0].indexed is False  # listed from its header
    c2 = cat(root, tmp_path)
    c2.refresh()
    c2.save_snapshot()  # nothing changed in the index: the snapshot stays as it is
    assert db.execute("SELECT data FROM snapshot").fetchone()[0] == b"\x00"
    c2.listing()  # ... until a listing found it unusable
    c2.save_snapshot()
    assert c2.listing()[0].indexed and c2.listing()[0].turns == 2


def test_an_older_catalog_is_rebuilt_with_prompts_and_end_states(root, tmp_path):
    """A version-4 index has no first prompt, fork turn or end-reason state: it is rebuilt from the logs."""
    session(root, "s")
    c = cat(root, tmp_path)
    build(c)
    db = sqlite3.connect(c.db_path)
    db.execute("PRAGMA user_version=4")
    db.commit()
    db.close()
    c2 = cat(root, tmp_path)
    assert [r.indexed for r in c2.scan()] == [False]  # rebuilt
    (row,) = c2.refresh()
    assert row.prompt and row.state == "completed"
    c2.save_snapshot()
    assert c2.listing()[0].turns == 2 and c2.listing()[0].prompt == row.prompt


def test_listing_probes_the_lock_of_an_interrupted_session(root, tmp_path):
    write_session(root, make_header("open"), user_turn(0, 1, "hello", "world", close=False))
    session(root, "done")
    c = cat(root, tmp_path, lock_probe=lambda path: "open" in Path(path).parts)
    build(c)
    rows = listed(cat(root, tmp_path, lock_probe=lambda path: "open" in Path(path).parts).listing())
    assert rows["open"].state == "open elsewhere" and rows["done"].state == COMPLETED
