"""The listing snapshot: per root, ``project/session`` -> the facts the session list shows, one marshal
blob a first paint loads without touching the ``sessions`` table."""

from __future__ import annotations

import marshal
import os
import sqlite3

import orjson

from .discover import _revision_mtime

_SNAPSHOT_FORMAT = 2
_SNAPSHOT_COLUMNS = ["path", "revision", "id", "cwd", "title", "prompt", "fork_turn", "updated_at", "turns", "tokens_in", "tokens_out",
                     "tokens_cache", "state", "reason", "parent", "seed_length", "origin"]
# The SessionRow fields a snapshot entry fills, in order (after the log's file name; then its mtime).
_SNAPSHOT_FIELDS = ("revision", "id", "cwd", "title", "title_source", "prompt", "fork_turn", "created_at", "updated_at", "last_time",
                    "turns", "steps", "events", "tokens_in", "tokens_out", "tokens_cache", "tokens_reasoning",
                    "state", "reason", "parent", "seed_length", "origin")


def _load_snapshot(data: bytes | None) -> dict[str, tuple]:
    """``project/session`` -> (log file name, *SessionRow fields, mtime ns); empty when absent or of
    another format."""
    if not data:
        return {}
    try:
        fmt, cols, snap = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return {}
    if fmt != _SNAPSHOT_FORMAT or cols != _SNAPSHOT_FIELDS or not isinstance(snap, dict):
        return {}
    return snap


def snapshot_entries(conn: sqlite3.Connection, roots: list[str]) -> dict[str, dict[str, tuple]]:
    """Per root, ``project/session`` -> (log file name, *SessionRow fields from ``revision`` on, mtime ns)."""
    cols = ", ".join(_SNAPSHOT_COLUMNS)
    (blob,) = conn.execute(f"SELECT json_group_array(json_array({cols})) FROM sessions").fetchone()
    strings: dict[str, str] = {}  # one object per repeated string (cwd, state, ...): marshal refs
    per_root: dict[str, dict[str, tuple]] = {r: {} for r in roots}
    for (path, revision, id_, cwd, title, prompt, fork_turn, updated, turns, tin, tout, tcache, state, reason,
         parent, seed_length, origin) in orjson.loads(blob):
        for r in roots:
            if path.startswith(r + os.sep):
                parts = path[len(r) + 1:].split(os.sep)
                if len(parts) == 3:
                    sv = strings.setdefault
                    # SessionRow's positional fields from ``revision`` on, then the log's mtime
                    per_root[r][parts[0] + "/" + parts[1]] = (
                        sv(parts[2], parts[2]), "", id_, sv(cwd, cwd) if cwd else cwd, title, None, prompt,
                        fork_turn, 0, updated,
                        0, turns, 0, 0, tin, tout, tcache, 0, sv(state, state), reason, parent, seed_length,
                        sv(origin, origin) if origin else origin, _revision_mtime(revision or ""))
                break
    return per_root


def dump_snapshot(snap: dict[str, tuple]) -> bytes:
    return marshal.dumps((_SNAPSHOT_FORMAT, _SNAPSHOT_FIELDS, snap))
