"""Helpers shared by the catalog, browser, timeline and CLI tests: real session roots on disk.

Fixture recordings are projected (no seq/time: docs/format.md, "Fixtures"); ``load_fixture`` restores them the way dsh's
replay parser does. ``write_session`` writes a log in dsh's layout, raw or as real zstd frames.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import zstandard

from tests.conftest import FIXTURES


def cat(root, tmp_path, **kw):
    """A catalog over ``root`` with its database under ``tmp_path``."""
    from dsh_tui.store.catalog import Catalog

    return Catalog([root], tmp_path / "cache" / "catalog.sqlite", **kw)


def session_dir(root: Path, session_id: str, cwd: str | None) -> Path:
    """``<root>/--<projectKey(cwd)>--/<encodeSegment(id)>`` from the store's layout module."""
    from dsh_tui.store.layout import session_dir as layout_session_dir

    return Path(layout_session_dir(root, cwd, session_id))


def dumps(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def write_session(root: Path, header: dict, events: list[dict], *, zstd: bool = False,
                  batches: list[int] | None = None) -> Path:
    """Write header + events (one frame per batch when zstd). Returns the log path."""
    d = session_dir(root, header["id"], header.get("cwd"))
    d.mkdir(parents=True, exist_ok=True)
    lines = [dumps(e) + "\n" for e in events]
    if zstd:
        path = d / "session.jsonl.zstd"
        cctx = zstandard.ZstdCompressor(write_checksum=True)
        frames = [cctx.compress((dumps(header) + "\n").encode())]
        sizes = batches or [max(1, len(lines))]
        i = k = 0
        while i < len(lines):
            n = sizes[k % len(sizes)]
            frames.append(cctx.compress("".join(lines[i:i + n]).encode()))
            i += n
            k += 1
        path.write_bytes(b"".join(frames))
    else:
        path = d / "session.jsonl"
        path.write_text(dumps(header) + "\n" + "".join(lines), encoding="utf-8")
    return path


def append_events(path: Path, events: list[dict]) -> None:
    data = "".join(dumps(e) + "\n" for e in events).encode()
    if str(path).endswith(".zstd"):
        data = zstandard.ZstdCompressor(write_checksum=True).compress(data)
    with open(path, "ab") as f:
        f.write(data)


def load_fixture(rel: str, *, cwd: str = "/work/project", session_id: str | None = None,
                 time0: int = 1_780_000_000_000, step_ms: int = 7) -> tuple[dict, list[dict]]:
    """A fixture with seq restored and synthetic increasing times; packed rows kept packed."""
    lines = (FIXTURES / rel).read_text().splitlines()
    header = json.loads(lines[0])
    header.setdefault("version", 0)
    header.setdefault("delegationDepth", 0)
    header["cwd"] = cwd
    if session_id:
        header["id"] = session_id
    events = []
    seq = 0
    t = time0
    for line in lines[1:]:
        obj = json.loads(line)
        if "seq0" in obj or obj["type"] in ("text-chunks", "reasoning-chunks", "tool-call-chunks"):
            n = len(obj["data"].get("texts") or obj["data"].get("args"))
            row = {"type": obj["type"], "seq0": seq, "time0": t, "data": obj["data"]}
            events.append(row)
            seq += n
            t += sum(obj["data"]["dt"]) + step_ms
        else:
            ev = {"type": obj["type"], "seq": seq, "time": t, "data": obj["data"]}
            for k in ("surfaceOp", "sourceEventSeqs", "ignorable"):
                if k in obj:
                    ev[k] = obj[k]
            events.append(ev)
            seq += 1
            t += step_ms
    return header, events


def user_turn(seq: int, turn: int, text: str, answer: str, *, t: int = 1_780_000_000_000,
              usage: dict | None = None, close: bool = True) -> list[dict]:
    """A minimal well-formed turn (user prompt, one step, one chunk + answer)."""
    ev = []

    def add(tp, data, **extra):
        e = {"type": tp, "seq": seq + len(ev), "time": t + 10 * (seq + len(ev)), "data": data}
        e.update(extra)
        ev.append(e)

    add("turn/start", {"turn": turn})
    add("step/start", {"turn": turn, "step": 1})
    add("user/message", {"id": f"u{seq}", "role": "user", "content": [{"type": "text", "text": text}],
                         "source": {"kind": "user"}}, surfaceOp="append")
    if turn == 1:
        add("session/title", {"title": text[:30], "messageSeqs": [seq + 2], "source": {"kind": "fallback"}})
    add("request/header", {"header": {"config": {"provider": "scripted", "model": "m1"}, "system": "SYS",
                                      "tools": [{"name": "bash", "description": "run", "parameters": {}}]},
                           "reason": "initial" if turn == 1 else "resume"})
    c0 = seq + len(ev)
    add("assistant/chunk", {"turn": turn, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": answer}})
    add("assistant/chunk", {"turn": turn, "step": 1,
                            "chunk": {"type": "usage", "usage": usage or {"inputTokens": 100, "outputTokens": 20,
                                                                          "cacheReadTokens": 5}}})
    add("assistant/message", {"turn": turn, "step": 1,
                              "message": {"id": f"a{seq}", "role": "assistant",
                                          "content": [{"type": "text", "text": answer}],
                                          "source": {"kind": "model", "provider": "scripted", "model": "m1"}}},
        surfaceOp="append", sourceEventSeqs=[c0, c0 + 1])
    add("step/end", {"turn": turn, "step": 1})
    if close:
        add("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    return ev


def make_header(session_id: str, cwd: str | None = "/work/project", **extra) -> dict:
    h = {"type": "session", "version": 0, "id": session_id, "createdAt": 1_779_000_000_000}
    if cwd is not None:
        h["cwd"] = cwd
    h.update(extra)
    h["delegationDepth"] = extra.get("delegationDepth", 0)
    return h


def current_fixtures() -> list[str]:
    """Fixture logs in the current header shape (with delegationDepth), relative to FIXTURES."""
    out = []
    for p in sorted(FIXTURES.rglob("*.jsonl")):
        with open(p) as f:
            first = f.readline()
        if '"type":"session"' in first and "delegationDepth" in first and '"{{' not in first.replace('"{{cwd}}"', "").replace(
                '"{{sessionId}}"', ""):
            out.append(str(p.relative_to(FIXTURES)))
    return out


def env_cwd() -> str:
    return os.getcwd()
