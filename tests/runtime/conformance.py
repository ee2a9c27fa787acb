"""Conformance harness: replay a recorded dsh scenario through the real driver and built-in tools.

Used by ``test_conformance.py``. For a scenario directory (``input.json`` + ``session.jsonl`` [+
``workspace/``, ``replay.override.json``]) it runs the prompts of ``input.json`` against a
``ReplayProvider`` built from the recording, in a copy of the workspace, then compares our log with
dsh's: the order of the loop's durable rows (turn/step, assistant/message, tool/call, tool/result,
retry, compaction, approval, todo rows), turn/step boundaries and turn-end reasons, tool calls (name,
arguments) in order, assistant messages, and tool results where the tool output is deterministic.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path

from dsh_tui.llm.replay import ReplayProvider, attempts_from_events, read_log_events
from dsh_tui.runtime import Agent, AgentConfig
from dsh_tui.session.headers import make_header
from dsh_tui.session.log import Session
from dsh_tui.tools import BUILTIN_TOOL_NAMES, builtin_tools
from tests.conftest import FIXTURES
from tests.runtime.helpers import FakeSleep

EXAMPLES = FIXTURES / "examples"
SUPPORTED_OPS = {"initialize", "newSession", "prompt", "promptExpectError", "promptAndCancel", "waitForTurnEnd",
                 "waitForTitleAfterTurnEnd",  # titles are the host's job; the loop part is compared
                 "promptContent"}
# Tools whose output depends only on the workspace and arguments.
DETERMINISTIC_TOOLS = {"read", "write", "edit", "grep", "todo_write", "bash"}
ANSWERS = {"allow_once": "allowed-once", "reject_once": "rejected", "allow_always": "allowed-once",
           "reject_always": "rejected"}


def scenario_dirs() -> list[Path]:
    return sorted(p.parent for p in EXAMPLES.rglob("input.json"))


def scenario_id(d: Path) -> str:
    return str(d.relative_to(EXAMPLES))


def applicability(d: Path) -> str | None:
    """None when the scenario can run here, else the reason it is not applicable."""
    if not (d / "session.jsonl").is_file():
        return "no recorded session.jsonl"
    if any(d.glob("session.[0-9]*.jsonl")):
        return "delegates to child sessions (subagents)"
    spec = json.loads((d / "input.json").read_text())
    ops = {s.get("op") for s in spec.get("steps", [])}
    if ops - SUPPORTED_OPS:
        return f"needs ACP host ops {sorted(ops - SUPPORTED_OPS)}"
    if not ops & {"prompt", "promptExpectError", "promptAndCancel", "promptContent"}:
        return "no prompt (protocol handshake only)"
    _, events = read_log_events(d / "session.jsonl")
    names = sorted({e["data"]["name"] for e in events if e["type"] == "tool/call"})
    foreign = [n for n in names if n not in BUILTIN_TOOL_NAMES]
    if foreign:
        return f"uses non-built-in tools {foreign}"
    kinds = {e["type"] for e in events}
    if "hook/invoked" in kinds:
        return "needs Claude-Code hook bridges"
    if "turn/start" not in kinds:
        return "the host refused the prompt before the loop (hook bridge); no turn recorded"
    for e in events:
        text = json.dumps(e["data"]["message"]) if e["type"] == "tool/result" else ""
        if "sandbox:" in text or "landlock" in text:
            return "depends on dsh's OS sandbox (landlock) behaviour"
    return None


@dataclass
class Outcome:
    ours: list[dict]
    recorded: list[dict]
    cwd: Path
    mismatches: list[str] = field(default_factory=list)
    compared_results: int = 0


def _acp_block(b: dict) -> dict:
    """An ACP prompt block as a harness content block (images become attachment references)."""
    if b.get("type") != "image":
        return dict(b)
    data = base64.b64decode(b["data"])
    width = height = 0
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        width, height = struct.unpack(">II", data[16:24])
    return {"type": "image", "attachment": {"attachmentId": "sha256:" + hashlib.sha256(data).hexdigest(),
                                            "mediaType": b.get("mimeType", "application/octet-stream"),
                                            "width": width, "height": height, "bytes": len(data)}}


def _realize(obj, cwd: Path):
    return json.loads(json.dumps(obj).replace("{{cwd}}", str(cwd)))


def _normalize(obj, cwd: Path):
    return json.loads(json.dumps(obj).replace(str(cwd), "{{cwd}}"))


async def run_scenario(d: Path, tmp: Path) -> Outcome:
    spec = json.loads((d / "input.json").read_text())
    header, recorded = read_log_events(d / "session.jsonl")
    work = tmp / "workspace"
    if (d / "workspace").is_dir():
        shutil.copytree(d / "workspace", work)
    else:
        work.mkdir()
    override = None
    if (d / "replay.override.json").is_file():
        override = _realize(json.loads((d / "replay.override.json").read_text()), work)
    provider_name, model = ReplayProvider.recorded_route(recorded)
    provider = ReplayProvider(_realize(attempts_from_events(recorded), work), override=override, cwd=work,
                              name=provider_name or "replay")
    session = Session(make_header("conformance", cwd=str(work), created_at=1))
    config = AgentConfig(model=model or "replay-model", cwd=str(work), preset="full-access", runtime_context=False,
                         check_requests=True, spill_dir=str(tmp / "spill"), max_inline_bytes=50_000)
    agent = Agent(session, provider, builtin_tools(escalation=True, background=True), config=config,
                  sleep=FakeSleep())
    answers = [ANSWERS.get(a.get("kind"), "rejected") for a in spec.get("permissionAnswers", [])]

    def escalation(payload, nxt):
        args = payload["arguments"]
        if isinstance(args, dict) and args.get("sandbox_permissions"):
            return {"kind": "ask", "reason": f"escalate sandbox to {args['sandbox_permissions']}: "
                                              f"{args.get('justification', '')}"}
        return nxt()

    agent.on("tools/pre-execute", escalation)
    agent.on("approval/request", lambda p, nxt: answers.pop(0) if answers else "rejected")
    for step in spec.get("steps", []):
        op = step.get("op")
        if op in ("prompt", "promptExpectError"):
            agent.followup(step["text"])
            await asyncio.wait_for(agent.wait_idle(), 60)
        elif op == "promptContent":
            agent.followup([_acp_block(b) for b in step["content"]])
            await asyncio.wait_for(agent.wait_idle(), 60)
        elif op == "promptAndCancel":
            agent.followup(step["text"])
            ready = (step.get("waitForFile") or {}).get("path")
            for _ in range(20_000):
                if ready is None or (work / ready).exists() or agent.status == "idle":
                    break
                await asyncio.sleep(0.001)
            agent.cancel({"kind": "user"})
            await asyncio.wait_for(agent.wait_idle(), 60)
        elif op in ("waitForTurnEnd", "waitForTitleAfterTurnEnd"):
            await asyncio.wait_for(agent.wait_idle(), 60)
    return compare(Outcome(list(session.events), recorded, work))


def _boundaries(events: list[dict]) -> list[tuple]:
    out = []
    for e in events:
        t, dd = e["type"], e["data"]
        if t in ("turn/start",):
            out.append((t, dd["turn"]))
        elif t in ("step/start", "step/end"):
            out.append((t, dd["turn"], dd["step"]))
        elif t == "turn/end":
            r = dd["reason"]
            extra = r.get("error", {}).get("code") if r["kind"] == "error" else r.get("reason", {}).get("kind")
            out.append((t, dd["turn"], r["kind"], extra))
    return out


def _assistant(events: list[dict]) -> list[tuple]:
    return [(e["data"]["turn"], e["data"]["step"], json.dumps(e["data"]["message"]["content"], sort_keys=True),
             bool(e["data"].get("interrupted"))) for e in events if e["type"] == "assistant/message"]


def _calls(events: list[dict]) -> list[tuple]:
    return [(e["data"]["name"], e["data"]["arguments"]) for e in events if e["type"] == "tool/call"]


def _results(events: list[dict]) -> list[dict]:
    return [e["data"] for e in events if e["type"] == "tool/result" and e.get("surfaceOp") == "append"]


SKELETON = {"turn/start", "turn/end", "step/start", "step/end", "assistant/message", "tool/call", "tool/result",
            "llm/retry", "llm/retry-started", "compaction/start", "compaction/summary", "compaction/end",
            "compaction/prune", "approval/asked", "approval/decided", "todo/write"}


def _skeleton(events: list[dict]) -> list[str]:
    """The order of the loop's durable rows (chunks, prompts and host-only rows left out)."""
    return [e["type"] for e in events if e["type"] in SKELETON]


def compare(o: Outcome) -> Outcome:
    ours = _normalize(o.ours, o.cwd)
    rec = o.recorded
    for name, fn in (("event order", _skeleton), ("boundaries", _boundaries), ("assistant messages", _assistant),
                     ("tool calls", _calls)):
        a, b = fn(ours), fn(rec)
        if a != b:
            first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            o.mismatches.append(f"{name} differ at #{first}: ours={a[first:first + 1]} dsh={b[first:first + 1]} "
                                f"(counts {len(a)} vs {len(b)})")
    names = {e["data"]["callId"]: e["data"]["name"] for e in rec if e["type"] == "tool/call"}
    ra, rb = _results(ours), _results(rec)
    if len(ra) != len(rb):
        o.mismatches.append(f"tool result counts differ: ours={len(ra)} dsh={len(rb)}")
    for x, y in zip(ra, rb):
        bx, by = x["message"]["content"][0], y["message"]["content"][0]
        if bool(bx.get("isError")) != bool(by.get("isError")) or x.get("error") != y.get("error"):
            o.mismatches.append(f"tool result {by['toolCallId']} outcome differs: ours={bx.get('isError')} "
                                f"{x.get('error')} dsh={by.get('isError')} {y.get('error')}")
            continue
        text_y = json.dumps(by.get("content"))
        # Not comparable: spill paths, placeholders, absolute paths of the recording machine, and the
        # shell's sandbox-escalation refusal (tool-owned text that needs dsh's OS sandbox).
        deterministic = names.get(by["toolCallId"]) in DETERMINISTIC_TOOLS \
            and not re.search(r"/tmp/|/Users/|/home/|/private/|escalat", text_y) \
            and "{{" not in text_y.replace("{{cwd}}", "")
        if deterministic:
            o.compared_results += 1
            if bx.get("content") != by.get("content"):
                o.mismatches.append(f"tool result {by['toolCallId']} text differs: ours={bx.get('content')!r:.300} "
                                    f"dsh={by.get('content')!r:.300}")
    return o
