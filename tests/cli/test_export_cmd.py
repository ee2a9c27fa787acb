"""``dsh-tui export`` as a real subprocess: md/html from the transcript fold, jsonl verbatim."""

from __future__ import annotations

import os
import subprocess
import sys

from dsh_tui.export import to_html, to_markdown
from dsh_tui.session.rows import expand_lines
from tests.store.test_catalog_support import load_fixture, make_header, user_turn, write_session

PARALLEL = "examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl"
REASONING = "examples/acp-agent/tests/snapshots/subagent-fork-in-process/session.1.jsonl"


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "dsh_tui", *args], capture_output=True, text=True,
                          env=os.environ.copy(), timeout=60)


def test_export_md_html_jsonl_of_a_fixture(tmp_path):
    root = tmp_path / "r"
    header, rows = load_fixture(PARALLEL, session_id="par-1", cwd="/w")
    path = write_session(root, header, rows, zstd=True, batches=[5, 3])
    p = run_cli("export", "par-1", "--format", "md", "--root", str(root))
    assert p.returncode == 0, p.stderr
    md = p.stdout
    assert md.startswith("# Use the read tool twice\n")
    assert "## You" in md and "read a.txt and b.txt" in md
    assert md.count("**Tool `read`**") == 2 and '"file_path":"a.txt"' in md
    assert "DONE" in md and "*Turn 1:" in md
    out = tmp_path / "x.html"
    p = run_cli("export", "par", "--format", "html", "-o", str(out), "--root", str(root))
    assert p.returncode == 0, p.stderr
    assert p.stdout == "" and p.stderr == f"Exported session par (html) to {out.resolve()}\n"  # one line: where
    h = out.read_text()
    assert h.startswith("<!DOCTYPE html>") and h.count('class="tool ok"') == 2 and "DONE" in h
    p = run_cli("export", "par-1", "--format", "jsonl", "--root", str(root))
    assert p.returncode == 0
    import zstandard

    raw = zstandard.ZstdDecompressor().decompressobj().decompress(b"")  # noqa: F841 (import check)
    with open(path, "rb") as f:
        decoded = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True).read()
    assert p.stdout == decoded.decode()


def test_reasoning_is_optional_and_escaped_in_html():
    header, rows = load_fixture(REASONING, session_id="r1")
    ev = expand_lines(rows)
    md = to_markdown(header, ev)
    assert "MARMALADE" in md and "Thinking" not in md
    md_r = to_markdown(header, ev, reasoning=True)
    assert "<summary>Thinking</summary>" in md_r and "The user wants me to remember" in md_r
    assert "forked from" in md  # the end-seed divider of a fork child
    ev2 = user_turn(0, 1, "<script>alert(1)</script>", "a & b")
    h = to_html(make_header("x"), ev2)
    assert "<script>alert" not in h and "&lt;script&gt;" in h and "a &amp; b" in h


def test_unknown_session_is_a_one_line_error(tmp_path):
    p = run_cli("export", "nope", "--format", "md", "--root", str(tmp_path))
    assert p.returncode == 1
    assert p.stderr.startswith("dsh-tui: no session 'nope'") and "Traceback" not in p.stderr


def test_a_failed_export_leaves_no_part_of_a_file(tmp_path):
    # a file size limit (as a full disk): the export fails with one line, and neither a new file nor a
    # cut one is left where -o pointed (the previous export there stays whole)
    import resource

    root = tmp_path / "r"
    header, rows = load_fixture(PARALLEL, session_id="par-1", cwd="/w")
    write_session(root, header, rows)
    out = tmp_path / "x.md"

    def limited(limit):
        return subprocess.run([sys.executable, "-m", "dsh_tui", "export", "par-1", "-o", str(out), "--root", str(root)],
                              capture_output=True, text=True, env=os.environ.copy(), timeout=60,
                              preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))

    p = limited(100)
    assert p.returncode != 0 and p.stderr.startswith("dsh-tui: cannot write") and p.stderr.count("\n") == 1, p.stderr
    assert not out.exists() and not list(tmp_path.glob(".x.md.*"))
    p = run_cli("export", "par-1", "-o", str(out), "--root", str(root))
    assert p.returncode == 0, p.stderr
    whole = out.read_bytes()
    p = limited(100)
    assert p.returncode != 0 and out.read_bytes() == whole
    p = run_cli("export", "par-1", "-o", str(tmp_path / "missing" / "x.md"), "--root", str(root))
    assert p.returncode != 0 and "No such file or directory" in p.stderr and not (tmp_path / "missing").exists()
