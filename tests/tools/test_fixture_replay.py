"""Replay the recorded dsh fs/bash/todo scenarios through our tools and compare every tool result.

Each scenario's workspace is copied to a temp dir, ``{{cwd}}`` in the recording becomes that dir, and
each recorded ``tool/call`` of a built-in tool runs in order with one shared tool state (as one
session). The rendered text, ``isError``, ``error`` info and ``meta`` must equal what dsh recorded.
"""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import FIXTURES
from tests.tools.harness import Bench

SNAP = FIXTURES / "examples" / "acp-agent" / "tests" / "snapshots"
SCENARIOS = [
    "fs-read",
    "fs-read-window",
    "fs-write",
    "fs-write-overwrite",
    "fs-policy-reject",
    "fs-delete-recreate",
    "parallel-tool-calls",
    "todo-write",
    "repeat-tool-reminder",
    "bash-tool-turn",
    "tool-call-turn",
]
OURS = {"read", "write", "edit", "bash", "todo_write"}


def _recorded_calls(scenario: str) -> list[tuple[str, dict, dict]]:
    calls: dict[str, tuple[str, str]] = {}
    out = []
    for line in (SNAP / scenario / "session.jsonl").read_text().splitlines():
        event = json.loads(line)
        data = event.get("data", {})
        if event.get("type") == "tool/call":
            calls[data["callId"]] = (data["name"], data["arguments"])
        elif event.get("type") == "tool/result":
            for block in data["message"]["content"]:
                name, raw_args = calls[block["toolCallId"]]
                if name in OURS:
                    out.append((name, json.loads(raw_args), {**data, "block": block}))
    return out


@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_recorded_tool_results_match(scenario, tmp_path):
    workspace = tmp_path / "ws"
    src = SNAP / scenario / "workspace"
    if src.exists():
        shutil.copytree(src, workspace)
        for p in workspace.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
    else:
        workspace.mkdir()
    bench = Bench(workspace)
    recorded = _recorded_calls(scenario)
    assert recorded, scenario
    cwd = str(workspace)
    for name, args, row in recorded:
        got = await bench.run(name, args)
        block = row["block"]
        want_text = "".join(c["text"] for c in block["content"]).replace("{{cwd}}", cwd)
        assert got.text == want_text, (name, args)
        assert got.is_error == block["isError"]
        assert got.error == row.get("error")
        want_meta = json.loads(json.dumps(row.get("meta")).replace("{{cwd}}", cwd))
        assert got.meta == want_meta, (name, args)
    todo_events = [e for e in bench.events if e[0] == "todo/write"]
    assert len(todo_events) == sum(1 for n, _, _ in recorded if n == "todo_write")
