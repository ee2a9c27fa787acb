"""``web_search`` and ``web_fetch`` through dsh 0.2 (the real ``dsh`` command from PyPI) and through dsh-tui on the
Messages wire, against one scripted server on 127.0.0.1 playing both the model and DeepSeek's search endpoint
(``DEEPSEEK_SEARCH_BASE_URL``): the same search request, the same tool results (the search's sources, the
refusal of a loopback fetch) and the same tool schemas and system-prompt lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.interop.test_dsh02_messages import KEY, dsh02  # noqa: F401 - the fixture
from tests.llm.sse_server import ScriptServer, json_reply
from tests.llm.test_messages import block, delta, end, reply, start, stop, text_reply, title
from tests.llm.test_provider_harness import _env

pytestmark = pytest.mark.interop
SEARCH = {"id": "msg_s", "type": "message", "role": "assistant", "model": "deepseek-v4-flash", "content": [
    {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "python"}},
    {"type": "web_search_tool_result", "tool_use_id": "srv_1", "content": [
        {"type": "web_search_result", "url": "https://python.org/", "title": "Python", "page_age": "2026-01-01"},
        {"type": "web_search_result", "url": "https://docs.python.org/", "title": "Docs"}]},
    {"type": "text", "text": "Python is a language.", "citations": [
        {"type": "web_search_result_location", "url": "https://python.org/", "cited_text": "Python is a language"}]}],
    "stop_reason": "end_turn", "usage": {"input_tokens": 5, "output_tokens": 5}}


def _calls(port: int):
    calls = [("toolu_s", "web_search", json.dumps({"queries": ["python"]})),
             ("toolu_f", "web_fetch", json.dumps({"url": f"http://127.0.0.1:{port}/page"}))]
    events = [start()]
    for i, (cid, name, args) in enumerate(calls):
        events += [block(i, {"type": "tool_use", "id": cid, "name": name, "input": {}}),
                   delta(i, {"type": "input_json_delta", "partial_json": args}), stop(i)]
    return reply(*events, *end("tool_use"))


def _run(cmd: list[str], tmp_path, name: str, settings: str | None):
    work = tmp_path / name / "ws"
    work.mkdir(parents=True)
    env = _env(tmp_path / name, DEEPSEEK_API_KEY=KEY)
    if settings is not None:
        conf = tmp_path / name / "config" / "dsh-tui"
        conf.mkdir(parents=True)
        (conf / "settings.toml").write_text(settings)
    os.makedirs(env["DSH_HOME"], exist_ok=True)
    with ScriptServer() as server:
        server._server.title_reply = title
        port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
        server.push(_calls(port), json_reply(200, SEARCH), text_reply("Found it."))
        env["DEEPSEEK_BASE_URL"] = server.base_url
        env["DEEPSEEK_SEARCH_BASE_URL"] = f"{server.base_url}/search/v1"
        out = subprocess.run(cmd, env=env, cwd=work, capture_output=True, text=True, timeout=240)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.strip().endswith("Found it."), out.stdout
        requests = list(server.requests)
    search = [r for r in requests if r["path"] == "/search/v1/messages"]
    model = [r for r in requests if r["path"] == "/v1/messages"]
    return search, model


def test_web_tools_match_dsh02(dsh02, tmp_path):  # noqa: F811
    prompt = "search python"
    peer = _run([dsh02, "--profile", "headless", prompt], tmp_path, "dsh02", None)
    ours = _run([sys.executable, "-m", "dsh_tui", "run", "--headless", prompt], tmp_path, "dsh-tui",
                '[providers.deepseek-official]\napi = "messages"\n')
    (peer_search,), (our_search,) = peer[0], ours[0]
    assert our_search["body"] == peer_search["body"]
    for header in ("x-api-key", "authorization", "anthropic-version", "content-type", "accept", "user-agent"):
        assert our_search["headers"].get(header) == peer_search["headers"].get(header), header

    def results(model_requests: list[dict]) -> dict[str, list]:
        last = model_requests[1]["body"]["messages"][-1]
        return {b["tool_use_id"]: [(c["type"], c.get("text")) for c in b["content"]]
                for b in last["content"] if b["type"] == "tool_result"}

    got = results(ours[1])
    assert got == results(peer[1])
    assert got["toolu_f"] == [("text", 'Error: URL hostname "127.0.0.1" resolves to a non-public IP address')]
    assert "- [Python](https://python.org/) — Python is a language (2026-01-01)" in got["toolu_s"][0][1]
    tools = lambda reqs: {t["name"]: t for t in reqs[0]["body"]["tools"]}  # noqa: E731
    for name in ("web_search", "web_fetch"):
        assert tools(ours[1])[name] == tools(peer[1])[name]
    for line in ("web_search results are external", "web_fetch returns external"):
        mine = next(p for p in ours[1][0]["body"]["system"].split("\n\n") if p.startswith(line))
        theirs = next(p for p in peer[1][0]["body"]["system"].split("\n\n") if p.startswith(line))
        assert mine == theirs
