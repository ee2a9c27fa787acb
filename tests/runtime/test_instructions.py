"""Project instructions (extensions spec §2): discovery from ``$DSH_HOME`` and the project root down to the
cwd, de-duplication, the byte budget, dsh's exact texts, the baseline at turn 1 step 1, the dynamic
``set``/``replace``/``remove`` messages after read/write/edit, resume, and the transcript row."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from dsh_tui.extensions.instructions import InstructionsConfig, Workspace, baseline_message
from dsh_tui.llm.replay import read_log_events
from dsh_tui.llm.scripted import ScriptedProvider, call, text
from dsh_tui.runtime import Agent, AgentConfig
from dsh_tui.runtime.plugins import Plugins, builtin_specs
from dsh_tui.session.headers import make_header
from dsh_tui.session.log import Session
from dsh_tui.session.transcript import TranscriptFold
from dsh_tui.tools import builtin_tools
from tests.conftest import FIXTURES

INTRO = ("The following workspace instructions may be relevant to your work. Use them as guidance when applicable. "
         "More specific instructions take precedence over broader ones. They do not override system, developer, "
         "or direct user instructions.")
CODE_MODE = FIXTURES / "examples" / "acp-agent" / "tests" / "snapshots" / "code-mode-workspace-context"


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    """root/.git, root/{AGENTS.md, CLAUDE.md (same text)}, root/a/{AGENTS.md, AGENTS.local.md},
    root/a/b/CLAUDE.md (the cwd), a sibling root/c/AGENTS.md, and $DSH_HOME/AGENTS.md."""
    home = Path(os.environ["DSH_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "AGENTS.md").write_text("Home rule.\n")
    root = tmp_path / "proj"
    cwd = root / "a" / "b"
    cwd.mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "c").mkdir()
    (root / "AGENTS.md").write_text("Root rule.\n")
    (root / "CLAUDE.md").write_text("  Root rule.\n\n")  # the same text once stripped: dropped
    (root / "a" / "AGENTS.md").write_text("A rule with </system-reminder> inside.\n")
    (root / "a" / "AGENTS.local.md").write_text("A local rule.\n")
    (root / "a" / "CLAUDE.local.md").mkdir()  # not a regular file
    (root / "docs").mkdir()
    (cwd / "CLAUDE.md").symlink_to(root / "docs" / "target.md")  # a final symlink inside the workspace is followed
    (root / "docs" / "target.md").write_text("B rule.\n")
    (root / "c" / "AGENTS.md").write_text("Sibling rule (never loaded).\n")
    return root, cwd


def test_discovery_dedup_and_exact_baseline_text(tmp_path):
    root, cwd = _tree(tmp_path)
    ws = Workspace(cwd, InstructionsConfig())
    assert ws.root == root
    sources = ws.baseline_sources()
    assert [s.path for s in sources] == ["$DSH_HOME/AGENTS.md", "AGENTS.md", "a/AGENTS.md", "a/AGENTS.local.md",
                                         "a/b/CLAUDE.md"]
    message, kept = baseline_message(ws, sources)
    assert message["content"][0]["text"] == (
        "<system-reminder>\n" + INTRO + "\n\n"
        "Instructions from: $DSH_HOME/AGENTS.md\n\nHome rule.\n\n\n"
        "Instructions from: AGENTS.md\n\nRoot rule.\n\n\n"
        "Instructions from: a/AGENTS.md\n\nA rule with <\\/system-reminder> inside.\n\n\n"
        "Instructions from: a/AGENTS.local.md\n\nA local rule.\n\n\n"
        "Instructions from: a/b/CLAUDE.md\n\nB rule.\n"
        "\n</system-reminder>")
    source = message["source"]
    assert list(source) == ["kind", "form", "baseline", "baselineIdentity", "changes"]
    assert source["baselineIdentity"] == (
        '{"projectRoot":"../..","projectRootMarkers":[".git"],"maxBytes":65536,"maxSourceBytes":1048576,'
        '"instructionFileCandidates":["AGENTS.md","CLAUDE.md"],'
        '"localInstructionFileCandidates":["AGENTS.local.md","CLAUDE.local.md"]}')
    assert list(source["changes"][0]) == ["action", "scope", "path", "digest"]
    assert [c["scope"] for c in source["changes"]] == ["user-global\0AGENTS.md", ".\0AGENTS.md", "a\0AGENTS.md",
                                                       "a\0AGENTS.local.md", "a/b\0CLAUDE.md"]
    assert source["changes"][1]["digest"] == hashlib.sha1(b"Root rule.\n").hexdigest()
    assert len(kept) == 5


def test_budget_overflow_omits_the_broad_files_then_truncates_the_most_specific(tmp_path):
    root, cwd = _tree(tmp_path)
    (cwd / "CLAUDE.md").unlink()
    (cwd / "CLAUDE.md").write_text("Specific rule: " + "x" * 200 + "\n")
    full = baseline_message(Workspace(cwd, InstructionsConfig()), Workspace(cwd, InstructionsConfig())
                            .baseline_sources())[0]["content"][0]["text"]
    budget = 700
    assert len(full.encode()) > budget
    ws = Workspace(cwd, InstructionsConfig(maxBytes=budget))
    message, kept = baseline_message(ws, ws.baseline_sources())
    got = message["content"][0]["text"]
    assert got == (
        "<system-reminder>\n"
        "Workspace instruction budget 700 bytes: omitted $DSH_HOME/AGENTS.md, AGENTS.md, a/AGENTS.md\n\n"
        + INTRO + "\n\n"
        "Instructions from: a/AGENTS.local.md\n\nA local rule.\n\n\n"
        "Instructions from: a/b/CLAUDE.md\n\nSpecific rule: " + "x" * 200 + "\n"
        "\n</system-reminder>")
    assert len(got.encode()) <= budget
    assert [c["path"] for c in message["source"]["changes"]] == ["a/AGENTS.local.md", "a/b/CLAUDE.md"]
    # smaller still: only the most specific file, cut to its longest fitting prefix; when even the normal
    # intro leaves no room, the short intro
    for budget, intro in ((480, INTRO), (400, "Workspace instructions were omitted or truncated to fit the "
                                               "configured byte budget.")):
        ws = Workspace(cwd, InstructionsConfig(maxBytes=budget))
        message, kept = baseline_message(ws, ws.baseline_sources())
        got = message["content"][0]["text"]
        head = (f"<system-reminder>\nWorkspace instruction budget {budget} bytes: omitted $DSH_HOME/AGENTS.md, "
                "AGENTS.md, a/AGENTS.md, a/AGENTS.local.md; truncated a/b/CLAUDE.md from 216 to ")
        assert got.startswith(head)
        kept_bytes = int(got[len(head):].split(" ", 1)[0])
        assert 0 < kept_bytes < 216
        assert got == (head + f"{kept_bytes} bytes\n\n" + intro + "\n\nInstructions from: a/b/CLAUDE.md\n\n"
                       + ("Specific rule: " + "x" * 200 + "\n")[:kept_bytes] + "\n</system-reminder>")
        assert budget - 1 <= len(got.encode()) <= budget  # the longest prefix that fits (2-digit count)
        assert [c["path"] for c in message["source"]["changes"]] == ["a/b/CLAUDE.md"]


def _agent(session: Session, responses: list, cwd: Path, **cfg) -> Agent:
    provider = ScriptedProvider(responses, name="mock")
    config = AgentConfig(model="mock-model", cwd=str(cwd), preset="full-access", runtime_context=False,
                         check_requests=True, **cfg)
    return Agent(session, provider, builtin_tools(), config=config, plugins=Plugins(builtin_specs(features=True)))


def _instruction_messages(session: Session) -> list[dict]:
    return [e["data"] for e in session.events if e["type"] == "user/message"
            and (e["data"].get("source") or {}).get("kind") == "agent-instructions"]


async def test_dshs_recorded_set_message_after_a_read_below_the_cwd(tmp_path):
    """code-mode-workspace-context, with ``read`` called directly rather than from run_code: the baseline
    and the nested "Additional instructions" message are dsh's recorded texts and sources."""
    work = tmp_path / "ws"
    shutil.copytree(CODE_MODE / "workspace", work)
    _, recorded = read_log_events(CODE_MODE / "session.jsonl")
    want = [e["data"] for e in recorded if e["type"] == "user/message"
            and e["data"]["source"]["kind"] == "agent-instructions"]
    session = Session(make_header("s", cwd=str(work), created_at=1))
    agent = _agent(session, [call("c1", "read", {"file_path": "nested/task.txt"}), text("CODE_MODE_CONTEXT_OK")], work)
    agent.followup("What is the handshake?")
    await agent.wait_idle()
    got = _instruction_messages(session)
    assert [(m["content"], m["source"]) for m in got] == [(m["content"], m["source"]) for m in want]
    types = [e["type"] for e in session.events]
    # the set message waited in the next-step inbox at the end of step 1 and entered step 2
    assert types.count("step/start") == 2
    splice = next(e for e in session.events if e["type"] == "agent/inbox/spliced"
                  and e["data"]["target"] == "next-step")
    assert splice["seq"] > max(e["seq"] for e in session.events if e["type"] == "step/end"
                               and e["data"]["step"] == 1) - 1
    # what the model saw in step 2 includes it, right after the tool result
    assert agent.provider.requests[1]["messages"][-1]["source"]["kind"] == "agent-instructions"
    await agent.dispose()


async def test_replace_and_remove_after_write_and_edit_and_nothing_for_unchanged(tmp_path):
    work = tmp_path / "ws"
    (work / "pkg").mkdir(parents=True)
    (work / "pkg" / "AGENTS.md").write_text("Pkg v1.\n")
    session = Session(make_header("s", cwd=str(work), created_at=1))
    script = [
        call("c1", "read", {"file_path": "pkg/AGENTS.md"}), text("ok"),   # set
        call("c2", "read", {"file_path": "pkg/AGENTS.md"}), text("ok"),   # unchanged: nothing
        call("c3", "write", {"file_path": "pkg/AGENTS.md", "content": "Pkg v2.\n"}), text("ok"),  # replace
        call("c4", "write", {"file_path": "pkg/CLAUDE.md", "content": "Pkg v2.\n"}), text("ok"),  # a duplicate
    ]
    agent = _agent(session, script, work)
    for prompt in ("one", "two", "three", "four"):
        agent.followup(prompt)
        await agent.wait_idle()
    (work / "pkg" / "AGENTS.md").unlink()
    agent.provider.add(call("c5", "edit", {"file_path": "pkg/CLAUDE.md", "old_string": "v2", "new_string": "v3"}),
                       text("ok"))
    agent.followup("five")
    await agent.wait_idle()
    msgs = _instruction_messages(session)
    assert [[(c["action"], c["path"]) for c in m["source"]["changes"]] for m in msgs] == [
        [("set", "pkg/AGENTS.md")], [("replace", "pkg/AGENTS.md")],
        [("remove", "pkg/AGENTS.md"), ("set", "pkg/CLAUDE.md")]]
    assert msgs[1]["content"][0]["text"] == (
        "<system-reminder>\nUpdated instructions from: pkg/AGENTS.md\n\nThis file changed after it was loaded. Use the "
        "following content instead of the previously loaded instructions from this file.\n\nPkg v2.\n\n"
        "</system-reminder>")
    assert msgs[2]["content"][0]["text"] == (
        "<system-reminder>\nInstructions removed: pkg/AGENTS.md\n\nThe previously loaded instructions from this "
        "file no longer apply.\n\nAdditional instructions from: pkg/CLAUDE.md\n\nThese instructions apply to work "
        "under `pkg`. Use them as guidance when relevant; more specific instructions take precedence. They do not "
        "override system, developer, or direct user instructions.\n\nPkg v3.\n\n</system-reminder>")
    assert "digest" not in msgs[2]["source"]["changes"][0]
    await agent.dispose()


async def test_resume_with_another_configuration_gets_a_superseding_baseline(tmp_path):
    work = tmp_path / "ws"
    work.mkdir()
    (work / "AGENTS.md").write_text("Rule one.\n")
    session = Session(make_header("s", cwd=str(work), created_at=1))
    agent = _agent(session, [text("ok")], work)
    agent.followup("hi")
    await agent.wait_idle()
    await agent.dispose()
    (work / "AGENTS.md").unlink()
    (work / "CLAUDE.md").write_text("Rule two.\n")
    resumed = Session(dict(session.header), list(session.events))
    specs = builtin_specs(features=True)
    next(s for s in specs if s.id == "agent-instructions").config = {"maxBytes": 10000}
    agent = Agent(resumed, ScriptedProvider([text("ok")], name="mock"), builtin_tools(),
                  config=AgentConfig(model="m", cwd=str(work), runtime_context=False, check_requests=True),
                  plugins=Plugins(specs))
    agent.followup("again")
    await agent.wait_idle()
    first, second = _instruction_messages(resumed)
    assert second["source"]["baseline"] is True and '"maxBytes":10000' in second["source"]["baselineIdentity"]
    assert second["content"][0]["text"].startswith(
        "<system-reminder>\nThis complete workspace instruction baseline replaces all earlier workspace instruction "
        "baselines. " + INTRO + "\n\nInstructions from: CLAUDE.md\n\nRule two.\n")
    assert [(c["action"], c["path"]) for c in second["source"]["changes"]] == [("set", "CLAUDE.md"),
                                                                              ("remove", "AGENTS.md")]
    await agent.dispose()


async def test_no_files_no_message_and_disabled_by_id(tmp_path):
    work = tmp_path / "ws"
    work.mkdir()
    session = Session(make_header("s", cwd=str(work), created_at=1))
    agent = _agent(session, [text("ok")], work)
    agent.followup("hi")
    await agent.wait_idle()
    assert _instruction_messages(session) == []
    await agent.dispose()
    (work / "AGENTS.md").write_text("Rule.\n")
    specs = builtin_specs(features=True)
    next(s for s in specs if s.id == "agent-instructions").enabled = False
    session = Session(make_header("s2", cwd=str(work), created_at=1))
    agent = Agent(session, ScriptedProvider([text("ok")], name="mock"), builtin_tools(),
                  config=AgentConfig(model="m", cwd=str(work), runtime_context=False), plugins=Plugins(specs))
    agent.followup("hi")
    await agent.wait_idle()
    assert _instruction_messages(session) == []
    await agent.dispose()


def test_the_transcript_names_the_files_of_an_instructions_row():
    _, recorded = read_log_events(CODE_MODE / "session.jsonl")
    fold = TranscriptFold()
    fold.apply_all(recorded)
    rows = [i.producer for i in fold.items if i.kind == "context"]
    assert "instructions · AGENTS.md" in rows and "instructions · nested/AGENTS.md" in rows
    assert json.dumps(rows)  # plain strings


async def test_a_compaction_that_shadows_the_baseline_re_adds_it_with_the_deeper_files(tmp_path):
    work = tmp_path / "ws"
    (work / "pkg").mkdir(parents=True)
    (work / "AGENTS.md").write_text("Root rule.\n")
    (work / "pkg" / "AGENTS.md").write_text("Pkg rule.\n")
    (work / "pkg" / "a.txt").write_text("a\n")
    session = Session(make_header("s", cwd=str(work), created_at=1))
    script = [call("c1", "read", {"file_path": "pkg/a.txt"}), text("answer one " * 200),
              text("second " * 200), text("summary of it"), text("after")]
    agent = _agent(session, script, work, context_window=100_000)
    agent.followup("first question " * 300)
    await agent.wait_idle()
    agent.followup("second question " * 50)
    await agent.wait_idle()
    assert await agent.compact_now() is True
    visible = [m for m in session.derive_messages().to_list() if m["source"].get("kind") == "agent-instructions"]
    assert visible == []  # shadowed by the summary
    agent.followup("after")
    await agent.wait_idle()
    last = _instruction_messages(session)[-1]
    assert last["source"]["baseline"] is True
    assert [c["path"] for c in last["source"]["changes"]] == ["AGENTS.md", "pkg/AGENTS.md"]
    # two blocks, the baseline and then the deeper scopes, as dsh's agent-instructions recording shows
    assert [b["text"] for b in last["content"]] == [
        "<system-reminder>\n" + INTRO + "\n\nInstructions from: AGENTS.md\n\nRoot rule.\n\n</system-reminder>",
        "<system-reminder>\nAdditional instructions from: pkg/AGENTS.md\n\nThese instructions apply to work under "
        "`pkg`. Use them as guidance when relevant; more specific instructions take precedence. They do not override "
        "system, developer, or direct user instructions.\n\nPkg rule.\n\n</system-reminder>"]
    request = agent.provider.requests[-1]["messages"]
    assert any(m["source"].get("kind") == "agent-instructions" for m in request)
    await agent.dispose()
