"""``--output-format json|stream-json`` and ``--input-format stream-json`` on ``run --headless`` and
``resume --headless``: real runs against the scripted model server on 127.0.0.1, and the result rules
checked against dsh's own stream-json recordings."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dsh_tui.cli.output import _usage
from tests.conftest import REPO
from tests.llm.sse_server import ScriptServer, chunk, json_reply, sse_reply, tool_call
from tests.llm.test_provider_harness import _env

KEY = "sk-output-0123456789abcdefghij"
USAGE = {"prompt_tokens": 120, "completion_tokens": 9, "prompt_cache_hit_tokens": 100}
DSH_STREAMS = sorted((REPO / "tests" / "fixtures" / "dsh-stream-json").glob("*.jsonl"))


@pytest.fixture
def server():
    with ScriptServer() as srv:
        yield srv


def _cli(tmp_path: Path, server: ScriptServer, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (work / "notes.txt").write_text("alpha\n")
    env = _env(tmp_path, DEEPSEEK_API_KEY=KEY, DEEPSEEK_BASE_URL=server.base_url)
    return subprocess.run([sys.executable, "-m", "dsh_tui", *args, "--root", str(tmp_path / "s")], env=env,
                          cwd=work, input=stdin, capture_output=True, text=True, timeout=120)


def _tool_then_answer(server: ScriptServer, answer: str = "It says alpha.") -> None:
    server.push(
        sse_reply(chunk(None, tool_calls=[tool_call(0, id="call_1", name="read", args='{"file_path": "notes.txt"}')]),
                  chunk(None, finish="tool_calls", usage=USAGE)),
        sse_reply(chunk(answer), chunk("", finish="stop", usage=USAGE)),
    )


def _lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def _log_events(root: Path) -> list[dict]:
    from dsh_tui.store.open import open_store

    store = open_store(root)
    (header,) = store.list()
    return store.inspect(header["id"]).events


def test_stream_json_prints_every_event_as_appended_then_dshs_result_object(server, tmp_path):
    _tool_then_answer(server)
    out = _cli(tmp_path, server, "run", "--headless", "--output-format", "stream-json", "what is in notes.txt?")
    assert out.returncode == 0, out.stderr
    lines = _lines(out.stdout)
    *events, result = lines
    assert all(line["type"] == "session_event" for line in events)
    sid = result["sessionId"]
    assert {line["sessionId"] for line in events} == {sid}
    streamed = [line["event"] for line in events]
    assert streamed == _log_events(tmp_path / "s")  # the stream is the log, event for event
    assert result == {"type": "result", "sessionId": sid, "output": "It says alpha.",
                      "usage": {"inputTokens": 40, "outputTokens": 18, "cacheReadTokens": 200}}


def test_json_prints_one_result_object_and_a_failed_turn_exits_1(server, tmp_path):
    _tool_then_answer(server)
    out = _cli(tmp_path, server, "run", "--headless", "--output-format", "json", "what is in notes.txt?")
    assert out.returncode == 0, out.stderr
    (result,) = _lines(out.stdout)
    assert result["output"] == "It says alpha." and result["finishReason"] == "completed"
    assert result["usage"]["outputTokens"] == 18 and result["numTurns"] == 1
    assert isinstance(result["durationMs"], int) and "costUsd" in result
    server.push(*[json_reply(401, {"error": {"message": "bad key"}}) for _ in range(3)])
    out = _cli(tmp_path, server, "run", "--headless", "--output-format", "json", "again")
    assert out.returncode == 1
    (result,) = _lines(out.stdout)
    assert result["finishReason"] == "error" and result["error"]["code"] == "AUTH"
    assert out.stderr.strip().splitlines() == [out.stderr.strip()] and "Traceback" not in out.stderr


def test_input_stream_json_runs_each_line_in_one_session_and_resume_reads_it_too(server, tmp_path):
    server.push(sse_reply(chunk("one"), chunk("", finish="stop", usage=USAGE)),
                sse_reply(chunk("two"), chunk("", finish="stop", usage=USAGE)),
                sse_reply(chunk("three"), chunk("", finish="stop", usage=USAGE)))
    stdin = '"first"\n\n{"prompt": "second"}\n{"type": "user", "message": {"content": [{"type": "text", "text": "third"}]}}\n'
    out = _cli(tmp_path, server, "run", "--headless", "--input-format", "stream-json", "--output-format", "json",
               stdin=stdin)
    assert out.returncode == 0, out.stderr
    results = _lines(out.stdout)
    assert [r["output"] for r in results] == ["one", "two", "three"]
    assert len({r["sessionId"] for r in results}) == 1
    prompts = [m["content"][0]["text"] for e in _log_events(tmp_path / "s") if e["type"] == "user/message"
               for m in [e["data"]] if m.get("source", {}).get("kind") == "user"]
    assert prompts[:3] == ["first", "second", "third"]
    server.push(sse_reply(chunk("four"), chunk("", finish="stop", usage=USAGE)))
    out = _cli(tmp_path, server, "resume", "--last", "--headless", "--input-format", "stream-json",
               "--output-format", "stream-json", stdin='"fourth"\n')
    assert out.returncode == 0, out.stderr
    result = _lines(out.stdout)[-1]
    assert result["output"] == "four" and result["sessionId"] == results[0]["sessionId"]


def test_input_stream_json_answers_each_line_while_stdin_stays_open(server, tmp_path):
    """Long-lived scripted use: a line's turn runs, and its result is printed, before the next line is written."""
    server.push(sse_reply(chunk("one"), chunk("", finish="stop", usage=USAGE)),
                sse_reply(chunk("two"), chunk("", finish="stop", usage=USAGE)))
    work = tmp_path / "work"
    work.mkdir()
    env = _env(tmp_path, DEEPSEEK_API_KEY=KEY, DEEPSEEK_BASE_URL=server.base_url)
    proc = subprocess.Popen([sys.executable, "-m", "dsh_tui", "run", "--headless", "--input-format", "stream-json",
                             "--output-format", "stream-json", "--root", str(tmp_path / "s")], env=env, cwd=work,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        proc.stdin.write('{"type": "user", "message": {"role": "user", "content": "first"}}\n')
        proc.stdin.flush()
        first = [json.loads(proc.stdout.readline())]
        while first[-1]["type"] != "result":
            first.append(json.loads(proc.stdout.readline()))
        assert first[-1]["output"] == "one" and len(server.requests) == 1  # stdin is still open
        proc.stdin.write('"second"\n')
        proc.stdin.close()
        rest = _lines(proc.stdout.read())
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()
    assert rest[-1]["output"] == "two" and rest[-1]["sessionId"] == first[-1]["sessionId"]
    assert "turn/end" in [e["event"]["type"] for e in first if e["type"] == "session_event"]


def test_a_bad_input_line_is_one_clear_error(server, tmp_path):
    out = _cli(tmp_path, server, "run", "--headless", "--input-format", "stream-json", stdin="not json\n")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip() == "dsh-tui: --input-format stream-json: line 1 is not JSON"
    assert server.requests == []


@pytest.mark.parametrize("path", DSH_STREAMS, ids=lambda p: p.stem)
def test_dshs_recorded_result_objects_follow_the_same_rules(path: Path):
    """dsh's result line: exactly type, sessionId, output, usage; usage = the sum of the assistant messages'
    usage; output = the last assistant text of the root session."""
    *events, result = [json.loads(line) for line in path.read_text().splitlines()]
    assert sorted(result) == ["output", "sessionId", "type", "usage"]
    logged = [line["event"] for line in events]
    assert result["usage"] == _usage(logged)
    texts = ["".join(b.get("text", "") for b in e["data"]["message"]["content"] if b["type"] == "text")
             for e in logged if e["type"] == "assistant/message"]
    assert result["output"] == [t for t in texts if t][-1]


# dsh's headless recordings of `--output-format stream-json` (examples/headless-agent/tests/snapshots/*/
# stream-json.expected.jsonl), each run the way dsh's recorder (examples/headless-agent/tests/headless.snapshot.ts)
# runs it: its composition (the *.cordis.snapshot.yml) as dsh-tui settings, the recorded model side replayed
# (`--replay`) or, where dsh scripted its provider, a real scripted server on 127.0.0.1. The output must print the
# same events in the same order, each equal to dsh's after the normalisation dsh's recorder applies (ids, times,
# cwd, the request header's system prompt and tools, goal timestamps), and the same result object.
HEADLESS_STREAMS = sorted(p.parent for p in (REPO / "tests" / "fixtures" / "dsh").glob(
    "examples/headless-agent/tests/snapshots/*/stream-json.expected.jsonl"))
# dsh's base composition (examples/headless-agent/cordis.yml) has no runtime-context snapshot and no LLM title
STREAM_COMPOSITION = """
[plugins.runtime-context]
enabled = false
[plugins.session-title-llm]
enabled = false
"""
STREAM_SETUPS: dict[str, dict] = {
    # compaction.cordis.snapshot.yml: the base composition, the recorded session replayed
    "compaction-recovery": {"settings": STREAM_COMPOSITION, "replay": "session.jsonl"},
    # pty.cordis.snapshot.yml: sandbox-policy (its runtime-context message), dsh-terminal with the deterministic
    # pty-snapshot-backend, tool-terminal with maxResultBytes 64
    "pty-tools": {"settings": """
[plugins.session-title-llm]
enabled = false
[plugins.terminals]
enabled = true
max_result_bytes = 64
backends = ["tests.runtime.conformance:SnapshotPtyBackend"]
""", "replay": "session.jsonl"},
    # ralph.cordis.snapshot.yml: the base composition (Ralph on); the root scripted by replay.override.json, each
    # fresh round's agent replaying its own session.N.jsonl
    "ralph-loop": {"settings": STREAM_COMPOSITION + "[plugins.ralph]\nenabled = true\n", "replay": ".",
                   "model": "deepseek-v4-flash"},
    # goal.cordis.snapshot.yml: dsh-goal and dsh-tool-goal without dsh's goal-round-driver; the model side is
    # replay.override.json alone
    "goal-tools": {"settings": STREAM_COMPOSITION + "[plugins.goal]\nrounds = false\n", "replay": ".",
                   "model": "deepseek-v4-flash"},
    # retry.cordis.snapshot.yml: dsh's retry-snapshot-backend fails the first call with RATE_LIMIT (429) under a
    # one-retry, 1 ms policy, then streams RETRY_OK; here a real server on 127.0.0.1 answers 429, then the stream
    "provider-retry": {"settings": STREAM_COMPOSITION + """
[providers.deepseek-official]
api = "chat"
base_url = "{base_url}"
[providers.deepseek-official.retry]
max_retries = 1
initial_delay_ms = 1
max_delay_ms = 1
jitter_ratio = 0
retryable_codes = ["RATE_LIMIT"]
""", "server": "retry", "model": "deepseek-v4-flash", "key": KEY},
    # credentials.cordis.snapshot.yml with a key no HTTP header can carry: the turn fails at credential
    # resolution (INVALID_CREDENTIAL) before the endpoint is dialled (127.0.0.1:9, as dsh's, is never reached)
    "invalid-credential": {"settings": STREAM_COMPOSITION + """
[providers.deepseek-official]
api = "chat"
base_url = "http://127.0.0.1:9/v1"
""", "prompt": "say pong", "model": "deepseek-v4-flash", "key": "sk-snapshot\ninvalid", "exit": 1},
    # subagent-settlement.cordis.snapshot.yml: its parent script (parent.replay.jsonl, all of it in
    # parent.override.json), the continuable child's (child.replay.jsonl), and its settlement fence (the root's
    # second step waits for the child's notice): tests/cli/settlement_fence.py. The prompt is the recorder's.
    "subagent-settlement": {"settings": STREAM_COMPOSITION + """
[plugins.settlement-fence]
module = "tests.cli.settlement_fence"
""", "layout": {"session.jsonl": "parent.replay.jsonl", "replay.override.json": "parent.override.json",
                "session.1.jsonl": "child.replay.jsonl"}, "model": "deepseek-v4-flash",
        "prompt": "Start one continuable background subagent and answer from its completion notice. Do not call "
                  "list_agents, send_message, job_output, or job_list."},
}
STREAM_NOT_APPLICABLE = {
    "advanced-toolchain": "its model calls dsh's JavaScript tools (workflow, run_code, cordis_define)",
    "missing-credential": "dsh logs a failed turn without a key; dsh-tui refuses before opening a session "
                          "(one line on stderr, exit 2) so nothing is written for a run that cannot start",
}
# Where dsh-tui's run differs from dsh's recording by design, field by field ((scenario, event type) -> the data
# fields not compared, "a.b" for a nested one); everything else in every event is compared.
STREAM_DIFFERENCES = {
    # dsh's sandbox-policy message holds the file policy alone; dsh-tui's runtime context holds the cwd,
    # platform, date and preset
    ("pty-tools", "user/message"): {"content", "source.sections"},
    # the recorder's replay route declares a 128000-token window and its compaction plugin a 32-token summary
    # cap; dsh-tui's replay has no window and its summary cap is 8192
    ("compaction-recovery", "request/context"): {"contextWindow"},
    ("compaction-recovery", "compaction/summary"): {"maxTokens"},
    # dsh 0.1.1's DeepSeek adapter writes its request defaults into the header; its failure texts name dsh's
    # credentials service and web Models page, which dsh-tui has not (the codes are compared)
    ("invalid-credential", "request/header"): {"header.config.maxTokens", "header.config.reasoningEffort",
                                               "header.adapterDefaults"},
    ("invalid-credential", "assistant/chunk"): {"chunk.reason.failure.message"},
    ("invalid-credential", "turn/end"): {"reason.error.message"},
    # dsh's scripted adapter has no model catalog; dsh-tui's DeepSeek route knows the model's window
    ("provider-retry", "request/context"): {"contextWindow"},
}
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_GOAL_TIMES = re.compile(r'("(?:createdAt|updatedAt|clearedAt)":)\d+')


def _normalised(value, cwd: str):
    """dsh's recorder normalisation: every id to {{sessionId}}, the cwd to {{cwd}}, no seq/time, goal times 0."""
    if isinstance(value, str):
        return _GOAL_TIMES.sub(r"\g<1>0", _UUID.sub("{{sessionId}}", value.replace(cwd, "{{cwd}}")))
    if isinstance(value, list):
        return [_normalised(v, cwd) for v in value]
    if isinstance(value, dict):
        return {k: 0 if k in ("createdAt", "updatedAt", "clearedAt") and isinstance(v, int) else _normalised(v, cwd)
                for k, v in value.items() if k not in ("seq", "time")}
    return value


def _comparable(scenario: str, line: dict, cwd: str) -> dict:
    line = _normalised(line, cwd)
    if line["type"] != "session_event":
        return line
    event = line["event"]
    data = dict(event.get("data") or {})
    if event["type"] == "request/header":  # dsh's scrubRequestHeaders
        data["header"] = {**data["header"], "system": "{{system}}", "tools": "{{tools}}"}
    for path in STREAM_DIFFERENCES.get((scenario, event["type"]), ()):
        *parents, key = path.split(".")
        holder = data
        for parent in parents:
            holder[parent] = holder = dict(holder.get(parent) or {})
        holder.pop(key, None)
    return {**line, "event": {**event, "data": data}}


def _stream_projection(lines: list[dict]) -> list:
    out: list = []
    for m in lines:
        if m["type"] == "session_event":
            out.append(m["event"]["type"])
        else:
            out.append({k: v for k, v in m.items() if k != "sessionId"})
    return out


def _error_codes(lines: list[dict]) -> list:
    """The failure codes of the failed chunks and turn ends (compared where their texts are not)."""
    out = []
    for m in lines:
        data = (m.get("event") or {}).get("data") or {}
        failure = ((data.get("chunk") or {}).get("reason") or {}).get("failure") or (
            (data.get("reason") or {}).get("error") if m.get("event", {}).get("type") == "turn/end" else None)
        if failure:
            out.append(failure.get("code"))
    return out


@pytest.mark.parametrize("scenario", HEADLESS_STREAMS, ids=lambda p: p.name)
def test_stream_json_matches_dshs_recording(scenario: Path, tmp_path, session_format_v0):
    # the recordings are dsh 0.1's stream, event by event: a v0 session (v4 adds its system/message)
    if scenario.name in STREAM_NOT_APPLICABLE:
        pytest.skip(STREAM_NOT_APPLICABLE[scenario.name])
    setup = STREAM_SETUPS[scenario.name]
    prompt = setup.get("prompt") or next(s["text"] for s in json.loads((scenario / "input.json").read_text())["steps"]
                                         if s["op"] == "prompt")
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "config" / "dsh-tui").mkdir(parents=True)
    args = ["--preset", "full-access", "--output-format", "stream-json", "--root", str(tmp_path / "s")]
    if "replay" in setup:
        args += ["--replay", str(scenario / setup["replay"])]
    if "layout" in setup:  # the recorder's files under the names `--replay DIR` reads
        replay = tmp_path / "replay"
        replay.mkdir()
        for ours, theirs in setup["layout"].items():
            shutil.copyfile(scenario / theirs, replay / ours)
        args += ["--replay", str(replay)]
    if "model" in setup:
        args += ["--model", setup["model"]]
    env = _env(tmp_path, **({"DEEPSEEK_API_KEY": setup["key"]} if "key" in setup else {}))
    with ScriptServer() as server:
        if setup.get("server") == "retry":
            server.push(json_reply(429, {"error": {"message": "snapshot transient failure"}}),
                        sse_reply(chunk("RETRY_OK"), chunk("", finish="stop",
                                                           usage={"prompt_tokens": 4, "completion_tokens": 2})))
        (tmp_path / "config" / "dsh-tui" / "settings.toml").write_text(
            setup["settings"].replace("{base_url}", server.base_url))
        out = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", *args, prompt],
                             env=env, cwd=work, capture_output=True, text=True, timeout=120)
        if setup.get("server") == "retry":
            assert len(server.requests) == 2  # the failed call and its one retry, the same request
            assert server.requests[0]["body"] == server.requests[1]["body"]
    assert out.returncode == setup.get("exit", 0), out.stderr
    assert "Traceback" not in out.stderr
    expected = [json.loads(line) for line in (scenario / "stream-json.expected.jsonl").read_text().splitlines()]
    ours = _lines(out.stdout)
    assert _stream_projection(ours) == _stream_projection(expected)
    assert {e["sessionId"] for e in ours} == {ours[-1]["sessionId"]}
    cwd = str(work.resolve())
    for i, (mine, theirs) in enumerate(zip(ours, expected, strict=True)):
        assert _comparable(scenario.name, mine, cwd) == _comparable(scenario.name, theirs, cwd), f"line {i + 1}"
    assert _error_codes(ours) == _error_codes(expected)


def test_every_headless_stream_recording_is_run_or_says_why():
    names = {p.name for p in HEADLESS_STREAMS}
    assert len(names) >= 9 and set(STREAM_NOT_APPLICABLE) <= names
    assert names - set(STREAM_NOT_APPLICABLE) == set(STREAM_SETUPS)
    assert len(STREAM_SETUPS) >= 6
