"""The same task through dsh 0.2 (the real ``dsh`` command from PyPI) and through dsh-tui on its default
DeepSeek route (the Messages wire, no settings file), each against a scripted Messages server on 127.0.0.1:
the requests they send must have the same skeleton (path, headers, body fields, model, thinking, effort,
output cap, message roles and block shapes, tool_use input, tool_result flags, thinking signatures passed
back, the title request)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.interop.dsh02 import Dsh02Unavailable, install
from tests.llm.sse_server import ScriptServer
from tests.llm.test_messages import block, delta, end, reply, start, stop, text_reply, title, tool_reply
from tests.llm.test_provider_harness import _env

pytestmark = pytest.mark.interop
KEY = "sk-dsh02-0123456789abcdefghij"
# headers that name the client or the transport, not the protocol
_TRANSPORT = {"host", "connection", "content-length", "user-agent", "accept-language", "sec-fetch-mode",
              "accept-encoding", "x-deepseek-harness-user-id"}
_DSH_ONLY = {"dsh_session_log", "dsh_plugin_packages"}  # dsh 0.2's request extensions (dsh-tui: [privacy], off)


@pytest.fixture(scope="module")
def dsh02() -> str:
    try:
        return str(install())
    except Dsh02Unavailable as err:
        pytest.fail(f"dsh 0.2 peer unavailable: {err}", pytrace=False)


def _block(b: dict) -> dict:
    out: dict = {"type": b["type"]}
    if b["type"] == "thinking":
        out["signature"] = b.get("signature")
    elif b["type"] == "tool_use":
        out.update(id=b["id"], name=b["name"], input=b["input"])
    elif b["type"] == "tool_result":
        out.update(tool_use_id=b["tool_use_id"], is_error=b.get("is_error"),
                   content=[c["type"] for c in b["content"]])
    return out


def skeleton(record: dict) -> dict:
    body = record["body"]
    return {
        "path": record["path"],
        "headers": sorted(k.lower() for k in record["headers"] if k.lower() not in _TRANSPORT),
        "anthropic-version": {k.lower(): v for k, v in record["headers"].items()}.get("anthropic-version"),
        "fields": [k for k in body if k not in _DSH_ONLY],
        "model": body["model"], "max_tokens": body["max_tokens"], "thinking": body["thinking"],
        "output_config": body.get("output_config"),
        "system": bool(body.get("system")),
        "messages": [(m["role"], [_block(b) for b in m["content"]]) for m in body["messages"]],
        "tools": bool(body.get("tools")),
    }


def _run(cmd: list[str], server: ScriptServer, tmp_path, name: str, settings: str | None = None) -> list[dict]:
    work = tmp_path / name / "ws"
    work.mkdir(parents=True)
    (work / "notes.txt").write_text("alpha\n")
    env = _env(tmp_path / name, DEEPSEEK_API_KEY=KEY, DEEPSEEK_BASE_URL=server.base_url)
    if settings is not None:
        conf = tmp_path / name / "config" / "dsh-tui"
        conf.mkdir(parents=True)
        (conf / "settings.toml").write_text(settings)
    os.makedirs(env["DSH_HOME"], exist_ok=True)
    out = subprocess.run(cmd, env=env, cwd=work, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("It says alpha."), out.stdout
    return list(server.requests)


def tools_reply(*calls: tuple[str, str, str]) -> object:
    """One response with several tool_use blocks (parallel calls), after a signed thinking block."""
    events = [start(), block(0, {"type": "thinking", "thinking": "", "signature": ""}),
              delta(0, {"type": "thinking_delta", "thinking": "Two tools."}),
              delta(0, {"type": "signature_delta", "signature": "sig-P"}), stop(0)]
    for i, (call_id, name, args) in enumerate(calls, start=1):
        events += [block(i, {"type": "tool_use", "id": call_id, "name": name, "input": {}}),
                   delta(i, {"type": "input_json_delta", "partial_json": args}), stop(i)]
    return reply(*events, *end("tool_use"))


SCENARIOS = {
    # a tool call whose result passes
    "tool-ok": [tool_reply("toolu_1", "read", '{"file_path": "notes.txt"}'), text_reply("It says alpha.")],
    # a failing tool call (a required argument missing): is_error travels back
    "tool-error": [tool_reply("toolu_2", "read", '{"nope": 1}'), text_reply("It says alpha.")],
    # a plain answer (the title request goes beside it)
    "plain": [text_reply("It says alpha.")],
    # two tools in one response (read and grep), then a bash call with dsh 0.2's `workdir`, then the answer
    "tools-parallel-then-bash": [
        tools_reply(("toolu_3", "read", '{"file_path": "notes.txt"}'),
                    ("toolu_4", "grep", '{"pattern": "alpha", "include": "*.txt"}')),
        tool_reply("toolu_5", "bash", '{"description": "Print notes", "command": "cat notes.txt", "workdir": "."}'),
        text_reply("It says alpha."),
    ],
}


# dsh 0.2 runs bash in its file sandbox under workspace-write without asking; dsh-tui does too where bubblewrap
# can run, and asks (headless: refused) where it cannot: the bash scenario runs dsh-tui with the preset that
# needs no approval on every machine
OUR_ARGS = {"tools-parallel-then-bash": ("--preset", "full-access")}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_dsh_tui_and_dsh02_send_the_same_messages_requests(dsh02, tmp_path, scenario, use_messages_default):
    prompt = "what is in notes.txt?"
    runs = {}
    for name, cmd, settings in (
        ("dsh02", [dsh02, "--profile", "headless", prompt], None),
        # no settings file: DeepSeek's default route is the Messages wire, as dsh 0.2's
        ("dsh-tui", [sys.executable, "-m", "dsh_tui", "run", "--headless", *OUR_ARGS.get(scenario, ()), prompt],
         None),
    ):
        with ScriptServer() as server:
            server._server.title_reply = title
            server.push(*SCENARIOS[scenario])
            requests = _run(cmd, server, tmp_path, name, settings)
            titles = list(server.title_requests)
        runs[name] = ([skeleton(r) for r in requests], [skeleton(r) for r in titles])
    ours, theirs = runs["dsh-tui"], runs["dsh02"]
    assert len(ours[0]) == len(theirs[0])
    for mine, peer in zip(ours[0], theirs[0], strict=True):
        assert mine == peer  # the model id too: "deepseek-flash", dsh 0.2's default
    assert [t["thinking"] for t in ours[1]] == [t["thinking"] for t in theirs[1]]
