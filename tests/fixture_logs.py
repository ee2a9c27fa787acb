"""Test helper: the committed dsh fixture logs (their *projected* form: no seq/time on disk).

* paths: ``session_fixture_paths()`` (every ``*.jsonl`` that starts with a session header),
  ``all_fixture_paths()`` (the ``session.jsonl`` of each scenario), ``fixture_path(name)``, ``fixture_id``;
* ``read_fixture``: (header, events) through the store's fixture reader (``dsh_tui.store.fixture``);
* ``load_fixture`` / ``read_lines`` / ``raw_body_lines``: seq and time synthesised like dsh's replay parser
  (seq = running count, time = 0, packed rows time0 = 0), rows expanded by ``dsh_tui.session.rows``;
* ``read_projected``: an independent minimal parser of the projected form, kept as a cross-check.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from dsh_tui.session import jsonutil, rows
from tests.conftest import FIXTURES


@cache
def session_fixture_paths() -> tuple[Path, ...]:
    out = []
    for p in sorted(FIXTURES.rglob("*.jsonl")):
        with p.open("rb") as f:
            first = f.readline()
        if first.startswith(b'{"type":"session"'):
            out.append(p)
    return tuple(out)


def fixture_id(p: Path) -> str:
    return str(p.relative_to(FIXTURES))


def read_lines(p: Path) -> tuple[dict, list[dict], list[str]]:
    """(header, storage line objects with synthesized seq/time, raw body line texts)."""
    text = p.read_text(encoding="utf-8")
    raw = text.split("\n")
    assert raw[-1] == ""
    raw = raw[:-1]
    header = jsonutil.loads(raw[0])
    objs = []
    seq = 0
    for line in raw[1:]:
        o = jsonutil.loads(line)
        if rows.is_packed_row(o):
            o = {"type": o["type"], "seq0": seq, "time0": 0, **{k: v for k, v in o.items() if k != "type"}}
            seq += len(o["data"]["texts" if "texts" in o["data"] else "args"])
        else:
            o = {"type": o["type"], "seq": seq, "time": 0, **{k: v for k, v in o.items() if k != "type"}}
            seq += 1
        objs.append(o)
    return header, objs, raw[1:]


@cache
def _load(p: Path):
    header, objs, raw = read_lines(p)
    return header, rows.expand_lines(objs), raw


def load_fixture(p: Path) -> tuple[dict, list[dict]]:
    """(header, logical events) — fresh copies, safe to mutate."""
    header, events, _ = _load(p)
    return jsonutil.loads(jsonutil.dumps(header)), jsonutil.loads(jsonutil.dumps(events))


def raw_body_lines(p: Path) -> list[str]:
    return list(_load(p)[2])


def project(obj: dict) -> dict:
    """Drop the envelope seq/time (fixture projection)."""
    return {k: v for k, v in obj.items() if k not in ("seq", "time", "seq0", "time0")}


def fixture_path(name: str) -> Path:
    """The ``session.jsonl`` of the scenario whose directory is named ``name``."""
    for path in sorted(FIXTURES.rglob("session.jsonl")):
        if path.parent.name == name:
            return path
    raise FileNotFoundError(name)


def all_fixture_paths() -> list[Path]:
    return [p for p in session_fixture_paths() if p.name == "session.jsonl"]


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
