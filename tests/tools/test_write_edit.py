"""write/edit: read-before-write policy, stale detection, exact texts (B.5), diffs, line endings."""

from __future__ import annotations

import os

import pytest

from tests.tools.harness import Bench

REMEDY = " — re-read the file, then retry"


@pytest.fixture
def bench(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return Bench(ws)


def bump(path):
    """Change a file behind the tool's back (new content and a later mtime)."""
    st = os.stat(path)
    path.write_text(path.read_text() + "changed\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


async def test_write_creates_parents_and_reports_created(bench):
    out = await bench.run("write", {"file_path": "a/b/c.txt", "content": "hi"})
    p = bench.workspace / "a/b/c.txt"
    assert out.text == f"<path>{p}</path>\n<type>file</type>\n<content>\nCreated file\n</content>"
    assert out.meta == {"diffs": []}
    assert p.read_text() == "hi"
    # Created in this session: an immediate overwrite and edit need no read.
    out = await bench.run("write", {"file_path": "a/b/c.txt", "content": "hi\nthere\n"})
    assert "Updated file" in out.text
    assert out.meta == {"diffs": [{"path": "a/b/c.txt", "oldText": "hi", "newText": "hi\nthere"}]}
    out = await bench.run("edit", {"file_path": "a/b/c.txt", "old_string": "there", "new_string": "you"})
    assert out.text == f"The file {p} has been updated successfully."


async def test_write_over_unread_existing_file_is_refused(bench):
    p = bench.workspace / "data.txt"
    p.write_text("original\n")
    out = await bench.run("write", {"file_path": "data.txt", "content": "x"})
    assert out.text == (
        f'Error: cannot overwrite existing "{p}" without reading it first — read the file, then retry'
    )
    assert out.error == {"name": "FsError", "code": "FS_NOT_OBSERVED"}
    assert p.read_text() == "original\n"


async def test_write_stale_and_vanished(bench):
    p = bench.workspace / "data.txt"
    p.write_text("v1\n")
    await bench.run("read", {"file_path": "data.txt"})
    bump(p)
    out = await bench.run("write", {"file_path": "data.txt", "content": "x"})
    assert out.text == f'Error: cannot write "{p}": file changed since it was read{REMEDY}'
    assert out.error == {"name": "FsError", "code": "FS_STALE_VERSION"}
    await bench.run("read", {"file_path": "data.txt"})
    p.unlink()
    out = await bench.run("write", {"file_path": "data.txt", "content": "x"})
    assert out.text == f'Error: cannot write "{p}": file no longer exists{REMEDY}'
    assert out.error == {"name": "FsError", "code": "FS_STALE_VERSION"}


async def test_write_to_directory_is_not_a_regular_file(bench):
    (bench.workspace / "d").mkdir()
    out = await bench.run("write", {"file_path": "d", "content": "x"})
    assert out.text == f'Error: cannot write "{bench.workspace / "d"}": not a regular file'
    assert out.error == {"name": "FsError", "code": "FS_NOT_REGULAR_FILE"}


async def test_write_keeps_file_mode(bench):
    p = bench.workspace / "run.sh"
    p.write_text("echo 1\n")
    p.chmod(0o750)
    await bench.run("read", {"file_path": "run.sh"})
    await bench.run("write", {"file_path": "run.sh", "content": "echo 2\n"})
    assert (p.stat().st_mode & 0o777) == 0o750 and p.read_text() == "echo 2\n"


async def test_edit_requires_read_and_respects_absence(bench):
    p = bench.workspace / "s.txt"
    p.write_text("color: blue\n")
    out = await bench.run("edit", {"file_path": "s.txt", "old_string": "blue", "new_string": "green"})
    assert out.text == f'Error: edit requires reading "{p}" first — read the file, then retry'
    assert out.error == {"name": "FsError", "code": "FS_NOT_OBSERVED"}
    out = await bench.run("read", {"file_path": "gone.txt"})
    assert out.error["code"] == "FS_NOT_FOUND"
    out = await bench.run("edit", {"file_path": "gone.txt", "old_string": "a", "new_string": "b"})
    assert out.text == f'Error: cannot edit "{bench.workspace / "gone.txt"}": not found'
    assert out.error == {"name": "FsError", "code": "FS_NOT_FOUND"}


async def test_edit_stale_missing_and_content_errors(bench):
    p = bench.workspace / "s.txt"
    p.write_text("a a a\nb\n")
    await bench.run("read", {"file_path": "s.txt"})
    out = await bench.run("edit", {"file_path": "s.txt", "old_string": "zzz", "new_string": "y"})
    assert out.text == f'Error: old_string was not found in "{p}"'
    assert out.error == {"name": "FsError", "code": "FS_EDIT_NOT_FOUND"}
    out = await bench.run("edit", {"file_path": "s.txt", "old_string": "a", "new_string": "c"})
    assert out.text == (
        f'Error: old_string matched 3 times in "{p}"; provide a more specific old_string or set replace_all to true'
    )
    assert out.error == {"name": "FsError", "code": "FS_AMBIGUOUS_EDIT"}
    out = await bench.run(
        "edit", {"file_path": "s.txt", "old_string": "a", "new_string": "c", "replace_all": True}
    )
    assert out.text == f"The file {p} has been updated. All occurrences were successfully replaced."
    assert p.read_text() == "c c c\nb\n"
    bump(p)
    out = await bench.run("edit", {"file_path": "s.txt", "old_string": "b", "new_string": "d"})
    assert out.text == f'Error: cannot edit "{p}": file changed since it was read{REMEDY}'
    assert out.error == {"name": "FsError", "code": "FS_STALE_VERSION"}
    await bench.run("read", {"file_path": "s.txt"})
    p.unlink()
    out = await bench.run("edit", {"file_path": "s.txt", "old_string": "b", "new_string": "d"})
    assert out.text == f'Error: cannot edit "{p}": file changed since it was read{REMEDY}'


async def test_edit_binary_file(bench):
    p = bench.workspace / "b.dat"
    # A NUL past read's 8 KiB binary sample: read accepts it, edit scans the whole file.
    p.write_bytes(b"t" * 9000 + b"\x00")
    out = await bench.run("read", {"file_path": "b.dat"})
    assert not out.is_error
    out = await bench.run("edit", {"file_path": "b.dat", "old_string": "t", "new_string": "u"})
    assert out.text == f'Error: cannot edit "{p}": binary file'
    assert out.error == {"name": "FsError", "code": "FS_NOT_TEXT"}


@pytest.mark.parametrize(
    "args,message",
    [
        ({"file_path": " ", "old_string": "a", "new_string": "b"}, "file_path must be a non-empty string"),
        ({"file_path": "x", "old_string": "", "new_string": "b"}, "old_string must be a non-empty string"),
        ({"file_path": "x", "old_string": "a", "new_string": "a"}, "old_string and new_string must differ"),
    ],
)
async def test_edit_argument_errors(bench, args, message):
    out = await bench.run("edit", args)
    assert out.text == f"Error: {message}" and out.error is None


async def test_edit_matches_lf_normalised_and_restores_crlf(bench):
    p = bench.workspace / "win.txt"
    p.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await bench.run("read", {"file_path": "win.txt"})
    out = await bench.run("edit", {"file_path": "win.txt", "old_string": "one\r\ntwo", "new_string": "1\n2"})
    assert not out.is_error
    assert p.read_bytes() == b"1\r\n2\r\nthree\r\n"
    assert out.meta == {
        "diffs": [{"path": "win.txt", "oldText": "one\ntwo\nthree", "newText": "1\n2\nthree"}]
    }


async def test_diff_hunks_have_three_context_lines_and_split_far_changes(bench):
    p = bench.workspace / "f.txt"
    p.write_text("".join(f"{i}\n" for i in range(1, 21)))
    await bench.run("read", {"file_path": "f.txt"})
    await bench.run("edit", {"file_path": "f.txt", "old_string": "2\n", "new_string": "two\n"})
    out = await bench.run(
        "edit", {"file_path": "f.txt", "old_string": "\n18\n", "new_string": "\neighteen\n"}
    )
    assert out.meta == {
        "diffs": [
            {"path": "f.txt", "oldText": "15\n16\n17\n18\n19\n20", "newText": "15\n16\n17\neighteen\n19\n20"}
        ]
    }
    await bench.run("read", {"file_path": "f.txt"})
    out = await bench.run(
        "write",
        {
            "file_path": "f.txt",
            "content": p.read_text().replace("5\n", "five\n", 1).replace("16\n", "sixteen\n"),
        },
    )
    diffs = out.meta["diffs"]
    assert [d["oldText"].split("\n")[3] for d in diffs] == ["5", "16"]
    assert len(diffs) == 2


async def test_write_and_edit_confined(tmp_path, bench):
    outside = tmp_path / "out.txt"
    (bench.workspace / "esc").symlink_to(tmp_path)
    for args in (
        {"file_path": "../out.txt", "content": "x"},
        {"file_path": str(outside), "content": "x"},
        {"file_path": "esc/out.txt", "content": "x"},
    ):
        out = await bench.run("write", args)
        assert out.text == "Error: [sandbox: file access denied under workspace-write mode]"
        assert out.error == {"name": "FsError", "code": "FS_SANDBOX_DENIED"}
    assert not outside.exists()
    bench.allow_outside = True
    out = await bench.run("write", {"file_path": "../out.txt", "content": "x"})
    assert "Created file" in out.text and outside.read_text() == "x"


async def test_escalation_hint_when_advertised(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    bench = Bench(ws, options={"escalation": True})
    out = await bench.run("write", {"file_path": "../x", "content": "x"})
    assert out.text == (
        "Error: [sandbox: file access denied under workspace-write mode]\n[sandbox: escalation available — retry "
        "this exact operation once with sandbox_permissions (the narrowest wider mode that suffices) + "
        "justification; the approval prompt asks the user]"
    )


async def test_version_notices_same_size_rewrite(bench):
    p = bench.workspace / "v.txt"
    p.write_text("aaaa\n")
    await bench.run("read", {"file_path": "v.txt"})
    before = p.stat()
    p.write_text("bbbb\n")  # same size, same inode
    # the rewrite's own timestamps may land in the same clock tick: set an mtime that surely differs
    os.utime(p, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    out = await bench.run("edit", {"file_path": "v.txt", "old_string": "aaaa", "new_string": "c"})
    assert out.error == {"name": "FsError", "code": "FS_STALE_VERSION"}


async def test_parent_segment_that_is_a_file(bench):
    (bench.workspace / "afile").write_text("x\n")
    for tool, args in (
        ("write", {"file_path": "afile/child.txt", "content": "y"}),
        ("read", {"file_path": "afile/child.txt"}),
        ("edit", {"file_path": "afile/deep/c.txt", "old_string": "a", "new_string": "b"}),
    ):
        out = await bench.run(tool, args)
        shown = bench.workspace / args["file_path"]
        assert out.text == f'Error: cannot resolve "{shown}": a parent path segment is not a directory', tool
        assert out.error == {"name": "FsError", "code": "FS_NOT_FOUND"}


async def test_an_os_error_no_check_names_is_one_clear_line(bench):
    # ENAMETOOLONG is real on every file system (no root needed to provoke it, unlike EACCES).
    name = "n" * 300
    shown = bench.workspace / name
    for tool, args in (
        ("read", {"file_path": name}),
        ("write", {"file_path": name, "content": "x"}),
        ("edit", {"file_path": name, "old_string": "x", "new_string": "y"}),
    ):
        out = await bench.run(tool, args)
        if tool == "edit":  # never read: refused before any file system call
            assert out.error == {"name": "FsError", "code": "FS_NOT_OBSERVED"}
            continue
        assert out.text == f'Error: cannot {tool} "{shown}": file name too long'
        assert out.error is None


async def test_arguments_that_are_not_an_object_name_file_path(bench):
    for tool in ("read", "write", "edit"):
        for args in (None, ["a.txt"], "a.txt"):
            out = await bench.run(tool, args)
            assert out.text == "Error: file_path must be a non-empty string"
            assert out.error is None
