"""Claude Code and Codex hooks (dsh_tui/extensions/hooks/): the protocol's rules, and real headless runs with
the user's hook files in a temporary $HOME, a scripted model on 127.0.0.1 and real hook commands.

dsh's own hook scenarios (hook-cc-*, hook-codex-*, packed-chunks) replay in test_conformance.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dsh_tui.extensions.hooks import HookConfigError, parse_config, project_hook_files
from dsh_tui.extensions.hooks import protocol as hp
from tests.llm.sse_server import ScriptServer, chunk, sse_reply, tool_call
from tests.llm.test_provider_harness import _env

KEY = "sk-hooks-0123456789abcdefghij"
USAGE = {"prompt_tokens": 30, "completion_tokens": 4}


def test_exit_2_blocks_with_stderr_and_json_decisions_follow_the_event_name():
    out = hp.parse_hook_output(2, "", "  no bash here \n")
    assert (out.decision, out.reason) == ("block", "no bash here")
    ok = hp.parse_hook_output(0, json.dumps({"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": "check",
        "additionalContext": "ctx"}}), "", "PreToolUse")
    assert (ok.decision, ok.reason, ok.additional_context) == ("ask", "check", "ctx")
    other = hp.parse_hook_output(0, json.dumps({"hookSpecificOutput": {
        "hookEventName": "PostToolUse", "permissionDecision": "deny"}}), "", "PreToolUse")
    assert other.decision is None  # meant for another event: ignored, as dsh does
    assert hp.parse_hook_output(1, "{}", "boom").decision is None  # other exit codes pass


def test_merge_takes_the_strongest_decision_and_every_context():
    merged = hp.merge([hp.HookOutput(0, "", "", decision="allow"),
                       hp.HookOutput(2, "a", "", decision="block", reason="a"),
                       hp.HookOutput(0, "", "", decision="ask", reason="b", additional_context="one"),
                       hp.HookOutput(2, "c", "", decision="block", reason="c", additional_context="two")])
    assert (merged.decision, merged.reason, merged.additional_context) == ("deny", "a\n\nc", ["one", "two"])


def test_matchers_claude_literals_and_regexes():
    assert hp.matches("Bash|Edit", "Edit", "claude-code") and not hp.matches("Bash", "Bashful", "claude-code")
    assert hp.matches("^ba", "bash", "codex") and hp.matches(None, "x", "codex") and hp.matches("*", "x", "codex")
    with pytest.raises(HookConfigError, match="invalid codex regex matcher"):
        parse_config({"hooks": {"PreToolUse": [{"matcher": "[", "hooks": [{"command": "true"}]}]}}, "codex")
    config, skipped = parse_config({"hooks": {"Stop": [{"matcher": "x", "hooks": [
        {"type": "prompt", "prompt": "?"}, {"type": "command", "command": "true", "timeout": 5}]}]}}, "claude-code")
    assert config["Stop"][0].matcher is None and config["Stop"][0].hooks[0].timeout_sec == 5
    assert skipped == ['unsupported "prompt" hook on Stop (only command hooks run)']


def _bash_call(server: ScriptServer, command: str, answer: str = "Done.") -> None:
    server.push(
        sse_reply(chunk(None, tool_calls=[tool_call(0, id="c1", name="bash",
                                                    args=json.dumps({"command": command, "description": "run"}))]),
                  chunk(None, finish="tool_calls", usage=USAGE)),
        sse_reply(chunk(answer), chunk("", finish="stop", usage=USAGE)),
    )


def _run(tmp_path: Path, server: ScriptServer, prompt: str, *extra: str, preset: str = "full-access"):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = _env(tmp_path, DEEPSEEK_API_KEY=KEY, DEEPSEEK_BASE_URL=server.base_url, HOME=str(tmp_path / "home"))
    out = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "--preset", preset, "--root",
                          str(tmp_path / "s"), *extra, prompt], env=env, cwd=work, capture_output=True, text=True,
                         timeout=120)
    return out, work


def _write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def _tool_text(body: dict) -> str:
    return "\n".join(m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
                     for m in body["messages"] if m["role"] == "tool")


def test_a_user_pretooluse_hook_on_Bash_that_exits_2_blocks_the_call_and_the_model_sees_why(tmp_path):
    _write(tmp_path / "home" / ".claude" / "settings.json", {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "cat > \"$CLAUDE_PROJECT_DIR/payload.json\"; echo 'no shell today' >&2; exit 2"}]}]}})
    with ScriptServer() as server:
        _bash_call(server, "touch ran.txt")
        out, work = _run(tmp_path, server, "make ran.txt")
        assert out.returncode == 0, out.stderr
        assert not (work / "ran.txt").exists()
        assert "no shell today" in _tool_text(server.requests[1]["body"])
    payload = json.loads((work / "payload.json").read_text())
    assert payload["hook_event_name"] == "PreToolUse" and payload["tool_name"] == "bash"
    assert payload["tool_input"]["command"] == "touch ran.txt" and payload["tool_use_id"] == "c1"
    assert payload["cwd"] == str(work.resolve()) and payload["session_id"]


def test_a_userpromptsubmit_hooks_output_reaches_the_model_as_context(tmp_path):
    _write(tmp_path / "home" / ".claude" / "settings.json", {"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"UserPromptSubmit\", "
                                       "\"additionalContext\": \"The deploy window is closed.\"}}'"}]}]}})
    _write(tmp_path / "home" / ".codex" / "hooks.json", {"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": "cat > /dev/null; echo 'Codex says: use make.'"}]}]}})
    with ScriptServer() as server:
        server.push(sse_reply(chunk("Noted."), chunk("", finish="stop", usage=USAGE)))
        out, _work = _run(tmp_path, server, "can I deploy?")
        assert out.returncode == 0, out.stderr
        sent = json.dumps(server.requests[0]["body"]["messages"])
    assert "The deploy window is closed." in sent and "Codex says: use make." in sent


def test_project_hooks_run_only_in_a_trusted_workspace(tmp_path):
    from dsh_tui.config import trust

    work = tmp_path / "work"
    _write(work / ".claude" / "settings.json", {"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": "touch project-hook-ran"}]}]}})
    assert project_hook_files(work) == [work / ".claude" / "settings.json"]
    with ScriptServer() as server:
        server.push(sse_reply(chunk("One."), chunk("", finish="stop", usage=USAGE)),
                    sse_reply(chunk("Two."), chunk("", finish="stop", usage=USAGE)))
        out, _ = _run(tmp_path, server, "hello")
        assert out.returncode == 0, out.stderr
        assert not (work / "project-hook-ran").exists()
        env = _env(tmp_path)  # the trust list lives in this run's XDG_DATA_HOME
        subprocess.run([sys.executable, "-c", f"from dsh_tui.config import trust; trust.trust({str(work)!r})"],
                       env=env, check=True)
        out, _ = _run(tmp_path, server, "hello again")
        assert out.returncode == 0, out.stderr
        assert (work / "project-hook-ran").exists()
    assert trust.PROJECT_PLUGIN_DIR  # the module the trust question and --trust share


def test_a_hook_past_its_timeout_is_killed_and_the_turn_goes_on(tmp_path):
    _write(tmp_path / "home" / ".claude" / "settings.json", {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": "sleep 600 & echo $! > \"$CLAUDE_PROJECT_DIR/child.pid\"; wait",
         "timeout": 1}]}]}})
    with ScriptServer() as server:
        _bash_call(server, "echo hi > hi.txt")
        out, work = _run(tmp_path, server, "say hi")
        assert out.returncode == 0, out.stderr
    assert (work / "hi.txt").read_text() == "hi\n"  # a hook that fails to answer does not block
    pid = int((work / "child.pid").read_text())
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_a_broken_hook_file_is_one_warning_and_nothing_runs(tmp_path):
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    (tmp_path / "home" / ".claude" / "settings.json").write_text("{not json")
    with ScriptServer() as server:
        server.push(sse_reply(chunk("Fine."), chunk("", finish="stop", usage=USAGE)))
        out, _ = _run(tmp_path, server, "hello")
    assert out.returncode == 0 and out.stdout.strip() == "Fine."
    assert "Traceback" not in out.stderr


def test_slash_hooks_lists_what_is_active_and_what_waits_for_trust(tmp_path):
    _write(tmp_path / "home" / ".claude" / "settings.json", {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"command": "true"}, {"command": "true"}]}], "Stop": [{"hooks": [{"command": "true"}]}]}})
    _write(tmp_path / "work" / ".codex" / "hooks.json", {"hooks": {"Stop": [{"hooks": [{"command": "true"}]}]}})
    with ScriptServer() as server:
        out, work = _run(tmp_path, server, "/hooks")
        assert server.requests == []  # a command, not a prompt
    assert out.returncode == 0, out.stderr
    home = tmp_path / "home"
    assert f"{home}/.claude/settings.json: 3 hooks (PreToolUse ×2, Stop ×1)" in out.stdout
    assert f"{work}/.codex/hooks.json: skipped, the workspace is not trusted" in out.stdout


def test_subagent_start_and_stop_hooks_run_for_a_child(tmp_path):
    record = "cat >> \"$CLAUDE_PROJECT_DIR/subagent-hooks.jsonl\"; echo >> \"$CLAUDE_PROJECT_DIR/subagent-hooks.jsonl\""
    _write(tmp_path / "home" / ".claude" / "settings.json", {"hooks": {
        "SubagentStart": [{"matcher": "general-purpose", "hooks": [{"command": record}]}],
        "SubagentStop": [{"hooks": [{"command": record}]}]}})
    args = json.dumps({"description": "probe", "prompt": "say ok", "run_in_background": False})
    with ScriptServer() as server:
        server.push(
            sse_reply(chunk(None, tool_calls=[tool_call(0, id="s1", name="subagent", args=args)]),
                      chunk(None, finish="tool_calls", usage=USAGE)),
            sse_reply(chunk("ok"), chunk("", finish="stop", usage=USAGE)),
            sse_reply(chunk("The child said ok."), chunk("", finish="stop", usage=USAGE)),
        )
        out, work = _run(tmp_path, server, "ask a child")
        assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in (work / "subagent-hooks.jsonl").read_text().splitlines() if line.strip()]
    assert [r["hook_event_name"] for r in rows] == ["SubagentStart", "SubagentStop"]
    assert rows[0]["agent_type"] == "general-purpose" and rows[0]["agent_id"] == rows[1]["agent_id"]


def test_project_hook_files_are_something_the_trust_question_names(tmp_path):
    from dsh_tui.config.trust import needs_trust

    _write(tmp_path / ".claude" / "settings.local.json", {"hooks": {"Stop": [{"hooks": [{"command": "true"}]}]}})
    _write(tmp_path / ".claude" / "settings.json", {"permissions": {}})  # no hooks in it: nothing to ask
    assert needs_trust(tmp_path) == ["project hooks (run as commands): .claude/settings.local.json"]


def test_session_end_notification_and_precompact_hooks_run(tmp_path):
    record = "cat >> \"$CLAUDE_PROJECT_DIR/events.jsonl\"; echo >> \"$CLAUDE_PROJECT_DIR/events.jsonl\""
    _write(tmp_path / "home" / ".claude" / "settings.json", {"hooks": {
        "SessionEnd": [{"hooks": [{"command": record}]}],
        "Notification": [{"hooks": [{"command": record}]}],
        "PreCompact": [{"matcher": "manual", "hooks": [{"command": record}]}]}})
    with ScriptServer() as server:
        # read-only: the write asks; headless nobody answers, but the Notification hook is told
        server.push(
            sse_reply(chunk(None, tool_calls=[tool_call(0, id="w1", name="write",
                                                        args=json.dumps({"file_path": "x.txt", "content": "x"}))]),
                      chunk(None, finish="tool_calls", usage=USAGE)),
            sse_reply(chunk("Could not write."), chunk("", finish="stop", usage=USAGE)),
            sse_reply(chunk("Summary of the work so far."), chunk("", finish="stop", usage=USAGE)),
        )
        out, work = _run(tmp_path, server, "write x", preset="read-only")
        assert out.returncode in (0, 1), out.stderr
        rows = [json.loads(line) for line in (work / "events.jsonl").read_text().splitlines() if line.strip()]
        assert [r["hook_event_name"] for r in rows] == ["Notification", "SessionEnd"]
        assert rows[0]["message"] == "Claude needs your permission to use Write" and rows[1]["reason"] == "other"
        env = _env(tmp_path, DEEPSEEK_API_KEY=KEY, DEEPSEEK_BASE_URL=server.base_url, HOME=str(tmp_path / "home"))
        again = subprocess.run([sys.executable, "-m", "dsh_tui", "resume", "--last", "--root", str(tmp_path / "s"),
                                "--headless", "/compact"], env=env, cwd=work, capture_output=True, text=True,
                               timeout=120)
        assert again.returncode == 0, again.stderr
    rows = [json.loads(line) for line in (work / "events.jsonl").read_text().splitlines() if line.strip()]
    assert [r["hook_event_name"] for r in rows][2:] == ["PreCompact", "SessionEnd"]
    assert rows[2]["trigger"] == "manual"
