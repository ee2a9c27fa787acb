"""Catalog + browser benchmark: 10,000 generated sessions (a few with 100k+ events).

    .venv/bin/python tests/bench/bench_catalog.py [--sessions 10000] [--big 3] [--big-events 100000]

Prints: cold catalog build (sessions/s, MB/s), warm scan, warm browser open to first paint (directory
listing + the index's listing snapshot) and to revalidated rows (every log stat'ed), filter
keystroke latency (p50/p95), content search latency, memory, opening the catalog in a fresh process
when it must be made (its schema goes through sqlite-utils) vs a warm one; each beside a same-run
baseline:
- cold build vs. "read + parse every log" (what a picker without an index pays on every open),
- warm open vs. the same baseline,
- the list vs. an OptionList holding the same 10k rows (textual-perf.md §4).
Targets: warm open <= 100 ms, filter <= 35 ms p95, search <= 100 ms; the cold build runs in a worker.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

WORDS = ["alpha", "beta", "gamma", "delta", "garden", "roses", "marmalade", "lemons", "shed", "paint", "compile",
         "refactor", "test", "parser", "session", "browser", "timeline", "ledger", "request", "tool", "result",
         "bash", "grep", "read", "write", "edit", "index", "search"]


def _line(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n"


def gen_session(root: Path, i: int, n_turns: int, rng: random.Random, cwd: str, *, big_events: int = 0) -> int:
    from dsh_tui.store.layout import session_dir

    sid = f"bench-{i:05d}"
    d = session_dir(root, cwd, sid)
    d.mkdir(parents=True, exist_ok=True)
    t = 1_770_000_000_000 + i * 1000
    out = [_line({"type": "session", "version": 0, "id": sid, "createdAt": t, "cwd": cwd, "delegationDepth": 0})]
    seq = 0

    def add(tp, data, **extra):
        nonlocal seq, t
        ev = {"type": tp, "seq": seq, "time": t, "data": data}
        ev.update(extra)
        out.append(_line(ev))
        seq += 1
        t += 3

    for turn in range(1, n_turns + 1):
        words = " ".join(rng.choice(WORDS) for _ in range(12))
        add("turn/start", {"turn": turn})
        add("step/start", {"turn": turn, "step": 1})
        add("user/message", {"id": f"u{seq}", "role": "user", "content": [{"type": "text", "text": words}],
                             "source": {"kind": "user"}}, surfaceOp="append")
        if turn == 1:
            add("session/title", {"title": words[:40], "messageSeqs": [seq - 1], "source": {"kind": "fallback"}})
        add("request/header", {"header": {"config": {"provider": "p", "model": "m"}}, "reason": "initial"})
        chunks = max(1, big_events // max(1, n_turns) - 8) if big_events else 3
        first = seq
        for _ in range(chunks):
            add("assistant/chunk", {"turn": turn, "step": 1, "chunk": {"type": "text-delta", "index": 0,
                                                                      "text": rng.choice(WORDS) + " "}})
        add("assistant/chunk", {"turn": turn, "step": 1, "chunk": {"type": "usage",
                                                                  "usage": {"inputTokens": 100, "outputTokens": 20}}})
        add("assistant/message", {"turn": turn, "step": 1, "message": {
            "id": f"a{seq}", "role": "assistant", "content": [{"type": "text", "text": "answer " + words}],
            "source": {"kind": "model", "provider": "p", "model": "m"}}}, surfaceOp="append",
            sourceEventSeqs=[first])
        add("step/end", {"turn": turn, "step": 1})
        add("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    log = d / "session.jsonl"
    log.write_text("".join(out), encoding="utf-8")
    os.utime(log, (t / 1000, t / 1000))  # historical sessions: last written when their last event was
    return seq


def generate(root: Path, n: int, big: int, big_events: int, workspaces: int = 20) -> tuple[int, int]:
    rng = random.Random(7)
    events = 0
    for i in range(n):
        cwd = f"/work/project-{i % workspaces}"
        if i < big:
            events += gen_session(root, i, 50, rng, cwd, big_events=big_events)
        else:
            events += gen_session(root, i, rng.randint(1, 4), rng, cwd)
    size = sum(p.stat().st_size for p in root.rglob("session.jsonl"))
    return events, size


def baseline_read_all(root: Path) -> float:
    """Read and parse every log (no index): the cost of a picker that reads whole logs."""
    import orjson

    t0 = time.perf_counter()
    for p in root.rglob("session.jsonl"):
        for line in p.read_bytes().splitlines():
            orjson.loads(line)
    return time.perf_counter() - t0


def _rss_mb() -> float:
    """Current resident set size (Linux /proc), MB."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6
    except (OSError, ValueError):
        return 0.0


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


async def ui_measure(root: Path, db: Path, cwd: str, n_rows: int) -> dict:
    from textual.app import App
    from textual.widgets import Input, OptionList

    from dsh_tui.ui.screens.browser import BrowserScreen

    results: dict = {}

    class Host(App):
        pass

    app = Host()
    async with app.run_test(size=(140, 45)) as pilot:
        screen = BrowserScreen(app, roots=[root], db_path=db, cwd=cwd, index_in_background=False)
        rss0 = _rss_mb()
        t0 = time.perf_counter()
        await app.push_screen(screen)
        while screen.list.first_paint_at is None:
            await asyncio.sleep(0.001)
        results["warm_open_to_first_paint_ms"] = (screen.list.first_paint_at - t0) * 1000
        # a warm open paints indexed facts, not placeholders
        results["first_paint_rows_not_indexed"] = sum(1 for r in screen.rows if not r.indexed)
        # then the worker revalidates every revision (stats) and lists new logs; measure the rest
        # only once it is done, so it does not compete with the keystrokes below
        while not screen.indexed.is_set():
            await asyncio.sleep(0.001)
        results["warm_open_to_revalidated_ms"] = (time.perf_counter() - t0) * 1000
        await pilot.pause()
        results["browser_rss_growth_MB"] = _rss_mb() - rss0
        results["rows_listed"] = len(screen.rows)
        screen.scope_all = True
        screen.rebuild()
        await pilot.pause()
        box = screen.query_one("#filter", Input)
        lat = []
        for text in ["m", "ma", "mar", "marm", "marma", "marmal", "marmala", "marmalad", "marmalade",
                     "marmalade r", "project-1", "project-12", "bench-00", "bench-001", "x", ""] * 2:
            with box.prevent(Input.Changed):
                box.value = text
            await pilot.pause()
            lst = screen.list
            p0 = lst.paints
            rows = min(max(1, lst.scrollable_content_region.height), max(1, lst.count))
            t1 = time.perf_counter()
            screen.rebuild(rows_changed=False)  # what a keystroke in the filter runs
            deadline = time.perf_counter() + 5
            while lst.paints < p0 + rows and time.perf_counter() < deadline:  # visible rows painted again
                await asyncio.sleep(0.0005)
            lat.append((lst.last_paint_at - t1) * 1000)
        results["filter_p50_ms"] = statistics.median(lat)
        results["filter_p95_ms"] = pct(lat, 0.95)
        # baseline: an OptionList with the same number of rows, mount to first paint
        labels = [f"{r.title or r.id}  {r.cwd}" for r in screen.rows[:n_rows]]
        await app.pop_screen()
        await pilot.pause()
        t2 = time.perf_counter()
        ol = OptionList(*labels)
        await app.screen.mount(ol)
        await pilot.pause()
        results["baseline_optionlist_first_paint_ms"] = (time.perf_counter() - t2) * 1000
    return results


_OPEN_CHILD = """
import sys, time
sys.path.insert(0, sys.argv[3])
t0, c0 = time.perf_counter(), time.process_time()
from dsh_tui.store.catalog import Catalog
Catalog([sys.argv[1]], sys.argv[2], lock_probe=None)._conn()  # open (and make) the database
print(time.perf_counter() - t0, time.process_time() - c0, 'sqlite_utils' in sys.modules)
"""


def open_in_fresh_process(root: Path, db: Path, rounds: int = 5) -> dict:
    """Process start excluded: import the catalog and open its database in a fresh interpreter, one that
    must be made first (the schema, through sqlite-utils) and, as the same-run baseline, the warm
    catalog of the runs above (one pragma read). Rounds alternate; medians of wall and CPU time."""
    import subprocess

    wall: dict[str, list[float]] = {"new": [], "warm": []}
    cpu: dict[str, list[float]] = {"new": [], "warm": []}
    imported = {}
    for i in range(rounds):
        for kind in ("new", "warm"):
            path = db if kind == "warm" else db.with_name(f"new-{i}.sqlite")
            res = subprocess.run([sys.executable, "-c", _OPEN_CHILD, str(root), str(path), str(REPO)],
                                 capture_output=True, text=True, check=True)
            w, c, mod = res.stdout.split()
            wall[kind].append(float(w) * 1000)
            cpu[kind].append(float(c) * 1000)
            imported[kind] = mod == "True"
    return {"catalog_made_open_ms": statistics.median(wall["new"]),
            "catalog_made_open_cpu_ms": statistics.median(cpu["new"]),
            "baseline_warm_catalog_open_ms": statistics.median(wall["warm"]),
            "baseline_warm_catalog_open_cpu_ms": statistics.median(cpu["warm"]),
            "warm_open_imports_sqlite_utils": imported["warm"]}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=10_000)
    ap.add_argument("--big", type=int, default=3)
    ap.add_argument("--big-events", type=int, default=100_000)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)

    from dsh_tui.store.catalog import Catalog

    tmp = Path(tempfile.mkdtemp(prefix="bench-catalog-"))
    root = tmp / "sessions"
    db = tmp / "catalog.sqlite"
    t0 = time.perf_counter()
    events, size = generate(root, args.sessions, args.big, args.big_events)
    gen_s = time.perf_counter() - t0
    out: dict = {"sessions": args.sessions, "events": events, "bytes": size, "generate_s": round(gen_s, 2)}

    base = baseline_read_all(root)
    out["baseline_read_all_s"] = round(base, 3)

    cat = Catalog([root], db)
    rss0 = _rss_mb()
    t0 = time.perf_counter()
    rows = cat.refresh()
    cold = time.perf_counter() - t0
    out["cold_rss_growth_MB"] = round(_rss_mb() - rss0, 1)
    out["cold_build_s"] = round(cold, 3)
    out["cold_sessions_per_s"] = round(len(rows) / cold)
    out["cold_MB_per_s"] = round(size / 1e6 / cold, 1)
    out["db_MB"] = round(db.stat().st_size / 1e6, 1)

    cat2 = Catalog([root], db)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        rows = cat2.scan()
        times.append(time.perf_counter() - t0)
    out["warm_scan_ms"] = round(statistics.median(times) * 1000, 1)
    assert all(r.indexed for r in rows)

    lat = []
    for q in ["marmalade", "roses garden", "compile", "pars", "timeline ledger", "zzznothing"] * 3:
        t0 = time.perf_counter()
        cat2.search(q, limit=200)
        lat.append((time.perf_counter() - t0) * 1000)
    out["search_p50_ms"] = round(statistics.median(lat), 1)
    out["search_p95_ms"] = round(pct(lat, 0.95), 1)

    # one grown log: incremental read from the stored offset
    big = next(r for r in rows if r.events > 1000) if args.big else rows[0]
    with open(big.path, "a") as f:
        f.write(_line({"type": "session/title", "seq": big.events, "time": 1, "data": {
            "title": "grown", "messageSeqs": [], "source": {"kind": "user"}}}))
    t0 = time.perf_counter()
    cat2.refresh()
    out["grown_log_refresh_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    t0 = time.perf_counter()
    cat2.save_snapshot()  # what an earlier browser open's worker did after revalidating
    out["listing_snapshot_save_ms"] = round((time.perf_counter() - t0) * 1000, 1)

    try:
        import resource

        out["max_rss_MB"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    except ImportError:
        pass
    out.update({k: round(v, 1) if isinstance(v, float) else v for k, v in open_in_fresh_process(root, db).items()})
    ui = asyncio.run(ui_measure(root, db, "/work/project-3", args.sessions))
    out.update({k: round(v, 1) if isinstance(v, float) else v for k, v in ui.items()})
    out["ratio_cold_build_to_read_all"] = round(cold / base, 2)
    out["ratio_warm_open_to_read_all"] = round(ui["warm_open_to_first_paint_ms"] / 1000 / base, 3)
    out["ratio_list_to_optionlist_first_paint"] = round(
        ui["warm_open_to_first_paint_ms"] / ui["baseline_optionlist_first_paint_ms"], 2)
    for k, v in out.items():
        print(f"{k:>40}: {v}")
    if not args.keep:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return out


if __name__ == "__main__":
    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
    main()
