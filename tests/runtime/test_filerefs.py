"""``@file`` completion rules (extensions spec 6): the token grammar, dsh's insertion and quoting, and the
cwd index (20 results, 10,000 entries, no ``.git`` or ``node_modules``)."""

from __future__ import annotations

from dsh_tui.extensions.filerefs import MAX_RESULTS, Mention, PathIndex, insertion, mention_at


def test_the_token_is_at_the_line_start_or_after_whitespace():
    assert mention_at("@src/ma", 7) == Mention(0, 7, "src/ma", False)
    assert mention_at("see @a", 6) == Mention(4, 6, "a", False)
    assert mention_at("see\t@", 5) == Mention(4, 5, "", False)
    assert mention_at("mail me@host", 12) is None  # not after whitespace
    assert mention_at("see @a b", 8) is None  # the token ended at the space
    assert mention_at('see @"my do', 11) == Mention(4, 11, "my do", True)
    assert mention_at('see @"my docs" x', 16) is None  # a closed quote ends it
    assert mention_at("see @a", 5) == Mention(4, 5, "", False)  # the part before the cursor


def test_insertion_quotes_spaces_keeps_a_directory_open_and_refuses_quotes_and_controls():
    assert insertion("src/main.py", False) == "@src/main.py"
    assert insertion("src", True) == "@src/"
    assert insertion("my docs/read me.txt", False) == '@"my docs/read me.txt"'
    assert insertion("my docs", True) == '@"my docs/'  # the quote stays open to go on completing
    assert insertion("plain.txt", False, quoted=True) == '@"plain.txt"'  # an opened quote is kept
    assert insertion('say "hi".txt', False) is None
    assert insertion("bell\x07.txt", False) is None
    assert insertion("c1\x85.txt", False) is None


def test_the_index_skips_git_and_node_modules_caps_entries_and_results(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("x")
    (tmp_path / "node_modules" / "lib").mkdir(parents=True)
    (tmp_path / "node_modules" / "lib" / "main.js").write_text("x")
    (tmp_path / "src").mkdir()
    for i in range(30):
        (tmp_path / "src" / f"main_{i:02d}.py").write_text("x")
    index = PathIndex(tmp_path).start()
    assert index.done.wait(10)
    assert "src/" in index.entries and "src/main_00.py" in index.entries
    assert not any(e.startswith((".git", "node_modules")) for e in index.entries)
    found = index.search("main")
    assert len(found) == MAX_RESULTS == 20 and all(e.startswith("src/main_") for e in found)
    assert index.search("") == ["src/"]  # the top level
    capped = PathIndex(tmp_path, max_entries=5).start()
    assert capped.done.wait(10)
    assert len(capped.entries) == 5
