"""Shared helpers for the JSONL store tests: realistic event lists taken from the dsh recordings."""

from __future__ import annotations

from pathlib import Path

from dsh_tui.store import jsonl
from tests.conftest import FIXTURES

SNAPSHOTS = FIXTURES / "examples" / "acp-agent" / "tests" / "snapshots"


def session_logs() -> list[Path]:
    """Every recorded log under the fixtures that is in dsh's stored form (its first line a session header)."""
    out = []
    for path in sorted(FIXTURES.rglob("*.jsonl")):
        with open(path, "rb") as f:
            if f.read(17) == b'{"type":"session"':
                out.append(path)
    return out


def fixture_events(scenario: str = "tool-call-turn", time0: int = 1_700_000_000_000) -> list[dict]:
    """The logical events of a recorded scenario, re-timed as a runtime log (time = time0 + 7*seq)."""
    path = SNAPSHOTS / scenario / "session.jsonl"
    prefix = jsonl.scan_buffer(path.read_bytes(), "none", lenient=True, projected=None)
    out = []
    for ev in prefix.events:
        ev = dict(ev)
        ev["time"] = time0 + 7 * ev["seq"]
        out.append(ev)
    return out


def header(session_id: str = "sess-1", cwd: str | None = "/work/project", created_at: int = 1_700_000_000_000,
           **extra) -> dict:
    from dsh_tui.session.headers import make_header

    return make_header(session_id, cwd=cwd, created_at=created_at, **extra)


def write_log(store: jsonl.JsonlStore, hdr: dict, events: list[dict], batches: list[int]) -> Path:
    store.create(hdr)
    i = k = 0
    while i < len(events):
        n = batches[k % len(batches)]
        store.append(hdr["id"], events[i : i + n])
        i += n
        k += 1
    return store.locate(hdr)


def line_ends(plain: bytes) -> list[int]:
    """Offsets just past each ``\\n`` of a plaintext."""
    out = []
    i = plain.find(b"\n")
    while i != -1:
        out.append(i + 1)
        i = plain.find(b"\n", i + 1)
    return out
