"""Read the committed dsh fixture logs (the *projected* form, spec §1.1) for UI and fold tests.

``read_fixture`` goes through the store's fixture reader (``dsh_tui.store.fixture``); the small
parser of the projected form below (``read_projected``) is kept as an independent cross-check.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURES


def fixture_path(name: str) -> Path:
    """The ``session.jsonl`` of the scenario whose directory is named ``name``."""
    for path in sorted(FIXTURES.rglob("session.jsonl")):
        if path.parent.name == name:
            return path
    raise FileNotFoundError(name)


def all_fixture_paths() -> list[Path]:
    return sorted(FIXTURES.rglob("session.jsonl"))


def _expand(obj: dict[str, Any], seq: int) -> list[dict[str, Any]]:
    rtype = obj.get("type")
    data = obj.get("data") or {}
    if rtype in ("text-chunks", "reasoning-chunks", "tool-call-chunks"):
        members = data["texts"] if rtype != "tool-call-chunks" else data["args"]
        out = []
        time = obj.get("time0", 0)
        dts = [0, *data.get("dt", [])]
        for k, member in enumerate(members):
            time += dts[k] if k else 0
            if rtype == "text-chunks":
                chunk = {"type": "text-delta", "index": data["index"], "text": member}
            elif rtype == "reasoning-chunks":
                chunk = {"type": "reasoning-delta", "index": data["index"], "text": member}
            else:
                chunk = {"type": "tool-call-delta", "index": data["index"], "id": data["id"]}
                if "name" in data:
                    chunk["name"] = data["name"]
                chunk["argumentsDelta"] = member
            out.append({"type": "assistant/chunk", "seq": seq + k, "time": time,
                        "data": {"turn": data["turn"], "step": data["step"], "chunk": chunk}})
        return out
    event = dict(obj)
    event["seq"] = seq
    event.setdefault("time", 0)
    return [event]


def read_fixture(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, events) of a fixture log, decoded by the store's reader."""
    from dsh_tui.store.fixture import open_log_file

    log = open_log_file(path)
    return log.header, log.events


def read_projected(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, events) of a projected fixture log (independent minimal parser)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    events: list[dict[str, Any]] = []
    for line in lines[1:]:
        if line.strip():
            events.extend(_expand(json.loads(line), len(events)))
    return header, events
