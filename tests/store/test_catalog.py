"""The catalog over real files: fixture logs, generated logs, raw and zstd, growth, damage, deletion."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from dsh_tui.store.catalog import (
    BLANK,
    COMPLETED,
    INTERRUPTED,
    UNREADABLE,
    Catalog,
    CatalogError,
    default_db_path,
    default_roots,
    filter_rows,
    fts_query,
    sort_rows,
)
from tests.store.test_catalog_support import (
    append_events,
    cat,
    current_fixtures,
    load_fixture,
    make_header,
    user_turn,
    write_session,
)


def two_turns(sid="s1", cwd="/work/project", zstd=False, root=None):
    ev = user_turn(0, 1, "please list the files", "here are the files") + []
    ev += user_turn(len(ev), 2, "now count the marmalade jars", "there are 7 jars")
    return write_session(root, make_header(sid, cwd), ev, zstd=zstd), ev


def test_default_root_and_db_follow_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "dh"))
    assert default_roots() == [tmp_path / "dh" / "sessions"]
    assert str(default_db_path()).startswith(os.environ["XDG_CACHE_HOME"])
    assert default_db_path().name == "catalog.sqlite"


@pytest.mark.parametrize("zstd", [False, True])
def test_rows_carry_header_facts_counts_tokens_and_state(root, tmp_path, zstd):
    path, ev = two_turns(root=root, zstd=zstd)
    rows = cat(root, tmp_path).refresh()
    assert len(rows) == 1
    r = rows[0]
    assert (r.id, r.cwd, r.path) == ("s1", "/work/project", str(path))
    assert r.title == "please list the files"
    assert r.turns == 2 and r.steps == 2 and r.events == len(ev)
    assert (r.tokens_in, r.tokens_out, r.tokens_cache) == (200, 40, 10)
    assert r.state == COMPLETED and r.reason is None
    # updatedAt = time of the latest user-sourced user/message (spec §3.9)
    last_user = [e for e in ev if e["type"] == "user/message"][-1]
    assert r.updated_at == last_user["time"]
    assert r.created_at == 1_779_000_000_000


def test_every_current_fixture_indexes_with_its_turns_and_title(root, tmp_path):
    names = current_fixtures()
    assert len(names) > 40
    expected = {}
    for i, rel in enumerate(names):
        header, events = load_fixture(rel, session_id=f"fx-{i:03d}", cwd=f"/w/{i % 3}")
        write_session(root, header, events, zstd=bool(i % 2))
        n_turns = sum(1 for e in events if e.get("type") == "turn/start")
        titles = [e["data"]["title"] for e in events if e.get("type") == "session/title"]
        expected[f"fx-{i:03d}"] = (n_turns, titles[-1] if titles else None, header.get("parentSession"))
    rows = cat(root, tmp_path).refresh()
    assert len(rows) == len(names)
    got = {r.id: (r.turns, r.title, r.parent) for r in rows}
    assert got == expected
    states = {r.state for r in rows}
    assert COMPLETED in states
    assert all(r.indexed for r in rows)
    # The fixture with a crash-recovered turn still indexes; nothing is unreadable.
    assert [r.reason for r in rows if r.state == UNREADABLE] == []


def test_content_search_names_the_event_seq(root, tmp_path):
    path, ev = two_turns(root=root)
    c = cat(root, tmp_path)
    c.refresh()
    hits = c.search("marmalade")
    assert hits, "expected a hit"
    seqs = {h.seq for h in hits}
    want = next(e["seq"] for e in ev if e["type"] == "user/message" and "marmalade" in str(e["data"]))
    assert want in seqs
    assert all(h.id == "s1" for h in hits)
    assert "[marmalade]" in hits[0].snippet
    # prefix of the last word, several words
    assert {h.seq for h in c.search("count marma")} == {want}
    assert c.search("nothing-like-this-zzzz") == []
    assert c.search("   ") == []


def test_unchanged_revision_is_not_reread(root, tmp_path):
    two_turns(root=root)
    c = cat(root, tmp_path)
    c.refresh()
    rows = c.scan()
    assert [r.indexed for r in rows] == [True]
    assert c.index(rows) == []


@pytest.mark.parametrize("zstd", [False, True])
def test_grown_log_is_read_from_where_the_index_stopped(root, tmp_path, zstd, monkeypatch):
    path, ev = two_turns(root=root, zstd=zstd)
    c = cat(root, tmp_path)
    c.refresh()
    more = user_turn(len(ev), 3, "third question about quinces", "quince answer")
    append_events(path, more)
    import dsh_tui.store.catalog.indexing as mod  # where Catalog.index_one reads the log

    seen_offsets = []
    real_raw, real_z = mod._iter_raw, mod._iter_zstd

    def spy_raw(f, off, watch=None):
        seen_offsets.append(off)
        return real_raw(f, off, watch)

    def spy_z(f, off):
        seen_offsets.append(off)
        return real_z(f, off)

    monkeypatch.setattr(mod, "_iter_raw", spy_raw)
    monkeypatch.setattr(mod, "_iter_zstd", spy_z)
    rows = c.scan()
    assert rows[0].indexed is False
    c.index(rows)
    assert seen_offsets and seen_offsets[0] > 0  # continued, not from the start
    r = rows[0]
    assert r.turns == 3 and r.events == len(ev) + len(more) and r.state == COMPLETED
    assert (r.tokens_in, r.tokens_out) == (300, 60)
    # old and new content both searchable
    assert c.search("quinces") and c.search("marmalade")


def test_added_corrupted_and_deleted_logs_show_on_next_refresh(root, tmp_path):
    c = cat(root, tmp_path)
    p1, ev = two_turns("s1", root=root)
    assert [r.id for r in c.refresh()] == ["s1"]
    two_turns("s2", root=root)
    assert sorted(r.id for r in c.refresh()) == ["s1", "s2"]
    # corrupt a committed line in s1 (a later turn/end exists => corruption)
    lines = p1.read_text().splitlines(keepends=True)
    lines[3] = '{"type":"turn/start","seq":99,"time":0,"data":{"turn":1}}\n'
    p1.write_text("".join(lines))
    rows = {r.id: r for r in c.refresh()}
    assert rows["s1"].state == UNREADABLE
    assert "seq gap at line 4" in rows["s1"].reason
    # the unreadable log's content is not searchable any more, s2's still is
    assert {h.id for h in c.search("marmalade")} == {"s2"}
    # delete s2 from disk
    os.unlink(next(r.path for r in rows.values() if r.id == "s2"))
    rows = c.refresh()
    assert [r.id for r in rows] == ["s1"]
    assert c.search("marmalade") == []


def test_torn_tail_is_interrupted_not_unreadable(root, tmp_path):
    ev = user_turn(0, 1, "hello", "world", close=False)
    path = write_session(root, make_header("torn"), ev)
    with open(path, "a") as f:
        f.write('{"type":"assistant/chu')
    r = cat(root, tmp_path).refresh()[0]
    assert r.state == INTERRUPTED and "turn 1 is open" in r.reason
    with open(path, "a") as f:
        f.write("nk garbage\n")
    r = cat(root, tmp_path).refresh()[0]
    assert r.state == INTERRUPTED and r.reason.startswith("torn tail: unparsable line")


@pytest.mark.parametrize(
    "content,reason",
    [
        (b"", "no complete header line"),
        (b'{"type":"session","version":5,"id":"x","createdAt":1,"delegationDepth":0}\n', "newer harness"),
        (b'{"type":"turn/start"}\n', "not a session header"),
        (b"not json\n", "not JSON"),
    ],
)
def test_unreadable_logs_are_rows_with_a_reason(root, tmp_path, content, reason):
    d = root / "--p--" / "bad"
    d.mkdir(parents=True)
    (d / "session.jsonl").write_bytes(content)
    c = cat(root, tmp_path)
    rows = c.scan()
    assert len(rows) == 1 and rows[0].state == UNREADABLE and reason in rows[0].reason
    c.index(rows)
    assert rows[0].state == UNREADABLE and reason in rows[0].reason
    assert c.scan()[0].state == UNREADABLE  # stays listed once indexed


def test_unknown_event_type_is_a_newer_harness(root, tmp_path):
    ev = user_turn(0, 1, "hello", "world")
    ev.append({"type": "future/thing", "seq": len(ev), "time": 0, "data": {}})
    ev.append({"type": "future/ignorable", "seq": len(ev), "time": 0, "data": {}, "ignorable": True})
    write_session(root, make_header("fut"), ev)
    r = cat(root, tmp_path).refresh()[0]
    assert r.state == UNREADABLE and "future/thing" in r.reason


def test_zstd_bad_frame_is_unreadable(root, tmp_path):
    path, _ = two_turns(root=root, zstd=True)
    data = bytearray(path.read_bytes())
    data[-6] ^= 0xFF  # damage the checksum / payload of the last complete frame
    path.write_bytes(bytes(data))
    r = cat(root, tmp_path).refresh()[0]
    assert r.state == UNREADABLE and "zstd frame" in r.reason


def test_index_file_deleted_mid_run_is_rebuilt_without_losing_rows(root, tmp_path):
    for i in range(5):
        two_turns(f"s{i}", root=root)
    c = cat(root, tmp_path)
    assert len(c.refresh()) == 5
    for p in c.db_path.parent.iterdir():
        p.unlink()
    assert not c.db_path.exists()
    rows = c.scan()
    assert sorted(r.id for r in rows) == [f"s{i}" for i in range(5)]  # listed straight from disk
    assert all(not r.indexed for r in rows)
    c.index(rows)
    assert c.db_path.exists()
    assert len(c.search("marmalade")) == 5
    assert all(r.indexed for r in c.scan())


def test_a_second_thread_scans_while_another_indexes(root, tmp_path):
    for i in range(20):
        two_turns(f"s{i:02d}", root=root)
    c = cat(root, tmp_path)
    rows = c.scan()
    t = threading.Thread(target=c.index, args=(rows,))
    t.start()
    seen = []
    while t.is_alive():
        seen.append(len(c.scan()))
    t.join()
    assert all(n == 20 for n in seen)
    assert all(r.indexed for r in c.scan())


def test_lineage_forks_and_subagents(root, tmp_path):
    _, ev = two_turns("parent", root=root)
    seed = ev[:10]
    child_ev = seed + [{"type": "session/end-seed", "seq": 10, "time": 0, "data": {}}]
    write_session(root, make_header("fork1", parentSession="parent", seedLength=10), child_ev)
    write_session(root, make_header("sub1", parentSession="parent", origin="subagent", delegationDepth=1),
                  user_turn(0, 1, "sub task", "done"))
    rows = {r.id: r for r in cat(root, tmp_path).refresh()}
    assert rows["fork1"].is_fork and rows["fork1"].seed_length == 10 and rows["fork1"].parent == "parent"
    assert rows["sub1"].is_subagent and not rows["sub1"].is_fork
    assert sorted(rows["parent"].children) == ["fork1", "sub1"]


def test_blank_session_and_lock_probe(root, tmp_path):
    write_session(root, make_header("blank"), [{"type": "approval/policy", "seq": 0, "time": 1,
                                                "data": {"policy": "never"}}])
    two_turns("busy", root=root)
    c = cat(root, tmp_path, lock_probe=lambda path: "busy" in Path(path).parts)
    rows = {r.id: r for r in c.refresh()}
    assert rows["blank"].state == BLANK
    assert rows["busy"].state == "open elsewhere"


def test_filter_sort_find_and_query_building(root, tmp_path):
    two_turns("aaa-111", "/work/alpha", root=root)
    two_turns("bbb-222", "/work/beta", root=root)
    c = cat(root, tmp_path)
    rows = sort_rows(c.refresh())
    assert [r.id for r in filter_rows(rows, "ALPHA")] == ["aaa-111"]
    assert [r.id for r in filter_rows(rows, "bbb")] == ["bbb-222"]
    assert len(filter_rows(rows, "list files")) == 2
    assert c.find(rows, "aaa").id == "aaa-111"
    with pytest.raises(CatalogError, match="no session"):
        c.find(rows, "zzz")
    assert fts_query('he said "x" o\'k') == '"he" "said" "x" "o" "k"*'


def test_a_damaged_catalog_file_is_replaced(root, tmp_path):
    two_turns("s1", root=root)
    db = tmp_path / "cache" / "catalog.sqlite"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not a database" * 100)
    rows = Catalog([root], db).refresh()
    assert [r.id for r in rows] == ["s1"] and rows[0].turns == 2
    assert db.read_bytes()[:16] == b"SQLite format 3\x00"


def test_a_sqlite_root_is_listed_indexed_incrementally_and_searchable(tmp_path):
    from dsh_tui.store import catalog as catmod
    from dsh_tui.store.sqlite import SqliteSessionStore

    root = tmp_path / "sq"
    root.mkdir()
    store = SqliteSessionStore(root)
    header = make_header("sq-1")
    header.pop("type")
    store.create(header)
    ev = user_turn(0, 1, "sqlite question about quinces", "answer")
    store.append("sq-1", ev)
    c = Catalog([root], tmp_path / "cat.sqlite")
    (row,) = c.refresh()
    assert (row.id, row.turns, row.state, row.title) == ("sq-1", 1, COMPLETED, "sqlite question about quinces")
    assert row.path.endswith("sessions.sqlite#sq-1")
    assert [h.seq for h in c.search("quinces")] == [2]
    more = user_turn(len(ev), 2, "second sqlite turn about plums", "ok")
    store.append("sq-1", more)
    rows = c.scan()
    assert rows[0].indexed is False
    c.index(rows)
    assert rows[0].turns == 2 and rows[0].events == len(ev) + len(more)
    assert c.search("plums") and c.search("quinces")
    catmod.rename(rows[0], "Renamed in SQLite")
    assert c.refresh()[0].title == "Renamed in SQLite"
    with pytest.raises(CatalogError, match="SQLite root"):
        catmod.move_to_trash(rows[0])
    store.close()


def test_workspace_scope_follows_symlinks_both_ways(tmp_path):
    from dsh_tui.store.catalog import SessionRow, workspace_rows

    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    rows = [SessionRow(path="a", root="r", revision="", cwd=str(real)),
            SessionRow(path="b", root="r", revision="", cwd=str(link)),
            SessionRow(path="c", root="r", revision="", cwd=str(tmp_path))]
    assert [r.path for r in workspace_rows(rows, str(real))] == ["a", "b"]
    assert [r.path for r in workspace_rows(rows, str(link))] == ["a", "b"]


def test_the_schema_is_made_once_and_a_warm_open_does_not_import_sqlite_utils(root, tmp_path):
    two_turns("s1", root=root)
    db = tmp_path / "cache" / "catalog.sqlite"
    Catalog([root], db).refresh()  # made here, through sqlite-utils
    code = (
        "import sys\nfrom dsh_tui.store.catalog import Catalog\n"
        f"c = Catalog([{str(root)!r}], {str(db)!r})\nrows = c.refresh()\n"
        "assert [r.turns for r in rows] == [2] and len(c.search('marmalade')) == 1, rows\n"
        "print('sqlite_utils' in sys.modules)\n"
    )
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"  # the warm path reads one pragma and goes on in plain sqlite3


def test_a_catalog_with_the_hand_written_version_5_tables_is_kept(root, tmp_path):
    import sqlite3

    from dsh_tui.store.catalog import SCHEMA_VERSION
    from dsh_tui.store.catalog.db import _COLUMNS, _INT_COLS

    two_turns("s1", root=root)
    db = tmp_path / "cache" / "catalog.sqlite"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db, isolation_level=None)
    cols = ", ".join(f"{c} {'INTEGER' if c in _INT_COLS else 'TEXT'}" for c in _COLUMNS if c != "path")
    conn.execute("CREATE TABLE snapshot (root TEXT PRIMARY KEY, data BLOB)")
    conn.execute(f"CREATE TABLE sessions (sid INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, {cols},"
                 " fold TEXT, header TEXT, offset INTEGER, ident TEXT)")
    conn.execute("CREATE INDEX sessions_id ON sessions(id)")
    conn.execute("CREATE VIRTUAL TABLE content USING fts5(text, seq UNINDEXED, kind UNINDEXED,"
                 " tokenize='unicode61 remove_diacritics 2')")
    conn.execute("INSERT INTO snapshot VALUES ('kept', x'00')")
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
    conn.close()
    c = Catalog([root], db)
    rows = c.refresh()
    assert [(r.id, r.turns) for r in rows] == [("s1", 2)] and len(c.search("marmalade")) == 1
    check = sqlite3.connect(db)
    assert check.execute("SELECT count(*) FROM snapshot WHERE root='kept'").fetchone() == (1,)  # not rebuilt
    assert "UNIQUE" in check.execute("SELECT sql FROM sqlite_master WHERE name='sessions'").fetchone()[0]


def test_a_new_catalog_keys_sessions_by_rowid_with_unique_paths(root, tmp_path):
    import sqlite3

    two_turns("s1", root=root)
    c = cat(root, tmp_path)
    c.refresh()
    conn = sqlite3.connect(c.db_path)
    (sid, path) = conn.execute("SELECT sid, path FROM sessions").fetchone()
    assert conn.execute("SELECT rowid FROM sessions WHERE sid=?", (sid,)).fetchone() == (sid,)
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO sessions (path) VALUES (?)", (path,))
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO sessions (path) VALUES (NULL)")
