"""The dsh 0.2 corpus (``tests/fixtures/dsh02``): format v4 logs written by the real dsh 0.2, read by dsh-tui
(docs/format.md, "Format v4"): checked, re-rendered byte for byte, listed with their titles, states and
lineage, and a crash mid-turn closed exactly as dsh 0.2 closes it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from tests.conftest import REPO

CORPUS = REPO / "tests" / "fixtures" / "dsh02"
LOGS = sorted(CORPUS.rglob("session.v4.jsonl.zstd"))


def _plain(log: Path) -> bytes:
    with zstandard.ZstdDecompressor().stream_reader(log.open("rb")) as reader:
        return reader.read()


def _dsh_tui(*args: str, env: dict | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dsh_tui", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env=env)


def _home(tmp_path: Path, *scenarios: str) -> Path:
    """A DSH_HOME whose session root holds the named scenarios' session trees (all when none named)."""
    root = tmp_path / "home" / "sessions"
    root.mkdir(parents=True)
    for d in sorted(CORPUS.iterdir()):
        if d.is_dir() and (not scenarios or d.name in scenarios):
            shutil.copytree(d / "sessions", root, dirs_exist_ok=True)
    return root.parent


CHAT = '[providers.deepseek-official]\napi = "chat"\n'


def _env(tmp_path: Path, home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "DEEPSEEK_"))}
    env.update(DSH_HOME=str(home), XDG_CACHE_HOME=str(tmp_path / "cache"), XDG_CONFIG_HOME=str(tmp_path / "cfg"),
               DSH_TUI_DEEPSEEK_API="chat")  # these tests script chat completions (DeepSeek's default is Messages)
    return env


def test_the_corpus_holds_v4_logs_of_every_scenario():
    scenarios = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())
    assert len(scenarios) >= 20
    for name in scenarios:
        logs = list((CORPUS / name).rglob("session.v4.jsonl.zstd"))
        assert logs, name
        for log in logs:
            lines = _plain(log).decode().splitlines()
            header = json.loads(lines[0])
            assert header["type"] == "session" and header["version"] == 4
            assert log.parent.name == header["id"] or header.get("parentSession")  # a child's dir is its parent's
            assert [json.loads(x)["seq"] for x in lines[1:]] == list(range(len(lines) - 1))


@pytest.mark.parametrize("log", LOGS, ids=lambda p: f"{p.parts[-5]}-{p.parts[-2][:12]}")
def test_every_v4_log_checks_and_its_canonical_form_is_byte_identical(log: Path):
    out = _dsh_tui("log", "check", str(log))
    row = json.loads(out.stdout)
    assert out.returncode == 0 and row["ok"], row
    # the crash scenarios end inside a turn, and so does goal (its continuation round found no scripted reply)
    assert row["open_turn"] == (log.parts[-5] in ("crash", "crash-tool", "goal")), row
    canon = subprocess.run([sys.executable, "-m", "dsh_tui", "log", "cat", "--canonical", str(log)],
                           capture_output=True, timeout=120, cwd=REPO)
    assert canon.returncode == 0, canon.stderr
    assert canon.stdout == _plain(log)


def test_sessions_lists_dsh02_sessions_with_title_state_and_lineage(tmp_path):
    home = _home(tmp_path)
    out = _dsh_tui("sessions", "--all", "--subagents", "--json", env=_env(tmp_path, home))
    assert out.returncode == 0, out.stderr
    rows = {r["id"]: r for r in json.loads(out.stdout)}
    assert len(rows) == len(LOGS)
    assert all(r["state"] != "unreadable" for r in rows.values()), [r for r in rows.values()
                                                                     if r["state"] == "unreadable"]
    by_dir = {}
    for log in LOGS:
        by_dir.setdefault(log.parts[-5], []).append(json.loads(_plain(log).split(b"\n", 1)[0])["id"])
    plain = rows[by_dir["plain"][0]]
    assert plain["title"] == "Messages title" and plain["state"] == "completed" and plain["turns"] == 1
    assert rows[by_dir["crash"][0]]["state"] == "interrupted"
    assert rows[by_dir["max-tokens"][0]]["state"] == "max tokens"
    assert rows[by_dir["auth-error"][0]]["state"] == "failed"
    assert rows[by_dir["two-turns"][0]]["turns"] == 2
    parent = next(i for i in by_dir["subagent"] if i.startswith("session-"))
    child = next(i for i in by_dir["subagent"] if i != parent)
    assert rows[child]["parent"] == parent


@pytest.mark.parametrize("name", ["crash", "crash-tool"])
def test_a_crash_mid_turn_is_closed_as_dsh_02_closes_it(tmp_path, name):
    """dsh-tui's closers for a v4 log cut mid-turn (``log repair``) are the events real dsh 0.2 appends when
    it resumes the same log (recorded here once against a scripted Messages server)."""
    from tests.interop.dsh02 import Dsh02Unavailable, install
    from tests.interop.dsh02_corpus import _env as dsh_env
    from tests.llm.sse_server import ScriptServer
    from tests.llm.test_messages import text_reply, title

    try:
        dsh = str(install())
    except Dsh02Unavailable as err:
        pytest.fail(f"dsh 0.2 peer unavailable: {err}", pytrace=False)
    log = next((CORPUS / name).rglob("session.v4.jsonl.zstd"))
    n = len(_plain(log).splitlines()) - 1
    ours_home, theirs_home = _home(tmp_path / "ours", name), _home(tmp_path / "theirs", name)
    ours = next(ours_home.rglob("session.v4.jsonl.zstd"))
    out = _dsh_tui("log", "repair", str(ours))
    assert out.returncode == 0, out.stderr
    closers = [json.loads(x) for x in _plain(ours).splitlines()[1 + n:]]
    assert closers and closers[-1]["type"] == "turn/end" and closers[-1]["data"]["reason"] == {"kind": "interrupted"}
    header = json.loads(_plain(log).split(b"\n", 1)[0])
    ws = Path(header["cwd"])  # dsh resumes a session only in its recorded directory
    made = not ws.exists()
    ws.mkdir(parents=True, exist_ok=True)
    try:
        with ScriptServer() as server:
            server._server.title_reply = title
            server.push(text_reply("Resumed.", thinking=None))
            run = subprocess.run([dsh, "--profile", "headless", "--session-id", header["id"], "go on"], cwd=ws,
                                 env=dsh_env(theirs_home, server.base_url), capture_output=True, text=True,
                                 timeout=240)
    finally:
        if made:
            shutil.rmtree(ws.parent, ignore_errors=True)
    assert run.returncode == 0, run.stderr[-2000:]
    theirs = next(theirs_home.rglob("session.v4.jsonl.zstd"))
    appended = [json.loads(x) for x in _plain(theirs).splitlines()[1 + n:]]
    assert appended[: len(closers)] == closers


def _events(scenario: str) -> tuple[dict, list[dict]]:
    lines = [json.loads(x) for x in _plain(next((CORPUS / scenario).rglob("session.v4.jsonl.zstd"))).splitlines()]
    return lines[0], lines[1:]


def test_v4_tool_results_approvals_and_workspace_changes_fold_into_the_transcript():
    from dsh_tui.session.transcript import fold_transcript

    header, events = _events("edit")
    call = next(i for i, e in enumerate(events) if e["type"] == "tool/call" and e["data"]["callId"] == "toolu_e1")
    extra = [{"type": "approval/asked", "data": {"id": "ap-1", "toolName": "edit", "callId": "toolu_e1",
                                                 "reason": "edit greet.py"}},
             {"type": "approval/decided", "data": {"id": "ap-1", "outcome": "approved"}}]
    events = events[: call + 1] + [{**e, "seq": -1, "time": 0} for e in extra] + events[call + 1:]
    events.append({"type": "workspace/changes", "seq": -1, "time": 0, "data": {
        "turn": 1, "cwd": header["cwd"], "total": 1, "added": 1, "deleted": 1,
        "files": [{"path": f"{header['cwd']}/greet.py", "display": "greet.py", "added": 1, "deleted": 1}]}})
    fold = fold_transcript(header, events)
    tools = {i.call_id: i for i in fold.items if i.kind == "tool"}
    assert tools["toolu_r1"].state == "ok" and "print('helo')" in tools["toolu_r1"].result
    assert tools["toolu_e1"].approval == "approved" and tools["toolu_e1"].approval_reason == "edit greet.py"
    assert fold.changed_files == {1: ["greet.py"]}
    assert any(i.kind == "divider" and i.text == "turn 1 changed 1 file: greet.py (+1 −1)" for i in fold.items)
    err_header, err_events = _events("read-error")
    failed = [i for i in fold_transcript(err_header, err_events).items if i.kind == "tool"]
    assert failed and failed[0].state == "error"


SDK_RESUME = """
import json, sys
from deepseek_harness import DeepSeekHarness
dsh_bin, home, cwd, sid = sys.argv[1:5]
with DeepSeekHarness(dsh_bin=dsh_bin, dsh_home=home, cwd=cwd, request_timeout_seconds=120) as harness:
    run = harness.resume_session(sid).run("continue please")
    print(json.dumps({"answer": run.final_response, "finish": run.finish_reason}))
"""


def test_a_fork_of_a_dsh02_session_is_v4_and_real_dsh_02_resumes_it(tmp_path):
    """``dsh-tui fork`` of a v4 session writes a v4 child (``isSeeded``, ``session/end-seed {inherited: true}``)
    that dsh 0.2's own SDK resumes and runs a turn on; dsh-tui then reads what dsh appended (a system-prompt
    replacement ``{op, startSeq, endSeq}`` among it) byte for byte."""
    from tests.interop.dsh02 import Dsh02Unavailable, install, python
    from tests.interop.dsh02_corpus import _env as dsh_env
    from tests.llm.sse_server import ScriptServer
    from tests.llm.test_messages import text_reply, title

    try:
        dsh, sdk_python = str(install()), python()
    except Dsh02Unavailable as err:
        pytest.fail(f"dsh 0.2 peer unavailable: {err}", pytrace=False)
    home = _home(tmp_path, "edit")
    header, events = _events("edit")
    out = _dsh_tui("fork", header["id"], env=_env(tmp_path, home))
    assert out.returncode == 0, out.stderr
    child_id = out.stdout.strip().splitlines()[-1]
    child = next(home.rglob(f"{child_id}/session.v4.jsonl.zstd"))
    lines = _plain(child).splitlines()
    child_header = json.loads(lines[0])
    assert child_header == {"type": "session", "version": 4, "id": child_id, "createdAt": child_header["createdAt"],
                            "cwd": header["cwd"], "parentSession": header["id"], "isSeeded": True,
                            "delegationDepth": 0}
    assert [json.loads(x) for x in lines[1:-1]] == events
    assert json.loads(lines[-1]) == {"type": "session/end-seed", "seq": len(events), "time": events[-1]["time"],
                                     "data": {"inherited": True}}
    ws = Path(header["cwd"])
    made = not ws.exists()
    ws.mkdir(parents=True, exist_ok=True)
    try:
        with ScriptServer() as server:
            server._server.title_reply = title
            server.push(text_reply("Continued by dsh.", thinking=None))
            env = dsh_env(home, server.base_url)
            env.pop("DSH_HOME")  # the SDK sets it from dsh_home
            run = subprocess.run([sdk_python, "-c", SDK_RESUME, dsh, str(home), str(ws), child_id], cwd=ws, env=env,
                                 capture_output=True, text=True, timeout=240)
    finally:
        if made:
            shutil.rmtree(ws.parent, ignore_errors=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {"answer": "Continued by dsh.", "finish": "completed"}
    check = json.loads(_dsh_tui("log", "check", str(child)).stdout)
    assert check["ok"] and check["turns"] == 2, check
    canon = subprocess.run([sys.executable, "-m", "dsh_tui", "log", "cat", "--canonical", str(child)],
                           capture_output=True, timeout=120, cwd=REPO)
    assert canon.stdout == _plain(child)


def test_dsh_tui_continues_a_dsh02_session_in_v4_and_real_dsh_02_resumes_it(tmp_path):
    """Write v4: ``dsh-tui resume`` of a session dsh 0.2 wrote appends v4 events (a tool round with its
    approval, a native tool message, the system prompt as a ``system/message`` head replacement, the assistant
    message's embedded ``stream``; no packed rows); real dsh 0.2 then resumes the same file and runs a turn,
    and dsh-tui reads and continues what dsh appended."""
    from tests.interop.dsh02 import Dsh02Unavailable, install
    from tests.interop.dsh02_corpus import _env as dsh_env
    from tests.llm.sse_server import ScriptServer, chunk, sse_reply, tool_call
    from tests.llm.test_messages import text_reply, title

    try:
        dsh = str(install())
    except Dsh02Unavailable as err:
        pytest.fail(f"dsh 0.2 peer unavailable: {err}", pytrace=False)
    home = _home(tmp_path, "plain")
    log = next(home.rglob("session.v4.jsonl.zstd"))
    header = json.loads(_plain(log).split(b"\n", 1)[0])
    n0 = len(_plain(log).splitlines()) - 1
    ws = Path(header["cwd"])
    made = not ws.exists()
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "notes.txt").write_text("alpha\n")
    usage = {"prompt_tokens": 50, "completion_tokens": 5}
    try:
        with ScriptServer() as server:
            server.push(
                sse_reply(chunk(None, tool_calls=[tool_call(0, id="c1", name="read", args='{"file_path": "notes.txt"}')]),
                          chunk(None, finish="tool_calls", usage=usage)),
                sse_reply(chunk("It says alpha."), chunk("", finish="stop", usage=usage)))
            env = {**_env(tmp_path, home), "DEEPSEEK_API_KEY": "sk-v4-0123456789abcdef",
                   "DEEPSEEK_BASE_URL": server.base_url}
            ours = _dsh_tui("resume", header["id"], "--headless", "what is in notes.txt?", env=env, cwd=ws)
            assert ours.returncode == 0, ours.stderr
            assert "It says alpha." in ours.stdout
        lines = _plain(log).splitlines()
        assert json.loads(lines[0]) == header  # the header is never rewritten
        added = [json.loads(x) for x in lines[1 + n0:]]
        types = [e["type"] for e in added]
        assert types[0] == "session/end-seed" and types[-1] == "turn/end" and "text-chunks" not in types
        assert all(e.get("ignorable") is True for e in added if e["type"] == "assistant/chunk")
        result = next(e for e in added if e["type"] == "tool/result")
        assert result["data"]["message"]["role"] == "tool" and result["data"]["message"]["toolCallId"] == "c1"
        assert "alpha" in result["data"]["message"]["content"][0]["text"]
        head = next(e for e in added if e["type"] == "system/message")
        assert head["surfaceOp"] == {"op": "replace", "startSeq": 7, "endSeq": 7} and head["sourceEventSeqs"] == [7]
        assert all(isinstance(e["data"].get("stream"), list) for e in added if e["type"] == "assistant/message")
        assert all("system" not in e["data"]["header"] for e in added if e["type"] == "request/header")
        with ScriptServer() as server:
            server._server.title_reply = title
            server.push(text_reply("Continued by dsh.", thinking=None))
            theirs = subprocess.run([dsh, "--profile", "headless", "--session-id", header["id"], "and now?"], cwd=ws,
                                    env=dsh_env(home, server.base_url), capture_output=True, text=True, timeout=240)
        assert theirs.returncode == 0, theirs.stderr[-2000:]
        assert "Continued by dsh." in theirs.stdout
        with ScriptServer() as server:
            server.push(sse_reply(chunk("Back in dsh-tui."), chunk("", finish="stop", usage=usage)))
            env["DEEPSEEK_BASE_URL"] = server.base_url
            again = _dsh_tui("resume", header["id"], "--headless", "still there?", env=env, cwd=ws)
            assert again.returncode == 0 and "Back in dsh-tui." in again.stdout, again.stderr
    finally:
        if made:
            shutil.rmtree(ws.parent, ignore_errors=True)
    check = json.loads(_dsh_tui("log", "check", str(log)).stdout)
    assert check["ok"] and check["turns"] == 4 and not check["open_turn"], check


def test_dshs_session_lock_is_honoured_both_ways(tmp_path):
    """``session.lock`` is one kernel ``flock`` for both harnesses: while real dsh 0.2 runs a turn on a v4
    session, ``dsh-tui resume`` refuses it in one line; while dsh-tui holds it, dsh 0.2 refuses to write."""
    import signal
    import time

    from dsh_tui.store.lock import SessionLock
    from tests.interop.dsh02 import Dsh02Unavailable, install
    from tests.interop.dsh02_corpus import _env as dsh_env
    from tests.interop.dsh02_corpus import stall
    from tests.llm.sse_server import ScriptServer
    from tests.llm.test_messages import text_reply, title

    try:
        dsh = str(install())
    except Dsh02Unavailable as err:
        pytest.fail(f"dsh 0.2 peer unavailable: {err}", pytrace=False)
    home = _home(tmp_path, "plain")
    log = next(home.rglob("session.v4.jsonl.zstd"))
    header = json.loads(_plain(log).split(b"\n", 1)[0])
    ws = Path(header["cwd"])
    made = not ws.exists()
    ws.mkdir(parents=True, exist_ok=True)
    env = {**_env(tmp_path, home), "DEEPSEEK_API_KEY": "sk-v4-0123456789abcdef", "DEEPSEEK_BASE_URL": "http://127.0.0.1:9"}
    try:
        with ScriptServer() as server:
            server._server.title_reply = title
            server.push(stall())
            proc = subprocess.Popen([dsh, "--profile", "headless", "--session-id", header["id"], "answer slowly"],
                                    cwd=ws, env=dsh_env(home, server.base_url), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            try:
                deadline = time.monotonic() + 60
                while not server.requests and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert server.requests, "dsh never sent its request"
                out = _dsh_tui("resume", header["id"], "--headless", "dsh-tui was here", env=env, cwd=ws)
                assert out.returncode != 0 and "Traceback" not in out.stderr
                assert "in use" in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
        assert b"dsh-tui was here" not in _plain(log)  # dsh kept writing; dsh-tui wrote nothing
        with SessionLock(log.parent / "session.lock", header["id"]), ScriptServer() as server:
            server._server.title_reply = title
            server.push(text_reply("never", thinking=None))
            theirs = subprocess.run([dsh, "--profile", "headless", "--session-id", header["id"], "hi"], cwd=ws,
                                    env=dsh_env(home, server.base_url), capture_output=True, text=True, timeout=240)
        assert theirs.returncode != 0 and "Continued" not in theirs.stdout
        assert "own" in theirs.stderr.lower() or "lock" in theirs.stderr.lower() or "use" in theirs.stderr.lower(), \
            theirs.stderr[-1000:]
    finally:
        if made:
            shutil.rmtree(ws.parent, ignore_errors=True)


def _run_new(tmp_path: Path, home: Path, ws: Path, prompt: str, *extra_env: tuple[str, str]) -> Path:
    from tests.llm.sse_server import ScriptServer, chunk, sse_reply

    with ScriptServer() as server:
        server.push(sse_reply(chunk("Hello from dsh-tui."), chunk("", finish="stop",
                                                                  usage={"prompt_tokens": 5, "completion_tokens": 2})))
        env = {**_env(tmp_path, home), "DEEPSEEK_API_KEY": "sk-v4-0123456789abcdef", "DEEPSEEK_BASE_URL": server.base_url,
               **dict(extra_env)}
        out = _dsh_tui("run", "--headless", prompt, env=env, cwd=ws)
    assert out.returncode == 0 and "Hello from dsh-tui." in out.stdout, out.stderr
    (log,) = [p for p in (home / "sessions").rglob("session*.jsonl*") if p.is_file()]
    return log


def test_new_sessions_are_v4_by_default_and_real_dsh_02s_sdk_resumes_one(tmp_path):
    """No setting: a session dsh-tui starts is format v4, and dsh 0.2's own SDK (``resume_session``) resumes it
    for another turn."""
    from tests.interop.dsh02 import Dsh02Unavailable, install, python
    from tests.interop.dsh02_corpus import _env as dsh_env
    from tests.llm.sse_server import ScriptServer
    from tests.llm.test_messages import text_reply, title

    try:
        dsh, sdk_python = str(install()), python()
    except Dsh02Unavailable as err:
        pytest.fail(f"dsh 0.2 peer unavailable: {err}", pytrace=False)
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    cfg = tmp_path / "cfg" / "dsh-tui"
    cfg.mkdir(parents=True)
    (cfg / "settings.toml").write_text(CHAT)  # only the wire these tests script; no [storage] format
    log = _run_new(tmp_path, home, ws, "say hi")
    assert log.name == "session.v4.jsonl.zstd"
    header = json.loads(_plain(log).split(b"\n", 1)[0])
    assert header["version"] == 4 and header["isSeeded"] is False and "seedLength" not in header
    with ScriptServer() as server:
        server._server.title_reply = title
        server.push(text_reply("Continued by dsh.", thinking=None))
        env = dsh_env(home, server.base_url)
        env.pop("DSH_HOME")  # the SDK sets it from dsh_home
        run = subprocess.run([sdk_python, "-c", SDK_RESUME, dsh, str(home), str(ws), header["id"]], cwd=ws, env=env,
                             capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {"answer": "Continued by dsh.", "finish": "completed"}
    check = json.loads(_dsh_tui("log", "check", str(log)).stdout)
    assert check["ok"] and check["turns"] == 2, check


def test_storage_format_v0_writes_v0_and_a_session_keeps_its_format_when_continued_or_forked(tmp_path):
    """``[storage] format = "v0"`` starts a v0 session; under the default (v4) that session is resumed and forked
    in v0, and a v4 session (the default's) is forked in v4."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    cfg = tmp_path / "cfg" / "dsh-tui"
    cfg.mkdir(parents=True)
    (cfg / "settings.toml").write_text('[storage]\nformat = "v0"\n' + CHAT)
    log = _run_new(tmp_path, home, ws, "say hi")
    assert log.name == "session.jsonl.zstd"
    assert json.loads(_plain(log).split(b"\n", 1)[0])["version"] == 0
    (cfg / "settings.toml").write_text(CHAT)  # the default (v4) for new sessions: a v0 one stays v0
    from tests.llm.sse_server import ScriptServer, chunk, sse_reply

    sid = json.loads(_plain(log).split(b"\n", 1)[0])["id"]
    with ScriptServer() as server:
        server.push(sse_reply(chunk("Again."), chunk("", finish="stop", usage={"prompt_tokens": 5, "completion_tokens": 2})))
        env = {**_env(tmp_path, home), "DEEPSEEK_API_KEY": "sk-v4-0123456789abcdef", "DEEPSEEK_BASE_URL": server.base_url}
        out = _dsh_tui("resume", sid, "--headless", "again", env=env, cwd=ws)
    assert out.returncode == 0, out.stderr
    assert [p.name for p in log.parent.iterdir() if p.name.startswith("session") and "jsonl" in p.name] == [log.name]
    assert b"assistant/chunk" in _plain(log) and b'"ignorable":true' not in _plain(log)
    check = json.loads(_dsh_tui("log", "check", str(log)).stdout)
    assert check["ok"] and check["turns"] == 2, check
    formats = {}
    for parent in (sid, _run_new(tmp_path, home / "v4", ws, "a v4 one").parent.name):
        root = str(log.parents[2] if parent == sid else home / "v4" / "sessions")
        fork = _dsh_tui("fork", parent, "--root", root, env=env, cwd=ws)
        assert fork.returncode == 0, fork.stderr
        child = fork.stdout.strip().splitlines()[-1]
        (child_log,) = [p for p in Path(root).rglob("session*.jsonl*") if p.parent.name == child]
        formats[child_log.name] = json.loads(_plain(child_log).split(b"\n", 1)[0])["version"]
    assert formats == {"session.jsonl.zstd": 0, "session.v4.jsonl.zstd": 4}
    (cfg / "settings.toml").write_text('[storage]\nformat = "v5"\n' + CHAT)
    bad = _dsh_tui("run", "--headless", "x", env={**env, "DEEPSEEK_BASE_URL": "http://127.0.0.1:9"}, cwd=ws)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr


def test_v4_knobs_todos_titles_and_the_surface_fold_as_dsh_folds_them(tmp_path):
    """A loaded v4 session: the permission knobs (``permission/preset``, ``sandbox/mode``, ``approval/policy``)
    give the resumed agent its mode; the todo list, the title, the request header (its system prompt from the
    ``system/message`` head) and the messages the runtime's providers read (v0 shapes) come from the log."""
    from dsh_tui.runtime.permissions import logged_mode
    from dsh_tui.store.jsonl import JsonlStore

    home = _home(tmp_path, "todo", "read")
    store = JsonlStore(home / "sessions")
    ids = {p.parts[-2]: p.parts[-2] for p in (home / "sessions").rglob("session.v4.jsonl.zstd")}
    sessions = {sid: store.load(sid).session for sid in ids}
    todo = next(s for s in sessions.values() if any(e["type"] == "todo/write" for e in s.events))
    read = next(s for s in sessions.values() if s is not todo)
    assert todo.todos() == [{"content": "write tests", "status": "pending"}]
    assert todo.title() == "Messages title" and todo.format == 4
    assert logged_mode(todo.events) == ("workspace-write", "ask")
    header = read.request_header()
    assert header["system"].startswith("You are an AI agent powered by DeepSeek Harness.")
    messages = read.derive_messages().to_list()
    assert [m["role"] for m in messages][:3] == ["user", "user", "assistant"]  # the system head is the header's
    result = next(m for m in messages if m["role"] == "user" and m["content"][0]["type"] == "tool-result")
    assert result["content"][0]["toolCallId"] == "toolu_r" and "alpha" in json.dumps(result["content"][0]["content"])


@pytest.mark.parametrize("scenario", sorted(p.name for p in CORPUS.iterdir() if p.is_dir()))
def test_every_dsh02_session_resumes_at_store_level(tmp_path, scenario):
    """Each corpus session resumes (``lifecycle.resume``: lock, crash repair, the Session, ``session/end-seed``
    persisted on close) and the log still checks out, its header and prefix untouched."""
    from dsh_tui.store import lifecycle
    from dsh_tui.store.jsonl import JsonlStore

    home = _home(tmp_path, scenario)
    for log in sorted(home.rglob("session.v4.jsonl.zstd")):
        before = _plain(log).splitlines()
        store = JsonlStore(home / "sessions")
        session, writer = lifecycle.resume(store, log.parent.name)
        assert session.format == 4 and session.events[-1]["type"] == "session/end-seed"
        writer.close()
        after = _plain(log).splitlines()
        assert after[: len(before)] == before  # appended to, never rewritten (a crash: closers, then end-seed)
        assert json.loads(after[-1])["type"] == "session/end-seed"
        row = json.loads(_dsh_tui("log", "check", str(log)).stdout)
        assert row["ok"] and not row["open_turn"], row


def test_a_v4_session_that_delegated_to_a_subagent_is_resumed_by_real_dsh_02(tmp_path):
    """With ``[storage] format = "v4"`` a session whose turn ran a subagent (the child is written in v0) is
    one dsh 0.2's SDK resumes and runs a turn on."""
    from tests.interop.dsh02 import Dsh02Unavailable, install, python
    from tests.interop.dsh02_corpus import _env as dsh_env
    from tests.llm.sse_server import ScriptServer, chunk, sse_reply, tool_call
    from tests.llm.test_messages import text_reply, title

    try:
        dsh, sdk_python = str(install()), python()
    except Dsh02Unavailable as err:
        pytest.fail(f"dsh 0.2 peer unavailable: {err}", pytrace=False)
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    cfg = tmp_path / "cfg" / "dsh-tui"
    cfg.mkdir(parents=True)
    (cfg / "settings.toml").write_text('[storage]\nformat = "v4"\n' + CHAT)
    usage = {"prompt_tokens": 5, "completion_tokens": 2}
    with ScriptServer() as server:
        server.push(
            sse_reply(chunk(None, tool_calls=[tool_call(0, id="c1", name="subagent",
                                                        args='{"description": "sum", "prompt": "say alpha"}')]),
                      chunk(None, finish="tool_calls", usage=usage)),
            *[sse_reply(chunk(t), chunk("", finish="stop", usage=usage)) for t in ("alpha", "Child said alpha.", "ok",
                                                                                  "ok")])
        env = {**_env(tmp_path, home), "DEEPSEEK_API_KEY": "sk-v4-0123456789abcdef", "DEEPSEEK_BASE_URL": server.base_url}
        out = _dsh_tui("run", "--headless", "delegate it", env=env, cwd=ws)
    assert out.returncode == 0, out.stderr
    (log,) = home.rglob("session.v4.jsonl.zstd")
    assert list(home.rglob("session.jsonl.zstd"))  # the child, in v0
    assert b'"subagent"' in _plain(log)
    with ScriptServer() as server:
        server._server.title_reply = title
        server.push(text_reply("Continued by dsh.", thinking=None))
        denv = dsh_env(home, server.base_url)
        denv.pop("DSH_HOME")  # the SDK sets it from dsh_home
        run = subprocess.run([sdk_python, "-c", SDK_RESUME, dsh, str(home), str(ws), log.parent.name], cwd=ws,
                             env=denv, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {"answer": "Continued by dsh.", "finish": "completed"}
