"""Surface fold (§2.1, §2.2): replace validation failure modes, incremental derive cache vs scratch, and
fixture projections computed independently in the test."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_tui.session import jsonutil, legacy, repair
from dsh_tui.session.errors import SessionValidationError
from dsh_tui.session.invariants import check_relations
from dsh_tui.session.log import Session
from dsh_tui.session.surface import derive_messages_from, fold_surface
from tests.fixture_logs import fixture_id, load_fixture, session_fixture_paths
from tests.session.helpers import asst_msg, new_session, open_step, tool_msg, user_msg


def _base():
    """seq 0 turn/start, 1 step/start, 2 user u1, 3 assistant (call c1), 4 tool/call, 5 tool/result c1,
    6 user u2 — surface nodes [2, 3, 5, 6]."""
    s = new_session()
    open_step(s)
    s.append("user/message", user_msg("one", "u1"), surface_op="append")
    s.append("assistant/message", {"turn": 1, "step": 1, "message": asst_msg("a", "a1", calls=["c1"])},
             surface_op="append")
    s.append("tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "bash", "arguments": "{}"})
    s.append("tool/result", {"turn": 1, "step": 1, "message": tool_msg("c1", "long output")}, surface_op="append",
             source_event_seqs=[4])
    s.append("user/message", user_msg("two", "u2"), surface_op="append")
    assert s.surface_nodes == (2, 3, 5, 6)
    return s


def rep(start, end):
    return {"op": "replace", "start": start, "end": end}


@pytest.mark.parametrize(
    ("type_", "data", "op", "src", "needle"),
    [
        ("user/message", user_msg(), "prepend", None, "surfaceOp must be"),
        ("user/message", user_msg(), {"op": "replace", "start": 2}, [2], "surfaceOp must be"),
        ("user/message", user_msg(), {"op": "replace", "start": 2, "end": 2, "x": 1}, [2], "surfaceOp must be"),
        ("user/message", user_msg(), {"op": "insert", "start": 2, "end": 2}, [2], "surfaceOp must be"),
        ("user/message", user_msg(), rep(-1, 2), [2], "non-negative"),
        ("user/message", user_msg(), rep(2.0, 2), [2], "non-negative"),
        ("user/message", user_msg(), rep(True, 2), [2], "non-negative"),
        ("user/message", user_msg(), rep(4, 5), [4, 5], "start 4 is not on the surface"),
        ("user/message", user_msg(), rep(2, 4), [2, 3, 4], "end 4 is not on the surface"),
        ("user/message", user_msg(), rep(2, 99), [2], "end 99 is not on the surface"),
        ("user/message", user_msg(), rep(5, 3), [3, 5], "comes after"),
        ("user/message", user_msg(), rep(2, 5), [2, 5], "missing [3]"),
        ("user/message", user_msg(), rep(2, 3), None, "missing [2, 3]"),
        ("user/message", user_msg(), rep(2, 2), [], "may be empty only"),
        ("user/message", user_msg(), rep(2, 2), [2, 2], "duplicates"),
        ("user/message", user_msg(), rep(2, 2), [2, 7], "earlier events"),
        ("user/message", user_msg(), rep(2, 2), [2, -1], "non-negative"),
        ("user/message", user_msg(), rep(2, 2), [0, True, 2], "non-negative safe integers"),  # == a run of seqs
        ("user/message", user_msg(), rep(2, 2), [1, 2.0, 3], "non-negative safe integers"),
        ("user/message", user_msg(), rep(2, 2), [True, 2], "non-negative safe integers"),
        ("user/message", user_msg(), rep(2, 2), "2", "must be an array"),
        ("user/message", user_msg(), "append", [], "may be empty only"),
        ("tool/result", {"turn": 1, "step": 1, "message": tool_msg("c1", "short")}, rep(3, 5), [3, 5],
         "exactly one node"),
        ("tool/result", {"turn": 1, "step": 1, "message": tool_msg("c1", "short")}, rep(2, 2), [2],
         "must shadow a tool/result"),
        ("tool/result", {"turn": 1, "step": 1, "message": tool_msg("c1", "short", mid="other")}, rep(5, 5), [5],
         "only the tool-result content"),
        ("tool/result", {"turn": 1, "step": 1, "message": tool_msg("c1", "short", is_error=True)}, rep(5, 5), [5],
         "only the tool-result content"),
        ("tool/result", {"turn": 1, "step": 1, "message": tool_msg("c1", "short"), "meta": {}}, rep(5, 5), [5],
         "only the tool-result content"),
        # a malformed replacement is refused by the same rule (the fold runs before the payload checks)
        ("tool/result", ["not", "an", "object"], rep(5, 5), [5], "only the tool-result content"),
        ("tool/result", {"turn": 1, "step": 1, "message": "text"}, rep(5, 5), [5], "only the tool-result content"),
        *(("tool/result", {"turn": 1, "step": 1, "message": {**tool_msg("c1"), "content": content}}, rep(5, 5), [5],
           "only the tool-result content")
          for content in ("text", [], ["text"], tool_msg("c1")["content"] * 2)),
        ("turn/start", {"turn": 2}, "append", None, "not a surface event"),
        ("feedback/record", {"text": "x"}, None, [1], "cannot carry sourceEventSeqs"),
    ],
)
def test_replace_validation_failure_modes(type_, data, op, src, needle):
    s = _base()
    before = copy.deepcopy(s.events)
    with pytest.raises(SessionValidationError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        s.append(type_, data, surface_op=op, source_event_seqs=src)
    assert s.events == before and s.surface_nodes == (2, 3, 5, 6) and s.replace_generation == 0


def test_empty_source_event_seqs_allowed_on_assistant_message():
    s = _base()
    s.append("assistant/message", {"turn": 1, "step": 1, "message": asst_msg("", "a2")}, surface_op="append",
             source_event_seqs=[])
    assert s.surface_nodes[-1] == 7


def test_valid_replacements_shadow_for_the_model_only():
    s = _base()
    pruned = tool_msg("c1", "[pruned]")
    s.append("tool/result", {"turn": 1, "step": 1, "message": pruned}, surface_op=rep(5, 5), source_event_seqs=[5])
    assert s.surface_nodes == (2, 3, 7, 6) and s.replace_generation == 1
    summary = user_msg("summary", "sum", kind="plugin")
    s.append("user/message", summary, surface_op=rep(2, 7), source_event_seqs=[2, 3, 7, 1])
    assert s.surface_nodes == (8, 6) and s.replace_generation == 2
    assert jsonutil.dumps(s.derive_messages()) == jsonutil.dumps([summary, user_msg("two", "u2")])
    # the human transcript source keeps everything that was appended
    assert [e["seq"] for e in s.append_origin_events()] == [2, 3, 5, 6]
    # a replacement can itself be replaced
    s.append("user/message", user_msg("s2", "sum2"), surface_op=rep(8, 6), source_event_seqs=[8, 6])
    assert s.surface_nodes == (9,)


def test_window_fold_rejects_a_replace_before_the_window():
    s = _base()
    s.append("user/message", user_msg("x", "x"), surface_op=rep(2, 2), source_event_seqs=[2])
    window = s.events[5:]
    with pytest.raises(SessionValidationError, match="before the loaded window"):
        fold_surface(window, base_seq=5)
    # a range that only starts before the window is refused the same way
    s = _base()
    s.append("user/message", user_msg("y", "y"), surface_op=rep(3, 6), source_event_seqs=[3, 5, 6])
    with pytest.raises(SessionValidationError, match="replace range 3..6 lies before the loaded window"):
        fold_surface(s.events[5:], base_seq=5)
    # a range that starts (or ends) exactly at the window's first event is inside it
    s = _base()
    s.append("user/message", user_msg("z", "z"), surface_op=rep(5, 6), source_event_seqs=[5, 6])
    assert fold_surface(s.events[5:], base_seq=5).nodes == [7]
    s = _base()
    s.append("user/message", user_msg("z", "z"), surface_op=rep(5, 5), source_event_seqs=[5])
    assert fold_surface(s.events[5:], base_seq=5).nodes == [7, 6]
    window = s.events[5:7] + [{**s.events[7], "surfaceOp": rep(6, 5), "sourceEventSeqs": [5, 6]}]
    with pytest.raises(SessionValidationError, match="^seq 7: surface replace start 6 comes after end 5$"):
        fold_surface(window, base_seq=5)


def test_a_shadowed_node_is_off_the_surface_for_later_replacements():
    s = _base()
    s.append("user/message", user_msg("sum", "sum"), surface_op=rep(2, 3), source_event_seqs=[2, 3])
    assert s.surface_nodes == (7, 5, 6)
    for op, src, needle in ((rep(2, 2), [2], "start 2 is not on the surface"),
                            (rep(5, 3), [3, 5], "end 3 is not on the surface")):
        with pytest.raises(SessionValidationError, match=needle):
            s.append("user/message", user_msg("again", "again"), surface_op=op, source_event_seqs=src)
    assert s.surface_nodes == (7, 5, 6)


# ---------------------------------------------------------------- derive cache == scratch (property)

def independent_projection(events):
    """§2.3 computed independently: walk the raw log keeping an ordered node list."""
    nodes = []
    for e in events:
        op = e.get("surfaceOp")
        if op is None:
            continue
        if op == "append":
            nodes.append(e["seq"])
        else:
            i, j = nodes.index(op["start"]), nodes.index(op["end"])
            nodes[i : j + 1] = [e["seq"]]
    out = []
    for seq in nodes:
        e = events[seq]
        if e["type"] == "user/message":
            out.append(e["data"])
        elif e["type"] == "assistant/message":
            if e["data"]["message"]["content"]:
                out.append(e["data"]["message"])
        elif e["type"] == "tool/result":
            out.append(e["data"]["message"])
    return out


ops = st.lists(
    st.tuples(st.sampled_from(["user", "asst", "empty-asst", "tool", "chunk", "plugin", "replace", "prune",
                               "derive"]),
              st.integers(0, 1000), st.integers(0, 1000)),
    max_size=40,
)


@settings(max_examples=120, deadline=None)
@given(ops)
def test_incremental_derive_equals_scratch_after_every_append_and_replace(script):
    s = new_session()
    open_step(s)
    n_calls = 0
    views = []
    for kind, a, b in script:
        if kind == "user":
            s.append("user/message", user_msg(f"u{a}", f"u{len(s.events)}"), surface_op="append")
        elif kind in ("asst", "empty-asst"):
            s.append("assistant/message", {"turn": 1, "step": 1, "message": asst_msg(
                "" if kind == "empty-asst" else f"a{a}", f"a{len(s.events)}")}, surface_op="append")
        elif kind == "tool":
            cid = f"c{n_calls}"
            n_calls += 1
            s.append("tool/call", {"turn": 1, "step": 1, "callId": cid, "name": "x", "arguments": "{}"})
            s.append("tool/result", {"turn": 1, "step": 1, "message": tool_msg(cid, f"r{a}")}, surface_op="append",
                     source_event_seqs=[len(s.events) - 1])
        elif kind == "chunk":
            s.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0,
                                                                          "text": str(a)}})
        elif kind == "plugin":
            s.append("session/title", {"title": str(a), "messageSeqs": [], "source": {"kind": "fallback"}})
        elif kind == "derive":
            s.derive_messages()
        elif s.surface_nodes:
            nodes = s.surface_nodes
            if kind == "replace":
                i, j = sorted((a % len(nodes), b % len(nodes)))
                s.append("user/message", user_msg("sum", f"s{len(s.events)}", kind="plugin"),
                         surface_op=rep(nodes[i], nodes[j]), source_event_seqs=list(nodes[i : j + 1]))
            else:
                results = [n for n in nodes if s.events[n]["type"] == "tool/result"]
                if results:
                    old = s.events[results[a % len(results)]]
                    msg = copy.deepcopy(old["data"]["message"])
                    msg["content"][0]["content"] = [{"type": "text", "text": "[pruned]"}]
                    s.append("tool/result", {**old["data"], "message": msg},
                             surface_op=rep(old["seq"], old["seq"]), source_event_seqs=[old["seq"]])
        got = s.derive_messages()
        assert jsonutil.dumps(got) == jsonutil.dumps(derive_messages_from(s.events))
        assert jsonutil.dumps(got) == jsonutil.dumps(independent_projection(s.events))
        view = s.messages_view()
        assert view == got and got == view and len(view) == len(got) and view.to_list() == got
        views.append((view, jsonutil.dumps(got)))
        # every earlier O(1) snapshot still holds exactly what derive_messages returned at its time
        for old_view, text in views:
            assert jsonutil.dumps(old_view) == text
    assert [e["seq"] for e in s.events] == list(range(len(s.events)))
    # replay from seed reproduces the projection; non-message events never change it
    s2 = Session(s.header, list(s.events), clock=lambda: 0)
    assert jsonutil.dumps(s2.derive_messages()) == jsonutil.dumps(s.derive_messages())
    before = jsonutil.dumps(s2.derive_messages())
    s2.append("feedback/record", {"text": "x"})
    s2.append("session/title", {"title": "t", "messageSeqs": [], "source": {"kind": "user"}})
    assert jsonutil.dumps(s2.derive_messages()) == before


def test_each_node_is_projected_once_and_shared_across_calls():
    s = _base()
    first = s.derive_messages()
    s.append("user/message", user_msg("three", "u3"), surface_op="append")
    second = s.derive_messages()
    assert all(a is b for a, b in zip(first, second)) and len(second) == len(first) + 1
    s.append("user/message", user_msg("r", "r"), surface_op=rep(6, 6), source_event_seqs=[6])
    third = s.derive_messages()  # rebuilt after a replace, but unchanged nodes keep their frozen objects
    assert third[0] is first[0] and third[-2]["id"] == "r"


def test_messages_view_is_an_o1_snapshot_equal_to_the_list():
    s = _base()
    view = s.messages_view()
    lst = s.derive_messages()
    assert isinstance(view, Sequence) and not isinstance(view, list)
    assert view == lst and lst == view and (view != lst) is False and view == s.messages_view()
    assert view != lst[:-1] and view != lst + [lst[0]] and view != tuple(lst) and view != "x"
    assert [m["id"] for m in view] == [m["id"] for m in lst] == ["u1", "a1", "r-c1", "u2"]
    assert view[0] is lst[0] and view[-1] is lst[-1] and view[1:3] == lst[1:3] and view[::-1] == lst[::-1]
    assert list(reversed(view)) == list(reversed(lst)) and lst[2] in view and view.index(lst[3]) == 3
    with pytest.raises(IndexError):
        view[4]
    with pytest.raises(IndexError):
        view[-5]
    with pytest.raises(TypeError):
        hash(view)
    # later appends and replaces do not change the snapshot
    text = jsonutil.dumps(view)
    s.append("user/message", user_msg("three", "u3"), surface_op="append")
    assert len(view) == 4 and view[-1] is lst[-1] and jsonutil.dumps(view) == text
    assert list(reversed(view))[0] is lst[-1] and view[1:] == lst[1:]
    s.append("user/message", user_msg("r", "r"), surface_op=rep(2, 6), source_event_seqs=[2, 3, 5, 6])
    assert jsonutil.dumps(view) == text and [m["id"] for m in s.messages_view()] == ["r", "u3"]
    # the snapshot is the caller's: mutating copies it first, the session and other views are untouched
    shared = s.messages_view()
    mine = s.messages_view()
    mine.append("x")
    mine[0] = "y"
    del mine[1]
    assert mine == ["y", "x"] and shared == s.derive_messages() and len(s.messages_view()) == 2
    mine += ["z"]
    assert mine.to_list() == ["y", "x", "z"] and jsonutil.dumps(mine) == '["y","x","z"]'
    assert pickle.loads(pickle.dumps(view)) == lst and copy.copy(view) == lst and type(copy.copy(view)) is list
    # the slow (float-exact) encoder path serialises it too
    s.append("user/message", {**user_msg("f", "f"), "meta": 1.5}, surface_op="append")
    assert jsonutil.dumps({"m": s.messages_view()}) == jsonutil.dumps({"m": s.derive_messages()})
    assert '"meta":1.5' in jsonutil.dumps(s.messages_view())


# ---------------------------------------------------------------- fixtures

def loadable_fixtures():
    out = []
    for p in session_fixture_paths():
        h, evs = load_fixture(p)
        evs = legacy.import_legacy(evs, h["id"])
        try:
            Session(h, evs, clock=lambda: 0, lenient=True)
        except SessionValidationError:
            continue
        out.append(p)
    return out


LOADABLE = loadable_fixtures()
# spec §6.1 tags these replay-only (authored stubs, stale refs, relational gaps): they must not load
REPLAY_ONLY_DIRS = ("cordis-tool-round", "minimal-preset", "web-search-round", "ralph-loop", "subagent-settlement",
                    "rec-child", "rec-pin", "authored-error", "pin-turn", "plain-turn", "shared-pin")


def test_exactly_the_replay_only_fixtures_fail_to_load():
    failing = [p for p in session_fixture_paths() if p not in LOADABLE]
    assert failing
    for p in failing:
        assert any(f"/{d}/" in str(p) for d in REPLAY_ONLY_DIRS), fixture_id(p)
    assert len(LOADABLE) >= 110


@pytest.mark.parametrize("path", LOADABLE, ids=fixture_id)
def test_fixture_derive_messages_equals_independent_projection(path):
    h, evs = load_fixture(path)
    evs = legacy.import_legacy(evs, h["id"])
    s = Session(h, evs, clock=lambda: 0, lenient=True)
    assert jsonutil.dumps(s.derive_messages()) == jsonutil.dumps(independent_projection(s.events))


@pytest.mark.parametrize("path", LOADABLE, ids=fixture_id)
def test_closers_balance_every_prefix(path):
    h, evs = load_fixture(path)
    evs = legacy.import_legacy(evs, h["id"])
    for k in range(len(evs) + 1):
        prefix = evs[:k]
        closers = repair.interrupted_turn_closers(prefix)
        rel = check_relations(prefix + closers)
        assert rel.open_turn is None and rel.open_step is None, k
        if closers:
            assert rel.open_turn is None
            Session(h, prefix + closers, clock=lambda: 0, lenient=True)
        else:
            assert prefix == [] or check_relations(prefix).open_turn is None


def test_tool_outcome_unknown_resume_reproduces_the_fixture():
    from tests.conftest import FIXTURES

    path = FIXTURES / "examples/headless-agent/tests/semantic-checkpoint-snapshots/tool-outcome-unknown/session.expected.jsonl"
    h, evs = load_fixture(path)
    crashed = evs[:5]
    closers = repair.interrupted_turn_closers(crashed)
    s = Session(h, crashed + closers, clock=lambda: 0, lenient=True)
    assert s.first_live_seq == 8
    assert jsonutil.dumps(s.events) == jsonutil.dumps(evs[:9])
    assert s.events[8]["type"] == "session/end-seed" and s.open_turn is None


@pytest.mark.parametrize("path", LOADABLE, ids=fixture_id)
def test_incremental_folds_equal_whole_log_folds(path):
    from dsh_tui.session import folds

    h, evs = load_fixture(path)
    evs = legacy.import_legacy(evs, h["id"])
    s = Session(h, evs, clock=lambda: 0, lenient=True)
    assert s.request_header() == folds.fold_request_header(s.events)
    assert s.request_context() == folds.fold_request_context(s.events)
    assert s.title() == folds.fold_title(s.events)
    assert s.todos() == folds.fold_todos(s.events)
    assert s.plan_mode() == folds.fold_plan_mode(s.events)
    assert s.end_seed_seq == folds.last_end_seed(s.events)
    titles = [e for e in s.events if e["type"] == "session/title"]
    if titles and all(t["data"]["source"]["kind"] != "user" for t in titles):
        assert s.title() == titles[-1]["data"]["title"]
    headers = [e for e in s.events if e["type"] == "request/header"]
    if headers:
        assert folds.header_equals(s.request_header(), headers[-1]["data"]["header"])


# ---------------------------------------------------------------- the immutable message objects and the view

_FROZEN_MSG = "session messages are immutable (derive_messages shares them); copy before editing"


def test_frozen_dict_and_list_refuse_every_mutator_and_copy_as_documented():
    from dsh_tui.session.surface import FrozenDict, FrozenList, freeze, thaw

    d = freeze({"a": [1, {"b": 2}], "c": "x"})
    assert type(d) is FrozenDict and type(d["a"]) is FrozenList and type(d["a"][1]) is FrozenDict
    for attempt in (lambda: d.__setitem__("a", 1), lambda: d.__delitem__("a"), lambda: d.update(a=1),
                    lambda: d.pop("a"), lambda: d.popitem(), lambda: d.clear(), lambda: d.setdefault("z", 1),
                    lambda: d.__ior__({"z": 1})):
        with pytest.raises(TypeError, match=f"^{_FROZEN_MSG.replace('(', '[(]').replace(')', '[)]')}$"):
            attempt()
    lst = d["a"]
    for attempt in (lambda: lst.__setitem__(0, 1), lambda: lst.__delitem__(0), lambda: lst.append(1),
                    lambda: lst.extend([1]), lambda: lst.insert(0, 1), lambda: lst.pop(), lambda: lst.remove(1),
                    lambda: lst.clear(), lambda: lst.sort(), lambda: lst.reverse(), lambda: lst.__iadd__([1]),
                    lambda: lst.__imul__(2)):
        with pytest.raises(TypeError, match="^session messages are immutable"):
            attempt()
    assert d == {"a": [1, {"b": 2}], "c": "x"}
    assert repr(d) == "FrozenDict({'a': FrozenList([1, FrozenDict({'b': 2})]), 'c': 'x'})"
    assert repr(lst) == "FrozenList([1, FrozenDict({'b': 2})])"
    assert copy.copy(d) is d and copy.copy(lst) is lst
    deep = copy.deepcopy(d)
    assert deep == d and type(deep) is dict and type(deep["a"]) is list and type(deep["a"][1]) is dict
    deep_list = copy.deepcopy(lst)
    assert deep_list == lst and type(deep_list) is list and type(deep_list[1]) is dict
    for value in (d, lst):
        again = pickle.loads(pickle.dumps(value))
        assert again == value and type(again) is type(value)
    # freezing shares what is already frozen; thaw copies down to the leaves and keeps scalars
    assert freeze(d) is d and freeze(lst) is lst and freeze("s") == "s" and freeze((1,)) == (1,)
    plain = thaw(d)
    assert plain == d and type(plain) is dict and type(plain["a"]) is list and type(plain["a"][1]) is dict
    assert thaw(7) == 7 and thaw(lst) == [1, {"b": 2}] and type(thaw(lst)) is list


def test_a_messages_view_reads_its_first_n_items_only():
    from dsh_tui.session.surface import MessagesView

    items = ["m0", "m1", "m2", "m3", "m4"]
    v = MessagesView(items, 3)
    assert len(v) == 3 and len(MessagesView(items)) == 5 and len(MessagesView(items, 0)) == 0
    assert [v[0], v[1], v[2], v[-1], v[-3]] == ["m0", "m1", "m2", "m2", "m0"]
    for bad in (3, 4, -4, -6):
        with pytest.raises(IndexError, match="^list index out of range$"):
            v[bad]
    assert v[True] == "m1"  # any __index__ works, as for a list
    assert v[1:] == ["m1", "m2"] and v[::-1] == ["m2", "m1", "m0"] and v[-2:] == ["m1", "m2"]
    assert type(v[1:]) is list
    whole = MessagesView(items)
    assert whole[1:] == items[1:] and whole[-1] == "m4" and list(whole) == items
    assert list(v) == ["m0", "m1", "m2"] and list(reversed(v)) == ["m2", "m1", "m0"]
    assert list(reversed(whole)) == items[::-1] and list(reversed(MessagesView(items, 1))) == ["m0"]
    assert "m2" in v and "m3" not in v and "m4" in whole
    twin = "".join(["m", "1"])  # equal, not the same object
    assert twin in v
    assert v.to_list() == ["m0", "m1", "m2"] and type(v.to_list()) is list and v.copy() == ["m0", "m1", "m2"]
    assert copy.copy(v) == ["m0", "m1", "m2"] and type(copy.copy(v)) is list
    assert repr(v) == "MessagesView(['m0', 'm1', 'm2'])"
    again = pickle.loads(pickle.dumps(v))
    assert type(again) is MessagesView and again == v and len(again) == 3
    assert items == ["m0", "m1", "m2", "m3", "m4"]


def test_a_messages_view_compares_and_adds_like_a_list():
    from dsh_tui.session.surface import MessagesView

    items = ["m0", "m1", "m2", "m3"]
    v = MessagesView(items, 2)
    assert v == ["m0", "m1"] and ["m0", "m1"] == v and v == MessagesView(["m0", "m1"]) and v == MessagesView(items, 2)  # noqa: SIM300 - the reflected comparison
    assert v == ["m0", "".join(["m", "1"])]
    assert v.__eq__(["m0"]) is False and v.__eq__(["m0", "m1", "m2"]) is False and v.__eq__(["m0", "x"]) is False
    assert v.__ne__(["m0"]) is True and v.__ne__(["m0", "m1"]) is False
    assert v != ["m0"] and v != ["m1", "m0"] and not (v != ["m0", "m1"]) and not (v != MessagesView(items, 2))  # noqa: SIM202
    assert v != ("m0", "m1") and not (v == ("m0", "m1"))  # a tuple is not a list  # noqa: SIM201
    assert v.__eq__(("m0", "m1")) is NotImplemented and v.__ne__(("m0", "m1")) is NotImplemented
    assert v + ["x"] == ["m0", "m1", "x"] and type(v + ["x"]) is list
    assert ["x"] + v == ["x", "m0", "m1"] and ("x",) + v == ["x", "m0", "m1"]
    with pytest.raises(TypeError):
        hash(v)


def test_a_messages_view_copies_on_the_first_mutation_and_never_touches_the_shared_list():
    from dsh_tui.session.surface import MessagesView

    items = ["m0", "m1", "m2", "m3"]
    cases = [
        (lambda v: v.__setitem__(0, "x"), ["x", "m1"]),
        (lambda v: v.__delitem__(0), ["m1"]),
        (lambda v: v.insert(0, "x"), ["x", "m0", "m1"]),
        (lambda v: v.append("x"), ["m0", "m1", "x"]),
        (lambda v: v.extend(["x", "y"]), ["m0", "m1", "x", "y"]),
        (lambda v: v.sort(reverse=True), ["m1", "m0"]),
        (lambda v: v.sort(key=lambda m: -int(m[1])), ["m1", "m0"]),
        (lambda v: v.reverse(), ["m1", "m0"]),
        (lambda v: v.__iadd__(["x"]), ["m0", "m1", "x"]),
        (lambda v: v.pop(), ["m0"]),
        (lambda v: v.remove("m0"), ["m1"]),
        (lambda v: v.clear(), []),
    ]
    for mutate, expected in cases:
        v = MessagesView(items, 2)
        mutate(v)
        assert v == expected and v.to_list() == expected and list(v) == expected and len(v) == len(expected)
        assert list(reversed(v)) == expected[::-1] and v[:] == expected
        if expected:
            assert v[0] == expected[0] and v[-1] == expected[-1]
        assert items == ["m0", "m1", "m2", "m3"]  # the shared list is untouched
    v = MessagesView(items, 2)
    v += ["x"]
    assert type(v) is MessagesView and v == ["m0", "m1", "x"]
    v.append("y")  # later mutations edit the caller's own copy in place
    assert v == ["m0", "m1", "x", "y"] and v.to_list() is not v._items and items == ["m0", "m1", "m2", "m3"]
    own = v.to_list()
    own.append("z")
    assert v == ["m0", "m1", "x", "y"]  # to_list of an owned view is still a copy


_BIG = 2**53 - 1  # the largest safe integer


def _ev(type_, seq, **extra):
    return {"type": type_, "seq": seq, "time": 0, "data": {}, **extra}


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (_ev("turn/start", 4, surfaceOp="append"), "seq 4: turn/start is not a surface event and cannot carry surfaceOp"),
        (_ev("turn/start", 4, surfaceOp=None), "seq 4: turn/start is not a surface event and cannot carry surfaceOp"),
        (_ev("turn/start", 4, sourceEventSeqs=[1]),
         "seq 4: turn/start is not a surface event and cannot carry sourceEventSeqs"),
        (_ev("user/message", 4), "seq 4: user/message requires a surfaceOp"),
        (_ev("tool/result", 4), "seq 4: tool/result requires a surfaceOp"),
        (_ev("assistant/message", 4), "seq 4: assistant/message requires a surfaceOp"),
        *((_ev("user/message", 4, surfaceOp=op),
           "seq 4: surfaceOp must be \"append\" or exactly {op:'replace', start, end}")
          for op in ("replace", None, ["replace", 1, 2], {"op": "append", "start": 1, "end": 2},
                     {"op": "replace", "start": 1}, {"op": "replace", "start": 1, "end": 2, "x": 0})),
        *((_ev("user/message", 4, surfaceOp=rep(start, end)),
           "seq 4: surfaceOp.start/end must be non-negative safe integers")
          for start, end in ((-1, 2), (2, -1), (_BIG + 1, 2), (2, _BIG + 1), (1.0, 2), (2, True), ("1", 2))),
        (_ev("user/message", 4, surfaceOp="append", sourceEventSeqs=(1,)), "seq 4: sourceEventSeqs must be an array"),
        (_ev("user/message", 4, surfaceOp="append", sourceEventSeqs=[]),
         "seq 4: sourceEventSeqs may be empty only on assistant/message"),
        (_ev("tool/result", 4, surfaceOp="append", sourceEventSeqs=[]),
         "seq 4: sourceEventSeqs may be empty only on assistant/message"),
        *((_ev("user/message", _BIG + 9, surfaceOp="append", sourceEventSeqs=src),
           f"seq {_BIG + 9}: sourceEventSeqs entries must be non-negative safe integers")
          for src in ([-1], [0, -1], [1, 1.0], [True], [_BIG + 1, _BIG + 1], [0, "1"])),
        # every earlier-seq and duplicate problem, including the ones a fast path must not let through
        (_ev("user/message", 3, surfaceOp="append", sourceEventSeqs=[1, 2, 3]),
         "seq 3: sourceEventSeqs must reference earlier events (3 >= 3)"),
        (_ev("user/message", 3, surfaceOp="append", sourceEventSeqs=[3]),
         "seq 3: sourceEventSeqs must reference earlier events (3 >= 3)"),
        (_ev("user/message", 3, surfaceOp="append", sourceEventSeqs=[2, 0, 4, 1]),
         "seq 3: sourceEventSeqs must reference earlier events (4 >= 3)"),
        (_ev("user/message", 5, surfaceOp="append", sourceEventSeqs=[0, 1, 1, 2]),
         "seq 5: sourceEventSeqs must not contain duplicates"),
        (_ev("user/message", 5, surfaceOp="append", sourceEventSeqs=[2, 2]),
         "seq 5: sourceEventSeqs must not contain duplicates"),
        (_ev("user/message", _BIG + 9, surfaceOp="append", sourceEventSeqs=[_BIG, _BIG]),
         f"seq {_BIG + 9}: sourceEventSeqs must not contain duplicates"),
        (_ev("user/message", 5, surfaceOp="append", sourceEventSeqs=[0, 2, 1, 0]),
         "seq 5: sourceEventSeqs must not contain duplicates"),
        # first and last as in a run of seqs, the middle not
        (_ev("user/message", 5, surfaceOp="append", sourceEventSeqs=[0, 0, 2]),
         "seq 5: sourceEventSeqs must not contain duplicates"),
        (_ev("user/message", 5, surfaceOp="append", sourceEventSeqs=[0, 7, 2]),
         "seq 5: sourceEventSeqs must reference earlier events (7 >= 5)"),
    ],
)
def test_check_markers_names_the_first_problem_exactly(event, message):
    from dsh_tui.session.surface import check_markers

    with pytest.raises(SessionValidationError) as info:
        check_markers(event)
    assert str(info.value) == message and info.value.code == "INVALID_SURFACE"


@pytest.mark.parametrize(
    ("event", "op"),
    [
        (_ev("turn/start", 4), None),
        (_ev("user/message", 4, surfaceOp="append"), "append"),
        (_ev("user/message", 1, surfaceOp="append", sourceEventSeqs=[0]), "append"),
        (_ev("user/message", 4, surfaceOp="append", sourceEventSeqs=[0, 1, 2, 3]), "append"),
        (_ev("user/message", 4, surfaceOp="append", sourceEventSeqs=[1, 2]), "append"),
        (_ev("user/message", 4, surfaceOp="append", sourceEventSeqs=[3, 0, 2]), "append"),
        (_ev("user/message", 9, surfaceOp="append", sourceEventSeqs=[8, 0]), "append"),
        (_ev("assistant/message", 4, surfaceOp="append", sourceEventSeqs=[]), "append"),
        (_ev("user/message", _BIG + 1, surfaceOp=rep(0, _BIG), sourceEventSeqs=[_BIG, 0]), rep(0, _BIG)),
        (_ev("tool/result", 6, surfaceOp=rep(5, 5), sourceEventSeqs=[5]), rep(5, 5)),
    ],
)
def test_check_markers_returns_the_surface_op(event, op):
    from dsh_tui.session.surface import check_markers

    assert check_markers(event) == op


def test_plan_names_the_change_and_apply_commits_it():
    """``plan`` returns None, ``("append", seq)`` or ``("replace", seq, i, j)`` and changes nothing."""
    from dsh_tui.session.surface import SurfaceFold

    s = _base()
    s.append("user/message", user_msg("z", "z"), surface_op=rep(3, 5), source_event_seqs=[3, 5])
    fold = SurfaceFold(lambda q: s.events[q])
    plans = [fold.plan(ev) if fold.fold(ev) is None else None for ev in s.events[:7]]
    assert plans == [None, None, ("append", 2), ("append", 3), None, ("append", 5), ("append", 6)]
    assert fold.plan(s.events[7]) == ("replace", 7, 1, 2) and fold.nodes == [2, 3, 5, 6]
    fold.apply(fold.plan(s.events[7]))
    assert fold.nodes == [2, 7, 6] and fold.replace_generation == 1


@pytest.mark.parametrize(
    ("type_", "op", "src", "message"),
    [
        ("user/message", rep(4, 5), [4, 5], "seq 7: surface replace start 4 is not on the surface"),
        ("user/message", rep(2, 4), [2, 3, 4], "seq 7: surface replace end 4 is not on the surface"),
        ("user/message", rep(5, 3), [3, 5], "seq 7: surface replace start 5 comes after end 3"),
        ("user/message", rep(2, 5), [2, 5],
         "seq 7: surface replace must cite every shadowed seq in sourceEventSeqs (missing [3])"),
        ("tool/result", rep(3, 5), [3, 5], "seq 7: a tool/result replacement must shadow exactly one node"),
        ("tool/result", rep(2, 2), [2], "seq 7: a tool/result replacement must shadow a tool/result"),
        ("tool/result ", rep(5, 5), [5], "seq 7: a tool/result replacement may change only the tool-result content"),
    ],
)
def test_plan_names_each_problem_exactly(type_, op, src, message):
    s = _base()
    data = {"turn": 1, "step": 1, "message": tool_msg("c1", "short")} if type_ == "tool/result" else user_msg()
    if type_ == "tool/result ":  # another message id: more than the content
        type_, data = "tool/result", {"turn": 1, "step": 1, "message": tool_msg("c1", "short", mid="other")}
    with pytest.raises(SessionValidationError) as info:
        s.append(type_, data, surface_op=op, source_event_seqs=src)
    assert str(info.value) == message and info.value.code == "INVALID_SURFACE"
    s = _base()
    s.append("user/message", user_msg("y", "y"), surface_op=rep(3, 6), source_event_seqs=[3, 5, 6])
    with pytest.raises(SessionValidationError) as info:
        fold_surface(s.events[5:], base_seq=5)
    assert str(info.value) == "seq 7: surface replace range 3..6 lies before the loaded window"


def test_a_window_projects_with_its_base_seq():
    """A window of the log (its first event not seq 0) folds and projects like the whole log's tail, a
    tool/result replacement inside it included."""
    s = _base()
    pruned = tool_msg("c1", "[pruned]")
    s.append("tool/result", {"turn": 1, "step": 1, "message": pruned}, surface_op=rep(5, 5), source_event_seqs=[5])
    window = s.events[5:]
    assert fold_surface(window, base_seq=5).nodes == [7, 6]
    assert derive_messages_from(window, base_seq=5) == [pruned, user_msg("two", "u2")]
