"""``dsh-tui sessions`` as a real subprocess over real roots."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.store.test_catalog_support import make_header, user_turn, write_session


def run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "dsh_tui", *args], capture_output=True, text=True,
                          cwd=cwd, env=os.environ.copy(), timeout=60)


def populate(root, here):
    write_session(root, make_header("here-1", here), user_turn(0, 1, "first about lemons", "ok"))
    ev = user_turn(0, 1, "second about apples", "ok")
    ev += user_turn(len(ev), 2, "more apples please", "fine")
    write_session(root, make_header("here-2", here, createdAt=5), ev, zstd=False)
    write_session(root, make_header("other-1", "/somewhere/else"), user_turn(0, 1, "elsewhere lemons", "ok"))
    write_session(root, make_header("sub-1", here, parentSession="here-1", origin="subagent", delegationDepth=1),
                  user_turn(0, 1, "subagent lemons", "ok"))
    bad = root / "--broken--" / "bad"
    bad.mkdir(parents=True)
    (bad / "session.jsonl").write_text('{"type":"session","version":7,"id":"bad","createdAt":1,"delegationDepth":0}\n')


def test_json_rows_scope_and_fields(tmp_path):
    root = tmp_path / "r"
    here = tmp_path / "ws"
    here.mkdir()
    populate(root, str(here))
    p = run_cli("sessions", "--json", "--root", str(root), cwd=here)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    ids = [r["id"] for r in rows]
    assert set(ids) == {"here-1", "here-2", None}  # unreadable row without an id is still listed
    for key in ("id", "title", "cwd", "created_at", "updated_at", "turns", "state", "parent"):
        assert all(key in r for r in rows)
    by = {r["id"]: r for r in rows}
    assert by["here-2"]["turns"] == 2 and by["here-2"]["title"] == "second about apples"
    assert by[None]["state"] == "unreadable" and "newer harness" in by[None]["reason"]
    assert ids.index("here-2") < ids.index("here-1")  # most recent activity first

    p = run_cli("sessions", "--json", "--all", "--root", str(root), cwd=here)
    assert {r["id"] for r in json.loads(p.stdout)} == {"here-1", "here-2", "other-1", None}
    p = run_cli("sessions", "--json", "--all", "--subagents", "--root", str(root), cwd=here)
    assert "sub-1" in {r["id"] for r in json.loads(p.stdout)}


def test_search_and_text_output(tmp_path):
    root = tmp_path / "r"
    here = tmp_path / "ws"
    here.mkdir()
    populate(root, str(here))
    p = run_cli("sessions", "--all", "--search", "lemons", "--json", "--root", str(root), cwd=here)
    rows = json.loads(p.stdout)
    assert {r["id"] for r in rows} == {"here-1", "other-1"}
    assert all(h["seq"] == 2 and "[lemons]" in h["snippet"] for r in rows for h in r["hits"])
    p = run_cli("sessions", "--all", "--root", str(root), cwd=here)
    assert p.returncode == 0
    assert "second about apples" in p.stdout and "unreadable: written by a newer harness" in p.stdout
    p = run_cli("sessions", "--search", "nothing-here", "--root", str(root), cwd=here)
    assert p.returncode == 0 and p.stdout == "" and "no sessions" in p.stderr


def test_default_root_comes_from_dsh_home(tmp_path):
    root = tmp_path / "dh" / "sessions"
    write_session(root, make_header("home-1", str(tmp_path)), user_turn(0, 1, "hi", "ok"))
    env_home = os.environ["DSH_HOME"]
    try:
        os.environ["DSH_HOME"] = str(tmp_path / "dh")
        p = run_cli("sessions", "--json", cwd=tmp_path)
    finally:
        os.environ["DSH_HOME"] = env_home
    assert [r["id"] for r in json.loads(p.stdout)] == ["home-1"]


def test_orphans_first_prompts_fork_turns_and_states(tmp_path):
    """What the browser shows, the command prints: an orphaned subagent child is listed (its parent is
    gone), an untitled session shows its first prompt, a fork says after which turn, a failed turn says so."""
    from tests.store.test_catalog_display import ended, untitled_turn

    root = tmp_path / "r"
    here = tmp_path / "ws"
    here.mkdir()
    ws = str(here)
    parent = untitled_turn(0, 1, "Plan the garden beds", "ok")
    parent += untitled_turn(len(parent), 2, "water the roses", "ok")
    write_session(root, make_header("parent-1", ws), parent)
    cut = next(e["seq"] for e in parent if e["type"] == "turn/end") + 1
    write_session(root, make_header("fork-1", ws, parentSession="parent-1", seedLength=cut),
                  parent[:cut] + [{"type": "session/end-seed", "seq": cut, "time": 5, "data": {}}])
    write_session(root, make_header("kid-1", ws, parentSession="parent-1", origin="subagent", delegationDepth=1),
                  untitled_turn(0, 1, "a child with a parent", "ok"))
    write_session(root, make_header("orphan-1", "/elsewhere", parentSession="gone-0", origin="subagent",
                                    delegationDepth=1), untitled_turn(0, 1, "an orphaned child task", "ok"))
    write_session(root, make_header("failed-1", ws), ended(0, 1, "this one failed", {"kind": "error",
                                                                                       "error": {"message": "x"}}))
    p = run_cli("sessions", "--all", "--root", str(root), cwd=here)
    assert p.returncode == 0, p.stderr
    lines = {line.split()[0]: line for line in p.stdout.splitlines()}
    assert set(lines) == {"parent-1", "fork-1", "orphan-1", "failed-1"}  # kid-1 sits under its parent
    assert "Plan the garden beds" in lines["parent-1"] and "(untitled)" not in p.stdout
    assert "(fork of parent-1 after turn 1)" in lines["fork-1"]
    assert "an orphaned child task" in lines["orphan-1"] and "(subagent of gone-0)" in lines["orphan-1"]
    assert " failed " in lines["failed-1"] and "completed" not in lines["failed-1"]
    rows = {r["id"]: r for r in json.loads(run_cli("sessions", "--all", "--json", "--root", str(root),
                                                   cwd=here).stdout)}
    assert rows["fork-1"]["fork_turn"] == 1 and rows["parent-1"]["first_prompt"] == "Plan the garden beds"
    assert rows["parent-1"]["title"] is None


def test_search_in_one_root_is_scoped_to_that_root_first(tmp_path):
    """#37.7: the catalog is shared by every root ever listed. A root whose one weak hit ranks below 20,000+
    better hits of another cached root still finds it (the top hits were taken before filtering by root)."""
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), DSH_HOME=str(tmp_path / "home"))
    busy, quiet = tmp_path / "busy", tmp_path / "quiet"
    # the busy root: many short messages that are all "zebra" (rank better than one long message)
    for k in range(30):
        ev = []
        for t in range(1, 400):
            ev += user_turn(len(ev), t, "zebra zebra", "zebra")
        write_session(busy, make_header(f"busy-{k}", "/ws"), ev)
    long_text = "a long message about many things " * 200 + " zebra"
    write_session(quiet, make_header("quiet-1", "/ws"), user_turn(0, 1, long_text, "ok"))

    def search(root):
        p = subprocess.run([sys.executable, "-m", "dsh_tui", "sessions", "--all", "--json", "--search", "zebra",
                            "--root", str(root)], capture_output=True, text=True, env=env, timeout=300)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    assert search(busy)  # the busy root is now in the shared catalog
    rows = search(quiet)
    assert [r["id"] for r in rows] == ["quiet-1"] and rows[0]["hits"]


def test_fork_of_a_fork_names_its_parent_in_aligned_columns_and_one_turn(tmp_path):
    """Issue #26 item 22: a fork of a fork showed ``(fork of session- after turn 17)`` (the first 8
    characters of a ``session-…`` id), shifted the columns, and said ``1 turns``."""
    from tests.store.test_catalog_display import untitled_turn

    root = tmp_path / "r"
    here = tmp_path / "ws"
    here.mkdir()
    ws = str(here)
    parent_id, child_id = "session-20260101-aaaa1111", "session-20260101-bbbb2222-with-a-long-tail-to-it"
    parent = untitled_turn(0, 1, "Plan the garden beds", "ok")
    write_session(root, make_header(parent_id, ws), parent)
    cut = next(e["seq"] for e in parent if e["type"] == "turn/end") + 1
    seeded = parent[:cut] + [{"type": "session/end-seed", "seq": cut, "time": 5, "data": {}}]
    write_session(root, make_header(child_id, ws, parentSession=parent_id, seedLength=cut), seeded)
    write_session(root, make_header("session-20260101-cccc3333", ws, parentSession=child_id, seedLength=cut), seeded)
    p = run_cli("sessions", "--root", str(root), cwd=here)
    assert p.returncode == 0, p.stderr
    lines = {line.split()[0]: line for line in p.stdout.splitlines()}
    assert "(fork of 20260101 after turn 1)" in lines["session-20260101-cccc3333"]
    assert "fork of session-" not in p.stdout
    assert " 1 turn " in lines[parent_id] and "1 turns" not in p.stdout
    dates = {line.index("20", len(line.split()[0])) for line in lines.values()}
    assert len(dates) == 1  # the date column starts at the same place on every line


def test_archived_sessions_are_listed_and_unarchived(tmp_path):
    """Issue #26 item 21: archiving was one-way (archived sessions vanished from every view)."""
    from dsh_tui.store import catalog as cat

    root = tmp_path / "r"
    here = tmp_path / "ws"
    here.mkdir()
    populate(root, str(here))
    rows = {r.id: r for r in cat.Catalog(cat.resolve_roots([root])).refresh() if r.id}
    cat.archive(rows["here-1"])
    p = run_cli("sessions", "--root", str(root), cwd=here)
    assert not [line for line in p.stdout.splitlines() if line.startswith("here-1 ")]
    p = run_cli("sessions", "--archived", "--root", str(root), cwd=here)
    assert p.returncode == 0 and p.stdout.split()[0] == "here-1" and "archived" in p.stdout
    p = run_cli("sessions", "--archived", "--json", "--root", str(root), cwd=here)
    assert [r["id"] for r in json.loads(p.stdout)] == ["here-1"]
    p = run_cli("sessions", "--unarchive", "nope", "--root", str(root), cwd=here)
    assert p.returncode == 1 and "no archived session 'nope'" in p.stderr and "Traceback" not in p.stderr
    p = run_cli("sessions", "--unarchive", "here", "--root", str(root), cwd=here)
    assert p.returncode == 0 and p.stdout.startswith("unarchived here-1 to "), p.stderr
    assert [line for line in run_cli("sessions", "--root", str(root), cwd=here).stdout.splitlines()
            if line.startswith("here-1 ")]
    assert run_cli("sessions", "--archived", "--root", str(root), cwd=here).stdout == ""
