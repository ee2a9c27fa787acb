"""``dsh-tui --profile sdk`` against dsh's JSON-RPC recordings (``examples/jsonrpc-agent/tests/snapshots``).

dsh's SDK recorder (``examples/jsonrpc-agent/tests/sdk.snapshot.ts``) sends one prompt with a fixed session
id and pins every notification and the SDK's result. Here a real ``dsh-tui --profile sdk --replay`` process
replays the recorded model side; a raw JSON-RPC client sends the same ``initialize`` and ``session/prompt``,
waits for the root's ``idle`` and compares the notification stream with dsh's: the methods, the session each
each event's type and each status, in order — and the final response the SDK
would compute (the root's last assistant text).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from tests.llm.test_provider_harness import _env
from tests.runtime.conformance import EXAMPLES, prepare_workspace

SNAPSHOTS = EXAMPLES / "jsonrpc-agent" / "tests" / "snapshots"
# The recorder's scenarios (sdk.snapshot.ts): prompt and fixed session id.
SCENARIOS = {
    "text-turn": ("Reply with exactly: SDK snapshot OK", "sdk-snapshot-text"),
    "bash-tool": ("Run this exact command with your bash tool, then reply with its stdout only: "
                  "echo dsh-sdk-proof-7391", "sdk-snapshot-bash"),
    "subagent-spawn-in-process": ("Use the subagent tool exactly once with description 'echo probe' and prompt: "
                                  "Reply with exactly: child answer 42. Then reply with the subagent's final "
                                  "answer verbatim.", "sdk-snapshot-subagent"),
    "persistent-tools": ("Prove that bash state persists. Then create {{cwd}}/note.txt with a tab-indented line, "
                         "view it, replace that literal tab-indented line, and make the persistent shell exit "
                         "with code 9.", "persistent-tools-snapshot"),
}
# The recorder's composition (examples/jsonrpc-agent/cordis.yml): no runtime-context snapshot, no LLM title,
# no workspace instructions or skills; its subagent tool waits for a one-shot child (dsh-tool-subagent's
# default there).
COMPOSITION = """
[plugins.subagents]
subagent_mode = "one-shot"
subagent_background = false
[plugins.runtime-context]
enabled = false
[plugins.session-title-llm]
enabled = false
[plugins.agent-instructions]
enabled = false
[plugins.skills]
enabled = false
[plugins.skill-tool]
enabled = false
"""
NOT_APPLICABLE = {
    "persistent-tools": "its minimal composition has dsh's persistent bash (one shell across calls) and the "
                        "environment-selected system prompt; dsh-tui's bash is a fresh shell per call",
}


# Events a dsh-tui child session holds in its seed (before its first turn) where dsh 0.1's child logged
# them inside its first turn or not at all; the child's stream is compared without them, and without its
# user messages (dsh's child gets a runtime-context snapshot with its delegated scope even where the
# composition has none for the root; dsh-tui's runtime-context plugin is off for both here).
CHILD_SEED = {"subagent/descriptor", "session/end-seed", "approval/policy", "sandbox/mode", "user/message"}


def _item(m: dict) -> tuple:
    params = m.get("params") or {}
    if m["method"] == "session.event":
        return ("session.event", params["event"]["type"])
    if m["method"] == "session.status":
        return ("session.status", params["status"])
    return (m["method"], params.get("status", ""))


def project(notifications: list[dict], child_of) -> tuple[list[tuple], list[tuple]]:
    """The root's stream (with the ``subagent.*`` notifications) and the children's, each in order.
    ``child_of(i, m)`` says whether notification ``i`` belongs to a child session: dsh's recording writes
    every session id as ``{{sessionId}}``, so there a child's are those between ``subagent.started`` and
    ``subagent.finished`` (the root waits on a foreground child)."""
    root: list[tuple] = []
    child: list[tuple] = []
    for i, m in enumerate(notifications):
        if m.get("method") not in ("session.event", "session.status", "subagent.started", "subagent.finished"):
            continue
        if m["method"].startswith("subagent.") or not child_of(i, m):
            root.append(_item(m))
        elif not (m["method"] == "session.event" and m["params"]["event"]["type"] in CHILD_SEED):
            child.append(_item(m))
    return root, child


def recorded_child_of(notifications: list[dict]):
    inside, flags = False, []
    for m in notifications:
        if m.get("method") == "subagent.started":
            inside = True
        elif m.get("method") == "subagent.finished":
            inside = False
        flags.append(inside)
    return lambda i, _m: flags[i]


def final_response(notifications: list[dict], root: str) -> str:
    text = ""
    for m in notifications:
        params = m.get("params") or {}
        if m.get("method") == "session.event" and params.get("sessionId") == root:
            event = params["event"]
            if event["type"] == "assistant/message":
                joined = "".join(b.get("text", "") for b in event["data"]["message"].get("content") or []
                                 if b.get("type") == "text")
                text = joined or text
    return text


async def run_sdk(d: Path, tmp: Path) -> tuple[list[dict], str]:
    prompt, sid = SCENARIOS[d.name]
    work = tmp / "workspace"
    prepare_workspace(d, work)
    replay = d if any(d.glob("session.[0-9]*.jsonl")) else d / "session.jsonl"
    (tmp / "config" / "dsh-tui").mkdir(parents=True)
    (tmp / "config" / "dsh-tui" / "settings.toml").write_text(COMPOSITION)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "dsh_tui", "--profile", "sdk", "--replay", str(replay), cwd=work, env=_env(tmp, DSH_TUI_SANDBOX="auto"),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        limit=1 << 24)
    assert proc.stdin is not None and proc.stdout is not None
    notifications: list[dict] = []

    async def send(rid: int, method: str, params: dict) -> dict:
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n").encode())
        await proc.stdin.drain()
        while True:
            line = await asyncio.wait_for(proc.stdout.readline(), 120)
            assert line, (await proc.stderr.read()).decode()
            m = json.loads(line)
            if m.get("id") == rid:
                return m
            notifications.append(m)

    try:
        assert "result" in await send(1, "initialize", {"cwd": str(work)})
        prompt = prompt.replace("{{cwd}}", str(work))
        assert "result" in await send(2, "session/prompt", {"sessionId": sid,
                                                           "contentBlocks": [{"type": "text", "text": prompt}]})
        while not any(m.get("method") == "session.status" and m["params"] == {"sessionId": sid, "status": "idle"}
                      for m in notifications):
            line = await asyncio.wait_for(proc.stdout.readline(), 120)
            assert line, (await proc.stderr.read()).decode()
            notifications.append(json.loads(line))
        await send(3, "shutdown", {})
    finally:
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()
    return notifications, sid


def _expected(d: Path) -> tuple[list[dict], dict]:
    lines = (d / "notifications.expected.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()], json.loads((d / "result.expected.json").read_text())


def test_every_recording_is_a_scenario():
    assert sorted(p.name for p in SNAPSHOTS.iterdir() if (p / "notifications.expected.jsonl").is_file()) == \
        sorted(SCENARIOS)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_sdk_profile_matches_dsh_recording(name, tmp_path, session_format_v0):
    # the recordings are dsh 0.1's session events, one by one: a v0 session
    if name in NOT_APPLICABLE:
        pytest.skip(NOT_APPLICABLE[name])
    d = SNAPSHOTS / name
    ours, sid = await run_sdk(d, tmp_path)
    expected, result = _expected(d)
    assert project(ours, lambda _i, m: m.get("params", {}).get("sessionId") != sid) == \
        project(expected, recorded_child_of(expected))
    assert final_response(ours, sid) == result["finalResponse"]
