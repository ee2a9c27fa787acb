"""Session: appends, validation (envelope, payload, relations, surface), end-seed, observers, folds."""

from __future__ import annotations

import copy
import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_tui.session import jsonutil
from dsh_tui.session.errors import SessionValidationError
from dsh_tui.session.folds import canonical_header, header_equals
from dsh_tui.session.headers import make_header
from dsh_tui.session.log import Session
from tests.session.helpers import asst_msg, chunk_data, new_session, open_step, tool_msg, user_msg


def test_append_assigns_seq_time_and_dsh_key_order():
    s = new_session()
    e0 = s.append("turn/start", {"turn": 1})
    assert e0 == {"type": "turn/start", "seq": 0, "time": 1000, "data": {"turn": 1}}
    s.append("step/start", {"turn": 1, "step": 1})
    s.append("assistant/chunk", chunk_data(s))
    e = s.append("assistant/message", {"turn": 1, "step": 1, "message": asst_msg()}, surface_op="append",
                 source_event_seqs=[2])
    assert list(e) == ["type", "seq", "time", "data", "sourceEventSeqs", "surfaceOp"]
    assert [x["seq"] for x in s.events] == [0, 1, 2, 3]
    assert [x["time"] for x in s.events] == [1000, 1001, 1002, 1003]
    assert s.first_live_seq == 0 and s.id == "sess-1" and s.cwd == "/work"


def test_seed_gets_end_seed_unless_it_already_ends_with_one():
    s = new_session(seed=[])
    assert [e["type"] for e in s.events] == ["session/end-seed"] and s.events[0]["seq"] == 0
    assert s.first_live_seq == 0 and s.end_seed_seq == 0
    seed = [{"type": "turn/start", "seq": 0, "time": 0, "data": {"turn": 1}},
            {"type": "turn/end", "seq": 1, "time": 0, "data": {"turn": 1, "reason": {"kind": "completed"}}}]
    s = new_session(seed=seed)
    assert [e["type"] for e in s.events] == ["turn/start", "turn/end", "session/end-seed"]
    assert s.first_live_seq == 2 and s.events[2]["data"] == {}
    s2 = new_session(seed=s.events)
    assert len(s2.events) == 3 and s2.first_live_seq == 3
    assert new_session().events == []


def test_validation_failure_leaves_log_unchanged():
    s = new_session()
    open_step(s)
    before = copy.deepcopy(s.events)
    gen = s.replace_generation
    for bad in [
        lambda: s.append("turn/start", {"turn": 2}),
        lambda: s.append("assistant/chunk", {"turn": 1, "step": 2, "chunk": {"type": "text-delta", "index": 0,
                                                                               "text": "x"}}),
        lambda: s.append("user/message", user_msg()),  # no surfaceOp
        lambda: s.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"x": float("nan")}}),
        lambda: s.append("tool/result", {"turn": 1, "step": 1, "message": tool_msg("c")}, surface_op="append"),
    ]:
        with pytest.raises(SessionValidationError):
            bad()
        assert s.events == before and s.replace_generation == gen


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"usage": {"inputTokens": float("nan")}}, "data.usage.inputTokens: NaN is not lossless JSON"),
        ({"v": -0.0}, "data.v: -0 is not lossless JSON"),
        ({"v": (1,)}, "data.v: tuple"),
        ({"v": {1: 2}}, "data.v: key 1"),
        ({"v": float("inf")}, "data.v: Infinity"),
        ({"v": 2**60}, "data.v: integer"),
    ],
)
def test_lossless_rejections_at_append(data, message):
    s = new_session()
    with pytest.raises(SessionValidationError, match="^" + message.replace("(", r"\(").replace(".", r"\.")):
        s.append("feedback/record", data)
    open_step(s)
    with pytest.raises(SessionValidationError, match=message.split(":")[1].strip().split(" ")[0]):
        s.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "usage", "usage": data}})
    assert len(s.events) == 2


def test_chunk_fast_path_still_checks_lossless_and_relations():
    s = new_session()
    with pytest.raises(SessionValidationError, match="outside an open step"):
        s.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "a"}})
    open_step(s)
    with pytest.raises(SessionValidationError, match="-0"):
        s.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": -0.0, "text": "a"}})
    with pytest.raises(SessionValidationError, match="set"):
        s.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": {1}}})
    with pytest.raises(SessionValidationError, match="integer"):
        s.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 2**53, "text": "a"}})
    # an unsafe integer in any chunk field, not only the index (the fast path used to check the index alone)
    with pytest.raises(SessionValidationError, match=r"data\.chunk\.extra: integer"):
        s.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "a",
                                                                      "extra": -(2**60)}})
    with pytest.raises(SessionValidationError, match="time must be integer"):
        Session(s.header, clock=lambda: 1.5).append("turn/start", {"turn": 1})
    s.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "a"}})
    assert len(s.events) == 3
    clocked = new_session(clock=lambda: 7.0)  # an integral float clock is accepted as an int on the fast path too
    open_step(clocked)
    ev = clocked.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0,
                                                                            "text": "a"}})
    assert ev["time"] == 7 and type(ev["time"]) is int
    with pytest.raises(SessionValidationError, match="safe integer"):
        Session(s.header, clock=lambda: 2**53)._now()
    late = new_session(clock=iter([1, 2, 2**53]).__next__)
    open_step(late)
    with pytest.raises(SessionValidationError, match="safe integer"):
        late.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0,
                                                                        "text": "a"}})
    assert late.events[-1]["type"] == "step/start"


# ---------------------------------------------------------------- relational rules (§2.6)

def _run(steps):
    s = new_session()
    for t, d, kw in steps[:-1]:
        s.append(t, d, **kw)
    t, d, kw = steps[-1]
    n = len(s.events)
    with pytest.raises(SessionValidationError) as err:
        s.append(t, d, **kw)
    assert len(s.events) == n
    return str(err.value)


TS = ("turn/start", {"turn": 1}, {})
SS = ("step/start", {"turn": 1, "step": 1}, {})
SE = ("step/end", {"turn": 1, "step": 1}, {})
TE = ("turn/end", {"turn": 1, "reason": {"kind": "completed"}}, {})
AM = ("assistant/message", {"turn": 1, "step": 1, "message": asst_msg(calls=["c1"])}, {"surface_op": "append"})
TC = ("tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "bash", "arguments": "{}"}, {})
TR = ("tool/result", {"turn": 1, "step": 1, "message": tool_msg("c1")}, {"surface_op": "append"})


@pytest.mark.parametrize(
    ("steps", "needle"),
    [
        ([("turn/start", {"turn": 2}, {})], "must open turn 1"),
        ([TS, TS], "while turn 1 is open"),
        ([TS, TE, ("turn/start", {"turn": 1}, {})], "must open turn 2"),
        ([TE], "without an open turn"),
        ([TS, ("turn/end", {"turn": 2, "reason": {"kind": "completed"}}, {})], "must close turn 1"),
        ([TS, SS, TE], "while step 1 is open"),
        ([SS], "outside a turn"),
        ([TS, ("step/start", {"turn": 1, "step": 2}, {})], "must open step 1"),
        ([TS, SS, SS], "while step 1 is open"),
        ([TS, SS, SE, ("step/start", {"turn": 1, "step": 1}, {})], "must open step 2"),
        ([TS, ("step/end", {"turn": 1, "step": 1}, {})], "outside an open step"),
        ([TS, SS, ("step/end", {"turn": 1, "step": 2}, {})], "must name the open turn/step"),
        ([TS, SS, ("assistant/chunk", {"turn": 2, "step": 1, "chunk": {}}, {})], "must name the open"),
        ([TS, ("assistant/message", {"turn": 1, "step": 1, "message": asst_msg()}, {"surface_op": "append"})],
         "outside an open step"),
        ([TS, SS, ("tool/call", {"turn": 1, "step": 2, "callId": "c", "name": "n", "arguments": ""}, {})],
         "must name the open"),
        ([TS, SS, AM, ("tool/result", {"turn": 1, "step": 1, "message": tool_msg("c1")}, {"surface_op": "append"})],
         "has no tool/call"),
        ([TS, SS, AM, TC, SE, SS.__class__(("step/start", {"turn": 1, "step": 2}, {})),
          ("tool/result", {"turn": 1, "step": 2, "message": tool_msg("c1")}, {"surface_op": "append"})],
         "has no tool/call"),
        ([("tool/result", {"turn": 1, "step": 1, "message": tool_msg("c1")}, {"surface_op": "append"})],
         "outside a turn"),
        ([TS, SS, AM, TC, TR, TR], "already answered"),
        ([TS, SS, AM, TC, TR, ("tool/result", {"turn": 1, "step": 1, "message": tool_msg("c1", mid="r-c1-b", is_error=True),
                                                "error": {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}},
                               {"surface_op": "append"})], "already answered"),
        ([("todo/write", {"todos": []}, {})], "outside a turn"),
        ([("request/context", {"provider": "p", "model": "m"}, {})], "outside a turn"),
        ([("request/header", {"header": {"config": {"provider": "p", "model": "m"}}, "reason": "initial"}, {})],
         "outside a turn"),
    ],
)
def test_relational_rules(steps, needle):
    assert needle in _run(steps)


def test_relational_rules_accept_the_canonical_sequences():
    s = new_session()
    for t, d, kw in [TS, SS, AM, TC]:
        s.append(t, d, **kw)
    s.append("tool/result", {"turn": 1, "step": 1, "message": tool_msg("c1")}, surface_op="append",
             source_event_seqs=[3])
    # synthetic TOOL_NOT_STARTED result needs no tool/call
    s.append("tool/result", {"turn": 1, "step": 1, "message": tool_msg("c9", is_error=True),
                             "error": {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}},
             surface_op="append")
    # plugins, user messages and end-seed are unconstrained
    s.append("user/message", user_msg(), surface_op="append")
    s.append(*SE[:2])
    s.append(*TE[:2])
    s.append("session/title", {"title": "t", "messageSeqs": [], "source": {"kind": "fallback"}})
    s.append("user/message", user_msg(mid="u2"), surface_op="append")
    s.append("brand-new/plugin-event", {"anything": [1, 2]})
    s.append("session/end-seed", {})
    assert s.open_turn is None and s.last_turn == 1


# ---------------------------------------------------------------- payload shape (§3.7)

@pytest.mark.parametrize(
    ("type_", "data", "kw", "needle"),
    [
        ("user/message", {**user_msg(), "id": ""}, {"surface_op": "append"}, "data.id"),
        ("user/message", {**user_msg(), "role": "assistant"}, {"surface_op": "append"}, "data.role"),
        ("user/message", {**user_msg(), "source": {"kind": ""}}, {"surface_op": "append"}, "source.kind"),
        ("user/message", {**user_msg(), "content": "text"}, {"surface_op": "append"}, "content must be an array"),
        ("assistant/message", {"turn": 1, "step": 1, "message": {**asst_msg(), "source": {"kind": "model",
                                                                                          "provider": "p"}}},
         {"surface_op": "append"}, "source.model"),
        ("assistant/message", {"turn": 1, "step": 1, "message": {**asst_msg(), "source": {"kind": "user"}}},
         {"surface_op": "append"}, "'model'"),
        ("tool/result", {"turn": 1, "step": 1, "message": {**tool_msg("c"), "source": {"kind": "tool",
                                                                                      "callId": "d"}}},
         {"surface_op": "append"}, "exactly one tool-result block"),
        ("tool/result", {"turn": 1, "step": 1, "message": {**tool_msg("c"), "content": []}},
         {"surface_op": "append"}, "exactly one tool-result block"),
        ("request/header", {"header": {"config": {"provider": "", "model": "m"}}, "reason": "initial"}, {},
         "config.provider"),
        ("request/header", {"header": {"config": {"provider": "p", "model": "m"},
                                       "adapterDefaults": {"maxTokens": True}}, "reason": "initial"}, {},
         "needs config.maxTokens"),
        ("request/header", {"header": {"config": {"provider": "p", "model": "m", "maxTokens": 5},
                                       "adapterDefaults": {"maxTokens": False}}, "reason": "initial"}, {},
         "must be true"),
        ("request/header", {"header": {"config": {"provider": "p", "model": "m"},
                                       "adapterDefaults": {"temperature": True}}, "reason": "initial"}, {},
         "may only hold"),
        ("request/header", {"header": {"config": {"provider": "p", "model": "m"}}, "reason": "fallback"}, {},
         "fallback"),
        ("request/header", {"header": {"config": {"provider": "p", "model": "m"}}, "reason": "other"}, {},
         "data.reason"),
        ("request/header-delta", {}, {}, "legacy"),
        ("mode/set", {}, {}, "legacy"),
        ("text-chunks", {}, {}, "storage row tag"),
        ("", {}, {}, "non-empty string"),
        ("turn/start", [1], {}, "data must be an object"),
    ],
)
def test_payload_shapes(type_, data, kw, needle):
    s = new_session()
    open_step(s)
    with pytest.raises(SessionValidationError, match=needle.replace("(", r"\(")):
        s.append(type_, data, **kw)
    assert len(s.events) == 2


# ---------------------------------------------------------------- seed envelope (§1.1, §10.2)

def _seed_ok():
    return [{"type": "turn/start", "seq": 0, "time": 0, "data": {"turn": 1}},
            {"type": "step/start", "seq": 1, "time": 0, "data": {"turn": 1, "step": 1}},
            {"type": "assistant/chunk", "seq": 2, "time": 0,
             "data": {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "a"}}},
            {"type": "assistant/chunk", "seq": 3, "time": 0,
             "data": {"turn": 1, "step": 1, "chunk": {"type": "usage", "usage": {"inputTokens": 1}}}}]


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda e: e[2].update(extra=1), "unknown envelope key"),
        (lambda e: e[2].update(ignorable=False), "ignorable"),
        (lambda e: e[0].update(ignorable=1), "ignorable"),
        (lambda e: e[2].update(seq=True), "seq must equal"),
        (lambda e: e[2].update(seq=3), "seq must equal"),
        (lambda e: e[2].update(seq=2.0), "seq must equal"),
        (lambda e: e[2].update(time=2**53), "time must be a safe integer"),
        (lambda e: e[2].update(time=True), "time must be a safe integer"),
        (lambda e: e[2].update(time=1.5), "time must be a safe integer"),
        (lambda e: e[2].pop("data"), "data is required"),
        (lambda e: e[3]["data"]["chunk"]["usage"].update(inputTokens=-0.0), "seq 3: data.chunk.usage.inputTokens: -0"),
        (lambda e: e[2]["data"]["chunk"].update(index=-0.0), "-0"),
        (lambda e: e[1].update(data={"turn": 1, "step": float("nan")}), "NaN"),
        (lambda e: e[2].update(surfaceOp="append"), "not a surface event"),
        (lambda e: e[0].update(sourceEventSeqs=[0]), "cannot carry sourceEventSeqs"),
        (lambda e: e[2].update(type=7), "type must be"),
        (lambda e: e.__setitem__(2, [1]), "not an object"),
        (lambda e: e[3]["data"].update(step=2), "must name the open"),
    ],
)
def test_seed_validation_rejections(mutate, needle):
    seed = _seed_ok()
    new_session(seed=copy.deepcopy(seed))
    mutate(seed)
    with pytest.raises(SessionValidationError, match=needle):
        new_session(seed=seed)


def test_unknown_ignorable_events_survive_unchanged():
    seed = _seed_ok()
    odd = {"type": "future/thing", "seq": 4, "time": 0, "data": {"x": [1, {"y": None}]}, "ignorable": True}
    seed.append(odd)
    s = new_session(seed=seed)
    assert s.events[4] is odd and s.events[4] == {"type": "future/thing", "seq": 4, "time": 0,
                                                  "data": {"x": [1, {"y": None}]}, "ignorable": True}


def test_unknown_content_blocks_survive_and_project_verbatim():
    s = new_session()
    msg = {**user_msg(), "content": [{"type": "hologram", "payload": {"a": 1}}, {"type": "text", "text": "t"}]}
    s.append("user/message", msg, surface_op="append")
    assert jsonutil.dumps(s.derive_messages()) == jsonutil.dumps([msg])


# ---------------------------------------------------------------- observers

def test_observers_in_order_unsubscribe_and_no_reentrancy():
    s = new_session()
    seen = []
    s.subscribe(lambda sess, ev: seen.append(("a", ev["seq"])))
    unsub = s.subscribe(lambda sess, ev: seen.append(("b", ev["seq"])))
    s.append("turn/start", {"turn": 1})
    unsub()
    s.append("step/start", {"turn": 1, "step": 1})
    assert seen == [("a", 0), ("b", 0), ("a", 1)]

    errors = []

    def reenter(sess, ev):
        try:
            sess.append("feedback/record", {"text": "x"})
        except SessionValidationError as e:
            errors.append(str(e))

    s.subscribe(reenter)
    s.append("assistant/chunk", chunk_data(s))
    assert errors and "re-entrant" in errors[0]
    assert len(s.events) == 3
    s.append("feedback/record", {"text": "after"})  # allowed again once notification is over
    assert len(s.events) == 4


def test_observer_exception_does_not_starve_later_observers():
    s = new_session()
    seen = []

    def boom(sess, ev):
        raise RuntimeError("observer failed")

    s.subscribe(boom)
    s.subscribe(lambda sess, ev: seen.append(ev["seq"]))
    with pytest.raises(RuntimeError):
        s.append("turn/start", {"turn": 1})
    assert seen == [0] and len(s.events) == 1


# ---------------------------------------------------------------- folds

def test_request_header_context_title_todos_and_other_folds():
    s = new_session(seed=[])
    assert s.request_header() is None and s.request_context() is None and s.title() is None and s.todos() == []
    open_step(s)
    h = {"config": {"provider": "p", "model": "m", "maxTokens": 5}, "adapterDefaults": {"maxTokens": True},
         "system": "", "tools": [], "messagePrefix": ["x"]}
    s.append("request/header", {"header": h, "reason": "initial"})
    assert s.request_header() == {"config": {"provider": "p", "model": "m", "maxTokens": 5},
                                  "adapterDefaults": {"maxTokens": True}}
    s.append("request/context", {"provider": "p", "model": "m", "contextWindow": 10})
    assert s.request_context()["contextWindow"] == 10
    s.append("session/title", {"title": "first", "messageSeqs": [], "source": {"kind": "fallback"}})
    s.append("session/title", {"title": "mine", "messageSeqs": [], "source": {"kind": "user"}})
    s.append("session/title", {"title": "llm", "messageSeqs": [], "source": {"kind": "provider", "provider": "p"}})
    assert s.title() == "mine"
    s.append("todo/write", {"todos": [{"content": "a", "status": "pending"}]})
    s.append("todo/write", {"todos": [{"content": "b", "status": "completed"}]})
    assert s.todos() == [{"content": "b", "status": "completed"}]
    assert s.plan_mode() is False
    s.append("plan/mode", {"active": True})
    assert s.plan_mode() is True
    assert s.agent_preset() is None
    s.append("agent-preset/selected", {"agentPreset": "reviewer"})
    assert s.agent_preset() == "reviewer"
    assert Session(make_header("x", agent_preset="base")).agent_preset() == "base"


def test_canonical_header_and_header_equals():
    a = {"config": {"provider": "p", "model": "m", "stop": ["a", "b"], "temperature": 1},
         "adapterDefaults": {"reasoningEffort": False}, "system": "sys", "tools": [{"name": "t", "description": "d",
                                                                                     "parameters": {}}]}
    assert canonical_header(a) == {"config": a["config"], "system": "sys", "tools": a["tools"]}
    b = copy.deepcopy(a)
    b["messagePrefix"] = [1]
    b["config"]["temperature"] = 1.0
    assert header_equals(a, b)
    for mutate in (
        lambda h: h["config"].update(stop=["a"]),
        lambda h: h["config"].update(model="m2"),
        lambda h: h["config"].pop("temperature"),
        lambda h: h.update(system="other"),
        lambda h: h["tools"][0].update(description="e"),
        lambda h: h.update(adapterDefaults={"reasoningEffort": True}) or h["config"].update(reasoningEffort="high"),
        lambda h: h["config"].update(temperature=True),
    ):
        c = copy.deepcopy(a)
        mutate(c)
        assert not header_equals(a, c)
    assert header_equals({"config": {"provider": "p", "model": "m"}, "system": "", "tools": []},
                         {"config": {"provider": "p", "model": "m"}})


# ---------------------------------------------------------------- immutable shared messages

def test_derive_messages_is_an_o1_snapshot_not_a_copy():
    from dsh_tui.session.surface import MessagesView

    s = new_session()
    for i in range(200):
        s.append("user/message", user_msg(f"m{i}", f"u{i}"), surface_op="append")
    a = s.derive_messages()
    b = s.derive_messages()
    # both snapshots read the session's one cache list (nothing was copied), yet each is the caller's
    assert type(a) is MessagesView and a._items is b._items and not a._own
    assert a == b == a.to_list() and type(a.to_list()) is list and len(a) == 200
    s.append("user/message", user_msg("later", "u-later"), surface_op="append")
    assert len(a) == 200 and len(s.derive_messages()) == 201 and s.derive_messages()._items is a._items
    a.append("mine")
    assert len(a) == 201 and a[-1] == "mine" and s.derive_messages()[-1]["id"] == "u-later"


def test_derived_messages_are_shared_immutable_and_serializable():
    s = new_session()
    s.append("user/message", user_msg(), surface_op="append")
    m1 = s.derive_messages()
    m2 = s.derive_messages()
    assert m1 is not m2 and m1[0] is m2[0]
    m1.append("mine")  # the returned list is the caller's
    assert len(s.derive_messages()) == 1
    msg = m2[0]
    for attempt in (lambda: msg.__setitem__("id", "x"), lambda: msg["content"].append(1),
                    lambda: msg["content"][0].update(text="y"), lambda: msg.pop("id"), lambda: msg.clear(),
                    lambda: msg["source"].setdefault("k", 1), lambda: msg["content"].sort()):
        with pytest.raises(TypeError):
            attempt()
    assert jsonutil.dumps(m2) == jsonutil.dumps([user_msg()])
    assert json.dumps(m2.to_list(), separators=(",", ":"), ensure_ascii=False) == jsonutil.dumps([user_msg()])
    assert orjson.dumps(m2.to_list()).decode() == jsonutil.dumps([user_msg()])
    thawed = copy.deepcopy(msg)
    assert thawed == user_msg() and type(thawed) is dict and type(thawed["content"][0]) is dict
    thawed["content"].append({"type": "text", "text": "edit"})  # a deep copy is the caller's to edit
    assert len(msg["content"]) == 1 and copy.copy(msg) is msg
    import pickle

    again = pickle.loads(pickle.dumps(msg))
    assert again == msg
    with pytest.raises(TypeError):
        again["id"] = "x"
    assert s.events[0]["data"] == user_msg()  # the log is untouched


# ---------------------------------------------------------------- trusted packed runs (cold-load fast path)

def test_packed_runs_load_the_same_log_and_still_check_relations():
    from dsh_tui.session import legacy, rows
    from tests.fixture_logs import load_fixture, session_fixture_paths

    checked = 0
    for p in session_fixture_paths():
        h, evs = load_fixture(p)
        lines = rows.pack_batch(evs)
        flat, runs = rows.expand_lines_with_runs(lines)
        assert flat == evs
        assert all(flat[i]["seq"] == i and n >= 3 for i, n in runs)
        evs = legacy.import_legacy(evs, h["id"])
        try:
            plain = Session(h, evs, clock=lambda: 0, lenient=True)
        except SessionValidationError:
            with pytest.raises(SessionValidationError):
                Session(h, evs, clock=lambda: 0, lenient=True, packed_runs=runs)
            continue
        fast = Session(h, evs, clock=lambda: 0, lenient=True, packed_runs=runs)
        assert fast.events == plain.events and fast.surface_nodes == plain.surface_nodes
        checked += bool(runs)
    assert checked >= 40


def test_packed_runs_outside_the_open_step_are_rejected():
    from dsh_tui.session import rows

    seed = [{"type": "turn/start", "seq": 0, "time": 0, "data": {"turn": 1}},
            {"type": "step/start", "seq": 1, "time": 0, "data": {"turn": 1, "step": 1}}]
    row = {"type": "text-chunks", "seq0": 2, "time0": 0,
           "data": {"turn": 1, "step": 2, "index": 0, "dt": [0, 0], "texts": ["a", "b", "c"]}}
    flat, runs = rows.expand_lines_with_runs([*seed, row])
    assert runs == [(2, 3)]
    with pytest.raises(SessionValidationError, match="must name the open"):
        new_session(seed=flat, packed_runs=runs)
    # a span whose boundaries do not match the list falls back to per-event checks
    row["data"]["step"] = 1
    flat, _ = rows.expand_lines_with_runs([*seed, row])
    new_session(seed=flat, packed_runs=[(2, 3)])
    flat[4] = {**flat[4], "seq": 9}
    with pytest.raises(SessionValidationError, match="seq must equal"):
        new_session(seed=flat, packed_runs=[(2, 3)])


# ---------------------------------------------------------------- relational rules vs an independent model

def _model_accepts(state, kind, turn, step, call):
    """A straightforward restatement of §2.6 over (open turn, last turn, open step, last step, step calls,
    calls answered in the step): one append-origin result per call."""
    ot, lt, os_, ls, calls, answered = state
    if kind == "turn/start":
        return ot is None and turn == lt + 1
    if kind == "turn/end":
        return ot is not None and turn == ot and os_ is None
    if kind == "step/start":
        return ot is not None and turn == ot and os_ is None and step == ls + 1
    if kind in ("step/end", "assistant/chunk", "tool/call"):
        return ot is not None and os_ is not None and (turn, step) == (ot, os_)
    if kind == "tool/result":
        return (ot is not None and os_ is not None and (turn, step) == (ot, os_) and call in calls
                and call not in answered)
    if kind in ("todo/write", "request/context"):
        return ot is not None
    return True  # user/message, plugins, end-seed


def _model_apply(state, kind, turn, step, call):
    ot, lt, os_, ls, calls, answered = state
    if kind == "turn/start":
        return (turn, turn, None, 0, frozenset(), frozenset())
    if kind == "turn/end":
        return (None, lt, None, ls, frozenset(), frozenset())
    if kind == "step/start":
        return (ot, lt, step, step, frozenset(), frozenset())
    if kind == "step/end":
        return (ot, lt, None, ls, frozenset(), frozenset())
    if kind == "tool/call":
        return (ot, lt, os_, ls, calls | {call}, answered)
    if kind == "tool/result":
        return (ot, lt, os_, ls, calls, answered | {call})
    return state


REL_KINDS = ["turn/start", "turn/end", "step/start", "step/end", "assistant/chunk", "tool/call", "tool/result",
             "todo/write", "request/context", "feedback/record"]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(REL_KINDS), st.integers(0, 3), st.integers(0, 3),
                          st.sampled_from(["a", "b"])), max_size=40))
def test_relational_rules_match_an_independent_model(script):
    s = new_session()
    state = (None, 0, None, 0, frozenset(), frozenset())
    for kind, dturn, dstep, call in script:
        # bias towards plausible numbers: offsets from the model's current view
        turn = (state[0] if state[0] is not None else state[1]) + (dturn - 1 if dturn else 0) + (kind == "turn/start")
        step = (state[2] if state[2] is not None else state[3]) + (dstep - 1 if dstep else 0) + (kind == "step/start")
        if kind in ("turn/start",):
            data = {"turn": turn}
        elif kind == "turn/end":
            data = {"turn": turn, "reason": {"kind": "completed"}}
        elif kind in ("step/start", "step/end"):
            data = {"turn": turn, "step": step}
        elif kind == "assistant/chunk":
            data = {"turn": turn, "step": step, "chunk": {"type": "text-delta", "index": 0, "text": "x"}}
        elif kind == "tool/call":
            data = {"turn": turn, "step": step, "callId": call, "name": "n", "arguments": "{}"}
        elif kind == "tool/result":
            data = {"turn": turn, "step": step, "message": tool_msg(call)}
        elif kind == "todo/write":
            data = {"todos": []}
        elif kind == "request/context":
            data = {"provider": "p", "model": "m"}
        else:
            data = {"text": "x"}
        kw = {"surface_op": "append"} if kind == "tool/result" else {}
        expected = _model_accepts(state, kind, turn, step, call)
        n = len(s.events)
        try:
            s.append(kind, data, **kw)
            accepted = True
        except SessionValidationError:
            accepted = False
            assert len(s.events) == n
        assert accepted == expected, (kind, turn, step, state)
        if accepted:
            state = _model_apply(state, kind, turn, step, call)
        assert (s.open_turn, s.last_turn, s.open_step) == state[:3]
    # the appended log re-validates as a seed
    assert Session(s.header, list(s.events), clock=lambda: 0).events[: len(s.events)] == s.events
