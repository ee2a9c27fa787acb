"""``dsh-tui acp`` against dsh's ACP recordings (``examples/acp-agent/**/stdout.expected.jsonl``).

Each scenario runs a real ``dsh-tui acp --replay <scenario>`` process in a copy of the recorded workspace; a
raw JSON-RPC client sends the scenario's ``input.json`` steps (answering permission requests with its
``permissionAnswers``) and keeps every line the agent printed. Both outputs are then projected onto what
dsh's agent defines:

- the ``session/new`` result (a session id) and each prompt's ``stopReason`` or error code, in order;
- the assistant text the client was sent between two of those (dsh sends each message whole, dsh-tui streams
  it in deltas: the joined text must be equal);
- each ``session/request_permission`` (the tool call asked about; the ids come from the recording).

What dsh-tui sends on top (``agent_thought_chunk``, ``tool_call``/``tool_call_update``, ``plan``,
``available_commands_update``, ``current_mode_update``) and its ``initialize`` result (agent name,
capabilities) are intended differences (docs/acp.md). A scenario the replay cannot run here says why.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from tests.llm.test_provider_harness import _env
from tests.runtime.conformance import (
    EXAMPLES,
    applicability,
    prepare_workspace,
    scenario_id,
    scenario_plugin_config,
)

OPS = {"initialize", "newSession", "newSessionExpectError", "prompt", "promptExpectError", "promptContent",
       "promptAndCancel", "cancel", "waitForFile", "waitForTurnEnd", "waitForTitleAfterTurnEnd"}
ANSWER = {"allow_once": "allow-once", "allow_always": "allow-always", "reject_once": "reject-once",
          "reject_always": "reject-once"}
SCENARIOS = sorted(p.parent for p in EXAMPLES.glob("acp-agent/**/stdout.expected.jsonl"))


# Recordings whose defined behaviour dsh-tui deliberately does not copy, and why.
ACP_DIFFERENT = {
    "hook-cc-pretool-ask": "a PreToolUse hook that asks: dsh's ACP composition answers it itself ('bash requires "
                           "manual approval in this session'); dsh-tui asks the client, as every approval",
}


# dsh's acp.snapshot.ts ``hasModelTurn: false``: a UserPromptSubmit hook refuses the prompt at admission, before a
# turn opens, so the stdout (the prompt's stop reason) is all dsh's replay compares.
NO_MODEL_TURN = {"hook-cc-promptsubmit-block", "hook-codex-promptsubmit-block"}


def acp_applicability(d: Path) -> str | None:
    if d.name in ACP_DIFFERENT:
        return ACP_DIFFERENT[d.name]
    spec = json.loads((d / "input.json").read_text())
    ops = {s["op"] for s in spec["steps"]}
    if ops - OPS:
        return f"needs ACP client ops {sorted(ops - OPS)}"
    if not ops & {"prompt", "promptExpectError", "promptContent", "promptAndCancel"}:
        return None  # the protocol alone (a handshake, a refused session): nothing for the model to replay
    if d.name in NO_MODEL_TURN:
        return None  # dsh's replay compares only the stop reason (its recorder harvests no log)
    return applicability(d)


def project(lines: list[dict]) -> list[tuple]:
    """dsh's defined behaviour in an ACP agent's stdout: results, errors, permission requests and the
    assistant text between them."""
    out: list[tuple] = []
    text: list[str] = []

    def flush() -> None:
        if text:
            out.append(("text", "".join(text)))
            text.clear()

    for m in lines:
        if m.get("method") == "session/update":
            update = m["params"]["update"]
            if update.get("sessionUpdate") == "agent_message_chunk" and update["content"].get("type") == "text":
                text.append(update["content"]["text"])
            continue
        if m.get("method") == "session/request_permission":
            flush()
            out.append(("ask", m["params"]["toolCall"]["toolCallId"]))
            continue
        if "method" in m:
            continue
        flush()
        if "error" in m:
            out.append(("error", m["error"]["code"]))
        elif isinstance(m.get("result"), dict) and "stopReason" in m["result"]:
            out.append(("stop", m["result"]["stopReason"]))
        elif isinstance(m.get("result"), dict) and "sessionId" in m["result"]:
            out.append(("session",))
    flush()
    return out


class Driver:
    """A raw JSON-RPC client over the agent's stdio that records what the agent printed."""

    def __init__(self, proc: asyncio.subprocess.Process, answers: list[str]) -> None:
        self.proc = proc
        self.answers = answers
        self.lines: list[dict] = []
        self.pending: dict[int, asyncio.Future] = {}
        self.next_id = 0
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for raw in self.proc.stdout:
            if not raw.strip():
                continue
            m = json.loads(raw)
            self.lines.append(m)
            if "method" in m and "id" in m:  # a request from the agent
                if m["method"] == "session/request_permission":
                    option = self.answers.pop(0) if self.answers else "reject-once"
                    await self._send({"jsonrpc": "2.0", "id": m["id"],
                                      "result": {"outcome": {"outcome": "selected", "optionId": option}}})
                else:
                    await self._send({"jsonrpc": "2.0", "id": m["id"],
                                      "error": {"code": -32601, "message": "not offered by this client"}})
            elif "id" in m and m["id"] in self.pending:
                self.pending.pop(m["id"]).set_result(m)

    async def _send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        await self.proc.stdin.drain()

    async def request(self, method: str, params: dict) -> asyncio.Future:
        self.next_id += 1
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = future
        await self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return future

    async def notify(self, method: str, params: dict) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})


async def _wait_for_file(path: Path) -> None:
    for _ in range(2000):
        if path.exists():
            return
        await asyncio.sleep(0.01)


async def run_acp(d: Path, tmp: Path) -> list[dict]:
    spec = json.loads((d / "input.json").read_text())
    work = tmp / "workspace"
    prepare_workspace(d, work)
    replay = d if any(d.glob("session.[0-9]*.jsonl")) else d / "session.jsonl"
    if not replay.exists():  # a protocol-only recording: any log will do, the model is never asked
        replay = next(EXAMPLES.glob("acp-agent/tests/snapshots/text-turn/session.jsonl"))
    settings = []  # the recorder's per-scenario plugin configuration (hook files, instruction markers)
    for pid in ("hooks-claude-code", "hooks-codex", "agent-instructions", "terminals"):
        config = scenario_plugin_config(d.name, pid, work)
        if config:
            settings += [f"[plugins.{pid}]", *(f"{key} = {json.dumps(value)}" for key, value in config.items())]
            if pid == "terminals":  # off unless enabled, as in dsh's composition
                settings.append("enabled = true")
    lsp = scenario_plugin_config(d.name, "lsp", work)  # the [lsp] table (lsp.cordis.yml's fixture server)
    if lsp:
        from dsh_tui.config.files import dumps_toml

        settings.append(dumps_toml({"lsp": lsp}))
    (tmp / "config" / "dsh-tui").mkdir(parents=True)
    (tmp / "config" / "dsh-tui" / "settings.toml").write_text("\n".join(settings) + "\n")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "dsh_tui", "acp", "--replay", str(replay), cwd=work, env=_env(tmp, DSH_TUI_SANDBOX="auto"),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        limit=1 << 24)
    answers = [ANSWER.get(a.get("kind"), "reject-once") for a in spec.get("permissionAnswers", [])]
    client = Driver(proc, answers)
    sid = None
    try:
        for step in spec["steps"]:
            op = step["op"]
            if op == "initialize":
                await asyncio.wait_for(await client.request(
                    "initialize", {"protocolVersion": 1, "clientCapabilities": {}}), 60)
            elif op in ("newSession", "newSessionExpectError"):
                params = {"cwd": str(work), "mcpServers": []}
                if "additionalDirectories" in step:
                    params["additionalDirectories"] = step["additionalDirectories"]
                reply = await asyncio.wait_for(await client.request("session/new", params), 60)
                sid = (reply.get("result") or {}).get("sessionId", sid)
            elif op in ("prompt", "promptExpectError", "promptContent"):
                prompt = step.get("content") or [{"type": "text", "text": step["text"]}]
                await asyncio.wait_for(await client.request("session/prompt", {"sessionId": sid, "prompt": prompt}),
                                       120)
            elif op == "promptAndCancel":
                done = await client.request("session/prompt", {"sessionId": sid,
                                                               "prompt": [{"type": "text", "text": step["text"]}]})
                if step.get("waitForFile"):
                    await _wait_for_file(work / step["waitForFile"]["path"])
                await client.notify("session/cancel", {"sessionId": sid})
                await asyncio.wait_for(done, 120)
            elif op == "waitForFile":
                await _wait_for_file(work / step["path"])
        await asyncio.sleep(0.1)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()
        client.reader.cancel()
    return client.lines


def _expected(d: Path) -> list[dict]:
    return [json.loads(line) for line in (d / "stdout.expected.jsonl").read_text().splitlines() if line.strip()]


def test_acp_recordings_inventory(capsys):
    rows = [(scenario_id(d), acp_applicability(d)) for d in SCENARIOS]
    runs = [sid for sid, why in rows if why is None]
    with capsys.disabled():
        print(f"\nACP conformance: {len(runs)} of {len(rows)} dsh ACP recordings replay through dsh-tui acp")
        for sid, why in rows:
            print(f"  {'run ' if why is None else 'n/a '} {sid}{'' if why is None else ' - ' + why}")
    assert len(rows) >= 80
    assert len(runs) >= 40


@pytest.mark.parametrize("scenario", SCENARIOS, ids=scenario_id)
async def test_acp_matches_dsh_recording(scenario, tmp_path):
    why = acp_applicability(scenario)
    if why is not None:
        pytest.skip(why)
    ours = await run_acp(scenario, tmp_path)
    expected = project(_expected(scenario))
    got = project(ours)
    assert got == expected, "\n".join(json.dumps(m)[:400] for m in ours)


def test_the_projection_keeps_what_dsh_defines_and_drops_what_dsh_tui_adds():
    def update(kind: str, **extra) -> dict:
        return {"jsonrpc": "2.0", "method": "session/update",
                "params": {"sessionId": "s", "update": {"sessionUpdate": kind, **extra}}}

    lines = [{"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}},
             {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s"}},
             update("agent_thought_chunk", content={"type": "text", "text": "hm"}),
             update("agent_message_chunk", content={"type": "text", "text": "PO"}),
             update("tool_call", toolCallId="c1"),
             update("agent_message_chunk", content={"type": "text", "text": "NG"}),
             {"jsonrpc": "2.0", "id": 7, "method": "session/request_permission",
              "params": {"sessionId": "s", "toolCall": {"toolCallId": "c2"}, "options": []}},
             {"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}},
             {"jsonrpc": "2.0", "id": 4, "error": {"code": -32603, "message": "boom"}}]
    assert project(lines) == [("session",), ("text", "PONG"), ("ask", "c2"), ("stop", "end_turn"), ("error", -32603)]
