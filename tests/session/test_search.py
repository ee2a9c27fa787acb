"""The domain search over a transcript fold: counts, stepping, refining, live changes."""

from __future__ import annotations

from dsh_tui.session.search import TranscriptSearch, find_all, item_text
from dsh_tui.session.transcript import ToolItem, UserItem, fold_transcript
from tests.ui.synthetic import long_session


def _items(*texts: str) -> list:
    return [UserItem(f"u{i}.0", "user", i, text=t) for i, t in enumerate(texts)]


def test_counts_every_item_and_steps_older_and_newer_with_wrap():
    items = _items("Alpha beta", "nothing", "beta BETA", "gamma")
    s = TranscriptSearch()
    s.sync(items)
    m = s.locate("beta")
    assert s.count == 3 and (m.number, m.index) == (3, 2)  # the newest first
    assert [s.step(-1).number for _ in range(3)] == [2, 1, 3]  # older, older, wrap to the newest
    assert (s.step(1).number, s.current.index) == (1, 0)  # newer than the newest wraps to the oldest
    assert s.locate("zeta") is None and s.count == 0


def test_refining_stays_near_the_current_match():
    items = _items("abc one", "abd two", "abc three", "abx")
    s = TranscriptSearch()
    s.sync(items)
    s.locate("ab")
    s.step(-1)
    s.step(-1)
    assert s.current.index == 1
    assert s.refine("abc").index == 0  # at or before the old match
    assert s.refine("abc t").index == 2  # none before it: the first one after


def test_matches_never_span_two_items():
    s = TranscriptSearch()
    s.sync(_items("end", "start"))
    assert s.locate("endstart") is None and s.locate("end\nstart") is None


def test_live_changes_are_picked_up_and_the_current_item_kept():
    items = _items("foo", "bar foo")
    s = TranscriptSearch()
    s.sync(items)
    s.locate("foo")
    s.step(-1)
    assert s.current.index == 0
    items.append(UserItem("u9.0", "user", 9, text="foo foo"))
    m = s.requery(items)
    assert s.count == 4 and m.index == 0
    items[0].text = "nothing"
    items[0].touch()
    assert s.requery(items) is not None and s.count == 3


def test_tool_items_are_searched_by_name_arguments_and_whole_result():
    tool = ToolItem("t1.0", "tool", 1, name="bash", arguments='{"command": "ls"}', result="a\n" * 1000 + "needle")
    assert "needle" in item_text(tool) and '"command": "ls"' in item_text(tool)


def test_a_200k_event_session_is_searched_whole():
    header, events = long_session(2_000, chunks_per_step=92)
    assert len(events) >= 200_000
    fold = fold_transcript(header, events)
    s = TranscriptSearch()
    s.sync(fold.items)
    assert s.locate("question 999:").item.text.startswith("Question 999:")
    assert s.count == 1 and s.locate("thing1999 ") is None  # 1999 % 4 == 3: a step without a tool call


def test_find_all_is_case_insensitive_and_non_overlapping():
    assert find_all("aAaA", "aa") == [0, 2] and find_all("x", "") == []
