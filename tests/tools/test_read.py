"""read: format, paging, caps, errors (runtime-corrections B.4/C4) and workspace confinement."""

from __future__ import annotations

import os

import pytest

from tests.tools.harness import Bench


@pytest.fixture
def bench(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return Bench(ws)


def envelope(path, body):
    return f"<path>{path}</path>\n<type>file</type>\n<content>\n{body}\n</content>"


async def test_numbered_lines_and_end_footer(bench):
    (bench.workspace / "a.py").write_text("one\ntwo\n")
    out = await bench.run("read", {"file_path": "a.py"})
    path = str(bench.workspace / "a.py")
    assert out.text == envelope(path, "1: one\n2: two\n\n(End of file - total 2 lines)")
    assert out.meta == {
        "path": path,
        "offset": 1,
        "totalLines": 2,
        "lang": "py",
        "lines": [{"number": 1, "text": "one"}, {"number": 2, "text": "two"}],
    }


async def test_paging_footer_and_continuation(bench):
    (bench.workspace / "big.txt").write_text("".join(f"l{i}\n" for i in range(1, 11)))
    out = await bench.run("read", {"file_path": "big.txt", "offset": 5, "limit": 4})
    assert out.text.endswith(
        "5: l5\n6: l6\n7: l7\n8: l8\n\n(Showing lines 5-8 of 10. Use offset=9 to continue.)\n</content>"
    )
    out = await bench.run("read", {"file_path": "big.txt", "offset": 9})
    assert "9: l9\n10: l10\n\n(End of file - total 10 lines)" in out.text


async def test_default_limit_is_2000_lines(bench):
    (bench.workspace / "many.txt").write_text("x\n" * 2500)
    out = await bench.run("read", {"file_path": "many.txt"})
    assert out.text.endswith("(Showing lines 1-2000 of 2500. Use offset=2001 to continue.)\n</content>")
    assert len(out.meta["lines"]) == 2000


async def test_byte_cap_gives_output_capped_footer(bench):
    line = "y" * 1000
    (bench.workspace / "wide.txt").write_text((line + "\n") * 100)
    out = await bench.run("read", {"file_path": "wide.txt"})
    # 51 lines of 1000 bytes + 50 separators = 51,050 <= 51,200; a 52nd would exceed it.
    assert len(out.meta["lines"]) == 51
    assert out.text.endswith("(Output capped. Showing lines 1-51. Use offset=52 to continue.)\n</content>")


async def test_long_line_truncated_in_utf16_units(bench):
    (bench.workspace / "long.txt").write_text("a" * 1999 + "😀" + "b" * 10 + "\n")
    out = await bench.run("read", {"file_path": "long.txt"})
    text = out.meta["lines"][0]["text"]
    # JS substring(0, 2000) keeps 1999 'a' and the high surrogate of the emoji.
    assert text == "a" * 1999 + "\ud83d" + "... (line truncated to 2000 chars)"


async def test_line_splitting_only_on_lf_and_crlf_stripped(bench):
    (bench.workspace / "crlf.txt").write_bytes(b"a\r\nb\x0bc\r\n\xe2\x80\xa8d")
    out = await bench.run("read", {"file_path": "crlf.txt"})
    assert [ln["text"] for ln in out.meta["lines"]] == ["a", "b\x0bc", "\u2028d"]
    assert out.meta["totalLines"] == 3


async def test_empty_file_and_offset_out_of_range(bench):
    (bench.workspace / "empty.txt").write_text("")
    out = await bench.run("read", {"file_path": "empty.txt"})
    assert out.text == envelope(str(bench.workspace / "empty.txt"), "(End of file - total 0 lines)")
    out = await bench.run("read", {"file_path": "empty.txt", "offset": 2})
    assert out.text == f'Error: offset 2 is out of range for "{bench.workspace / "empty.txt"}" (0 lines)'
    assert out.error == {"name": "FsError", "code": "FS_NOT_FOUND"}


@pytest.mark.parametrize(
    "args,message",
    [
        ({"file_path": "  "}, "file_path must be a non-empty string"),
        ({"file_path": "a", "offset": 0}, "offset must be a positive integer"),
        ({"file_path": "a", "offset": 1.5}, "offset must be a positive integer"),
        ({"file_path": "a", "limit": -1}, "limit must be a positive integer"),
        ({"file_path": "a", "limit": 2001}, "limit must be less than or equal to 2000"),
    ],
)
async def test_argument_errors_have_no_info(bench, args, message):
    out = await bench.run("read", args)
    assert out.text == f"Error: {message}" and out.is_error and out.error is None


async def test_file_errors(bench):
    ws = bench.workspace
    (ws / "dir").mkdir()
    (ws / "bin").write_bytes(b"abc\x00def")
    (ws / "latin").write_bytes(b"caf\xe9\n")
    cases = {
        "missing.txt": ("not found", "FS_NOT_FOUND"),
        "dir": ("not a regular file", "FS_NOT_REGULAR_FILE"),
        "bin": ("binary file", "FS_NOT_TEXT"),
        "latin": ("invalid UTF-8 text", "FS_NOT_TEXT"),
    }
    for name, (what, code) in cases.items():
        out = await bench.run("read", {"file_path": name})
        assert out.text == f'Error: cannot read "{ws / name}": {what}'
        assert out.error == {"name": "FsError", "code": code}


async def test_bom_is_stripped_like_textdecoder(bench):
    (bench.workspace / "bom.txt").write_bytes(b"\xef\xbb\xbfhi\n")
    out = await bench.run("read", {"file_path": "bom.txt"})
    assert out.meta["lines"] == [{"number": 1, "text": "hi"}]


async def test_confinement_dotdot_absolute_and_symlink(tmp_path, bench):
    outside = tmp_path / "secret.txt"
    outside.write_text("s\n")
    (bench.workspace / "link.txt").symlink_to(outside)
    (bench.workspace / "sub").mkdir()
    denied = "Error: [sandbox: file access denied under workspace-write mode]"
    for path in ("../secret.txt", str(outside), "link.txt", "sub/../../secret.txt"):
        out = await bench.run("read", {"file_path": path})
        assert out.text == denied, path
        assert out.error == {"name": "FsError", "code": "FS_SANDBOX_DENIED"}
    # Inside the workspace: an absolute path and a harmless .. are fine.
    (bench.workspace / "ok.txt").write_text("ok\n")
    assert not (await bench.run("read", {"file_path": str(bench.workspace / "ok.txt")})).is_error
    assert not (await bench.run("read", {"file_path": "sub/../ok.txt"})).is_error
    bench.allow_outside = True
    out = await bench.run("read", {"file_path": "link.txt"})
    assert "1: s" in out.text


async def test_read_of_large_file_streams_and_counts_exactly(bench):
    path = bench.workspace / "huge.log"
    with open(path, "w") as fh:
        for i in range(300_000):
            fh.write(f"line {i}\n")
    assert os.path.getsize(path) > 3 * (1 << 20)
    out = await bench.run("read", {"file_path": "huge.log", "offset": 299_999, "limit": 5})
    assert out.meta["lines"] == [
        {"number": 299_999, "text": "line 299998"},
        {"number": 300_000, "text": "line 299999"},
    ]
    assert out.meta["totalLines"] == 300_000


async def test_cancelled_calls_stop_before_touching_files(bench):
    import asyncio

    (bench.workspace / "a.txt").write_text("a\n")
    cancelled = asyncio.Event()
    cancelled.set()
    out = await bench.run("read", {"file_path": "a.txt"}, cancelled)
    assert out.text == "Error: tool call aborted" and out.error == {"name": "AbortError", "code": "ABORTED"}
    out = await bench.run("write", {"file_path": "b.txt", "content": "x"}, cancelled)
    assert out.error == {"name": "AbortError", "code": "ABORTED"}
    assert not (bench.workspace / "b.txt").exists()
