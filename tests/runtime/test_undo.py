"""Every turn's file changes recorded and undoable (issue #31): the acceptance journey from the command
line (headless ``run`` / ``resume`` against a real HTTP model server, real bash, real files), the store's
bounds, and the refusal to overwrite a file changed since the turn."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dsh_tui.config import settings_path
from dsh_tui.extensions.undo import ops
from dsh_tui.extensions.undo.store import SnapshotStore
from dsh_tui.session.spans import fold_spans
from dsh_tui.session.transcript.fold import fold_transcript
from dsh_tui.store.open import open_store
from tests.llm.sse_server import ScriptServer, chunk, sse_reply, tool_call


def _answer(text: str):
    return sse_reply(chunk(text), chunk(finish="stop", usage={"prompt_tokens": 3, "completion_tokens": 1}))


def _call(name: str, args: dict, cid: str):
    return sse_reply(chunk(None, tool_calls=[tool_call(0, id=cid, name=name, args=json.dumps(args))]),
                     chunk(finish="tool_calls", usage={"prompt_tokens": 3, "completion_tokens": 1}))


def _dsh(*args, cwd):
    return subprocess.run([sys.executable, "-m", "dsh_tui", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ))


def _settings(srv) -> None:
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[default]\nprovider = "local"\nmodel = "m"\n'
                    f'[providers.local]\nbase_url = "{srv.base_url}/v1"\n'
                    '[plugins.session-title-llm]\nenabled = false\n')


def two_turns(tmp_path: Path) -> tuple[Path, Path, str]:
    """Turn 1's command changes a.txt and creates c.txt; turn 2's write tool creates b.txt."""
    ws, root = tmp_path / "ws", tmp_path / "root"
    ws.mkdir()
    (ws / "a.txt").write_text("original a\n")
    (ws / "keep.txt").write_text("untouched\n")
    with ScriptServer() as srv:
        _settings(srv)
        srv.push(_call("bash", {"command": "printf 'changed by turn 1\\n' > a.txt && echo c > c.txt",
                                    "description": "change a, make c"}, "c1"),
                 _answer("turn 1 done"),
                 _call("write", {"file_path": "b.txt", "content": "b from turn 2\n"}, "c2"),
                 _answer("turn 2 done"))
        run = _dsh("run", "--headless", "--preset", "full-access", "change a, make c", "--root", str(root),
                   "--cwd", str(ws), cwd=ws)
        assert run.returncode == 0, run.stderr
        sid = json.loads(_dsh("sessions", "--json", "--root", str(root), cwd=ws).stdout)[0]["id"]
        second = _dsh("resume", sid, "--preset", "full-access", "--headless", "make b", "--root", str(root),
                      cwd=ws)
        assert second.returncode == 0, second.stderr
    results = [e["data"]["message"] for e in open_store(root).load(sid).events if e["type"] == "tool/result"]
    assert (ws / "a.txt").read_text() == "changed by turn 1\n", results
    assert (ws / "b.txt").read_text() == "b from turn 2\n"
    assert (ws / "c.txt").read_text() == "c\n"
    return ws, root, sid


def test_undo_journey_from_the_command_line(tmp_path):
    ws, root, sid = two_turns(tmp_path)
    events = open_store(root).load(sid).events
    recorded = {e["data"]["turn"]: sorted(f["path"] for f in e["data"]["files"])
                for e in events if e["type"] == ops.TURN_EVENT}
    assert recorded == {1: ["a.txt", "c.txt"], 2: ["b.txt"]}
    marks = [e for e in events if e["type"] == ops.DSH_EVENT]  # dsh 0.2's marker, exactly its shape
    assert [m["data"] for m in marks] == [{"turn": 1}, {"turn": 2}]
    assert all(e.get("ignorable") is True for e in events if e["type"] == ops.TURN_EVENT)

    diff = _dsh("diff", sid, "--root", str(root), cwd=ws)
    assert diff.returncode == 0, diff.stderr
    assert "-original a\n+changed by turn 1\n" in diff.stdout and "+b from turn 2\n" in diff.stdout
    one = _dsh("diff", sid, "--turn", "2", "--numbered", "--root", str(root), cwd=ws)
    assert "b.txt (added)" in one.stdout and "    1 + b from turn 2" in one.stdout and "a.txt" not in one.stdout

    undo = _dsh("undo", sid, "--root", str(root), cwd=ws)
    assert undo.returncode == 0, undo.stderr
    assert not (ws / "b.txt").exists()
    assert (ws / "a.txt").read_text() == "changed by turn 1\n"  # as turn 1 left it
    assert (ws / "c.txt").exists()

    undo1 = _dsh("undo", sid, "--turn", "1", "--root", str(root), cwd=ws)
    assert undo1.returncode == 0, undo1.stderr
    assert (ws / "a.txt").read_text() == "original a\n"
    assert not (ws / "c.txt").exists()
    assert (ws / "keep.txt").read_text() == "untouched\n"
    assert sorted(p.name for p in ws.iterdir()) == ["a.txt", "keep.txt"]

    again = _dsh("undo", sid, "--root", str(root), cwd=ws)
    assert again.returncode == 1 and "nothing to undo" in again.stderr and "Traceback" not in again.stderr
    log = open_store(root).load(sid).events
    assert [e["data"]["turns"] for e in log if e["type"] == ops.UNDO_EVENT] == [[2], [1]]
    # the timeline (span tree) and the turn footers (transcript fold) of the stored log name the files
    spans = fold_spans(log)
    rows = {n.turn: (n.label, n.state) for t in spans.turns for n in t.children if n.kind == "files"}
    assert rows == {1: ("changed 2 files: a.txt, c.txt", "undone"), 2: ("changed 1 file: b.txt", "undone")}
    footers = [i for i in fold_transcript(None, log).items if i.kind == "footer"]
    assert [([f["path"] for f in i.files], i.undone) for i in footers] == [(["a.txt", "c.txt"], True),
                                                                         (["b.txt"], True)]
    check = _dsh("log", "check", str(open_store(root).find(sid)), cwd=ws)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_file_changed_since_the_turn_is_not_overwritten(tmp_path):
    ws, root, sid = two_turns(tmp_path)
    (ws / "a.txt").write_text("my own edit\n")  # the user's, after turn 1
    refused = _dsh("undo", sid, "--turn", "1", "--root", str(root), cwd=ws)
    assert refused.returncode == 1
    assert "a.txt" in refused.stderr and "--force" in refused.stderr and "Traceback" not in refused.stderr
    assert (ws / "a.txt").read_text() == "my own edit\n" and (ws / "b.txt").exists()  # nothing touched
    forced = _dsh("undo", sid, "--turn", "1", "--force", "--root", str(root), cwd=ws)
    assert forced.returncode == 0, forced.stderr
    assert (ws / "a.txt").read_text() == "original a\n" and not (ws / "b.txt").exists()


def test_store_skips_large_files_and_ignored_ones_and_never_touches_the_users_git(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    (ws / ".gitignore").write_text("build/\n")
    (ws / "build").mkdir()
    (ws / "build" / "out.o").write_bytes(b"\0" * 10)
    (ws / "src.py").write_text("x = 1\n")
    git_before = sorted(str(p.relative_to(ws)) for p in (ws / ".git").rglob("*"))
    store = SnapshotStore(ws, tmp_path / "store", max_file_bytes=1000)
    first = store.snapshot()
    (ws / "big.bin").write_bytes(os.urandom(5000))
    (ws / "src.py").write_text("x = 2\n")
    (ws / "build" / "out.o").write_bytes(b"\1" * 10)
    second = store.snapshot()
    assert second.skipped == ["big.bin"]
    assert [(c.path, c.status) for c in store.changes(first.tree, second.tree)] == [("src.py", "modified")]
    assert sorted(str(p.relative_to(ws)) for p in (ws / ".git").rglob("*")) == git_before
    assert not (store.git_dir / "objects").is_relative_to(ws)


def test_the_built_in_can_be_turned_off(tmp_path):
    ws, root = tmp_path / "ws", tmp_path / "root"
    ws.mkdir()
    with ScriptServer() as srv:
        _settings(srv)
        with settings_path().open("a") as out:
            out.write("[plugins.workspace-changes]\nenabled = false\n")
        srv.push(_call("write", {"file_path": "b.txt", "content": "b\n"}, "c1"), _answer("done"))
        run = _dsh("run", "--headless", "--preset", "full-access", "make b", "--root", str(root), "--cwd", str(ws),
                   cwd=ws)
        assert run.returncode == 0, run.stderr
    assert (ws / "b.txt").exists()
    sid = json.loads(_dsh("sessions", "--json", "--root", str(root), cwd=ws).stdout)[0]["id"]
    assert not [e for e in open_store(root).load(sid).events if e["type"].startswith("workspace")]
    refused = _dsh("undo", sid, "--root", str(root), cwd=ws)
    assert refused.returncode == 1 and "nothing to undo" in refused.stderr


def test_the_home_folder_is_never_snapshotted(tmp_path, monkeypatch):
    import pytest

    from dsh_tui.extensions.undo.store import SnapshotError

    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(SnapshotError, match="home folder"):
        SnapshotStore(tmp_path, tmp_path / "store").snapshot()
    many = tmp_path / "many"
    many.mkdir()
    for i in range(30):
        (many / f"f{i}").write_text("x")
    with pytest.raises(SnapshotError, match="more than 20 files"):
        SnapshotStore(many, tmp_path / "store", max_files=20).snapshot()


def test_tool_edits_outside_the_snapshots_are_kept_too(tmp_path):
    """An ignored file and a file outside the workspace, created by the write tool: recorded, undone."""
    ws, root, outside = tmp_path / "ws", tmp_path / "root", tmp_path / "elsewhere.txt"
    ws.mkdir()
    (ws / ".gitignore").write_text("secret.env\n")
    with ScriptServer() as srv:
        _settings(srv)
        srv.push(_call("write", {"file_path": "secret.env", "content": "KEY=new\n"}, "c1"),
                 _call("write", {"file_path": str(outside), "content": "outside after\n"}, "c2"),
                 _answer("done"))
        run = _dsh("run", "--headless", "--preset", "full-access", "edit both", "--root", str(root), "--cwd",
                   str(ws), cwd=ws)
        assert run.returncode == 0, run.stderr
    sid = json.loads(_dsh("sessions", "--json", "--root", str(root), cwd=ws).stdout)[0]["id"]
    (turn,) = [e["data"] for e in open_store(root).load(sid).events if e["type"] == ops.TURN_EVENT]
    assert sorted(f["path"] for f in turn["files"]) == sorted(["secret.env", str(outside)])
    assert (ws / "secret.env").read_text() == "KEY=new\n"
    diff = _dsh("diff", sid, "--root", str(root), cwd=ws)
    assert "+KEY=new\n" in diff.stdout and "+outside after\n" in diff.stdout
    undo = _dsh("undo", sid, "--root", str(root), cwd=ws)
    assert undo.returncode == 0, undo.stderr
    assert not (ws / "secret.env").exists() and not outside.exists()


def test_a_lost_store_is_one_line_not_a_traceback(tmp_path):
    import shutil

    from dsh_tui.extensions.undo.store import default_base

    ws, root, sid = two_turns(tmp_path)
    shutil.rmtree(default_base())
    for args in (["undo", sid, "--turn", "1"], ["diff", sid]):
        out = _dsh(*args, "--root", str(root), cwd=ws)
        assert "Traceback" not in out.stderr, out.stderr
    undo = _dsh("undo", sid, "--turn", "1", "--root", str(root), cwd=ws)
    assert undo.returncode == 1 and "no longer has" in undo.stderr and len(undo.stderr.splitlines()) == 1
    assert (ws / "a.txt").read_text() == "changed by turn 1\n"  # nothing touched


def test_a_file_written_then_changed_by_a_command_goes_back_to_before_the_turn(tmp_path):
    """The write tool keeps only its file (no snapshot yet); the command after it snapshots the workspace
    (the new file already there): the record's "before" is still the one from before the turn."""
    ws, root = tmp_path / "ws", tmp_path / "root"
    ws.mkdir()
    with ScriptServer() as srv:
        _settings(srv)
        srv.push(_call("write", {"file_path": "new.txt", "content": "1\n"}, "c1"),
                 _call("bash", {"command": "echo 2 >> new.txt && echo x > other.txt", "description": "more"}, "c2"),
                 _answer("done"))
        run = _dsh("run", "--headless", "--preset", "full-access", "go", "--root", str(root), "--cwd", str(ws),
                   cwd=ws)
        assert run.returncode == 0, run.stderr
    assert (ws / "new.txt").read_text() == "1\n2\n"
    sid = json.loads(_dsh("sessions", "--json", "--root", str(root), cwd=ws).stdout)[0]["id"]
    (turn,) = [e["data"] for e in open_store(root).load(sid).events if e["type"] == ops.TURN_EVENT]
    assert {f["path"]: f["before"] for f in turn["files"]} == {"new.txt": None, "other.txt": None}
    undo = _dsh("undo", sid, "--root", str(root), cwd=ws)
    assert undo.returncode == 0, undo.stderr
    assert list(ws.iterdir()) == []


def test_restore_brings_back_deleted_files_modes_and_symlinks(tmp_path):
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "gone.txt").write_text("was here\n")
    (ws / "run.sh").write_text("#!/bin/sh\n")
    (ws / "run.sh").chmod(0o755)
    (ws / "link").symlink_to("gone.txt")
    store = SnapshotStore(ws, tmp_path / "store")
    before = store.snapshot()
    (ws / "gone.txt").unlink()
    (ws / "run.sh").write_text("#!/bin/sh\necho changed\n")
    (ws / "run.sh").chmod(0o644)
    (ws / "link").unlink()
    (ws / "link").symlink_to("run.sh")
    (ws / "sub" / "deep").mkdir()
    (ws / "sub" / "deep" / "new.txt").write_text("new\n")
    after = store.snapshot()
    files = [{"path": c.path, "before": c.before, "after": c.after, "beforeMode": c.before_mode,
              "afterMode": c.after_mode} for c in store.changes(before.tree, after.tree)]
    events = [{"type": ops.TURN_EVENT, "seq": 0, "data": {"turn": 1, "cwd": str(store.workspace),
                                                          "before": before.tree, "after": after.tree, "files": files}}]
    p = ops.plan(events)
    assert {f.path: f.status for f in p.files} == {"gone.txt": "recreate", "run.sh": "restore", "link": "restore",
                                                    "sub/deep/new.txt": "remove"}
    assert p.conflicts == []
    ops.apply(p, store=store)
    assert (ws / "gone.txt").read_text() == "was here\n"
    assert (ws / "run.sh").read_text() == "#!/bin/sh\n" and os.access(ws / "run.sh", os.X_OK)
    assert os.readlink(ws / "link") == "gone.txt"
    assert not (ws / "sub").exists()  # folders left empty go too (git keeps no empty folder: nor does undo)
