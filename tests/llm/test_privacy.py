"""``[privacy]``: dsh 0.2 sends DeepSeek the session's events (``dsh_session_log``) and its plugin list
(``dsh_plugin_packages``) in every request body; dsh-tui sends neither unless the user turns them on, and then
in dsh 0.2's shape (``tests/fixtures/dsh02-request.headless.json`` is dsh 0.2's real first request)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO
from tests.llm.sse_server import ScriptServer, chunk, sse_reply
from tests.llm.test_messages import text_reply, title, tool_reply
from tests.llm.test_provider_harness import _env

DSH02 = json.loads((REPO / "tests" / "fixtures" / "dsh02-request.headless.json").read_text())["body"]
KEY = "sk-privacy-0123456789abcdefghij"
EXTRAS = ("dsh_session_log", "dsh_plugin_packages")
ON = "[privacy]\nsend_session_log = true\nsend_plugin_packages = true\n"


def _run(tmp_path, settings: str | None, replies, **env: str) -> list[dict]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "notes.txt").write_text("alpha\n")
    if settings is not None:
        conf = tmp_path / "config" / "dsh-tui"
        conf.mkdir(parents=True, exist_ok=True)
        (conf / "settings.toml").write_text(settings)
    with ScriptServer() as server:
        server._server.title_reply = title
        server.push(*replies)
        environ = _env(tmp_path, DEEPSEEK_API_KEY=KEY, DEEPSEEK_BASE_URL=server.base_url, **env)
        out = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "what is in notes.txt?"],
                             env=environ, cwd=ws, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        return list(server.requests) + list(server.title_requests)


def _two_requests():
    return [tool_reply("toolu_1", "read", '{"file_path": "notes.txt"}'), text_reply("It says alpha.")]


def test_by_default_neither_the_session_log_nor_the_plugin_list_is_sent(tmp_path, use_messages_default):
    requests = _run(tmp_path, None, _two_requests())
    assert len(requests) >= 2 and all(r["path"] == "/v1/messages" for r in requests)
    for r in requests:
        assert not set(EXTRAS) & set(r["body"])


def test_turned_on_they_are_sent_in_dsh02s_shape_and_incrementally(tmp_path, use_messages_default):
    requests = [r for r in _run(tmp_path, ON, _two_requests()) if r["body"].get("tools")]  # the turn's two
    first, second = (r["body"] for r in requests[:2])
    # the same place in the body as dsh 0.2: after the tools, the log then the packages
    assert list(first)[-2:] == list(DSH02)[-2:] == list(EXTRAS)
    log = first["dsh_session_log"]
    assert list(log) == list(DSH02["dsh_session_log"])  # version, sessionFormatVersion, session, afterSeq, ...
    assert log["version"] == 1 and log["afterSeq"] == -1
    assert set(log["session"]) >= {"version", "id", "createdAt", "cwd"}
    assert log["session"]["cwd"] == str(tmp_path / "ws")
    assert log["sessionFormatVersion"] == log["session"]["version"]
    seqs = [e["seq"] for e in log["events"]]
    assert seqs == list(range(len(seqs))) and log["throughSeq"] == seqs[-1]
    for event in log["events"]:
        assert list(event)[:3] == ["seq", "time", "data"] and "type" in event
    types = [e["type"] for e in log["events"]]
    assert "turn/start" in types and "request/header" in types  # the step's header is logged before the call
    # the second request carries only what came after the accepted upload
    log2 = second["dsh_session_log"]
    assert log2["afterSeq"] == log["throughSeq"]
    assert log2["events"][0]["seq"] == log["throughSeq"] + 1
    assert "tool/result" in [e["type"] for e in log2["events"]]
    packages = first["dsh_plugin_packages"]
    assert list(packages) == list(DSH02["dsh_plugin_packages"]) == ["version", "packages"]
    assert packages["version"] == 1
    names = [p["name"] for p in packages["packages"]]
    assert "dsh-tui" in names and names == sorted(names)
    assert all(set(p) <= {"name", "version"} for p in packages["packages"])


def test_only_deepseeks_own_route_over_messages_carries_them(tmp_path):
    # the suite's default: the chat-completions wire (DSH_TUI_DEEPSEEK_API=chat): dsh sends them on Messages only
    requests = _run(tmp_path, ON, [sse_reply(chunk("Hi.", role="assistant"), chunk(finish="stop"))])
    assert requests[0]["path"] == "/chat/completions"
    assert not set(EXTRAS) & set(requests[0]["body"])


def test_one_can_be_on_without_the_other(tmp_path, use_messages_default):
    requests = _run(tmp_path, "[privacy]\nsend_plugin_packages = true\n", [text_reply("Hi.")])
    body = requests[0]["body"]
    assert "dsh_plugin_packages" in body and "dsh_session_log" not in body


def test_a_non_boolean_is_a_settings_error(tmp_path):
    conf = tmp_path / "config" / "dsh-tui"
    conf.mkdir(parents=True)
    (conf / "settings.toml").write_text('[privacy]\nsend_session_log = "yes"\n')
    out = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "hi"],
                         env=_env(tmp_path, DEEPSEEK_API_KEY=KEY, DEEPSEEK_BASE_URL="http://127.0.0.1:9"),
                         cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "privacy.send_session_log must be true or false" in out.stderr
