"""Sustained append through the write-behind writer, and SQLite write traffic.

    .venv/bin/python tests/bench/bench_append.py [--turns 50] [--paced-seconds 2]

1. Throughput: T streamed turns of 1,000 chunks each (turn/step brackets, request checkpoint, chunks,
   assistant message) appended to a live Session with the real SessionWriter (200 ms window, checkpoints
   at pre-step and request) for JSONL-zstd, JSONL-raw and SQLite. Prints events/s (until the final flush
   returned) and durable writes (fsynced appends) per second, beside a same-run baseline: bare
   ``write + fsync`` of the raw JSONL file's own bytes in the same batch boundaries.
2. Paced streaming: chunks arrive at 2,000/s (a fast model) for a few seconds; prints fsyncs/s while
   streaming (target <= 10/s: the fixed window caps it at ~5/s).
3. SQLite write traffic of one 1,000-chunk turn appended in 40-event batches: physical rows, inserts,
   updates, deletes (dsh's figure: 31/31/0/0), largest row.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from dsh_tui.session import rows as _rows  # noqa: E402,F401  - the store imports it lazily: not inside the timed runs
from dsh_tui.session.headers import make_header  # noqa: E402
from dsh_tui.session.log import Session  # noqa: E402
from dsh_tui.store import lifecycle  # noqa: E402
from dsh_tui.store.jsonl import JsonlStore  # noqa: E402
from dsh_tui.store.sqlite import SqliteSessionStore  # noqa: E402
from tests.store import crash_child as cc  # noqa: E402

TARGET_EVENTS_S = 100_000
TARGET_FSYNC_S = 10


class CountingStore:
    """Counts durable appends (each one is fsynced before it returns) and their boundaries."""

    def __init__(self, inner):
        self.inner = inner
        self.appends = 0
        self.boundaries: list[int] = []

    def append(self, sid, events, *, trusted=False):
        # forwards the writer's ``trusted`` flag (the writer probes this signature, as it would the store's)
        if trusted:
            self.inner.append(sid, events, trusted=True)
        else:
            self.inner.append(sid, events)
        self.appends += 1
        self.boundaries.append(events[-1]["seq"] + 1)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def make_store(kind: str, root: Path):
    if kind == "sqlite":
        return SqliteSessionStore(root)
    return JsonlStore(root, "zstd" if kind == "jsonl-zstd" else "none")


def stream_turns(session, writer, turns: int, chunks: int, rng: random.Random) -> None:
    async def run():
        for t in range(1, turns + 1):
            cc.begin_turn(session, t, f"prompt {t}", rng)
            await writer.checkpoint("pre-step")
            cc.request(session, t, t == 1)
            await writer.checkpoint("request")
            cc.stream(session, t, 1, [f"tok{i} " for i in range(chunks)])
            cc.end_step(session, t, 1)
            cc.end_turn(session, t)
        await writer.aflush()

    asyncio.run(run())


def throughput(kind: str, turns: int, tmp: Path) -> dict:
    store = CountingStore(make_store(kind, tmp / kind))
    header = make_header("bench", cwd="/work/bench", created_at=1)
    session, writer = lifecycle.start(store, header)
    t0 = time.perf_counter()
    stream_turns(session, writer, turns, 1000, random.Random(1))
    secs = time.perf_counter() - t0
    writer.close()
    n = len(session.events)
    out = {"kind": kind, "events": n, "secs": secs, "events_s": n / secs, "appends": store.appends,
           "fsync_s": store.appends / secs, "boundaries": store.boundaries}
    if kind == "jsonl-raw":
        out["file"] = store.inner.locate(header)
    return out


def baseline(raw_file: Path, events: list[dict], boundaries: list[int], tmp: Path) -> float:
    """Bare write+fsync of the raw JSONL file's bytes, cut at the same batch boundaries (lines)."""
    from dsh_tui.store.jsonl import encode_lines

    chunks = []
    prev = 0
    for b in boundaries:
        chunks.append(encode_lines(events[prev:b]))
        prev = b
    path = tmp / "baseline.jsonl"
    t0 = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for data in chunks:
            os.write(fd, data)
            os.fsync(fd)
    finally:
        os.close(fd)
    return time.perf_counter() - t0


def unpaced_stream(kind: str, chunks: int, tmp: Path) -> dict:
    """One long stream without checkpoints: producer speed with the writer draining behind it."""
    store = CountingStore(make_store(kind, tmp / f"stream-{kind}"))
    header = make_header("stream", cwd="/work/bench", created_at=1)
    session, writer = lifecycle.start(store, header)
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    t0 = time.perf_counter()
    for i in range(chunks):
        session.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0,
                                                                            "text": f"t{i} "}})
    produced = time.perf_counter() - t0
    writer.flush()
    secs = time.perf_counter() - t0
    writer.close()
    return {"kind": kind, "chunks": chunks, "events_s": chunks / secs, "produce_s": chunks / produced,
            "fsync_s": store.appends / secs}


def session_only(chunks: int) -> float:
    session = Session(make_header("bare", cwd="/work/bench", created_at=1))
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    t0 = time.perf_counter()
    for i in range(chunks):
        session.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0,
                                                                            "text": f"t{i} "}})
    return chunks / (time.perf_counter() - t0)


def paced(kind: str, seconds: float, tmp: Path, rate: int = 2000) -> dict:
    store = CountingStore(make_store(kind, tmp / f"paced-{kind}"))
    header = make_header("paced", cwd="/work/bench", created_at=1)
    session, writer = lifecycle.start(store, header)
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    writer.flush()
    before = store.appends
    t0 = time.perf_counter()
    i = 0
    while (now := time.perf_counter() - t0) < seconds:
        due = int(now * rate)
        while i < due:
            session.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0,
                                                                                "text": f"t{i} "}})
            i += 1
        time.sleep(0.001)
    secs = time.perf_counter() - t0
    during = store.appends - before
    writer.close()
    return {"kind": kind, "chunks": i, "fsync_s": during / secs}


def sqlite_traffic(tmp: Path) -> dict:
    store = SqliteSessionStore(tmp / "traffic")
    header = make_header("traffic", cwd="/work/bench", created_at=1)
    session = Session(header)
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    for i in range(1000):
        session.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0,
                                                                            "text": f"t{i} "}})
    session.append("step/end", {"turn": 1, "step": 1})
    session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    c = store._conn
    c.execute("CREATE TEMP TABLE ops (kind TEXT PRIMARY KEY, n INTEGER NOT NULL)")
    for kind in ("insert", "update", "delete"):
        c.execute("INSERT INTO temp.ops VALUES (?, 0)", (kind,))
        c.execute(f"CREATE TEMP TRIGGER count_{kind} AFTER {kind.upper()} ON main.events "
                  f"BEGIN UPDATE ops SET n = n + 1 WHERE kind = '{kind}'; END")
    store.create(header)
    ev = session.events
    for i in range(0, len(ev), 40):
        store.append("traffic", ev[i : i + 40])
    ops = dict(c.execute("SELECT kind, n FROM temp.ops").fetchall())
    rows = store.physical_rows("traffic")
    wal = store.path.with_name(store.path.name + "-wal")
    wal_before = wal.stat().st_size if wal.exists() else 0
    time.sleep(0.25)
    wal_after = wal.stat().st_size if wal.exists() else 0
    out = {"rows": len(rows), **ops, "max_row": max(len(r[3]) for r in rows), "wal_idle_growth": wal_after - wal_before}
    store.close()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=50)
    ap.add_argument("--paced-seconds", type=float, default=2.0)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        results = [throughput(k, args.turns, tmp) for k in ("jsonl-raw", "jsonl-zstd", "sqlite")]
        raw = results[0]
        events = JsonlStore(tmp / "jsonl-raw", "none").read_from("bench", 0)
        base_secs = baseline(raw["file"], events, raw["boundaries"], tmp)
        base_rate = raw["events"] / base_secs
        print(f"baseline  bare write+fsync of the raw bytes in the same {len(raw['boundaries'])} batches: "
              f"{base_rate:,.0f} events/s ({base_secs * 1000:.0f} ms)")
        for r in results:
            print(f"{r['kind']:10s} {r['events']:,} events in {r['secs']:.2f}s: {r['events_s']:,.0f} events/s "
                  f"(target >= {TARGET_EVENTS_S:,}; ratio to baseline {r['events_s'] / base_rate:.2f}), "
                  f"{r['appends']} fsynced appends = {r['fsync_s']:.1f}/s (2 checkpoints per turn)")
        bare = session_only(args.turns * 1000)
        print(f"reference Session.append alone (no persistence): {bare:,.0f} events/s")
        for kind in ("jsonl-raw", "jsonl-zstd", "sqlite"):
            u = unpaced_stream(kind, args.turns * 1000, tmp)
            print(f"stream    {kind:10s} {u['chunks']:,} chunks, no checkpoints: {u['events_s']:,.0f} events/s until "
                  f"durable (producer {u['produce_s']:,.0f}/s), {u['fsync_s']:.1f} fsyncs/s")
        for kind in ("jsonl-raw", "jsonl-zstd", "sqlite"):
            p = paced(kind, args.paced_seconds, tmp)
            print(f"paced     {kind:10s} {p['chunks']:,} chunks at 2,000/s: {p['fsync_s']:.1f} fsyncs/s while "
                  f"streaming (target <= {TARGET_FSYNC_S})")
        t = sqlite_traffic(tmp)
        print(f"sqlite    1,000-chunk turn in 40-event batches: rows={t['rows']} inserts={t['insert']} "
              f"updates={t['update']} deletes={t['delete']} (dsh: 31/31/0/0), largest row {t['max_row']} bytes, "
              f"WAL growth after 250 ms idle {t['wal_idle_growth']} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
