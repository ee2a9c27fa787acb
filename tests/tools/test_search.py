"""glob and grep over real trees: ordering, ignore semantics, caps + spill, exact texts (B.6)."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest

from tests.tools.harness import Bench

HINT = "Use read with offset/limit, or grep this path to search within it."


def put(root: Path, rel: str, text: str = "x\n", mtime: int | None = None) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    if mtime is not None:
        os.utime(p, (mtime, mtime))
    return p


@pytest.fixture
def bench(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return Bench(ws, spill_dir=tmp_path / "spill")


async def test_glob_files_only_in_ascending_mtime_including_hidden_and_ignored(bench):
    ws = bench.workspace
    put(ws, "src/new.ts", mtime=3_000)
    put(ws, "old.ts", mtime=1_000)
    put(ws, ".hidden/h.ts", mtime=2_000)
    put(ws, "build/ignored.ts", mtime=4_000)
    put(ws, ".gitignore", "build/\n", mtime=500)
    put(ws, ".git/HEAD.ts", mtime=100)
    put(ws, "readme.md", mtime=50)
    (ws / "dir.ts").mkdir()
    (ws / "link.ts").symlink_to(ws / "old.ts")
    out = await bench.run("glob", {"pattern": "*.ts"})
    assert out.text == "old.ts\n.hidden/h.ts\nsrc/new.ts\nbuild/ignored.ts"
    assert out.meta == {"shape": "paths", "paths": out.text.split("\n"), "truncated": False, "total": 4}


@pytest.mark.parametrize(
    "pattern,expected",
    [
        ("src/*.ts", ["src/a.ts"]),
        ("**/*.ts", ["src/a.ts", "src/deep/b.ts", "top.ts"]),
        ("src/**", ["src/a.ts", "src/deep/b.ts", "src/deep/c.js"]),
        ("*.{ts,js}", ["src/a.ts", "src/deep/b.ts", "src/deep/c.js", "top.ts"]),
        ("[st]*.ts", ["top.ts"]),
        ("/top.ts", ["top.ts"]),
        ("?op.ts", ["top.ts"]),
    ],
)
async def test_glob_pattern_semantics(bench, pattern, expected):
    for i, rel in enumerate(["src/a.ts", "src/deep/b.ts", "src/deep/c.js", "top.ts"]):
        put(bench.workspace, rel, mtime=1000 + i)
    out = await bench.run("glob", {"pattern": pattern})
    assert sorted(out.text.split("\n")) == expected


async def test_glob_path_argument_and_display(bench):
    put(bench.workspace, "src/a.ts")
    assert (await bench.run("glob", {"pattern": "*.ts", "path": "src"})).text == "src/a.ts"
    assert (
        await bench.run("glob", {"pattern": "*.ts", "path": str(bench.workspace / "src")})
    ).text == "src/a.ts"
    assert (await bench.run("glob", {"pattern": "*.py"})).text == "No files found"
    out = await bench.run("glob", {"pattern": "*", "path": "missing"})
    assert out.text == (
        "Error: glob search failed (exit 2): rg: missing: IO error for operation on missing: "
        "No such file or directory (os error 2)"
    )
    assert out.error == {"name": "SearchError", "code": "SEARCH_FAILED"}
    out = await bench.run("glob", {"pattern": "*", "path": ".."})
    assert out.error == {"name": "FsError", "code": "FS_SANDBOX_DENIED"}


async def test_glob_argument_errors(bench):
    assert (await bench.run("glob", {"pattern": " "})).text == "Error: pattern must be a non-empty string"
    out = await bench.run("glob", {"pattern": "*", "path": ""})
    assert out.text == "Error: path must be a non-empty string when given"


async def test_glob_over_cap_keeps_the_oldest_hundred_and_spills_all(bench):
    for i in range(105):
        put(bench.workspace, f"f{i:03d}.txt", mtime=10_000 + (i * 7919) % 105)
    out = await bench.run("glob", {"pattern": "*.txt"})
    ordered = [f"f{i:03d}.txt" for i in sorted(range(105), key=lambda i: (i * 7919) % 105)]
    body, footer = out.text.split("\n\n")
    assert body.split("\n") == ordered[:100]
    spill = footer.removeprefix("(Showing 100 of 105 paths. Full sorted result stored at: ").removesuffix(
        f". {HINT})"
    )
    assert Path(spill).read_text() == "\n".join(ordered)
    assert out.meta["truncated"] is True and out.meta["total"] == 105 and len(out.meta["paths"]) == 100
    bench.spill_dir = None
    out = await bench.run("glob", {"pattern": "*.txt"})
    assert out.text.endswith(
        "\n\n(Showing 100 of 105 paths. The complete result could not be saved; narrow pattern or path to see more.)"
    )


async def test_glob_over_cap_sampled_across_top_level_entries_as_dsh_samples_it(tmp_path):
    """dsh's ``sampleOverCapGlobResults`` (glob_sample_over_cap): the page takes the entries below the search root
    round-robin (each one slot before any gets a second) in modification-time order, grouped, with dsh's footer
    and tool description; a flat over-cap result keeps the plain head and footer."""
    ws = tmp_path / "ws"
    ws.mkdir()
    bench = Bench(ws, options={"glob_max_results": 4, "glob_sample_over_cap": True})
    for i, rel in enumerate(["archive/a.ts", "archive/b.ts", "archive/c.ts", "docs/guide.md", "src/index.ts",
                             "test/spec.ts", "top.txt", "notes.md"], 1):
        put(ws, f"tree/{rel}", mtime=10_000 + i)
    out = await bench.run("glob", {"pattern": "*", "path": "tree"})
    assert out.text == ("tree/archive/a.ts\ntree/docs/guide.md\ntree/src/index.ts\ntree/test/spec.ts\n\n(Showing 4 of "
                        "8 paths, sampled across 4 of the 6 top-level entries this pattern matched instead of taken in "
                        "modification-time order. Narrow path to inspect a specific subtree. The complete result could "
                        "not be saved; narrow pattern or path to see more.)")
    assert out.meta["paths"] == out.text.split("\n\n")[0].split("\n") and out.meta["total"] == 8
    out = await bench.run("glob", {"pattern": "*", "path": "tree/archive"})
    assert out.text == "tree/archive/a.ts\ntree/archive/b.ts\ntree/archive/c.ts"
    for i in range(3):
        put(ws, f"flat/f{i}.txt", mtime=20_000 + i)
    bench = Bench(ws, options={"glob_max_results": 2, "glob_sample_over_cap": True})
    out = await bench.run("glob", {"pattern": "*", "path": "flat"})
    assert out.text.startswith("flat/f0.txt\nflat/f1.txt\n\n(Showing 2 of 3 paths. The complete result")
    assert "a larger result is sampled across top-level entries and reports" in bench.tools["glob"].description


async def test_grep_format_grouping_and_counts(bench):
    ws = bench.workspace
    put(ws, "b.py", "def f():\n    return 1\n\ndef g():\n    pass\n")
    put(ws, "a/x.py", "no\ndef h(): ...\n")
    out = await bench.run("grep", {"pattern": r"^def \w"})
    assert (
        out.text
        == "Found 3 matches\n\na/x.py\nLine 2: def h(): ...\n\nb.py\nLine 1: def f():\nLine 4: def g():"
    )
    assert out.meta == {
        "shape": "matches",
        "files": [
            {"path": "a/x.py", "matches": [{"lineNumber": 2, "line": "def h(): ..."}]},
            {
                "path": "b.py",
                "matches": [{"lineNumber": 1, "line": "def f():"}, {"lineNumber": 4, "line": "def g():"}],
            },
        ],
        "truncated": False,
        "total": 3,
    }
    assert (
        await bench.run("grep", {"pattern": "return"})
    ).text == "Found 1 match\n\nb.py\nLine 2:     return 1"
    assert (await bench.run("grep", {"pattern": "zzz"})).text == "No matches found"
    assert (
        await bench.run("grep", {"pattern": "pass", "path": "b.py"})
    ).text == "Found 1 match\n\nb.py\nLine 5:     pass"


async def test_grep_ignore_semantics(bench):
    ws = bench.workspace
    put(ws, "keep.txt", "needle\n")
    put(ws, ".hidden.txt", "needle\n")
    put(ws, ".cfg/in.txt", "needle\n")
    put(ws, "gen/out.txt", "needle\n")
    put(ws, "logs/a.log", "needle\n")
    put(ws, "logs/keep.log", "needle\n")
    put(ws, "bin.dat", "needle\x00\n")
    put(ws, ".gitignore", "gen/\n*.log\n!keep.log\n")
    put(ws, ".ignore", "keep.txt\n")
    # No repository yet: .gitignore does not apply, .ignore does.
    out = await bench.run("grep", {"pattern": "needle"})
    assert sorted(f["path"] for f in out.meta["files"]) == ["gen/out.txt", "logs/a.log", "logs/keep.log"]
    (ws / ".git").mkdir()
    out = await bench.run("grep", {"pattern": "needle"})
    assert [f["path"] for f in out.meta["files"]] == ["logs/keep.log"]
    out = await bench.run("grep", {"pattern": "needle", "include": "*.log"})
    assert [f["path"] for f in out.meta["files"]] == ["logs/keep.log"]


@pytest.mark.parametrize(
    "args,message",
    [
        ({"pattern": ""}, "pattern must be a non-empty string"),
        ({"pattern": "a", "path": " "}, "path must be a non-empty string when given"),
        ({"pattern": "a", "include": " "}, "include must be a non-empty glob when given"),
        (
            {"pattern": "a", "include": "!*.ts"},
            'include must be a positive glob filter; negated patterns ("!…") are not supported',
        ),
        (
            {"pattern": "a", "include": "*.ts,*.js"},
            "include must be one glob, not a comma-separated list (use {a,b} alternation instead)",
        ),
    ],
)
async def test_grep_argument_errors(bench, args, message):
    out = await bench.run("grep", args)
    assert out.text == f"Error: {message}" and out.error is None


async def test_grep_brace_include_and_invalid_regex(bench):
    put(bench.workspace, "a.ts", "x1\n")
    put(bench.workspace, "b.js", "x2\n")
    put(bench.workspace, "c.md", "x3\n")
    out = await bench.run("grep", {"pattern": "x", "include": "*.{ts,js}"})
    assert out.meta["total"] == 2
    out = await bench.run("grep", {"pattern": "(unclosed"})
    assert out.text.startswith("Error: grep pattern rejected by ripgrep: regex parse error")
    assert out.error == {"name": "SearchError", "code": "SEARCH_INVALID_PATTERN"}


async def test_grep_line_preview_and_invalid_utf8(bench):
    put(bench.workspace, "long.txt", "é" * 1500 + "\n")
    (bench.workspace / "latin.txt").write_bytes(b"caf\xe9 needle\n")
    out = await bench.run("grep", {"pattern": "é"})
    line = out.meta["files"][0]["matches"][0]["line"]
    assert line == "é" * 1000 + " (line truncated)"
    out = await bench.run("grep", {"pattern": "needle"})
    assert out.text == "Found 1 match\n\nlatin.txt\nLine 1: (line is not valid UTF-8)"


async def test_grep_over_cap_spills_the_complete_list(bench):
    put(bench.workspace, "many.txt", "".join(f"hit {i}\n" for i in range(1, 301)))
    out = await bench.run("grep", {"pattern": "hit"})
    header, body, footer = out.text.split("\n\n")
    assert header == "Found 250 of 300 matches"
    assert body.split("\n")[-1] == "Line 250: hit 250"
    spill = footer.removeprefix("(Full grep result stored at: ").removesuffix(f". {HINT})")
    saved = Path(spill).read_text()
    assert saved.startswith("Found 300 matches\n\nmany.txt\nLine 1: hit 1\n") and saved.endswith(
        "Line 300: hit 300"
    )
    assert out.meta["truncated"] is True and out.meta["total"] == 300
    bench.spill_dir = None
    out = await bench.run("grep", {"pattern": "hit"})
    assert out.text.endswith(
        "\n\n(The complete result could not be saved; narrow pattern, path, or include to see more.)"
    )


async def test_search_cancellation_stops_the_walk(bench):
    for i in range(300):
        put(bench.workspace, f"d{i}/f.txt", "needle\n")
    cancelled = asyncio.Event()
    cancelled.set()
    out = await bench.run("grep", {"pattern": "needle"}, cancelled)
    assert out.text == "Error: grep was aborted before completion (tool timeout or caller cancellation)"
    assert out.error == {"name": "SearchError", "code": "SEARCH_ABORTED"}
    fresh = asyncio.Event()
    task = asyncio.create_task(bench.run("glob", {"pattern": "*.txt"}, fresh))
    fresh.set()
    out = await task
    assert out.error in (None, {"name": "SearchError", "code": "SEARCH_ABORTED"})


async def test_search_timeout_reports_aborted(tmp_path):
    ws = tmp_path / "w"
    ws.mkdir()
    for i in range(50):
        put(ws, f"d{i}/f.txt")
    bench = Bench(ws, options={"search_timeout_ms": 0})
    out = await bench.run("glob", {"pattern": "*"})
    assert out.text == "Error: glob was aborted before completion (tool timeout or caller cancellation)"


async def test_parent_ignore_files_apply_and_vcs_roots_stay_excluded(bench):
    ws = bench.workspace
    (ws / ".git").mkdir()
    put(ws, ".gitignore", "*.log\n")
    put(ws, "sub/a.log", "needle\n")
    put(ws, "sub/a.txt", "needle\n")
    put(ws, ".git/config.txt", "needle\n")
    out = await bench.run("grep", {"pattern": "needle", "path": "sub"})
    assert out.text == "Found 1 match\n\nsub/a.txt\nLine 1: needle"
    bench.cwd = ws / "sub"
    out = await bench.run("grep", {"pattern": "needle"})
    assert out.text == "Found 1 match\n\na.txt\nLine 1: needle"
    bench.cwd = None
    assert (await bench.run("glob", {"pattern": "*", "path": ".git"})).text == "No files found"
    assert (await bench.run("glob", {"pattern": "*.txt"})).text == "sub/a.txt"


async def test_grep_streams_large_files_and_named_groups(bench, monkeypatch):
    import dsh_tui.tools.search as search

    big = bench.workspace / "big.log"
    with open(big, "w") as fh:
        for i in range(50_000):
            fh.write(f"row {i}\n")
    monkeypatch.setattr(search.grep, "STREAM_MIN_BYTES", 64 * 1024)  # stream anything over 64 KiB
    out = await bench.run("grep", {"pattern": r"^row (?<n>4999\d)$"})
    assert out.meta["total"] == 10
    assert out.meta["files"][0]["matches"][0] == {"lineNumber": 49_991, "line": "row 49990"}
    with open(big, "ab") as fh:
        fh.write(b"row 49999\x00\n")
    assert (await bench.run("grep", {"pattern": "row"})).text == "No matches found"


async def test_raw_output_cap(bench, monkeypatch):
    import dsh_tui.tools.search as search

    monkeypatch.setattr(search.walk, "RAW_OUTPUT_MAX_BYTES", 2_000)
    put(bench.workspace, "many.txt", "hit\n" * 100)
    out = await bench.run("grep", {"pattern": "hit"})
    assert out.text == (
        "Error: grep produced more raw output than the subprocess seam retained within the 2000-byte cap; "
        "narrow pattern, path, or include and retry"
    )
    assert out.error == {"name": "SearchError", "code": "SEARCH_RAW_OUTPUT_OVERFLOW"}
    for i in range(300):
        put(bench.workspace, f"f{i}.txt")
    out = await bench.run("glob", {"pattern": "*.txt"})
    assert out.error == {"name": "SearchError", "code": "SEARCH_RAW_OUTPUT_OVERFLOW"}


@pytest.mark.parametrize("tool", ["grep", "glob"])
async def test_walks_run_off_the_event_loop(bench, monkeypatch, tool):
    """The walk waits for the event loop to answer it: on the loop itself it would wait in vain."""
    from dsh_tui.tools.search import walk

    for i in range(40):
        put(bench.workspace, f"d{i % 4}/f{i}.txt", "needle\n" * 5)
    walking, loop_answered, answered_in_time = threading.Event(), threading.Event(), []
    real = walk._walk_files  # the one walk glob and grep both use

    def gated(*args, **kwargs):
        walking.set()
        answered_in_time.append(loop_answered.wait(10))
        return real(*args, **kwargs)

    monkeypatch.setattr(walk, "_walk_files", gated)

    async def answer():
        while not walking.is_set():
            await asyncio.sleep(0.001)
        loop_answered.set()

    helper = asyncio.create_task(answer())
    args = {"pattern": "needle", "include": "*.txt"} if tool == "grep" else {"pattern": "**/*.txt"}
    out = await bench.run(tool, args)
    await helper
    assert answered_in_time == [True]
    if tool == "grep":
        assert out.meta["total"] == 200
    else:
        assert len(out.text.split("\n")) == 40


async def test_invalid_globs_are_rejected_and_bad_ignore_lines_skipped(bench):
    out = await bench.run("glob", {"pattern": "src/[ab"})
    assert (
        out.text
        == "Error: glob pattern rejected by ripgrep: rg: error parsing glob 'src/[ab': unclosed character class; missing ']'"
    )
    assert out.error == {"name": "SearchError", "code": "SEARCH_INVALID_PATTERN"}
    out = await bench.run("grep", {"pattern": "x", "include": "*.{ts"})
    assert out.error == {"name": "SearchError", "code": "SEARCH_INVALID_PATTERN"}
    assert "unclosed alternate group" in out.text
    put(bench.workspace, ".ignore", "[broken\nskip.txt\n")
    put(bench.workspace, "skip.txt", "x\n")
    put(bench.workspace, "keep.txt", "x\n")
    assert (await bench.run("grep", {"pattern": "x"})).text == "Found 1 match\n\nkeep.txt\nLine 1: x"
    put(bench.workspace, "a[1].txt")
    assert (await bench.run("glob", {"pattern": "a[[]1].txt"})).text == "a[1].txt"
