"""The subagents built-in plugin: dsh's tool schemas, child sessions through the agent host, settlement."""

from __future__ import annotations

import json

import pytest

from dsh_tui.extensions.subagents import children as ch
from dsh_tui.extensions.subagents import texts
from dsh_tui.llm import scripted
from dsh_tui.llm.scripted import ScriptedProvider
from dsh_tui.runtime.host import AgentHost, HostSpec
from dsh_tui.session.content import tool_result_block
from dsh_tui.store.open import open_store
from tests.conftest import FIXTURES, REPO

SNAPSHOTS = FIXTURES / "examples" / "acp-agent" / "tests" / "snapshots"


def _recorded_schemas() -> dict[str, dict]:
    out = {}
    for path, _key in ((SNAPSHOTS / "advanced-toolchain" / "tool-schemas.expected.json", None),
                      (SNAPSHOTS / "subagent-continuable-inheritance" / "tool-schemas.1.expected.json", None)):
        data = json.loads(path.read_text())
        lists = [data] if isinstance(data, list) else [v for v in data.values() if isinstance(v, list)]
        for items in lists:
            for t in items:
                if isinstance(t, dict):
                    out.setdefault(t["name"], t)
    return out


async def _host(tmp_path, provider, **kw) -> AgentHost:
    return await AgentHost.open(HostSpec(root=None, store=open_store(tmp_path / "root"), cwd=tmp_path,
                                         provider=provider, model="m", preset="full-access", persona=None,
                                         plugins=(), **kw))


async def test_tool_schemas_are_dshs(tmp_path):
    host = await _host(tmp_path, ScriptedProvider([], name="mock"))
    try:
        ours = {t["name"]: t for t in host.agent.tools.schemas()}
        recorded = _recorded_schemas()
        # dsh 0.1's subagent model (docs/tools.md, "dsh 0.2's tool set": 0.2 changed it; not ported yet)
        for name in ("subagent", "subagent_fork", "send_message", "list_agents"):
            assert ours[name] == recorded[name], name
        # interrupt_agent means the same in both: its text is dsh 0.2's
        dsh02 = {t["name"]: t for t in json.loads((REPO / "tests" / "fixtures" / "dsh02-request.headless.json")
                                                  .read_text())["body"]["tools"]}["interrupt_agent"]
        assert ours["interrupt_agent"] == {"name": "interrupt_agent", "description": dsh02["description"],
                                           "parameters": dsh02["input_schema"]}
        assert "report" not in ours  # only continuable children report
    finally:
        await host.close()


async def test_report_is_only_in_continuable_children_and_matches_dsh(tmp_path):
    recorded = _recorded_schemas()["report"]
    calls = [scripted.call("c1", "subagent", {"description": "d", "prompt": "p"}),
             scripted.text("started")]
    child_script = [scripted.text("CHILD")]
    provider = _TreeProvider(calls, [child_script])
    host = await _host(tmp_path, provider)
    try:
        seen = {}

        def watch(child):
            if child.agent is not None:
                seen.setdefault(child.id, {t["name"]: t for t in child.agent.tools.schemas()})

        off = host.subagents.watch(watch)
        host.agent.followup("go")
        await host.agent.wait_idle()
        for c in list(host.subagents.children.values()):
            if c.closing is not None:
                await c.closing
        await host.agent.wait_idle()
        off()
    finally:
        await host.close()
    (tools,) = seen.values()
    assert tools["report"] == recorded


class _TreeProvider(ScriptedProvider):
    """A scripted root whose children get the next script of ``children`` in creation order."""

    def __init__(self, script, children):
        super().__init__(script, name="mock")
        self._children = list(children)

    def child_provider(self, child_id):
        p = _TreeProvider(self._children.pop(0) if self._children else [], [])
        p._children = self._children
        return p


@pytest.mark.parametrize("max_depth", [0])
async def test_depth_limit_from_config(tmp_path, max_depth):
    calls = [scripted.call("c1", "subagent", {"description": "d", "prompt": "p",
                                                        "run_in_background": False}),
             scripted.text("done")]
    host = await _host(tmp_path, _TreeProvider(calls, []), plugin_config={"subagents": {"max_depth": max_depth}})
    try:
        host.agent.followup("go")
        await host.agent.wait_idle()
        (result,) = [e for e in host.session.events if e["type"] == "tool/result"]
        block = tool_result_block(result["data"]["message"])
        assert block["isError"] and block["content"][0]["text"] == "Error: subagent depth 1 exceeds maxDepth 0"
    finally:
        await host.close()


async def test_a_continuable_child_is_a_subagent_of_its_parent_in_the_transcript(tmp_path):
    from dsh_tui.session.transcript import TranscriptFold

    calls = [scripted.call("c1", "subagent", {"description": "d", "prompt": "p"}), scripted.text("started"),
             scripted.text("noted")]
    host = await _host(tmp_path, _TreeProvider(calls, [[scripted.text("CHILD")]]))
    try:
        host.agent.followup("go")
        await ch.settle(host.agent)
    finally:
        await host.close()
    (child,) = [c for c in host.subagents.children.values() if c.parent_id == host.agent.id]
    fold = TranscriptFold(child.session.header)
    for e in child.session.events:
        fold.apply(e)
    dividers = [i.text for i in fold.items if i.kind == "divider"]
    assert dividers == [f"subagent of {host.agent.id}"]


class _Slow(ScriptedProvider):
    """A child model that streams one delta and then waits until cancelled."""

    def __init__(self, started):
        super().__init__([], name="mock")
        self.started = started

    async def stream(self, request):
        import asyncio

        yield {"type": "block-start", "index": 0, "blockType": "text"}
        yield {"type": "text-delta", "index": 0, "text": "partial"}
        self.started.set()
        await asyncio.Event().wait()


class _SlowTree(ScriptedProvider):
    def __init__(self, script, started):
        super().__init__(script, name="mock")
        self.started = started

    def child_provider(self, child_id):
        return _Slow(self.started)


def _turn_ends(events):
    return [e["data"]["reason"]["kind"] for e in events if e["type"] == "turn/end"]


async def test_parent_cancel_cancels_a_foreground_child_but_not_a_continuable_one(tmp_path):
    import asyncio

    started = asyncio.Event()
    calls = [scripted.call("c1", "subagent", {"description": "fg", "prompt": "p", "run_in_background": False})]
    host = await _host(tmp_path, _SlowTree(calls, started))
    try:
        host.agent.followup("go")
        await started.wait()
        (child,) = [c for c in host.subagents.children.values() if c.parent_id == host.agent.id]
        host.agent.cancel({"kind": "user"})
        await host.agent.wait_idle()
        await ch.settle(host.agent)
        assert _turn_ends(child.session.events) == ["aborted"]  # the parent's abort reached the child
        assert child.host is None  # disposed
    finally:
        await host.close()

    started = asyncio.Event()
    calls = [scripted.call("c1", "subagent", {"description": "bg", "prompt": "p"}), scripted.text("started")]
    host = await _host(tmp_path / "b", _SlowTree(calls, started))
    try:
        host.agent.followup("go")
        await started.wait()
        await host.agent.wait_idle()
        (child,) = [c for c in host.subagents.children.values() if c.parent_id == host.agent.id]
        host.agent.cancel({"kind": "user"})  # the parent is idle: nothing reaches the background child
        await asyncio.sleep(0.05)
        assert child.agent is not None and child.agent.status == "running"
    finally:
        await host.close()
    assert _turn_ends(child.session.events) == ["aborted"]  # host teardown disposed the child first


async def test_interrupt_agent_stops_the_turn_parks_the_queue_and_the_parent_gets_a_notice(tmp_path):
    import asyncio

    started = asyncio.Event()
    calls = [scripted.call("c1", "subagent", {"description": "bg", "prompt": "p"}), scripted.text("started")]
    host = await _host(tmp_path, _SlowTree(calls, started))
    try:
        host.agent.followup("go")
        await started.wait()
        await host.agent.wait_idle()
        (child,) = [c for c in host.subagents.children.values() if c.parent_id == host.agent.id]
        child.agent.send({"role": "user", "content": [{"type": "text", "text": "later"}],
                          "source": {"kind": "coordinator", "form": "relay", "senderSessionId": host.agent.id}})
        tools = host.agent.tools.tools
        out = await tools["interrupt_agent"].execute({"agent_id": child.id}, None)
        assert out == f"interrupt requested for agent {child.id}"
        await child.agent.wait_idle()
        await ch.settle(host.agent)
        assert _turn_ends(child.session.events) == ["aborted"]  # the queued turn did not run: parked
        notices = [e["data"] for e in host.session.events if e["type"] == "user/message"
                   and e["data"]["source"]["kind"] == "subagent-settled"]
        assert notices[0]["content"][0]["text"] == f"Background subagent {child.id} was stopped before it finished."
        assert notices[0]["content"][1:] == [{"type": "text", "text": "Its closing message:"},
                                             {"type": "text", "text": "partial"}]
        listed = await tools["list_agents"].execute({}, None)
        assert listed == f"{child.id} [ready] — bg"
    finally:
        await host.close()


async def test_list_agents_after_a_restart_lists_stored_children_as_ready(tmp_path):
    calls = [scripted.call("c1", "subagent", {"description": "keep me", "prompt": "p"}), scripted.text("started"),
             scripted.text("noted")]
    host = await _host(tmp_path, _TreeProvider(calls, [[scripted.text("CHILD")]]))
    try:
        host.agent.followup("go")
        await ch.settle(host.agent)
        parent_id = host.agent.id
        (child_id,) = [c.id for c in host.subagents.children.values() if c.parent_id == parent_id]
    finally:
        await host.close()
    # the reopened host's subagent state is a new one: it knows nothing but the store, as a new process
    host = await AgentHost.open(HostSpec(root=None, store=host.store, cwd=None, provider=ScriptedProvider([]),
                                         model="m", preset="full-access", persona=None, plugins=(),
                                         resume_id=parent_id))
    try:
        assert await host.agent.tools.tools["list_agents"].execute({}, None) == f"{child_id} [ready] — keep me"
        out = await host.agent.tools.tools["list_agents"].execute({"scope": "descendants"}, None)
        assert out == f"{child_id} [ready] parent={parent_id} depth=1 — keep me"
    finally:
        await host.close()


async def test_recorded_headless_settlement_scenario(tmp_path):
    """dsh's headless ``subagent-settlement`` recording: the parent (its scripted override) starts a
    background child, ends its turn with STARTED; the child (its own recording) answers CHILD_RESULT; the
    settlement notice wakes the idle parent, which answers PARENT_RECEIVED_CHILD_RESULT. The child's log
    matches dsh's ``child.expected.jsonl`` row for row (the whole replay, parent included, is
    ``tests/runtime/test_conformance.py::test_headless_settlement_snapshot_matches_dsh``)."""
    from dsh_tui.llm.replay import ReplayProvider, attempts_from_events, read_log_events

    d = FIXTURES / "examples" / "headless-agent" / "tests" / "snapshots" / "subagent-settlement"
    override = json.loads((d / "parent.override.json").read_text())
    child_attempts = attempts_from_events(read_log_events(d / "child.replay.jsonl")[1])

    class Root(ReplayProvider):
        def child_provider(self, child_id):
            return ReplayProvider(child_attempts, name="deepseek-official")

    root = Root([], override=override, name="deepseek-official")
    host = await AgentHost.open(HostSpec(root=None, store=open_store(tmp_path / "root"), cwd=tmp_path,
                                         provider=root, model="deepseek-v4-flash", preset="full-access",
                                         persona=None, plugins=()))
    try:
        result = await host.run_turn("Start the child", settle=True)
    finally:
        await host.close()
    assert result.answer == "PARENT_RECEIVED_CHILD_RESULT"
    (child,) = [c for c in host.subagents.children.values() if c.parent_id == host.agent.id]
    expected = read_log_events(d / "child.expected.jsonl")[1]
    loop_rows = {"subagent/descriptor", "session/end-seed", "agent/inbox/spliced", "turn/start", "step/start",
                 "assistant/message", "step/end", "turn/end"}
    ours = [e for e in child.session.events if e["type"] in loop_rows]
    theirs = [e for e in expected if e["type"] in loop_rows]
    assert [e["type"] for e in ours] == [e["type"] for e in theirs]
    assert ours[0]["data"] == theirs[0]["data"]  # the continuable descriptor, exactly
    assert [e["data"]["message"]["content"] for e in ours if e["type"] == "assistant/message"] == [
        e["data"]["message"]["content"] for e in theirs if e["type"] == "assistant/message"]
    notices = [e["data"] for e in host.session.events if e["type"] == "user/message"
               and e["data"]["source"]["kind"] == "subagent-settled"]
    assert [b["text"] for b in notices[0]["content"]] == [
        f"Background subagent {child.id} finished and will do no further work unless you send it more.",
        "Its closing message:", "CHILD_RESULT"]


async def test_list_agents_reports_a_descriptorless_stored_child_as_corrupt(tmp_path):
    """dsh's ``subagent-diagnostic-snapshots/descriptorless-child``: a stored subagent child of this parent
    without a ``subagent/descriptor`` is listed as ``<id> [diagnostic: corrupt]``, not dropped."""
    from dsh_tui.session.headers import make_header
    from dsh_tui.store import lifecycle

    host = await _host(tmp_path, ScriptedProvider([scripted.text("ok")]))
    store = host.store
    try:
        await host.run_turn("Start a background job.")
        parent_id = host.agent.id
    finally:
        await host.close()
    header = make_header("child-without-descriptor", cwd=str(tmp_path), created_at=5, parent_session=parent_id,
                         origin="subagent", delegation_depth=1)
    session, writer = lifecycle.start(store, header)
    session.append("approval/policy", {"policy": "never", "source": "delegation"})
    writer.close()
    host = await AgentHost.open(HostSpec(root=None, store=store, cwd=None, provider=ScriptedProvider([]), model="m",
                                         preset="full-access", persona=None, plugins=(), resume_id=parent_id))
    try:
        out = await host.agent.tools.tools["list_agents"].execute({}, None)
        assert out == "child-without-descriptor [diagnostic: corrupt]"
    finally:
        await host.close()


async def test_a_one_shot_background_config_needs_the_jobs_plugin(tmp_path):
    """One-shot background subagents are jobs (job_output/job_kill): with the jobs plugin disabled the config
    is refused when the plugin loads (reported; the agent still opens), not advertised."""
    failures = []
    host = await _host(tmp_path, ScriptedProvider([]), on_plugin_failure=failures.append,
                       plugin_config={"subagents": {"subagent_mode": "one-shot"}, "jobs": {"enabled": False}})
    try:
        assert "subagent" not in host.agent.tools.tools
        (record,) = failures
        assert record.id == "subagents" and "job_output" in record.error and "subagent_background" in record.error
    finally:
        await host.close()


async def test_a_one_shot_background_subagent_is_advertised_with_the_jobs_plugin(tmp_path):
    host = await _host(tmp_path, ScriptedProvider([]), plugin_config={"subagents": {"subagent_mode": "one-shot"}})
    try:
        tool = host.agent.tools.tools["subagent"]
        assert tool.description.endswith(texts.ONE_SHOT_SUFFIX)
        assert tool.parameters["properties"]["run_in_background"]["description"] == texts.ONE_SHOT_PARAM
        assert {"job_output", "job_list", "job_kill"} <= set(host.agent.tools.tools)
    finally:
        await host.close()


# ---------------------------------------------------------------------------------------------------------
# issue #37 item 6: fan-out is bounded per agent and per tree, and a refusal is a tool error the model sees


def _errors(events) -> list[str]:
    out = []
    for e in events:
        if e["type"] == "tool/result":
            block = tool_result_block(e["data"]["message"])
            if block.get("isError"):
                out.append(block["content"][0]["text"])
    return out


async def _fan_out(tmp_path, n: int, children_provider, **config) -> tuple[AgentHost, list[str]]:
    items = [(f"c{i}", "subagent", {"description": f"d{i}", "prompt": "p"}) for i in range(n)]
    script = [scripted.calls(items), scripted.text("spawned")] + [scripted.text("noted")] * n

    class _Root(ScriptedProvider):
        def child_provider(self, child_id):
            return children_provider()

    host = await _host(tmp_path, _Root(script, name="mock"), plugin_config={"subagents": config} if config else {})
    host.agent.followup("go")
    await host.agent.wait_idle()
    return host, _errors(host.session.events)


async def test_an_agent_runs_at_most_max_children_subagents_at_once(tmp_path):
    import asyncio

    host, errors = await _fan_out(tmp_path, 12, lambda: _Slow(asyncio.Event()))
    try:
        live = [c for c in host.subagents.children.values() if c.parent_id == host.agent.id and c.host is not None]
        assert len(live) == 8  # the default max_children
        assert len(errors) == 4
        assert all(e.startswith("Error: subagent refused: this agent already has 8 running subagents "
                                "(max_children = 8)") for e in errors), errors
    finally:
        await host.close()


async def test_a_tree_runs_at_most_max_tree_live_subagents(tmp_path):
    import asyncio

    host, errors = await _fan_out(tmp_path, 5, lambda: _Slow(asyncio.Event()), max_tree_live=3)
    try:
        assert len([c for c, _ in ch.descendants(host.subagents, host.agent.id) if c.host is not None]) == 3
        assert len(errors) == 2 and all("(max_tree_live = 3)" in e for e in errors), errors
    finally:
        await host.close()


async def test_a_tree_starts_at_most_max_tree_total_subagents(tmp_path):
    import asyncio

    host, errors = await _fan_out(tmp_path, 4, lambda: ScriptedProvider([scripted.text("CHILD")], name="mock"),
                                  max_tree_total=2)
    try:
        await asyncio.wait_for(ch.settle(host.agent), 60)
        assert len(ch.descendants(host.subagents, host.agent.id)) == 2
        assert len(errors) == 2 and all("(max_tree_total = 2)" in e for e in errors), errors
    finally:
        await host.close()


@pytest.mark.parametrize("bad", [0, -1, True, "8"])
async def test_fan_out_caps_must_be_positive_integers(tmp_path, bad):
    failures = []
    host = await _host(tmp_path, ScriptedProvider([]), on_plugin_failure=failures.append,
                       plugin_config={"subagents": {"max_children": bad}})
    try:
        assert "subagent" not in host.agent.tools.tools
        assert any("max_children must be a positive integer" in str(f.error) for f in failures), failures
    finally:
        await host.close()


def _one_foreground_child(answer: str) -> _TreeProvider:
    return _TreeProvider([scripted.call("c1", "subagent", {"description": answer, "prompt": "p",
                                                           "run_in_background": False}), scripted.text("done")],
                         [[scripted.text(answer)]])


async def test_two_sessions_in_one_process_keep_their_own_subagent_state(tmp_path):
    """The subagent state belongs to the root agent host (issue #28): two sessions open in one process each
    see only their own children, a watcher of one hears nothing of the other's, and a child host shares its
    root's state."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = await _host(tmp_path / "a", _one_foreground_child("A CHILD"))
    b = await _host(tmp_path / "b", _one_foreground_child("B CHILD"))
    heard: dict[str, list[str]] = {"a": [], "b": []}
    offs = [a.subagents.watch(lambda c: heard["a"].append(c.parent_id)),
            b.subagents.watch(lambda c: heard["b"].append(c.parent_id))]
    hosts_of_children = []
    offs.append(a.subagents.watch(lambda c: hosts_of_children.append(c.host) if c.host is not None else None))
    try:
        assert a.subagents is not b.subagents
        assert (await a.run_turn("go", settle=True)).answer == "done"
        assert (await b.run_turn("go", settle=True)).answer == "done"
        assert [c.parent_id for c in a.subagents.children.values()] == [a.agent.id]
        assert [c.parent_id for c in b.subagents.children.values()] == [b.agent.id]
        assert set(a.subagents.agents) == {a.agent.id} and set(b.subagents.agents) == {b.agent.id}
        assert set(heard["a"]) == {a.agent.id} and set(heard["b"]) == {b.agent.id}
        assert hosts_of_children and all(h.subagents is a.subagents for h in hosts_of_children)
        (child,) = a.subagents.children.values()
        assert child.state is a.subagents
    finally:
        for off in offs:
            off()
        await a.close()
        await b.close()


async def test_a_closed_sessions_children_are_released_with_its_host(tmp_path):
    """No per-process registry keeps a closed session's children (and their transcripts) alive: once its
    host is closed and dropped, no ``Child`` of it is left, while another open session keeps its own."""
    import gc

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    # no LLM title (its failure's logged traceback, which pytest keeps, would hold the agent)
    untitled = {"plugin_config": {"session-title-llm": {"enabled": False}}}
    a = await _host(tmp_path / "a", _one_foreground_child("A CHILD"), **untitled)
    b = await _host(tmp_path / "b", _one_foreground_child("B CHILD"), **untitled)
    try:
        await a.run_turn("go", settle=True)
        await b.run_turn("go", settle=True)
        a_id, b_id = a.agent.id, b.agent.id
        await a.close()
        del a
        gc.collect()
        left = {o.parent_id for o in gc.get_objects() if isinstance(o, ch.Child)}
        assert a_id not in left
        assert b_id in left
    finally:
        await b.close()
