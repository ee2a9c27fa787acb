"""Record the dsh 0.2 corpus: real dsh 0.2 (``tests/interop/dsh02.py``) runs scripted tasks against a
Messages server on 127.0.0.1 and its session logs (format v4) are kept in ``tests/fixtures/dsh02/``.

    .venv/bin/python -m tests.interop.dsh02_corpus [NAME ...]

Each scenario directory holds ``scenario.json`` (the prompts, the scripted replies as event lists, and
what dsh printed) and ``sessions/`` (dsh's session tree: ``--<projectKey>--/session-<uuid>/session.v4.jsonl.zstd``).
A ``crash`` scenario is SIGKILLed while its stream stalls (a log cut mid-turn).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.interop.dsh02 import install
from tests.llm.sse_server import Reply, ScriptServer, json_reply
from tests.llm.test_messages import block, delta, end, ev, reply, start, stop, text_reply, title, tool_reply

OUT = Path(__file__).resolve().parents[1] / "fixtures" / "dsh02"
KEY = "sk-corpus-0123456789abcdefghij"


def tools_reply(*calls: tuple[str, str, str]) -> Reply:
    """One assistant message with several tool_use blocks (parallel calls)."""
    events = [start(), block(0, {"type": "thinking", "thinking": "", "signature": ""}),
              delta(0, {"type": "thinking_delta", "thinking": "Several tools at once."}),
              delta(0, {"type": "signature_delta", "signature": "sig-P"}), stop(0)]
    for i, (cid, name, args) in enumerate(calls, 1):
        events += [block(i, {"type": "tool_use", "id": cid, "name": name, "input": {}}),
                   delta(i, {"type": "input_json_delta", "partial_json": args}), stop(i)]
    return reply(*events, *end("tool_use"))


def truncated() -> Reply:
    return reply(start(), block(0, {"type": "text", "text": ""}),
                 delta(0, {"type": "text_delta", "text": "A long answer that is cut"}), stop(0), *end("max_tokens"))


def stall() -> Reply:
    return Reply(headers={"content-type": "text/event-stream"},
                 steps=[ev(start()), ev(block(0, {"type": "text", "text": ""})),
                        ev(delta(0, {"type": "text_delta", "text": "Half an answer"}))], end="stall")


OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}

# name -> (turns: [(prompt, [replies])], files in the workspace)
SCENARIOS: dict[str, tuple[list[tuple[str, list]], dict[str, str]]] = {
    "plain": ([("say hi", [text_reply("Hi.", thinking=None)])], {}),
    "thinking": ([("think, then answer", [text_reply("Done thinking.")])], {}),
    "read": ([("what is in notes.txt?", [tool_reply("toolu_r", "read", '{"file_path": "notes.txt"}'),
                                         text_reply("It says alpha.")])], {"notes.txt": "alpha\n"}),
    "read-error": ([("read it", [tool_reply("toolu_e", "read", '{"nope": 1}'), text_reply("That failed.")])], {}),
    "write": ([("create hello.py", [tool_reply("toolu_w", "write",
                                               '{"file_path": "hello.py", "content": "print(\\"hi\\")\\n"}'),
                                    text_reply("Created hello.py.")])], {}),
    "edit": ([("fix the greeting", [
        tool_reply("toolu_r1", "read", '{"file_path": "greet.py"}'),
        tool_reply("toolu_e1", "edit", '{"file_path": "greet.py", "old_string": "helo", "new_string": "hello"}'),
        text_reply("Fixed.")])], {"greet.py": "print('helo')\n"}),
    "bash-approval": ([("run ls", [tool_reply("toolu_b", "bash", '{"description": "list", "command": "ls"}'),
                                   text_reply("I could not run it.")])], {"a.txt": "a\n"}),
    "glob-grep": ([("find the TODOs", [tools_reply(("toolu_g1", "glob", '{"pattern": "**/*.py"}'),
                                                   ("toolu_g2", "grep", '{"pattern": "TODO"}')),
                                       text_reply("One TODO in main.py.")])], {"main.py": "# TODO: fix\n"}),
    "todo": ([("plan the work", [tool_reply("toolu_t", "todo_write",
                                            '{"todos": [{"content": "write tests", "status": "pending"}]}'),
                                 text_reply("Planned.")])], {}),
    "max-tokens": ([("write a lot", [truncated()])], {}),
    "retry-overloaded": ([("say hi", [json_reply(529, OVERLOADED), text_reply("Hi after a retry.", thinking=None)])],
                         {}),
    "auth-error": ([("say hi", [json_reply(401, {"type": "error", "error": {
        "type": "authentication_error", "message": "invalid x-api-key"}})])], {}),
    "two-turns": ([("say hi", [text_reply("Hi.", thinking=None)]),
                   ("and again", [text_reply("Hi again.")])], {}),
    "working-directory": ([("move into src", [tool_reply("toolu_wd", "working_directory", '{"path": "src"}'),
                                              text_reply("Now in src.")])], {"src/x.py": "x = 1\n"}),
    "goal": ([("set a goal to write docs", [tool_reply("toolu_go", "create_goal", '{"objective": "write docs"}'),
                                            text_reply("Goal set.")])], {}),
    "crash": ([("answer slowly", [stall()])], {}),
    # killed while its bash call runs: the log ends after a recorded tool/call with no result
    "crash-tool": ([("run the slow script", [tool_reply("toolu_c", "bash",
                                                       '{"description": "run slow", "command": "sleep 30"}'),
                                            text_reply("unreached")])], {}),
    "subagent": ([("delegate a summary", [
        tool_reply("toolu_s", "subagent", '{"description": "summarize notes", "prompt": "Summarize notes.txt"}'),
        text_reply("The notes say alpha.", thinking=None),  # the child's answer
        text_reply("The subagent says alpha."),
        text_reply("Noted the subagent's result.", thinking=None)])], {"notes.txt": "alpha\n"}),
    "approval-outside": ([("write outside", [
        tool_reply("toolu_o", "write", '{"file_path": "/tmp/dsh02-corpus-outside.txt", "content": "x"}'),
        text_reply("It was refused.")])], {}),
    "context-overflow": ([("say hi", [
        json_reply(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                    "message": "prompt is too long for the model's context window"}}),
        text_reply("Summary of the conversation so far.", thinking=None),
        text_reply("Hi after compaction.", thinking=None)])], {}),
}


def _env(home: Path, base_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEEPSEEK_", "DSH_"))}
    env.update(DSH_HOME=str(home), DEEPSEEK_API_KEY=KEY, DEEPSEEK_BASE_URL=base_url)
    return env


def record(name: str, dsh: str) -> dict:
    turns, files = SCENARIOS[name]
    with tempfile.TemporaryDirectory(prefix="dsh02-corpus-") as tmp:
        home, ws = Path(tmp) / "home", Path(tmp) / "ws"
        home.mkdir()
        ws.mkdir()
        for rel, text in files.items():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_text(text)
        outputs = []
        session_id = None
        with ScriptServer() as server:
            server._server.title_reply = title
            for prompt, replies in turns:
                server.push(*replies)
                cmd = [dsh, "--profile", "headless", *(["--session-id", session_id] if session_id else []), prompt]
                if name.startswith("crash"):
                    proc = subprocess.Popen(cmd, cwd=ws, env=_env(home, server.base_url),
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                    deadline = time.monotonic() + 60
                    while not server.requests and time.monotonic() < deadline:
                        time.sleep(0.1)
                    time.sleep(1.0 if name == "crash" else 4.0)
                    proc.send_signal(signal.SIGKILL)
                    proc.wait()
                    outputs.append({"prompt": prompt, "killed": "SIGKILL"})
                else:
                    out = subprocess.run(cmd, cwd=ws, env=_env(home, server.base_url), capture_output=True,
                                         text=True, timeout=240)
                    outputs.append({"prompt": prompt, "exit": out.returncode, "stdout": out.stdout.strip(),
                                    "stderr": out.stderr.strip()[-2000:]})
                logs = sorted((home / "sessions").rglob("session.v4.jsonl.zstd"))
                if logs:
                    session_id = logs[0].parent.name
        dest = OUT / name
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        shutil.copytree(home / "sessions", dest / "sessions",
                        ignore=shutil.ignore_patterns("session.lock"))
        script = [[p, [r.status if r.body is not None else [s.decode() for s in r.steps if isinstance(s, bytes)]
                       for r in replies]] for p, replies in turns]
        (dest / "scenario.json").write_text(json.dumps(
            {"dsh": "deepseek-harness-runtime-bin 0.2.1rc2", "cwd": str(ws), "files": files,
             "turns": script, "runs": outputs}, indent=1, ensure_ascii=False) + "\n")
        return outputs[-1]


def main(argv: list[str]) -> int:
    dsh = str(install())
    for name in argv or sorted(SCENARIOS):
        result = record(name, dsh)
        print(f"{name}: {result.get('exit', result.get('killed'))} {result.get('stdout', '')[:60]!r}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
