"""Card facts recovered from recorded results (bash text, write/edit diff hunks)."""

from __future__ import annotations

from dsh_tui.tools.present import bash_summary, diff_stat


def test_bash_summary_reads_markers_and_output():
    s = bash_summary("hi\n[stderr]\nboom\n[exit code: 3]")
    assert (s["exitCode"], s["signal"], s["timedOutMs"], s["hasStderr"]) == (3, None, None, True)
    assert s["head"] == ["hi", "[stderr]", "boom"] and s["lineCount"] == 3
    s = bash_summary("(no output)\n[timed out after 400ms]\n[killed by signal: SIGTERM]")
    assert (s["exitCode"], s["signal"], s["timedOutMs"], s["lineCount"]) == (None, "SIGTERM", "400", 0)
    s = bash_summary("ok\n")
    assert s["exitCode"] == 0 and s["head"] == ["ok"] and not s["truncated"]
    text = "\n".join(str(i) for i in range(20)) + "\n[output truncated; full output: /tmp/x-stdout.txt]"
    s = bash_summary(text)
    assert s["truncated"] and s["spillPaths"] == ["/tmp/x-stdout.txt"]
    assert (
        s["head"] == ["0", "1", "2", "3", "4"]
        and s["tail"][-1] == "[output truncated; full output: /tmp/x-stdout.txt]"
    )


def test_diff_stat_counts_changed_lines_only():
    meta = {"diffs": [{"path": "f", "oldText": "a\nb\nc\nd", "newText": "a\nB\nB2\nc\nd"}]}
    assert diff_stat(meta) == (2, 1)
    assert diff_stat({"diffs": [{"path": "f", "oldText": None, "newText": "x\ny"}]}) == (2, 0)
    assert diff_stat({"diffs": []}, {"file_path": "n", "content": "1\n2\n3\n"}) == (3, 0)
    assert diff_stat(None) is None and diff_stat({"path": "x"}) is None


def test_diff_stat_of_an_emptied_file():
    assert diff_stat({"diffs": [{"path": "f", "oldText": "a\nb", "newText": ""}]}) == (0, 2)
