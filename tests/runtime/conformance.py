"""Conformance harness: replay a recorded dsh scenario through the real driver and built-in tools.

Used by ``test_conformance.py``. For a scenario directory (``input.json`` + ``session.jsonl`` [+
``workspace/``, ``replay.override.json``]) it runs the prompts of ``input.json`` against a
``ReplayProvider`` built from the recording, in a copy of the workspace, then compares our log with
dsh's: the order of the loop's durable rows (turn/step, assistant/message, tool/call, tool/result,
retry, compaction, approval, todo rows), turn/step boundaries and turn-end reasons, tool calls (name,
arguments) in order, assistant messages, and tool results where the tool output is deterministic.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import shutil
import struct
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from dsh_tui.extensions.terminals import TOOL_NAMES as TERMINAL_TOOLS
from dsh_tui.llm.replay import ReplayProvider, attempts_from_events, read_log_events
from dsh_tui.runtime import Agent, AgentConfig
from dsh_tui.runtime.plugins import Plugins, PluginSpec, builtin_specs
from dsh_tui.session.headers import make_header
from dsh_tui.session.log import Session
from dsh_tui.tools import BUILTIN_TOOL_NAMES, builtin_tools
from tests.conftest import FIXTURES
from tests.runtime.helpers import FakeSleep

EXAMPLES = FIXTURES / "examples"
SUPPORTED_OPS = {"initialize", "newSession", "prompt", "promptExpectError", "promptAndCancel", "waitForTurnEnd",
                 "waitForTitleAfterTurnEnd",  # titles are the host's job; the loop part is compared
                 "promptContent",
                 # dsh's goal scenarios (goal.snapshot.ts): a prompt that returns once the agent's message with
                 # ``waitForText`` arrived, a wait for turn N to start, a cancel once a file exists, a wait for
                 # an event of a type after the last turn ended
                 "promptAndWaitForAgentMessage", "waitForTurnStart", "cancel", "waitForEventAfterTurnEnd"}
# Tools whose output depends only on the workspace and arguments.
DETERMINISTIC_TOOLS = {"read", "write", "edit", "grep", "glob", "todo_write", "bash", "job_kill", "read_image", "lsp",
                       "list_agents"}  # the subagent rows (ids scrubbed as dsh's normalizer scrubs them)
# The jobs plugin's tools (dsh_tui/extensions/jobs/): built in, like the tools of dsh_tui.tools.
JOB_TOOLS = {"job_output", "job_list", "job_kill"}
ANSWERS = {"allow_once": "allowed-once", "reject_once": "rejected", "allow_always": "allowed-once",
           "reject_always": "rejected"}


# The goal plugin's tools (dsh_tui/extensions/goals/): their results are the goal's JSON (ids scrubbed as dsh's
# normalizer scrubs them), deterministic.
GOAL_TOOLS = {"create_goal", "get_goal", "update_goal"}
DETERMINISTIC_TOOLS |= GOAL_TOOLS
# Tools of built-in plugins other than dsh_tui.tools and the jobs plugin (skills, images, lsp, terminals).
PLUGIN_TOOLS = {"skill", "read_image", "lsp", *TERMINAL_TOOLS, *GOAL_TOOLS}
# The terminal tools' results are deterministic with dsh's snapshot backend (``SnapshotPtyBackend``).
DETERMINISTIC_TOOLS |= set(TERMINAL_TOOLS)


class _SnapshotPtySession:
    """dsh's examples/acp-agent/pty-snapshot-backend.mjs: the deterministic in-memory PTY its recordings used."""

    def __init__(self) -> None:
        self.motd = "dsh> "
        self.status_value = {"kind": "running"}
        self.scrollback = "dsh> "

    async def start_send(self, text: str, submit: bool, cancelled=None):
        viewport = f"{text}\nPTY_OK\ndsh> "
        self.scrollback += viewport
        future = asyncio.get_running_loop().create_future()
        future.set_result({"viewport": viewport, "waitReason": "stdin_read", "sessionStatus": self.status_value,
                           "truncated": False})

        class _Op:
            settled = True
            sinks: list = []

            def __init__(self) -> None:
                self.future = future

            def cancel(self) -> bool:
                return False

        return _Op()

    def read(self, offset=None, count=None) -> dict:
        lines = self.scrollback.split("\n")
        offset = offset or 0
        count = 500 if count is None else count
        end = len(lines) - offset
        text = "\n".join(lines[max(0, end - count):end])
        return {"text": text, "totalLines": len(lines), "lineBegin": offset,
                "lineEnd": offset + len(text.split("\n")), "truncated": False}

    async def signal(self, name: str) -> dict:
        return {"delivered": True, "targetPgid": 1}

    def status(self) -> dict:
        return self.status_value

    async def close(self, reason: str = "") -> None:
        self.status_value = {"kind": "exited", "exitCode": 0, "signal": None}


class SnapshotPtyBackend:
    type = "shell"

    async def spawn(self, spec: dict) -> _SnapshotPtySession:
        return _SnapshotPtySession()
# Scenarios whose recorder prepared the workspace beyond the committed ``workspace/`` (dsh's
# examples/acp-agent/tests/acp.snapshot.ts ``prepareWorkspace``): a ``prepare/`` tree copied over it, or a
# function of the workspace.


def _delimiter_path(work: Path) -> None:
    scope = work / "scope</system-reminder>"
    scope.mkdir(parents=True, exist_ok=True)
    (scope / "AGENTS.md").write_text("Delimiter path snapshot instruction.\n")
    (scope / "task.txt").write_text("delimiter path snapshot task\n")


def _fs_search_tree(work: Path) -> None:
    """acp.snapshot.ts ``prepareFsSearchWorkspace``: eight files under ``tree/`` with fixed, ascending mtimes
    (local time 2000-01-01 00:00:00 plus 1..8 ms), so the modification-time order is deterministic."""
    import datetime
    import os

    base = datetime.datetime(2000, 1, 1).timestamp()
    for i, rel in enumerate(["archive/a.ts", "archive/b.ts", "archive/c.ts", "docs/guide.md", "src/index.ts",
                             "test/spec.ts", "top.txt", "notes.md"], 1):
        target = work / "tree" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("fixture\n")
        ns = int(base * 1e9) + i * 1_000_000
        os.utime(target, ns=(ns, ns))


PREPARE = {"agent-instructions": _delimiter_path, "fs-glob-sampling": _fs_search_tree}
class PartialLandlockBackend:
    """dsh's examples/acp-agent/tests/fixtures/partial-landlock-sandbox.ts: a test-only sandbox provider whose
    launch prints older-ABI Landlock's partial-enforcement notice on stderr, then runs the command."""

    name = "partial-landlock"
    NOTICE = "landlock-run: partial enforcement (older Landlock ABI)"
    denial_signatures = ("permission denied",)
    runner_failure_rules = ({"allowed_exit_codes": (125,), "fatal_signatures": ("landlock-run: ",),
                             "informational_lines": (NOTICE,)},)

    def profile(self, *, mode, workspace, cwd, tmpdir, settings, home) -> list[str]:
        return ["bash", "-c", f"printf '%s\\n' '{self.NOTICE}' >&2; exec \"$@\"", "partial-landlock-run"]


class MissingRunnerBackend:
    """The same provider under DSH_SNAPSHOT_MISSING_SANDBOX_RUNNER: its runner is a program that does not exist
    in the (valid) workspace."""

    name = "missing-runner"
    denial_signatures = ("permission denied",)
    runner_failure_rules = ({"fatal_signatures": ("snapshot-runner: ",)},)

    def profile(self, *, mode, workspace, cwd, tmpdir, settings, home) -> list[str]:
        return [str(Path(workspace) / ".dsh-missing-sandbox-runner")]


SANDBOX_BACKENDS = {"partial-landlock-child-failure": PartialLandlockBackend,
                    "missing-sandbox-runner": MissingRunnerBackend}


def _sandbox_options(scenario: str) -> dict:
    """The recorder's sandbox provider (partial-landlock.cordis.yml's test provider)."""
    if scenario not in SANDBOX_BACKENDS:
        return {}
    from dsh_tui.tools.sandbox import Sandbox, SandboxSettings

    return {"sandbox": Sandbox(SANDBOX_BACKENDS[scenario](), SandboxSettings())}


# The recorder's DSH_PERMISSION_MODE, where it was not the default.
SCENARIO_PRESET = {"partial-landlock-child-failure": "read-only", "missing-sandbox-runner": "read-only"}
SANDBOX_FIXTURES = set(SCENARIO_PRESET)
# Per-scenario built-in tool options from the recorder's composition: fs-search.cordis.snapshot.yml's
# tool-fs-search (globMaxResults 4, sampleOverCapGlobResults); that composition has no spill store, so the
# complete result cannot be saved (the spill directory here is unusable for it).
SCENARIO_TOOL_OPTIONS: dict[str, dict] = {"fs-glob-sampling": {"glob_max_results": 4, "glob_sample_over_cap": True}}
NO_SPILL_STORE = {"fs-glob-sampling"}
# Per-scenario plugin configuration from the recorder's overlay config (``*.cordis.yml``); ``{{cwd}}`` is
# the scenario's workspace. The hook bridges read only the scenario's own file (never the machine's).
HERMETIC_HOOKS = {"user": False, "project": False}
SCENARIO_PLUGIN_CONFIG: dict[str, dict] = {
    "agent-instructions": {"agent-instructions": {"projectRootMarkers": [".dsh-project"]}},
    # lsp.cordis.yml: the workspace's fixture stdio server under node, and tool-lsp's maxLocations 1
    "lsp-definition": {"lsp": {"servers": {"fixture": {"command": "node", "args": ["./lsp-server.mjs"],
                                                       "extensions": {".ts": "typescript"}}},
                               "max_locations": 1}},
}


def scenario_plugin_config(scenario: str, pid: str, work: Path | None) -> dict:
    config = dict(SCENARIO_PLUGIN_CONFIG.get(scenario, {}).get(pid, {}))
    if pid == "terminals" and scenario == "pty-tools":  # dsh's pty.cordis.snapshot.yml: its snapshot backend
        config.update(max_result_bytes=64, backends=["tests.runtime.conformance:SnapshotPtyBackend"])
    if pid in ("hooks-claude-code", "hooks-codex"):
        config.update(HERMETIC_HOOKS)
        if work is not None and scenario.startswith(("hook-cc-", "packed-chunks")) and pid == "hooks-claude-code":
            config["configPath"] = str(work / "hooks.json")
        if work is not None and scenario.startswith("hook-codex-") and pid == "hooks-codex":
            config["configPath"] = str(work / "codex-hooks.json")
    return config


def prepare_workspace(d: Path, work: Path) -> None:
    """The scenario's workspace as dsh's recorder left it before the first prompt."""
    if (d / "workspace").is_dir():
        shutil.copytree(d / "workspace", work, symlinks=True)
    else:
        work.mkdir()
    if (d / "prepare").is_dir():
        shutil.copytree(d / "prepare", work, symlinks=True, dirs_exist_ok=True)
    if d.name in PREPARE:
        PREPARE[d.name](work)


def scenario_dirs() -> list[Path]:
    return sorted(p.parent for p in EXAMPLES.rglob("input.json"))


def scenario_id(d: Path) -> str:
    return str(d.relative_to(EXAMPLES))


# Single-loop scenarios whose recorder did something the replay here cannot do, and why.
NOT_APPLICABLE = {
    "missing-sandbox-runner": "the background job's spawn failure reaching the model one step later, as Node "
                              "reports a spawn error on a later tick (after the next step's inbox claim); here the "
                              "job settles while the call runs (the foreground and background texts match dsh's)",
    "web-fetch": "dsh 0.1's web_fetch (fetches its recorder's page on 127.0.0.1, turndown's Markdown, no notice); "
                 "dsh-tui's is dsh 0.2's (the untrusted-content notice, loopback refused unless allowed), "
                 "compared with the real dsh 0.2 in tests/interop/test_dsh02_web.py",
}


def recording(d: Path) -> Path:
    """The log a scenario's replay is compared with: ``session.jsonl``, or for an authored scenario (its
    ``session.jsonl`` a bare header, the model side all in ``replay.override.json``) ``session.expected.jsonl``."""
    if (d / "session.expected.jsonl").is_file() and not read_log_events(d / "session.jsonl")[1]:
        return d / "session.expected.jsonl"
    return d / "session.jsonl"


# The dsh features behind the tools dsh-tui does not have.
TOOL_FEATURES = {
    "run_code": "dsh's Code Mode (run_code: JavaScript calling the tools)",
    "workflow": "dsh's workflow tool (JavaScript orchestration of children)",
    "cordis_define": "dsh's Cordis package tools (cordis_define, cordis_undefine, cordis_inspect_query)",
    "cordis_undefine": "dsh's Cordis package tools (cordis_define, cordis_undefine, cordis_inspect_query)",
    "cordis_inspect_query": "dsh's Cordis package tools (cordis_define, cordis_undefine, cordis_inspect_query)",
    "pwsh": "dsh's PowerShell tools (pwsh)",
    "subagent_codex": "dsh's product subagents (subagent_codex: a Codex CLI child)",
    "session_event_read": "dsh's session-query tools (session_event_read and its formatted, spilled event)",
}


def needs_tools(names: list[str]) -> str:
    features = list(dict.fromkeys(TOOL_FEATURES.get(n, f"the tool {n}") for n in names))
    return "needs " + "; ".join(features)


def applicability(d: Path) -> str | None:
    """None when the scenario can run here, else the reason it is not applicable."""
    if d.name in NOT_APPLICABLE:
        return NOT_APPLICABLE[d.name]
    if not (d / "session.jsonl").is_file():
        return "no recorded session.jsonl"
    spec = json.loads((d / "input.json").read_text())
    if any(d.glob("session.[0-9]*.jsonl")):
        return subagent_applicability(d, spec)
    ops = {s.get("op") for s in spec.get("steps", [])}
    if ops - SUPPORTED_OPS:
        return f"needs ACP host ops {sorted(ops - SUPPORTED_OPS)}"
    if not ops & {"prompt", "promptExpectError", "promptAndCancel", "promptContent", "promptAndWaitForAgentMessage"}:
        return "no prompt (protocol handshake only)"
    _, events = read_log_events(recording(d))
    names = sorted({e["data"]["name"] for e in events if e["type"] == "tool/call"})
    foreign = [n for n in names if n not in BUILTIN_TOOL_NAMES and n not in JOB_TOOLS and n not in PLUGIN_TOOLS]
    if foreign:
        return needs_tools(foreign)
    kinds = {e["type"] for e in events}
    if "turn/start" not in kinds:
        return "the host refused the prompt before the loop (hook bridge); no turn recorded"
    for e in events:
        text = json.dumps(e["data"]["message"]) if e["type"] == "tool/result" else ""
        if ("sandbox:" in text or "landlock" in text) and d.name not in SANDBOX_FIXTURES:
            return "depends on dsh's OS sandbox (landlock) behaviour"
    return None


class _ReportFence:
    """dsh's examples/acp-agent/tests/fixtures/subagent-report-fence.ts, loaded into the root and every child:
    the root's turn 1 step 2 waits until the child reached its first step; the child waits until the root,
    its spawn turn ended, is held in maintenance; the maintenance ends when the child's settlement notice
    entered the root's inbox, so the report (a waking next-step send, latched) and the settlement open one
    root turn in causal order."""

    name = "subagent-report-fence"

    def __init__(self) -> None:
        self.child_ready = asyncio.Event()
        self.root_held = asyncio.Event()
        self.settled = asyncio.Event()
        self.maintenance: asyncio.Future | None = None

    def apply(self, ctx, config) -> None:
        child = ctx.session.header.get("parentSession") is not None

        async def pre_step(payload, nxt):
            if child:
                self.child_ready.set()
                await self.root_held.wait()
            elif payload["turn"] == 1 and payload["step"] == 2:
                await self.child_ready.wait()
            return await nxt()

        async def hold(_signal) -> None:
            self.root_held.set()
            await self.settled.wait()

        def status(payload) -> None:
            agent = payload["agent"]
            if payload["status"] == "idle" and self.maintenance is None and any(
                    e["type"] == "turn/end" and e["data"]["turn"] == 1 for e in agent.session.events):
                self.maintenance = asyncio.ensure_future(agent.run_maintenance(hold))

        def inserted(payload) -> None:
            if (payload["message"].get("source") or {}).get("kind") == "subagent-settled":
                self.settled.set()

        ctx.on("agent/pre-step", pre_step)
        if not child:
            ctx.on("agent/status", status)
            ctx.on("agent/inbox/inserted", inserted)


class _DurabilityFailure:
    """dsh's examples/acp-agent/tests/fixtures/subagent-durability-failure.ts (subagent-continuable), loaded into
    the root and every child: the model's placeholder child id in send_message reaches the live child; the
    unknown-id send_message runs once both follow-ups reached the child's inbox; the child's steps wait for
    those follow-ups and for the root's spawn turn to end; the child's durability checkpoint fails in its turn
    3 with dsh's message."""

    name = "subagent-durability-failure"
    PLACEHOLDER = "33333333-3333-4333-8333-333333333333"
    UNKNOWN = "22222222-2222-4222-8222-222222222222"
    FAILED_TURN = 3

    def __init__(self) -> None:
        self.child_id: str | None = None
        self.accepted = 0
        self.followups = asyncio.Event()
        self.root_closed = asyncio.Event()

    def apply(self, ctx, config) -> None:
        if ctx.session.header.get("parentSession") is None:
            async def pre_execute(payload, nxt):
                args = payload["exec"].args
                if payload["name"] == "send_message" and isinstance(args, dict):
                    if args.get("subagent_id") == self.PLACEHOLDER and self.child_id is not None:
                        args["subagent_id"] = self.child_id
                    elif args.get("subagent_id") == self.UNKNOWN:
                        await self.followups.wait()
                return await nxt()

            def step_end(payload) -> None:
                if any(e["type"] == "turn/end" and e["data"]["turn"] == 1 for e in payload["agent"].session.events):
                    self.root_closed.set()

            def status(payload) -> None:
                step_end(payload)

            ctx.on("tools/pre-execute", pre_execute)
            ctx.on("agent/status", status)
            return

        def inserted(payload) -> None:
            if self.child_id is None:
                self.child_id = payload["agent"].id
            self.accepted += 1
            if self.accepted >= 3:
                self.followups.set()

        async def pre_step(payload, nxt):
            await self.followups.wait()
            await self.root_closed.wait()
            return await nxt()

        def claimed(payload) -> None:
            agent = payload["agent"]
            if payload.get("turn") == self.FAILED_TURN and not getattr(agent, "_fixture_failed", False):
                agent._fixture_failed = True

                async def disk_full(_reason: str) -> int:
                    raise RuntimeError("snapshot disk full")

                agent.checkpoint = disk_full

        ctx.on("agent/inbox/inserted", inserted)
        ctx.on("agent/pre-step", pre_step)
        ctx.on("agent/inbox/claimed", claimed)


class _PublishedFailure:
    """The same fixture under DSH_SUBAGENT_PUBLISHED_FAILURE (subagent-published-run-failure): a child's first
    follow-up fails after the child was published, and releasing its handle fails too."""

    name = "subagent-durability-failure"

    def apply(self, ctx, config) -> None:
        if ctx.session.header.get("parentSession") is None:
            return

        def created(payload) -> None:
            agent, host = payload["agent"], payload["agent"].host

            def followup(_message):
                raise RuntimeError("snapshot published run failed")

            close = host.close

            async def failing_close() -> None:
                await close()
                raise RuntimeError("snapshot published handle disposal failed")

            agent.followup = followup
            host.close = failing_close

        ctx.on("agent/created", created)


# The recorder's ordering fixtures of tree scenarios (plugin objects loaded into the root and every child).
TREE_FIXTURES = {"subagent-report": _ReportFence, "subagent-continuable": _DurabilityFailure,
                 "subagent-published-run-failure": _PublishedFailure}
# Subagent scenarios (root session.jsonl + children session.N.jsonl) that cannot run here, and why.
SUBAGENT_NOT_APPLICABLE = {
}
# dsh's configuration of a scenario where it differs from the shipped defaults.
SUBAGENT_CONFIG = {"subagent-depth-two-rejection": {"max_depth": 2}}


def subagent_applicability(d: Path, spec: dict) -> str | None:
    if d.name in SUBAGENT_NOT_APPLICABLE:
        return SUBAGENT_NOT_APPLICABLE[d.name]
    ops = {s.get("op") for s in spec.get("steps", [])}
    if ops - SUPPORTED_OPS - TREE_OPS:
        return f"needs ACP host ops {sorted(ops - SUPPORTED_OPS)}"
    names = set()
    for log in [d / "session.jsonl", *sorted(d.glob("session.[0-9]*.jsonl"))]:
        _, events = read_log_events(log)
        names |= {e["data"]["name"] for e in events if e["type"] == "tool/call"}
    foreign = sorted(n for n in names if n not in BUILTIN_TOOL_NAMES and n not in SUBAGENT_TOOLS and n not in JOB_TOOLS)
    if foreign:
        return needs_tools(foreign)
    header, _ = read_log_events(d / "session.jsonl")
    if not any("origin" in read_log_events(c)[0] for c in d.glob("session.[0-9]*.jsonl")):
        return "its child sessions are not subagents (no origin: subagent; a host-created child)"
    return None


# The ACP host ops a tree replay drives: a prompt that returns once the agent's message arrived (the turn runs to
# its end before the next op here), and the waits for a child's turn, the root's next turn or a file (the
# tree settles: every child idle, every settlement spliced and its turn run).
TREE_OPS = {"waitForSubagentTurnEnd", "waitForTurnStart", "waitForFile", "promptAndWaitForAgentMessage"}
SUBAGENT_TOOLS = {"subagent", "subagent_fork", "send_message", "interrupt_agent", "list_agents", "report",
                  "ask_user_question"}  # ask_user_question: only in children, where dsh refuses it


@dataclass
class TreeOutcome:
    root: Outcome
    children: list[Outcome]
    headers: list[dict]
    recorded_headers: list[dict]

    @property
    def mismatches(self) -> list[str]:
        out = [f"root: {m}" for m in self.root.mismatches]
        for i, c in enumerate(self.children, 1):
            out += [f"child {i}: {m}" for m in c.mismatches]
        return out


def _header_shape(h: dict) -> dict:
    return {k: h.get(k) for k in ("seedLength", "origin", "delegationDepth") if k in h} | \
        {"hasParent": "parentSession" in h}


async def run_tree_scenario(d: Path, tmp: Path) -> TreeOutcome:
    """A subagent scenario through the agent host and a real store: the root replays ``session.jsonl``,
    each child its own ``session.N.jsonl`` (``ScenarioReplay``); root and children are compared."""
    from dsh_tui.llm.replay import ScenarioReplay

    spec = json.loads((d / "input.json").read_text())
    work = tmp / "workspace"
    prepare_workspace(d, work)
    provider = ScenarioReplay.from_dir(d, cwd=work)
    _, recorded = read_log_events(d / "session.jsonl")
    child_logs = sorted(d.glob("session.[0-9]*.jsonl"), key=lambda p: int(p.name.split(".")[1]))
    return await _run_tree(d, tmp, work, spec, provider, recorded, child_logs,
                           read_log_events(d / "session.jsonl")[0]["id"])


async def _run_tree(d: Path, tmp: Path, work: Path, spec: dict, provider, recorded: list[dict],
                    child_logs: list[Path], recorded_root_id: str, fence=None, approvals: bool = True) -> TreeOutcome:
    """Drive ``spec``'s steps on a root agent in a real store with ``provider`` (a ``ScenarioReplay``) and
    compare the root with ``recorded`` and each child with its log in ``child_logs``. ``fence(agent)``: the
    recorder's ordering fixture, installed on the root agent before the first prompt."""
    from dsh_tui.runtime.host import AgentHost, HostSpec
    from dsh_tui.store.open import open_store

    _, model = ReplayProvider.recorded_route(recorded)
    store = open_store(tmp / "root")
    title = next((e["data"] for e in recorded if e["type"] == "session/title-llm-request"), None)
    (tmp / "dsh-home").mkdir(exist_ok=True)
    fixture = TREE_FIXTURES.get(d.name)
    host = await AgentHost.open(HostSpec(
        root=None, store=store, cwd=work, provider=provider, model=model or "replay-model", preset="full-access",
        persona=None, plugins=(), plugin_objects=(fixture(),) if fixture else (),
        agent_options={"runtime_context": False, "check_requests": True,
                                                 "spill_dir": str(tmp / "spill"), "max_inline_bytes": 50_000},
        tool_options={"escalation": True, "background": True},
        plugin_config={"subagents": SUBAGENT_CONFIG.get(d.name, {}),
                       # configured as dsh's composition was for this recording (as feature_plugins does)
                       "session-title-llm": ({"maxOutputTokens": title["maxTokens"], **title["route"]} if title
                                             else {"enabled": False}),
                       "agent-instructions": {"dshHome": str(tmp / "dsh-home")}}))
    provider.root_idle = host.agent.wait_idle  # background children settle as dsh recorded them
    agent = host.agent
    if fence is not None:
        fence(agent)
    if approvals:  # dsh's ACP host answers approvals (the client's answers); a headless one has no approval service
        answers = [ANSWERS.get(a.get("kind"), "rejected") for a in spec.get("permissionAnswers", [])]
        agent.on("approval/request", lambda p, nxt: answers.pop(0) if answers else "rejected")
    for ev in recorded:  # the ACP host's session configuration before the first prompt (e.g. sandbox/mode)
        if ev["type"] in ("sandbox/mode", "approval/policy"):
            host.session.append(ev["type"], ev["data"])
        elif ev["type"] == "agent/inbox/spliced":
            break
    try:
        for step in spec.get("steps", []):
            op = step.get("op")
            if op in ("prompt", "promptExpectError", "promptAndWaitForAgentMessage"):
                agent.followup(step["text"])
                await asyncio.wait_for(agent.wait_idle(), 60)
            elif op in ("waitForTurnEnd", "waitForTurnStart", "waitForSubagentTurnEnd", "waitForFile"):
                await _settle_tree(agent)
        await _settle_tree(agent)
    finally:
        await host.close()
    return _compare_tree(store, host.session.header["id"], recorded, work, provider.children, child_logs,
                         recorded_root_id)


def _compare_tree(store, root_id: str, recorded: list[dict], work: Path, ids: list[str], child_logs: list[Path],
                  recorded_root_id: str, scrub: tuple[str, ...] = ()) -> TreeOutcome:
    """The root's log against ``recorded`` and each child's (``ids``, in creation order) against its log in
    ``child_logs``; ``scrub``: fixed session ids written ``{{sessionId}}`` as dsh's normalizer writes them."""
    def scrubbed(events) -> list[dict]:
        text = json.dumps(list(events))
        for sid in scrub:
            text = text.replace(sid, "{{sessionId}}")
        return json.loads(text)

    ours_root = scrubbed(store.inspect(root_id).events)
    root = compare(Outcome(list(ours_root), recorded, work))
    children, headers, rec_headers = [], [], []
    if len(ids) != len(child_logs):
        root.mismatches.append(f"children differ: ours={len(ids)} dsh={len(child_logs)}")
    for cid, log in zip(ids, child_logs):
        res = store.inspect(cid)
        rh, rev = read_log_events(log)
        headers.append(res.header)
        rec_headers.append(rh)
        o = compare(Outcome(scrubbed(res.events), rev, work))
        n = res.header.get("seedLength")
        if n is not None:  # a fork: the seed is our parent's log through its last completed turn (dsh's
            # count differs by the rows other features add, e.g. titles), so it is checked against ours
            if res.events[:n] != list(ours_root[:n]) or ours_root[n - 1]["type"] != "turn/end":
                o.mismatches.append("fork seed is not the parent's log through its last turn/end")
            rh = {**rh, "seedLength": n} if "seedLength" in rh else rh
        if _header_shape(res.header) != _header_shape(rh):
            o.mismatches.append(f"header differs: ours={_header_shape(res.header)} dsh={_header_shape(rh)}")
        ours_pre = [e["type"] for e in res.events if e["type"] in CHILD_ROWS]
        rec_pre = [e["type"] for e in rev if e["type"] in CHILD_ROWS]
        if ours_pre != rec_pre:
            o.mismatches.append(f"child rows differ: ours={ours_pre} dsh={rec_pre}")
        ours_desc = [e["data"] for e in res.events if e["type"] == "subagent/descriptor"]
        rec_desc = [e["data"] for e in rev if e["type"] == "subagent/descriptor"]
        if ours_desc != rec_desc:
            o.mismatches.append(f"descriptor differs: ours={ours_desc} dsh={rec_desc}")
        children.append(o)
    # The relayed messages each log received (settlement notices, reports, send_message turns), with our
    # session ids mapped to dsh's.
    ids_map = {h["id"]: r["id"] for h, r in zip(headers, rec_headers)}
    ids_map[root_id] = recorded_root_id
    for o, ours_events in [(root, ours_root)] + [(c, scrubbed(store.inspect(i).events)) for c, i in zip(children, ids)]:
        a, b = _relayed(ours_events, ids_map), _relayed(o.recorded, {})
        if a != b:
            o.mismatches.append(f"relayed messages differ: ours={a} dsh={b}")
        names = {e["data"]["callId"]: e["data"]["name"] for e in o.recorded if e["type"] == "tool/call"}
        for x, y in zip(_results(ours_events), _results(o.recorded)):
            if names.get(y["message"]["content"][0]["toolCallId"]) not in SUBAGENT_TOOLS:
                continue
            o.compared_results += 1
            tx = json.dumps(x["message"]["content"][0].get("content"))
            for ours, theirs in ids_map.items():
                tx = tx.replace(ours, theirs)
            # other ids (a relayed message's) as dsh's normalizer writes them, both sides
            tx, ty = UUID.sub("{{sessionId}}", tx), UUID.sub("{{sessionId}}", json.dumps(y["message"]["content"][0].get("content")))
            if tx != ty:
                o.mismatches.append(f"subagent tool result differs: ours={tx} dsh="
                                    f"{json.dumps(y['message']['content'][0].get('content'))}")
    return TreeOutcome(root, children, headers, rec_headers)


def _relayed(events: list[dict], ids_map: dict[str, str]) -> list[str]:
    out = []
    for e in events:
        if e["type"] == "user/message" and (e["data"].get("source") or {}).get("kind") in RELAYED:
            text = json.dumps({"content": e["data"]["content"], "source": e["data"]["source"]}, sort_keys=True)
            for ours, theirs in ids_map.items():
                text = text.replace(ours, theirs)
            out.append(text)
    return out


RELAYED = {"subagent-settled", "subagent-report", "coordinator"}


# The subagent rows of a child log, in order (with the loop's boundaries around them).
CHILD_ROWS = {"subagent/descriptor", "session/end-seed", "approval/policy", "sandbox/mode", "turn/start",
              "step/start", "turn/end"}


async def _settle_tree(agent) -> None:
    """Wait until the root and every live child are idle and no settlement is pending."""
    for _ in range(2000):
        await asyncio.wait_for(agent.wait_idle(), 60)
        busy = [c for c in agent.host.subagents.children.values() if c.host is not None or c.closing is not None and not c.closing.done()]
        if not busy and agent.status == "idle" and not agent.inbox.pending():
            await asyncio.sleep(0)
            if agent.status == "idle":
                return
        for c in busy:
            if c.closing is not None:
                await c.closing
            elif c.agent is not None:
                await c.agent.wait_idle()
        await asyncio.sleep(0.001)
    raise AssertionError("the subagent tree did not settle")


@dataclass
class Outcome:
    ours: list[dict]
    recorded: list[dict]
    cwd: Path
    mismatches: list[str] = field(default_factory=list)
    compared_results: int = 0


def _acp_block(b: dict) -> dict:
    """An ACP prompt block as a harness content block (images become attachment references)."""
    if b.get("type") != "image":
        return dict(b)
    data = base64.b64decode(b["data"])
    width = height = 0
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        width, height = struct.unpack(">II", data[16:24])
    return {"type": "image", "attachment": {"attachmentId": "sha256:" + hashlib.sha256(data).hexdigest(),
                                            "mediaType": b.get("mimeType", "application/octet-stream"),
                                            "width": width, "height": height, "bytes": len(data)}}


def _realize(obj, cwd: Path):
    return json.loads(json.dumps(obj).replace("{{cwd}}", str(cwd)))


def _normalize(obj, cwd: Path):
    return json.loads(json.dumps(obj).replace(str(cwd), "{{cwd}}"))


async def run_scenario(d: Path, tmp: Path) -> Outcome:
    spec = json.loads((d / "input.json").read_text())
    header, recorded = read_log_events(recording(d))
    work = tmp / "workspace"
    prepare_workspace(d, work)
    override = None
    if (d / "replay.override.json").is_file():
        override = _realize(json.loads((d / "replay.override.json").read_text()), work)
    provider_name, model = ReplayProvider.recorded_route(recorded)
    provider = ReplayProvider(_realize(attempts_from_events(recorded), work), override=override, cwd=work,
                              name=provider_name or "replay")
    session = Session(make_header("conformance", cwd=str(work), created_at=1))
    agent = _agent(session, provider, model, work, tmp, recorded, d.name)
    return await _drive(agent, spec, work, session, recorded)


class _WorkspaceContextCompaction:
    """dsh's examples/acp-agent/tests/fixtures/workspace-context-compaction.ts (agent-instructions): once the
    read of nested/task.txt is projected, the visible workspace baseline is replaced by a compaction
    checkpoint message, so the next entering step must restore the baseline."""

    name = "workspace-context-compaction"

    def apply(self, ctx, config) -> None:
        async def post_execute(payload, nxt):
            downstream = await nxt()
            args = payload["arguments"]
            if payload["result"].get("isError") or payload["name"] != "read" or not isinstance(args, dict) \
                    or args.get("file_path") != "nested/task.txt":
                return downstream
            session = payload["agent"].session
            baseline = next(e for e in reversed(session.events) if e["type"] == "user/message"
                            and (e["data"].get("source") or {}).get("kind") == "agent-instructions"
                            and e["data"]["source"].get("baseline") is True)
            session.append("user/message", {
                "id": str(uuid.uuid4()), "role": "user",
                "content": [{"type": "text", "text": "Earlier context was compacted for this snapshot."}],
                "source": {"kind": "plugin", "plugin": "compact", "compactionId": "workspace-context-fixture"}},
                surface_op={"op": "replace", "start": baseline["seq"], "end": baseline["seq"]},
                source_event_seqs=[baseline["seq"]])
            return downstream

        ctx.on("tools/post-execute", post_execute)


# The recorder's fixture plugins of single-loop scenarios (its snapshot overlay's ``./tests/fixtures/*.ts``).
LOOP_FIXTURES = {"agent-instructions": _WorkspaceContextCompaction}


def feature_plugins(recorded: list[dict], home: Path, scenario: str = "", work: Path | None = None) -> Plugins:
    """Every built-in plugin, titles and project instructions included, configured as the recording was:
    the LLM title is on where dsh's test composition had it (a recorded ``session/title-llm-request``, whose
    route and token limit it shows); the user's home instructions come from ``home`` (empty), not ``~/.dsh``."""
    specs = builtin_specs(features=True)
    title = next((e["data"] for e in recorded if e["type"] == "session/title-llm-request"), None)
    for spec in specs:
        if spec.id == "session-title-llm":  # on in dsh's composition only where a request was recorded
            spec.enabled = title is not None
            spec.config = {"maxOutputTokens": title["maxTokens"], **title["route"]} if title else {}
        elif spec.id == "agent-instructions":
            spec.config = {"dshHome": str(home)}
        elif spec.id == "terminals":  # opt-in in dsh's composition too: on where the recording used it
            spec.enabled = any(e["type"] == "tool/call" and e["data"]["name"] in TERMINAL_TOOLS for e in recorded)
        extra = scenario_plugin_config(scenario, spec.id, work)
        if extra:
            spec.config = {**(spec.config or {}), **extra}
    if scenario in LOOP_FIXTURES:
        specs.append(PluginSpec(LOOP_FIXTURES[scenario].name, "sdk", obj=LOOP_FIXTURES[scenario]()))
    return Plugins(specs, strict=True)


def _agent(session: Session, provider, model, work: Path, tmp: Path, recorded: list[dict], scenario: str = "") -> Agent:
    home = tmp / "dsh-home"
    home.mkdir(exist_ok=True)
    spill = tmp / "spill"
    if scenario in NO_SPILL_STORE:
        spill.write_text("")  # a file: no spill can be written under it
    config = AgentConfig(model=model or "replay-model", cwd=str(work), preset=SCENARIO_PRESET.get(scenario, "full-access"),
                         runtime_context=False, check_requests=True, spill_dir=str(spill), max_inline_bytes=50_000)
    tools = builtin_tools(escalation=True, background=True, **SCENARIO_TOOL_OPTIONS.get(scenario, {}),
                          **_sandbox_options(scenario))
    return Agent(session, provider, tools, config=config,
                 sleep=FakeSleep(), plugins=feature_plugins(recorded, home, scenario, work))


async def _drive(agent: Agent, spec: dict, work: Path, session: Session, recorded: list[dict]) -> Outcome:
    answers = [ANSWERS.get(a.get("kind"), "rejected") for a in spec.get("permissionAnswers", [])]

    def escalation(payload, nxt):
        args = payload["arguments"]
        if isinstance(args, dict) and args.get("sandbox_permissions"):
            return {"kind": "ask", "reason": f"escalate sandbox to {args['sandbox_permissions']}: "
                                              f"{args.get('justification', '')}"}
        return nxt()

    agent.on("tools/pre-execute", escalation)
    agent.on("approval/request", lambda p, nxt: answers.pop(0) if answers else "rejected")
    for step in spec.get("steps", []):
        op = step.get("op")
        if op in ("prompt", "promptExpectError"):
            agent.followup(step["text"])
            await asyncio.wait_for(agent.wait_idle(), 60)
        elif op == "promptContent":
            agent.followup([_acp_block(b) for b in step["content"]])
            await asyncio.wait_for(agent.wait_idle(), 60)
        elif op == "promptAndCancel":
            agent.followup(step["text"])
            ready = (step.get("waitForFile") or {}).get("path")
            for _ in range(20_000):
                if ready is None or (work / ready).exists() or agent.status == "idle":
                    break
                await asyncio.sleep(0.001)
            agent.cancel({"kind": "user"})
            await asyncio.wait_for(agent.wait_idle(), 60)
        elif op in ("waitForTurnEnd", "waitForTitleAfterTurnEnd"):
            await asyncio.wait_for(agent.wait_idle(), 60)
        elif op in ("promptAndWaitForAgentMessage", "waitForTurnStart", "cancel", "waitForEventAfterTurnEnd"):
            await _host_op(agent, session, work, step)
    await agent.bus.parallel("session/flush", {"agent": agent}, scope=agent.id)  # the title request
    await agent.dispose()
    return compare(Outcome(list(session.events), recorded, work))


async def _host_op(agent: Agent, session: Session, work: Path, step: dict) -> None:
    """dsh's goal-scenario host ops (goal.snapshot.ts)."""
    op = step["op"]
    if op == "promptAndWaitForAgentMessage":  # returns once the agent's message with ``waitForText`` arrived
        agent.followup(step["text"])
        await _until(lambda: any(e["type"] == "assistant/message" and step["waitForText"]
                                 in json.dumps(e["data"]["message"]["content"]) for e in session.events))
    elif op == "waitForTurnStart":
        await _until(lambda: any(e["type"] == "turn/start" and e["data"]["turn"] >= step["minimumTurn"]
                                 for e in session.events))
    elif op == "cancel":  # once the model's stream said it is ready (the override's ``readyFile``)
        ready = (step.get("waitForFile") or {}).get("path")
        if ready is not None:
            await _until(lambda: (work / ready).exists())
        agent.cancel({"kind": "user"})
    elif op == "waitForEventAfterTurnEnd":
        await asyncio.wait_for(agent.wait_idle(), 60)

        def after_end() -> bool:
            ends = [i for i, e in enumerate(session.events) if e["type"] == "turn/end"]
            return bool(ends) and any(e["type"] == step["type"] for e in session.events[ends[-1]:])

        await _until(after_end)


async def _until(ready, seconds: float = 60) -> None:
    for _ in range(int(seconds * 1000)):
        if ready():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("the scenario's wait was never satisfied")


def _boundaries(events: list[dict]) -> list[tuple]:
    out = []
    for e in events:
        t, dd = e["type"], e["data"]
        if t in ("turn/start",):
            out.append((t, dd["turn"]))
        elif t in ("step/start", "step/end"):
            out.append((t, dd["turn"], dd["step"]))
        elif t == "turn/end":
            r = dd["reason"]
            extra = r.get("error", {}).get("code") if r["kind"] == "error" else r.get("reason", {}).get("kind")
            out.append((t, dd["turn"], r["kind"], extra))
    return out


def _assistant(events: list[dict]) -> list[tuple]:
    return [(e["data"]["turn"], e["data"]["step"], json.dumps(e["data"]["message"]["content"], sort_keys=True),
             bool(e["data"].get("interrupted"))) for e in events if e["type"] == "assistant/message"]


def _calls(events: list[dict]) -> list[tuple]:
    return [(e["data"]["name"], e["data"]["arguments"]) for e in events if e["type"] == "tool/call"]


def _results(events: list[dict]) -> list[dict]:
    return [e["data"] for e in events if e["type"] == "tool/result" and e.get("surfaceOp") == "append"]


def _texts_by_seq(events: list[dict]) -> dict[int, str]:
    return {e["seq"]: json.dumps(e["data"].get("content"), sort_keys=True) for e in events
            if e["type"] == "user/message"}


def _titles(events: list[dict]) -> list[tuple]:
    """Every ``session/title``: title, source, and the texts of its source messages (seqs differ when dsh
    logged host rows we do not, so they are compared by what they point at)."""
    texts = _texts_by_seq(events)
    return [(e["data"]["title"], json.dumps(e["data"]["source"], sort_keys=True),
             [texts.get(s) for s in e["data"]["messageSeqs"]]) for e in events if e["type"] == "session/title"]


def _title_requests(events: list[dict]) -> list[str]:
    """Every ``session/title-llm-request`` byte for byte but the message id and the seq numbers."""
    texts = _texts_by_seq(events)
    out = []
    for e in events:
        if e["type"] == "session/title-llm-request":
            d = json.loads(json.dumps(e["data"]))
            d["messageSeqs"] = [texts.get(s) for s in d["messageSeqs"]]
            for m in d["messages"]:
                m["id"] = "<id>"
                for b in m["content"]:
                    b["text"] = re.sub(r'\{"seq":\d+,', '{"seq":#,', b["text"])
            out.append(json.dumps(d, ensure_ascii=False))
    return out


def _instructions(events: list[dict]) -> list[tuple]:
    """The project-instruction messages the model saw: exact text and source."""
    return [("\n".join(b.get("text", "") for b in e["data"]["content"]), json.dumps(e["data"]["source"], sort_keys=True))
            for e in events if e["type"] == "user/message" and e.get("surfaceOp") == "append"
            and (e["data"].get("source") or {}).get("kind") == "agent-instructions"]


SKELETON = {"turn/start", "turn/end", "step/start", "step/end", "assistant/message", "tool/call", "tool/result",
            "llm/retry", "llm/retry-started", "compaction/start", "compaction/summary", "compaction/end",
            "compaction/prune", "approval/asked", "approval/decided", "todo/write", "goal/change"}
# Messages the host runs' composition injects that the replay here leaves out: dsh's runtime-context snapshot
# (the replay runs with runtime_context off) and the title plugin's own request messages (compared as title
# requests).
NOT_INJECTED_HERE = {"@deepseek-ai/dsh-system-prompt", "dsh-session-title-llm"}


def _injected(events: list[dict]) -> list[tuple]:
    """Every message a plugin or the runtime put in front of the model (reminders, goal rounds, hook
    context, job and goal notices, relayed subagent messages): its place (turn, step), text and source."""
    out, where = [], (0, 0)
    for e in events:
        if e["type"] == "step/start":
            where = (e["data"]["turn"], e["data"]["step"])
        if e["type"] != "user/message" or e.get("surfaceOp") != "append":
            continue
        src = e["data"].get("source") or {}
        if src.get("kind") in ("user", "agent-instructions") or src.get("plugin") in NOT_INJECTED_HERE:
            continue
        out.append((where, json.dumps(e["data"]["content"], sort_keys=True), json.dumps(src, sort_keys=True)))
    return out


def _goal_changes(events: list[dict]) -> list[str]:
    return [json.dumps({k: v for k, v in e["data"].items() if k not in ("createdAt", "updatedAt")}, sort_keys=True)
            for e in events if e["type"] == "goal/change"]


def _skeleton(events: list[dict]) -> list[str]:
    """The order of the loop's durable rows (chunks, prompts and host-only rows left out), with the
    fallback title, the title request and the instruction messages in their places (a provider title's
    place depends on when its request finishes: not compared)."""
    out = []
    for e in events:
        t = e["type"]
        if t in SKELETON or t == "session/title-llm-request":
            out.append(t)
        elif t == "session/title" and (e["data"].get("source") or {}).get("kind") == "fallback":
            out.append("session/title(fallback)")
        elif t == "user/message" and (e["data"].get("source") or {}).get("kind") == "agent-instructions" \
                and e.get("surfaceOp") == "append":
            out.append("user/message(instructions)")
    return out


# dsh's normalizeSessionLog (acp-snapshot's normalize.ts) writes any UUID as ``{{sessionId}}`` on both sides.
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


def _scrub_ids(obj):
    return json.loads(UUID.sub("{{sessionId}}", json.dumps(obj)))


def compare(o: Outcome) -> Outcome:
    ours = _scrub_ids(_normalize(o.ours, o.cwd))
    rec = _scrub_ids(o.recorded)
    for name, fn in (("event order", _skeleton), ("boundaries", _boundaries), ("assistant messages", _assistant),
                     ("tool calls", _calls), ("titles", _titles), ("title requests", _title_requests),
                     ("instructions", _instructions), ("injected messages", _injected),
                     ("goal changes", _goal_changes)):
        a, b = fn(ours), fn(rec)
        if a != b:
            first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            o.mismatches.append(f"{name} differ at #{first}: ours={a[first:first + 1]} dsh={b[first:first + 1]} "
                                f"(counts {len(a)} vs {len(b)})")
    names = {e["data"]["callId"]: e["data"]["name"] for e in rec if e["type"] == "tool/call"}
    ra, rb = _results(ours), _results(rec)
    if len(ra) != len(rb):
        o.mismatches.append(f"tool result counts differ: ours={len(ra)} dsh={len(rb)}")
    for x, y in zip(ra, rb):
        bx, by = x["message"]["content"][0], y["message"]["content"][0]
        if bool(bx.get("isError")) != bool(by.get("isError")) or x.get("error") != y.get("error"):
            o.mismatches.append(f"tool result {by['toolCallId']} outcome differs: ours={bx.get('isError')} "
                                f"{x.get('error')} dsh={by.get('isError')} {y.get('error')}")
            continue
        text_y = json.dumps(by.get("content"))
        # Not comparable: spill paths, placeholders, absolute paths of the recording machine, and the
        # shell's sandbox-escalation refusal (tool-owned text that needs dsh's OS sandbox).
        deterministic = names.get(by["toolCallId"]) in DETERMINISTIC_TOOLS \
            and not re.search(r"/tmp/|/Users/|/home/|/private/|escalat", text_y) \
            and "{{" not in text_y.replace("{{cwd}}", "").replace("{{sessionId}}", "")
        if deterministic:
            o.compared_results += 1
            if bx.get("content") != by.get("content"):
                o.mismatches.append(f"tool result {by['toolCallId']} text differs: ours={bx.get('content')!r:.300} "
                                    f"dsh={by.get('content')!r:.300}")
    return o


# -------------------------------------------------------------------------------------------------
# Headless snapshots (``session.expected.jsonl`` without ``input.json``): one run, or a resume of the
# recorded prefix up to ``session/end-seed``; the prompts are the next-turn messages the recording queued.

# What dsh's test wrote into the workspace before the run (examples/headless-agent/tests: the
# workspace-context resume test edits AGENTS.md while the session is closed).
WORKSPACE_SETUP = {"offline-edit": {"AGENTS.md": "New workspace instruction after offline edit.\n"},
                   # the precedence test: both files changed, and the seed's baseline was built with
                   # instructionFileCandidates [CLAUDE.md, AGENTS.md] (the resumed composition has the default)
                   "precedence-change": {"AGENTS.md": "Current AGENTS rule.\n", "CLAUDE.md": "Current CLAUDE rule.\n"}}


def headless_dirs() -> list[Path]:
    return sorted(p.parent for p in EXAMPLES.rglob("session.expected.jsonl")
                  if not (p.parent / "input.json").is_file())


def headless_applicability(d: Path) -> str | None:
    _, events = read_log_events(d / "session.expected.jsonl")
    names = sorted({e["data"]["name"] for e in events if e["type"] == "tool/call"})
    if [n for n in names if n not in BUILTIN_TOOL_NAMES]:
        end = next((e["seq"] for e in events if e["type"] == "session/end-seed"), None)
        if end is None or any(e["type"] == "tool/call" and e["seq"] > end for e in events):
            return needs_tools([n for n in names if n not in BUILTIN_TOOL_NAMES])
    return None


async def run_headless(d: Path, tmp: Path) -> Outcome:
    header, recorded = read_log_events(d / "session.expected.jsonl")
    work = tmp / "workspace"
    work.mkdir()
    for name, text in WORKSPACE_SETUP.get(d.name, {}).items():
        (work / name).write_text(text, encoding="utf-8")
    end = next((e["seq"] for e in recorded if e["type"] == "session/end-seed"), None)
    seed = [] if end is None else [e for e in recorded if e["seq"] < end]
    live = recorded if end is None else [e for e in recorded if e["seq"] > end]
    override = None
    if (d / "replay.override.json").is_file():
        override = _realize(json.loads((d / "replay.override.json").read_text()), work)
    provider_name, model = ReplayProvider.recorded_route(recorded)
    provider = ReplayProvider(_realize(attempts_from_events(live), work), override=override, cwd=work,
                              name=provider_name or "replay")
    hdr = make_header("conformance", cwd=str(work), created_at=1)
    session = Session(hdr, _realize(seed, work), check_relations=False) if seed else Session(hdr)
    agent = _agent(session, provider, model, work, tmp, recorded)
    prompts = [m for e in live if e["type"] == "agent/inbox/spliced" and e["data"]["target"] == "next-turn"
               for m in e["data"].get("inserted", [])]
    steps = [{"op": "promptContent", "content": m["content"]} for m in prompts]
    return await _drive(agent, {"steps": steps}, work, session, recorded)


# -------------------------------------------------------------------------------------------------
# Headless snapshots whose dsh test seeds a session store before the run and resumes the parent there
# (``parent.expected.jsonl`` + ``replay.override.json``): the seed is written to a real store as dsh's test
# wrote it, the parent resumes through the agent host with the scripted model, and its log is compared.

# dsh's seeds beyond the parent's own recorded prefix (examples/headless-agent/tests/*.snapshot.ts), by scenario:
# extra sessions (header, events) the test created in the store.
SEEDED_STORES: dict[str, dict] = {
    # subagent-diagnostic.snapshot.ts: a cold child that classifies as a subagent but never logged its
    # descriptor (dsh's list_agents shows it as `[diagnostic: corrupt]`)
    "descriptorless-child": {
        "parent": "subagent-diagnostic-parent",
        "others": [({"type": "session", "version": 0, "id": "subagent-diagnostic-child", "createdAt": 2,
                     "parentSession": "subagent-diagnostic-parent", "origin": "subagent", "delegationDepth": 1},
                    [{"type": "turn/start", "seq": 0, "time": 20, "data": {"turn": 1}},
                     {"type": "turn/end", "seq": 1, "time": 21, "data": {"turn": 1, "reason": {"kind": "interrupted"}}}])],
    },
}


def seeded_dirs() -> list[Path]:
    return sorted(p.parent for p in EXAMPLES.rglob("parent.expected.jsonl"))


def seeded_applicability(d: Path) -> str | None:
    if d.name not in SEEDED_STORES:
        return SEEDED_NOT_APPLICABLE.get(d.name, "its dsh test's store seed is not reproduced here")
    return None


SEEDED_NOT_APPLICABLE: dict[str, str] = {
    "parent-override": "dsh's in-process file sandbox under read-only mode (a write denied as FS_SANDBOX_DENIED with "
                       "the escalation hint, and dsh's test compares the runtime-context policy snapshots); "
                       "dsh-tui's read-only preset asks for approval instead, which a delegated child is refused",
}


async def run_seeded(d: Path, tmp: Path) -> TreeOutcome:
    """The parent resumed in the seeded store, its children (``child.replay.jsonl``) compared with
    ``child.expected.jsonl``."""
    from dsh_tui.llm.replay import ScenarioReplay
    from dsh_tui.runtime.host import AgentHost, HostSpec
    from dsh_tui.store.open import open_store

    seed = SEEDED_STORES[d.name]
    _, recorded = read_log_events(d / "parent.expected.jsonl")
    work = tmp / "workspace"
    work.mkdir()
    store = open_store(tmp / "root")
    end = next(e["seq"] for e in recorded if e["type"] == "session/end-seed")
    parent = {"type": "session", "version": 0, "id": seed["parent"], "createdAt": 1, "cwd": str(work),
              "delegationDepth": 0}
    store.create(parent)
    store.append(parent["id"], [e for e in recorded if e["seq"] < end])
    for header, events in seed.get("others", []):
        store.create({**header, "cwd": str(work)})
        store.append(header["id"], events)
    provider_name, model = ReplayProvider.recorded_route(recorded)
    provider = ScenarioReplay([], override=_realize(json.loads((d / "replay.override.json").read_text()), work),
                              cwd=work, name=provider_name or "replay")
    child_replays = [d / "child.replay.jsonl"] if (d / "child.replay.jsonl").is_file() else []
    provider._child_logs = child_replays
    provider._tree = {"next": 0, "ids": []}
    provider._notices_start_turns = False
    provider.root_idle = None
    host = await AgentHost.open(HostSpec(
        root=None, store=store, cwd=work, provider=provider, model=model or "replay-model",
        preset=seed.get("preset", "full-access"), resume_id=parent["id"], persona=None, plugins=(),
        agent_options={"runtime_context": False, "check_requests": True, "spill_dir": str(tmp / "spill")},
        tool_options={"escalation": True, "background": True},
        plugin_config={"session-title-llm": {"enabled": False}, "agent-instructions": {"dshHome": str(tmp / "home")}}))
    try:
        prompts = [m for e in recorded if e["seq"] > end and e["type"] == "agent/inbox/spliced"
                   and e["data"]["target"] == "next-turn" for m in e["data"].get("inserted", [])]
        for m in prompts:
            host.agent.followup(m["content"])
            await asyncio.wait_for(host.agent.wait_idle(), 60)
        await _settle_tree(host.agent)
    finally:
        await host.close()
    expected_children = [d / "child.expected.jsonl"] if child_replays else []
    fixed = (parent["id"],) + tuple(h["id"] for h, _ in seed.get("others", []))  # written {{sessionId}} by dsh
    return _compare_tree(store, parent["id"], recorded, work, provider.children, expected_children, "{{sessionId}}",
                         scrub=fixed)


# -------------------------------------------------------------------------------------------------
# dsh's headless subagent-settlement snapshot (headless.snapshot.ts, "delivers a continuable child result
# without parent polling"): authored parent and child scripts (``parent.replay.jsonl`` + ``parent.override.json``,
# ``child.replay.jsonl``), the parent's log as its stream-json printed it (every ``session_event``), the
# child's log (``child.expected.jsonl``) and the final result.

SETTLEMENT_DIR = EXAMPLES / "headless-agent" / "tests" / "snapshots" / "subagent-settlement"
SETTLEMENT_TASK = ("Start one continuable background subagent and answer from its completion notice. Do not call "
                   "list_agents, send_message, job_output, or job_list.")


def _settlement_fence(agent) -> None:
    """subagent-settlement-fence.ts: the root's turn 1 step 2 waits (after its inbox claim) until the child's
    settlement notice entered the root's inbox."""
    delivered = asyncio.Event()

    def inserted(payload) -> None:
        if (payload["message"].get("source") or {}).get("kind") == "subagent-settled":
            delivered.set()

    async def pre_step(payload, nxt):
        if payload["turn"] == 1 and payload["step"] == 2 and not delivered.is_set():
            await delivered.wait()
        return await nxt()

    agent.on("agent/inbox/inserted", inserted)
    agent.on("agent/pre-step", pre_step)


async def run_settlement(d: Path, tmp: Path) -> tuple[TreeOutcome, dict]:
    from dsh_tui.llm.replay import ScenarioReplay

    work = tmp / "workspace"
    work.mkdir()
    stream = [json.loads(line) for line in (d / "stream-json.expected.jsonl").read_text().splitlines() if line]
    recorded = [m["event"] for m in stream if m["type"] == "session_event"]
    provider = ScenarioReplay.from_file(d / "parent.replay.jsonl", override=d / "parent.override.json", cwd=work,
                                        name=ReplayProvider.recorded_route(recorded)[0])
    provider._child_logs = [d / "child.replay.jsonl"]
    provider._tree = {"next": 0, "ids": []}
    provider._notices_start_turns = False
    provider.root_idle = None
    spec = {"steps": [{"op": "prompt", "text": SETTLEMENT_TASK}]}
    outcome = await _run_tree(d, tmp, work, spec, provider, recorded, [d / "child.expected.jsonl"], "{{sessionId}}",
                              fence=_settlement_fence, approvals=False)
    texts = [b.get("text", "") for e in outcome.root.ours if e["type"] == "assistant/message"
             for b in e["data"]["message"]["content"] if b.get("type") == "text"]
    return outcome, {"ours": texts[-1] if texts else None, "dsh": stream[-1]["output"]}
