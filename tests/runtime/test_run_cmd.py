"""``dsh-tui run --headless``: real subprocess, replay provider, real store on disk."""

from __future__ import annotations

import os
import subprocess
import sys

from dsh_tui.session.log import v4_source
from dsh_tui.store.fixture import open_log_file
from tests.conftest import FIXTURES

SNAP = FIXTURES / "examples" / "acp-agent" / "tests" / "snapshots"


def run(*argv: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dsh_tui", "run", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ))


def stored_events(root) -> list[dict]:
    logs = [p for p in root.rglob("session*.jsonl*")]
    assert len(logs) == 1
    return open_log_file(logs[0]).events


def tool_result_text(events):
    from dsh_tui.session.content import tool_result_block

    r = [e for e in events if e["type"] == "tool/result"][0]
    return tool_result_block(r["data"]["message"])["content"][0]["text"]  # a v0 or a v4 tool result


def test_headless_turn_persists_and_prints_the_answer(tmp_path):
    root = tmp_path / "root"
    p = run("--headless", "run it", "--replay", str(SNAP / "tool-call-turn" / "session.jsonl"), "--cwd", str(tmp_path),
            "--root", str(root), "--preset", "full-access", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "DONE\n"
    events = stored_events(root)
    assert tool_result_text(events) == "SNAPSHOT_OK\n"
    assert events[-1]["type"] == "turn/end" and events[-1]["data"]["reason"] == {"kind": "completed"}


def test_headless_refuses_an_approval_nobody_can_answer(tmp_path):
    root = tmp_path / "root"
    p = run("--headless", "run it", "--replay", str(SNAP / "tool-call-turn" / "session.jsonl"), "--root", str(root),
            cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    events = stored_events(root)
    assert tool_result_text(events) == 'Error: tool "bash" requires approval, but no approval channel is available'
    assert [e["data"]["outcome"] for e in events if e["type"] == "approval/decided"] == ["unavailable"]


def test_headless_failed_turn_exits_1_with_the_reason(tmp_path):
    p = run("--headless", "hi", "--replay", str(SNAP / "error-finish" / "session.jsonl"), "--root",
            str(tmp_path / "root"), cwd=tmp_path)
    assert p.returncode == 1
    assert p.stderr.strip() == "dsh-tui: turn ended: error: simulated provider error (HTTP 401) (AUTH)"


def test_headless_without_a_key_prints_the_clear_message(tmp_path):
    p = run("--headless", "hi", "--root", str(tmp_path / "root"), cwd=tmp_path)
    assert p.returncode == 1
    assert p.stderr.startswith("dsh-tui: ") and "DEEPSEEK_API_KEY" in p.stderr and "Traceback" not in p.stderr
    assert p.stderr.count("\n") == 1


def test_headless_replay_of_a_file_that_is_not_a_log_is_one_clear_line(tmp_path):
    p = run("--headless", "hi", "--replay", str(SNAP / "fs-read" / "input.json"), "--root", str(tmp_path / "root"),
            cwd=tmp_path)
    assert p.returncode == 1
    assert p.stderr.startswith("dsh-tui: replay log ") and "line 1 is not a JSON object" in p.stderr
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    assert not (tmp_path / "root").exists()  # refused before a session was created


def test_headless_against_a_real_server_closes_its_connection(tmp_path):
    from dsh_tui.config import settings_path
    from tests.llm.sse_server import ScriptServer, chunk, sse_reply

    with ScriptServer() as srv:
        srv.push(sse_reply(chunk("hello"), chunk(finish="stop", usage={"prompt_tokens": 3, "completion_tokens": 1})))
        path = settings_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'[default]\nprovider = "local"\nmodel = "m"\n'
                        f'[providers.local]\nbase_url = "{srv.base_url}/v1"\n')
        p = subprocess.run([sys.executable, "-W", "always::ResourceWarning", "-m", "dsh_tui", "run", "--headless", "hi",
                            "--root", str(tmp_path / "root")], cwd=tmp_path, capture_output=True, text=True,
                           timeout=120, env=dict(os.environ))
    assert p.returncode == 0, p.stderr
    assert p.stdout == "hello\n"
    assert "ResourceWarning" not in p.stderr and "unclosed" not in p.stderr


def _prompt(scenario) -> str:
    import json

    steps = json.loads((scenario / "input.json").read_text())["steps"]
    return next(s["text"] for s in steps if s["op"] == "prompt")


def test_headless_replay_of_a_scenario_directory_runs_each_child_from_its_own_recording(tmp_path):
    """``--replay DIR``: the root replays session.jsonl, the foreground child session.1.jsonl; the child is a
    real session in the same root with dsh's header fields and descriptor."""
    scenario = SNAP / "subagent-spawn-in-process"
    root = tmp_path / "root"
    p = run("--headless", _prompt(scenario), "--replay", str(scenario), "--cwd", str(tmp_path), "--root", str(root),
            "--preset", "full-access", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "PARENT_DONE\n"
    logs = {}
    for path in root.rglob("session*.jsonl*"):
        log = open_log_file(path)
        logs[log.header["id"]] = log
    assert len(logs) == 2
    (parent,) = [log for log in logs.values() if "parentSession" not in log.header]
    (child,) = [log for log in logs.values() if "parentSession" in log.header]
    assert child.header["parentSession"] == parent.header["id"]
    assert child.header["origin"] == "subagent" and child.header["delegationDepth"] == 1
    assert [e["data"] for e in child.events if e["type"] == "subagent/descriptor"] == [
        {"version": 2, "mode": "one-shot", "provider": "spawn", "label": "Reply with CHILD_OK"}]
    assert tool_result_text(parent.events) == "CHILD_OK"


def test_headless_replay_dir_waits_for_a_background_child_and_its_notice(tmp_path):
    scenario = SNAP / "subagent-continuable-inheritance"
    p = run("--headless", _prompt(scenario), "--replay", str(scenario), "--cwd", str(tmp_path), "--root",
            str(tmp_path / "root"), "--preset", "full-access", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "SUBAGENT_SETTLED_NOTED\n"  # the answer of the turn the settlement notice started


def test_headless_replay_of_a_directory_without_a_root_log_is_one_clear_line(tmp_path):
    p = run("--headless", "x", "--replay", str(tmp_path), "--cwd", str(tmp_path), "--root", str(tmp_path / "r"),
            cwd=tmp_path)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert p.stderr.startswith("dsh-tui: ") and "session.jsonl" in p.stderr


def test_headless_gets_skills_and_a_prompt_that_is_exactly_compact_compacts(tmp_path):
    work = tmp_path / "ws"
    skill = work / ".dsh" / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: deploy\ndescription: Ship <it>\n---\nShip carefully.\n")
    env = dict(os.environ, HOME=str(tmp_path / "home"), DSH_HOME=str(tmp_path / "home" / ".dsh"),
               DSH_AGENTS_HOME=str(tmp_path / "home" / ".agents"))
    root = tmp_path / "root"
    p = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "please /deploy", "--replay",
                        str(SNAP / "text-turn" / "session.jsonl"), "--cwd", str(work), "--root", str(root)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    events = stored_events(root)
    kinds = [v4_source(e["data"]["source"])["kind"] for e in events if e["type"] == "user/message"]
    assert kinds == ["user", "runtime-context", "skill-catalog", "skill-invocation"]  # v0: a plugin source
    catalog = [e for e in events if e["type"] == "user/message"][2]["data"]["content"][0]["text"]
    assert "- `deploy`: Ship &lt;it&gt;\n" in catalog
    root2 = tmp_path / "root2"
    p = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "/compact", "--replay",
                        str(SNAP / "text-turn" / "session.jsonl"), "--cwd", str(work), "--root", str(root2)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert (p.returncode, p.stdout) == (0, "No compactable history yet.\n"), p.stderr
    events = stored_events(root2)
    assert [e["type"] for e in events if not e["type"].startswith("session/")] == ["command/run", "command/done"]
    assert events[-1]["data"]["text"] == "No compactable history yet."
