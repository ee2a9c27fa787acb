"""The ``jobs`` built-in plugin (dsh_tui/extensions/jobs/): background bash and one-shot background subagents as
jobs, ``job_output`` / ``job_list`` / ``job_kill`` with dsh's schemas and texts, completion notices, and no
process outliving ``job_kill`` or the agent's teardown. Real ``bash`` processes, a real store, the agent host."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from dsh_tui.extensions.jobs import JOB_KILL_SCHEMA, JOB_LIST_SCHEMA, JOB_OUTPUT_SCHEMA, SECTION
from dsh_tui.extensions.jobs.registry import JobRegistry, render_delta
from dsh_tui.llm import scripted
from dsh_tui.llm.scripted import ScriptedProvider
from dsh_tui.runtime.host import AgentHost, HostSpec
from dsh_tui.session.content import tool_result_block
from dsh_tui.session.log import v4_source
from dsh_tui.store.open import open_store
from tests.conftest import FIXTURES, REPO

SNAPSHOTS = FIXTURES / "examples" / "acp-agent" / "tests" / "snapshots"


async def _host(tmp_path, provider, **kw) -> AgentHost:
    # workspace-changes off: its snapshot when a turn stops is a window in which a job that finishes lands in
    # that turn's next step instead of opening a turn (both are right; these tests pin the second)
    kw["plugin_config"] = {"workspace-changes": {"enabled": False}, **kw.get("plugin_config", {})}
    return await AgentHost.open(HostSpec(root=None, store=open_store(tmp_path / "root"), cwd=tmp_path,
                                         provider=provider, model="m", preset="full-access", persona=None,
                                         plugins=(), **kw))


def _results(host) -> list[str]:
    return [tool_result_block(e["data"]["message"])["content"][0]["text"] for e in host.session.events
            if e["type"] == "tool/result"]


def _notices(host) -> list[dict]:
    return [e["data"] for e in host.session.events if e["type"] == "user/message"
            and v4_source(e["data"].get("source") or {}).get("kind") == "tool-jobs"]  # v0: {plugin: "tool-jobs"}


def _bg(command: str, description: str = "Run it in the background") -> dict:
    return {"command": command, "description": description, "run_in_background": True}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


async def _until(predicate, timeout=20.0):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        if loop.time() > end:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.01)


async def test_job_tool_schemas_and_prompt_section_are_dshs(tmp_path):
    recorded = {t["name"]: t for t in json.loads((SNAPSHOTS / "text-turn" / "tool-schemas.expected.json")
                                                 .read_text())["initial"]}
    prompt = (SNAPSHOTS / "text-turn" / "system-prompt.expected.md").read_text()
    host = await _host(tmp_path, ScriptedProvider([scripted.text("ok")]))
    try:
        ours = {t["name"]: t for t in host.agent.tools.schemas()}
        # the texts are dsh 0.2's (its first headless request); bash's run_in_background is dsh 0.1's
        dsh02 = {t["name"]: {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]}
                 for t in json.loads((REPO / "tests" / "fixtures" / "dsh02-request.headless.json").read_text())
                 ["body"]["tools"]}
        for schema in (JOB_OUTPUT_SCHEMA, JOB_LIST_SCHEMA, JOB_KILL_SCHEMA):
            assert ours[schema["name"]] == dsh02[schema["name"]]
        # the host left `background` unset: bash advertises run_in_background as dsh's does
        assert ours["bash"]["parameters"]["properties"]["run_in_background"] == \
            recorded["bash"]["parameters"]["properties"]["run_in_background"]
        host.agent.followup("hi")
        await host.agent.wait_idle()
        system = host.session.request_header()["system"]  # v4 keeps it in the log's system/message
        assert SECTION in prompt and SECTION in system
    finally:
        await host.close()


async def test_an_explicit_background_false_keeps_bash_without_it(tmp_path):
    host = await _host(tmp_path, ScriptedProvider([]), tool_options={"background": False})
    try:
        assert "run_in_background" not in host.agent.tools.tools["bash"].parameters["properties"]
    finally:
        await host.close()


async def test_background_bash_runs_wait_collects_it_and_no_notice_repeats_it(tmp_path):
    gate = tmp_path / "go"  # created once the wait has begun: the job ends while it waits
    provider = ScriptedProvider([
        scripted.call("c1", "bash", _bg(f"while [ ! -e {gate} ]; do sleep 0.01; done; echo out; echo err >&2; "
                                        f"exit 3", "Print two lines")),
        scripted.call("c2", "job_output", {"job_id": "bash-1", "wait": True, "timeout_ms": 20_000}),
        scripted.call("c3", "job_list", {}),
        scripted.call("c4", "job_output", {"job_id": "bash-1"}),
        scripted.text("done")])
    host = await _host(tmp_path, provider)
    waiting = host.agent.jobs.wait

    async def wait(*args, **kw):  # the command may end only once job_output is waiting for it
        gate.touch()
        return await waiting(*args, **kw)

    host.agent.jobs.wait = wait
    try:
        host.agent.followup("go")
        await host.agent.wait_idle()
        assert _results(host) == [
            "started background job bash-1",
            "out\n[stderr]\nerr\n[status: failed, exit code: 3]",
            f"bash-1 [bash] failed — while [ ! -e {gate} ]; do sleep 0.01; done; echo out; echo err >&2; exit 3",
            "(no new output)\n[status: failed, exit code: 3]",
        ]
        assert _notices(host) == []  # the wait delivered the end
    finally:
        await host.close()


async def test_a_job_that_finishes_on_its_own_wakes_the_idle_agent_with_dshs_notice(tmp_path):
    provider = ScriptedProvider([
        scripted.call("c1", "bash", _bg("sleep 0.2; printf hello", "Say hello later")),
        scripted.text("started it"),
        scripted.call("c2", "job_output", {"job_id": "bash-1"}),
        scripted.text("collected")])
    host = await _host(tmp_path, provider)
    try:
        host.agent.followup("go")
        await host.agent.wait_idle()
        await _until(lambda: _notices(host))
        await _until(lambda: any(e["type"] == "turn/end" and e["data"]["turn"] == 2 for e in host.session.events))
        (notice,) = _notices(host)
        # the job's label is its command, as dsh's bash tool labels it (dsh's missing-sandbox-runner recording)
        text = ("background job bash-1 (bash: sleep 0.2; printf hello) finished [status: completed, exit code: 0]. "
                "Read its output with job_output.")
        assert notice["content"] == [{"type": "text", "text": text}]
        assert v4_source(notice["source"]) == {"kind": "tool-jobs", "form": "notice",  # v0: {kind: plugin, plugin}
                                               "summary": "bash sleep 0.2; printf hello [status: completed, exit code: 0]"}
        assert _results(host)[-1] == "hello\n[status: completed, exit code: 0]"
    finally:
        await host.close()


async def test_job_kill_ends_the_process_group_and_sends_no_notice(tmp_path):
    pids = tmp_path / "pids"
    command = f"sleep 300 & echo $! >> {pids}; echo $$ >> {pids}; wait"
    provider = ScriptedProvider([scripted.call("c1", "bash", _bg(command)), scripted.text("running")])
    host = await _host(tmp_path, provider)
    try:
        host.agent.followup("go")
        await host.agent.wait_idle()
        await _until(lambda: pids.exists() and len(pids.read_text().split()) == 2)
        procs = [int(p) for p in pids.read_text().split()]
        assert all(_alive(p) for p in procs)
        provider.add(scripted.call("k", "job_kill", {"job_id": "bash-1", "reason": "not needed"}),
                     scripted.call("o", "job_output", {"job_id": "bash-1", "wait": True}),
                     scripted.call("k2", "job_kill", {"job_id": "bash-1"}),
                     scripted.call("u", "job_output", {"job_id": "bash-9"}),
                     scripted.text("stopped"))
        host.agent.followup("stop it")
        await host.agent.wait_idle()
        assert not any(_alive(p) for p in procs)
        assert _results(host)[1:] == [
            "requested cancellation of job bash-1",
            "(no new output)\n[status: killed, signal: SIGTERM; not needed]",
            "job bash-1 had already finished [status: killed, signal: SIGTERM; not needed]",
            "Error: unknown job bash-9",
        ]
        await asyncio.sleep(0.1)
        assert _notices(host) == []
    finally:
        await host.close()


async def test_teardown_kills_every_live_job_and_its_children(tmp_path):
    pids = tmp_path / "pids"
    command = f"(trap '' TERM; sleep 300) & echo $! >> {pids}; echo $$ >> {pids}; wait"
    provider = ScriptedProvider([scripted.call("c1", "bash", _bg(command)), scripted.text("running")])
    host = await _host(tmp_path, provider)
    host.agent.followup("go")
    await host.agent.wait_idle()
    await _until(lambda: pids.exists() and len(pids.read_text().split()) == 2)
    procs = [int(p) for p in pids.read_text().split()]
    assert all(_alive(p) for p in procs)
    await host.close()
    assert not any(_alive(p) for p in procs)  # even the subshell that ignores SIGTERM
    assert _notices(host) == []  # nobody is left to read a teardown settlement


async def test_the_admission_limit_refuses_before_the_command_runs(tmp_path):
    marker = tmp_path / "second-ran"
    provider = ScriptedProvider([
        scripted.call("c1", "bash", _bg("sleep 300")),
        scripted.call("c2", "bash", _bg(f"touch {marker}; sleep 300")),
        scripted.text("ok")])
    host = await _host(tmp_path, provider, plugin_config={"jobs": {"max_concurrent_jobs": 1}})
    try:
        host.agent.followup("go")
        await host.agent.wait_idle()
        assert _results(host) == [
            "started background job bash-1",
            "Error: background job limit reached for this owner (limit: 1); use job_kill to stop an unneeded "
            "job, wait for it to finish, then retry"]
        assert not marker.exists()
    finally:
        await host.close()


class _TreeProvider(ScriptedProvider):
    def __init__(self, script, children):
        super().__init__(script, name="mock")
        self._children = list(children)

    def child_provider(self, child_id):
        p = _TreeProvider(self._children.pop(0) if self._children else [], [])
        p._children = self._children
        return p


async def test_a_one_shot_background_subagent_is_a_job(tmp_path):
    from dsh_tui.extensions.subagents import children as ch

    root = [scripted.call("c1", "subagent", {"description": "Count files", "prompt": "count",
                                             "run_in_background": True}),
            scripted.text("delegated"),
            scripted.call("c2", "job_output", {"job_id": "subagent-1"}),
            scripted.text("have it")]
    host = await _host(tmp_path, _TreeProvider(root, [[scripted.text("THREE FILES")]]),
                       plugin_config={"subagents": {"subagent_mode": "one-shot"}})
    try:
        host.agent.followup("go")
        await host.agent.wait_idle()
        await _until(lambda: any(e["type"] == "turn/end" and e["data"]["turn"] == 2 for e in host.session.events))
        await ch.settle(host.agent)
        assert _results(host) == ["started background subagent job subagent-1",
                                  "THREE FILES\n[status: completed]"]
        (notice,) = _notices(host)
        assert notice["content"][0]["text"] == ("background job subagent-1 (subagent: Count files) finished "
                                                "[status: completed]. Read its output with job_output.")
        (child,) = [c for c in host.subagents.children.values() if c.parent_id == host.agent.id]
        descs = [e["data"] for e in child.session.events if e["type"] == "subagent/descriptor"]
        assert descs == [{"version": 2, "mode": "one-shot", "provider": "spawn", "label": "Count files"}]
    finally:
        await host.close()


async def test_job_kill_cancels_a_background_subagent(tmp_path):

    root = [scripted.call("c1", "subagent", {"description": "Slow task", "prompt": "p", "run_in_background": True}),
            scripted.text("delegated")]
    host = await _host(tmp_path, _TreeProvider(root, [[[scripted.Hang()]]]),
                       plugin_config={"subagents": {"subagent_mode": "one-shot"}})
    try:
        host.agent.followup("go")
        await host.agent.wait_idle()
        host.agent.provider.add(scripted.call("k", "job_kill", {"job_id": "subagent-1"}),
                                scripted.call("o", "job_output", {"job_id": "subagent-1", "wait": True}),
                                scripted.text("stopped"))
        host.agent.followup("stop")
        await host.agent.wait_idle()
        assert _results(host)[1:] == ["requested cancellation of job subagent-1", "(no new output)\n[status: killed]"]
        (child,) = [c for c in host.subagents.children.values() if c.parent_id == host.agent.id]
        assert child.host is None  # closed
        assert _notices(host) == []
    finally:
        await host.close()


def test_the_ring_is_bounded_and_a_read_below_it_is_lossy():
    reg = JobRegistry(retain_bytes=10)

    async def run():
        async def starter(handle):
            handle.append("0123456789", "stdout")
            handle.append("abcdef", "stdout")
            handle.append("E", "stderr")
            handle.settle("completed", "exit code: 0")
            return lambda _r=None: None

        job = await reg.start("bash", "x", starter)
        return reg.read(job.id)

    text, job = asyncio.run(run())
    assert text == "abcdef\n[stderr]\nE\n[some output was dropped from memory; full output: (unavailable)]"
    assert job.ring.retained <= 10
    assert render_delta([("stdout", "a\n")], False) == "a\n"


@pytest.mark.parametrize("config,message", [
    ({"wait_timeout_ms": 0}, "wait_timeout_ms must be a positive integer"),
    ({"wait_timeout_ms": 700_000}, "exceeds max_wait_timeout_ms"),
    ({"completion_delivery": "loud"}, "completion_delivery"),
    ({"nope": 1}, "unknown option"),
])
async def test_config_errors_are_reported(tmp_path, config, message):
    failures = []
    host = await _host(tmp_path, ScriptedProvider([]), on_plugin_failure=failures.append,
                       plugin_config={"jobs": config, "subagents": {}})
    try:
        (record,) = [r for r in failures if r.id == "jobs"]
        assert message in record.error
        assert "job_output" not in host.agent.tools.tools
    finally:
        await host.close()



async def test_a_plugin_registers_its_own_job_and_its_end_is_announced(tmp_path):
    """docs/plugins.md: ``ctx.agent.jobs.start(kind, label, starter)``; the job is listed, read and announced
    like the built-in producers' jobs."""
    seen = {}

    class Indexer:
        name = "indexer"

        @staticmethod
        def apply(ctx):
            seen["ctx"] = ctx

    provider = ScriptedProvider([scripted.text("idle"), scripted.call("o", "job_output", {"job_id": "index-1"}),
                                 scripted.text("read it")])
    host = await _host(tmp_path, provider, plugin_objects=(Indexer,))
    try:
        jobs = seen["ctx"].agent.jobs
        assert jobs is host.agent.jobs
        release = asyncio.Event()

        async def starter(handle):
            async def work():
                await release.wait()
                handle.append("indexed 3 files\n")
                handle.settle("completed")
            task = asyncio.ensure_future(work())
            return lambda _reason=None: task.cancel()

        job = await jobs.start("index", "Index the workspace", starter)
        assert job.id == "index-1"
        host.agent.followup("go")
        await host.agent.wait_idle()
        release.set()
        await _until(lambda: any(e["type"] == "turn/end" and e["data"]["turn"] == 2 for e in host.session.events))
        assert _notices(host)[0]["content"][0]["text"] == (
            "background job index-1 (index: Index the workspace) finished [status: completed]. Read its output "
            "with job_output.")
        assert _results(host) == ["indexed 3 files\n[status: completed]"]
    finally:
        await host.close()


async def test_a_background_command_whose_sandbox_runner_cannot_start_settles_killed_before_exit(tmp_path):
    """dsh's missing-sandbox-runner recording: the job starts, then settles killed before exit; its output is
    the spawn failure and dsh's runner marker (the command never ran)."""
    from dsh_tui.extensions.jobs import BashJobs, JobRegistry
    from dsh_tui.tools.sandbox import Confined

    missing = str(tmp_path / ".dsh-missing-sandbox-runner")
    registry = JobRegistry()
    job_id = await BashJobs(registry).start("true", cwd=str(tmp_path), env={}, label="true",
                                            argv=[missing, "--", "bash", "-c", "true"],
                                            confined=Confined([missing], mode="read-only"))
    text, job = registry.read(job_id)
    assert (job.status, job.detail) == ("killed", "killed before exit")
    assert text == (f"[stderr]\nspawn failed: Error: spawn {missing} ENOENT\n[sandbox: the sandbox runner itself failed "
                    "under read-only mode — the command did not run; this is a sandbox problem, not a command failure]\n")
