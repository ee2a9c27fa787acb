"""A directory *named like* the workspace is not inside it: ``/x/ws-evil`` must not pass as ``/x/ws``.

A containment check written as a plain string prefix (``real.startswith(root)``, without the path
separator) lets every sibling whose name starts with the workspace's name through. These tests put a
file in such siblings and point every path-taking tool at them (read, write, edit, glob, grep, bash
workdir), by relative and by absolute path, under every permission preset: at the tool level (the
confinement check alone) and through the real runtime pipeline, where an extension that allows every
call leaves the tool's own check as the last line.
"""

from __future__ import annotations

import pytest

from dsh_tui.llm import scripted as s
from dsh_tui.runtime.approval import PRESETS, decide_preset
from dsh_tui.tools import builtin_tools
from dsh_tui.tools.paths import inside
from tests.runtime.helpers import make_agent, of_type, run_followup
from tests.tools.harness import Bench

DENIED = "Error: [sandbox: file access denied under workspace-write mode]"
DENIED_INFO = {"name": "FsError", "code": "FS_SANDBOX_DENIED"}
SUFFIXES = ["-evil", ".bak", "2", "_old"]
SECRET = "sibling-secret-4711"


@pytest.fixture(params=SUFFIXES)
def layout(request, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    sib = tmp_path / ("ws" + request.param)
    sib.mkdir()
    (sib / "secret.txt").write_text(SECRET + "\n")
    (ws / "own.txt").write_text("own\n")
    return ws, sib


def forms(ws, sib, name="secret.txt"):
    """The sibling file by relative path (from the workspace cwd) and by absolute path."""
    return [f"../{sib.name}/{name}", str(sib / name)]


def dir_forms(ws, sib):
    return [f"../{sib.name}", str(sib)]


def test_inside_needs_the_separator():
    assert inside("/x/ws", "/x/ws")
    assert inside("/x/ws", "/x/ws/a")
    assert inside("/x/ws/", "/x/ws/a")
    for sibling in ("/x/ws-evil", "/x/ws-evil/a", "/x/wsa", "/x/ws.bak/a", "/x/w", "/x"):
        assert not inside("/x/ws", sibling), sibling
    assert inside("/", "/etc")


# ---- tool level: allow_outside=False is read-only / workspace-write, True is full-access --------------------
async def test_read_sibling_denied(layout):
    ws, sib = layout
    bench = Bench(ws)
    for path in forms(ws, sib):
        out = await bench.run("read", {"file_path": path})
        assert (out.text, out.error) == (DENIED, DENIED_INFO), path
        assert SECRET not in out.text
    bench.allow_outside = True
    for path in forms(ws, sib):
        out = await bench.run("read", {"file_path": path})
        assert not out.is_error and SECRET in out.text


async def test_write_sibling_denied_and_nothing_written(layout):
    ws, sib = layout
    bench = Bench(ws)
    for path in forms(ws, sib, "new.txt") + forms(ws, sib, "secret.txt"):
        out = await bench.run("write", {"file_path": path, "content": "pwned"})
        assert (out.text, out.error) == (DENIED, DENIED_INFO), path
    assert not (sib / "new.txt").exists()
    assert (sib / "secret.txt").read_text() == SECRET + "\n"
    # A missing directory under the sibling: the nearest existing ancestor is the sibling itself.
    out = await bench.run("write", {"file_path": f"../{sib.name}/deep/er/new.txt", "content": "pwned"})
    assert (out.text, out.error) == (DENIED, DENIED_INFO)
    assert not (sib / "deep").exists()
    bench.allow_outside = True
    out = await bench.run("write", {"file_path": forms(ws, sib, "new.txt")[0], "content": "ok"})
    assert not out.is_error and (sib / "new.txt").read_text() == "ok"


async def test_edit_sibling_denied_and_file_unchanged(layout):
    ws, sib = layout
    bench = Bench(ws)
    for path in forms(ws, sib):
        out = await bench.run("edit", {"file_path": path, "old_string": SECRET, "new_string": "pwned"})
        assert (out.text, out.error) == (DENIED, DENIED_INFO), path
    assert (sib / "secret.txt").read_text() == SECRET + "\n"
    bench.allow_outside = True
    path = forms(ws, sib)[1]
    assert not (await bench.run("read", {"file_path": path})).is_error  # read-before-edit
    out = await bench.run("edit", {"file_path": path, "old_string": SECRET, "new_string": "edited"})
    assert not out.is_error, out.text
    assert (sib / "secret.txt").read_text() == "edited\n"


@pytest.mark.parametrize("tool", ["glob", "grep"])
async def test_search_root_in_sibling_denied(layout, tool):
    ws, sib = layout
    bench = Bench(ws)
    args = {"pattern": "*.txt"} if tool == "glob" else {"pattern": SECRET}
    for path in dir_forms(ws, sib):
        out = await bench.run(tool, {**args, "path": path})
        assert (out.text, out.error) == (DENIED, DENIED_INFO), path
    bench.allow_outside = True
    out = await bench.run(tool, {**args, "path": str(sib)})
    assert not out.is_error and "secret.txt" in out.text


async def test_bash_workdir_in_sibling_denied(layout):
    ws, sib = layout
    bench = Bench(ws)
    for path in dir_forms(ws, sib):
        out = await bench.run("bash", {"command": "cat secret.txt; touch ran", "description": "d", "workdir": path})
        assert (out.text, out.error) == (DENIED, DENIED_INFO), path
    assert not (sib / "ran").exists()
    bench.allow_outside = True
    out = await bench.run("bash", {"command": "cat secret.txt", "description": "d", "workdir": str(sib)})
    assert out.text == SECRET + "\n"


async def test_symlink_inside_workspace_to_sibling_denied(layout):
    ws, sib = layout
    (ws / "link").symlink_to(sib)
    bench = Bench(ws)
    out = await bench.run("read", {"file_path": "link/secret.txt"})
    assert (out.text, out.error) == (DENIED, DENIED_INFO)
    out = await bench.run("write", {"file_path": "link/new.txt", "content": "pwned"})
    assert (out.text, out.error) == (DENIED, DENIED_INFO)
    assert not (sib / "new.txt").exists()


# ---- runtime: every preset ------------------------------------------------------------------------------------
def sibling_calls(sib):
    rel = f"../{sib.name}"
    return [
        ("r", "read", {"file_path": f"{rel}/secret.txt"}),
        ("w", "write", {"file_path": f"{rel}/new.txt", "content": "pwned"}),
        ("e", "edit", {"file_path": str(sib / "secret.txt"), "old_string": SECRET, "new_string": "pwned"}),
        ("g", "glob", {"pattern": "*.txt", "path": rel}),
        ("gr", "grep", {"pattern": SECRET, "path": str(sib)}),
        ("b", "bash", {"command": "cat secret.txt; touch ran", "description": "d", "workdir": rel}),
    ]


@pytest.mark.parametrize("preset", PRESETS)
def test_presets_ask_before_touching_a_sibling(layout, preset, tmp_path):
    ws, sib = layout
    access = {t.name: t.access for t in builtin_tools()}
    for _cid, name, args in sibling_calls(sib):
        decision = decide_preset(preset, access[name], args, ws, ws, name)
        expected = "allow" if preset == "full-access" else "ask"
        assert decision["kind"] == expected, (preset, name)


@pytest.mark.parametrize("preset", PRESETS)
async def test_every_preset_with_an_allow_everything_extension(layout, preset, tmp_path):
    """An extension that allows every call skips approval: the tools' own confinement is the last line."""
    ws, sib = layout
    calls = sibling_calls(sib)
    agent = make_agent([s.calls([(c, n, a) for c, n, a in calls]), s.text("done")], builtin_tools(),
                       preset=preset, tmp_path=ws, spill_dir=str(tmp_path / "spill"))
    agent.on("tools/pre-execute", lambda p, nxt: {"kind": "allow"})
    await run_followup(agent, "go")
    results = {e["data"]["message"]["source"]["callId"]: e for e in of_type(agent, "tool/result")}
    assert sorted(results) == sorted(c for c, _n, _a in calls)
    for cid, name, _args in calls:
        block = results[cid]["data"]["message"]["content"][0]
        text = block["content"][0]["text"]
        if preset == "full-access":
            assert not block["isError"], (name, text)
        else:
            assert block["isError"] and text == DENIED, (preset, name, text)
            assert results[cid]["data"]["error"] == DENIED_INFO, (preset, name)
    if preset == "full-access":
        assert (sib / "new.txt").read_text() == "pwned" and (sib / "ran").exists()
    else:
        assert not (sib / "new.txt").exists() and not (sib / "ran").exists()
        assert (sib / "secret.txt").read_text() == SECRET + "\n"


async def test_a_double_leading_slash_is_one_root(tmp_path):
    # POSIX normpath keeps exactly two leading slashes; Node's path.resolve (the display path) does not
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    bench = Bench(ws)
    out = await bench.run("read", {"file_path": "/" + str(ws / "a.txt")})
    assert out.text.startswith(f"<path>{ws / 'a.txt'}</path>\n") and "1: one" in out.text
    out = await bench.run("write", {"file_path": "/" + str(ws / "b.txt"), "content": "two"})
    assert out.text == f"<path>{ws / 'b.txt'}</path>\n<type>file</type>\n<content>\nCreated file\n</content>"
    assert (ws / "b.txt").read_text() == "two"
