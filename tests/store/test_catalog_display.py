"""What a session row shows: the first prompt when the log has no title, the fork point as a turn, a
state from the last turn's end reason, trash rows with their titles, search snippets with match ranges."""

from __future__ import annotations

import pytest

from dsh_tui.store import catalog as cat
from dsh_tui.store.catalog import Catalog
from tests.store.test_catalog_support import make_header, user_turn, write_session


def untitled_turn(seq: int, turn: int, text: str, answer: str, **kw) -> list[dict]:
    """``user_turn`` without the fallback ``session/title`` (no title is written by dsh-tui's runtime yet)."""
    ev = user_turn(seq, turn, text, answer, **kw)
    out = []
    for e in ev:
        if e["type"] == "session/title":
            continue
        e = dict(e, seq=seq + len(out))
        if "sourceEventSeqs" in e:
            e["sourceEventSeqs"] = [s - 1 if turn == 1 else s for s in e["sourceEventSeqs"]]
        out.append(e)
    return out


def ended(seq: int, turn: int, text: str, reason: dict) -> list[dict]:
    ev = untitled_turn(seq, turn, text, "partial", close=False)
    return ev + [{"type": "turn/end", "seq": seq + len(ev), "time": 1_780_000_000_999,
                  "data": {"turn": turn, "reason": reason}}]


@pytest.fixture
def root(tmp_path):
    return tmp_path / "sessions"


def rows_of(root, tmp_path) -> dict:
    c = Catalog([root], tmp_path / "catalog.sqlite", lock_probe=lambda _p: False)
    try:
        return {r.id: r for r in c.refresh()}
    finally:
        c.close()


def test_an_untitled_session_shows_its_first_prompt(root, tmp_path):
    ev = untitled_turn(0, 1, "  Plan the\n\tgarden   beds\x1b please ", "ok")
    ev += untitled_turn(len(ev), 2, "second prompt", "ok")
    write_session(root, make_header("plain"), ev)
    write_session(root, make_header("titled"), user_turn(0, 1, "titled prompt", "ok"))
    rows = rows_of(root, tmp_path)
    assert rows["plain"].title is None
    assert rows["plain"].prompt == "Plan the garden beds please"
    assert rows["plain"].display_title == "Plan the garden beds please"
    assert rows["titled"].display_title == "titled prompt"  # the log's title wins
    assert "garden beds" in cat.haystack(rows["plain"])  # the filter finds it


def test_states_come_from_the_last_turns_end_reason(root, tmp_path):
    write_session(root, make_header("failed"), ended(0, 1, "x", {"kind": "error", "error": {"message": "boom"}}))
    write_session(root, make_header("cancelled"), ended(0, 1, "x", {"kind": "aborted", "reason": {"kind": "user"}}))
    write_session(root, make_header("capped"), ended(0, 1, "x", {"kind": "max-tokens"}))
    ev = ended(0, 1, "x", {"kind": "error", "error": {"message": "boom"}})
    write_session(root, make_header("recovered"), ev + untitled_turn(len(ev), 2, "again", "ok"))
    write_session(root, make_header("open"), untitled_turn(0, 1, "x", "ok", close=False))
    rows = rows_of(root, tmp_path)
    assert {k: r.state for k, r in rows.items()} == {
        "failed": "failed", "cancelled": "cancelled", "capped": "max tokens", "recovered": "completed",
        "open": "interrupted"}


def test_a_fork_row_knows_the_turn_it_was_forked_after(root, tmp_path):
    parent = untitled_turn(0, 1, "first", "a")
    parent += untitled_turn(len(parent), 2, "second", "b")
    parent += untitled_turn(len(parent), 3, "third", "c")
    write_session(root, make_header("parent"), parent)
    cut = next(e["seq"] for e in parent if e["type"] == "turn/end" and e["data"]["turn"] == 2) + 1
    seed = parent[:cut] + [{"type": "session/end-seed", "seq": cut, "time": 5, "data": {}}]
    write_session(root, make_header("child", parentSession="parent", seedLength=cut), seed)
    rows = rows_of(root, tmp_path)
    assert rows["child"].fork_turn == 2 and rows["parent"].fork_turn is None
    # the listing snapshot carries it (and the prompt) to the next first paint
    c = Catalog([root], tmp_path / "catalog.sqlite", lock_probe=lambda _p: False)
    c.save_snapshot(force=True)
    listed = {r.id: r for r in c.listing()}
    c.close()
    assert listed["child"].fork_turn == 2 and listed["child"].prompt == "first"


def test_a_fork_of_a_resumed_parent_names_its_own_fork_turn(root, tmp_path):
    # the parent was resumed after turn 1 (an end-seed in its log, inherited by the fork's seed): the
    # fork after turn 3 is "after turn 3", not the first end-seed's turn 1
    parent = untitled_turn(0, 1, "first", "a")
    parent += [{"type": "session/end-seed", "seq": len(parent), "time": 3, "data": {}}]
    parent += untitled_turn(len(parent), 2, "second", "b")
    parent += untitled_turn(len(parent), 3, "third", "c")
    write_session(root, make_header("parent"), parent)
    cut = len(parent)
    seed = parent + [{"type": "session/end-seed", "seq": cut, "time": 5, "data": {}}]
    write_session(root, make_header("child", parentSession="parent", seedLength=cut), seed)
    rows = rows_of(root, tmp_path)
    assert rows["child"].fork_turn == 3 and rows["parent"].fork_turn is None


def test_trash_rows_have_titles_and_say_they_are_in_the_trash(root, tmp_path):
    write_session(root, make_header("t1"), untitled_turn(0, 1, "trashed prompt", "ok"))
    (row,) = rows_of(root, tmp_path).values()
    cat.move_to_trash(row)
    (trashed,) = cat.bucket_rows(root)
    assert trashed.state == "in trash" and trashed.display_title == "trashed prompt" and trashed.turns == 1


def test_search_hits_carry_match_ranges_not_brackets(root, tmp_path):
    write_session(root, make_header("s"), untitled_turn(0, 1, "please [steer] the attempt\nnow", "ok"))
    c = Catalog([root], tmp_path / "catalog.sqlite", lock_probe=lambda _p: False)
    c.refresh()
    (hit,) = c.search("attempt")
    c.close()
    assert hit.text == "please [steer] the attempt now"  # the log's own brackets stay, no marks added
    assert [hit.text[a:b] for a, b in hit.marks] == ["attempt"]
    assert hit.snippet == "please [steer] the [attempt] now"


def test_prompt_title_is_dshs_fallback_rule():
    assert cat.prompt_title("Load the editing-cordis-compositions skill with care") == \
        "Load the editing-cordis-compositions ski"
    assert cat.prompt_title("你好世界") == "你好世界"
    assert cat.prompt_title("a  b\nc d e f g") == "a b c d e"
