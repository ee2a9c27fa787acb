"""Test helper: read the projected dsh fixture logs (§1.1) and synthesize seq/time like dsh's replay parser
(seq = running count, time = 0, packed rows time0 = 0). The real reader lives in dsh_tui/store/."""

from __future__ import annotations

from functools import cache
from pathlib import Path

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
