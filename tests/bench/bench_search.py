"""Benchmark: transcript search (Ctrl+F) on a 200,000-event session, per keystroke.

Run:  .venv/bin/python tests/bench/bench_search.py [--steps 2000] [--chunks 92]

- domain: ``TranscriptSearch.refine`` per typed character (count, locate, map to the item) for three
  queries typed one character at a time, beside the baseline measured in the same run: the obvious
  search, lower-casing and counting every item's text per keystroke;
- app: the same keystrokes handled by the real app (headless ``run_test``): ``TranscriptView.search_for``
  (sync with the fold, refine, re-mark the mounted items, bring the match into view) and the key to the
  next refresh, beside a keystroke in the composer measured the same way (baseline).
Target: <= 50 ms per keystroke (docs/performance.md). No assertions: figures are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

QUERIES = ("question 999", "lorem ipsum", "thing1998 src")


def _pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def _row(name: str, values: list[float]) -> None:
    print(f"  {name:<44} p50 {statistics.median(values):7.2f} ms   p95 {_pct(values, 95):7.2f} ms   "
          f"max {max(values):7.2f} ms   (n={len(values)})")


def domain(header: dict, events: list) -> None:
    from dsh_tui.session.search import TranscriptSearch, item_text
    from dsh_tui.session.transcript import fold_transcript

    fold = fold_transcript(header, events)
    s = TranscriptSearch()
    t0 = time.perf_counter()
    s.sync(fold.items)
    build = (time.perf_counter() - t0) * 1000
    print(f"session: {len(events):,} events, {len(fold.items):,} items, {s.size:,} characters of searchable text")
    print(f"  first sync (lower-case and join every item)    {build:7.2f} ms")
    ours: list[float] = []
    naive: list[float] = []
    for query in QUERIES:
        for n in range(1, len(query) + 1):
            q = query[:n]
            t0 = time.perf_counter()
            s.sync(fold.items)  # the per-keystroke check that nothing changed
            s.refine(q)
            ours.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            total = 0
            for item in fold.items:
                total += item_text(item).lower().count(q)
            naive.append((time.perf_counter() - t0) * 1000)
            assert total == s.count, (q, total, s.count)
    _row("domain: TranscriptSearch per keystroke", ours)
    _row("baseline: lower-case + count every item", naive)


async def app_keys(header: dict, events: list) -> None:
    from dsh_tui.ui.app import DshApp
    from dsh_tui.ui.replay import ReplayHarness
    from dsh_tui.ui.settings import UiSettings

    async def factory(_bridge):
        return ReplayHarness(header, events, preload_turns=1 << 30)

    app = DshApp(factory, settings=UiSettings(values={"ui.theme": "dsh-dark"}))
    async with app.run_test(size=(120, 40)) as pilot:
        end = time.monotonic() + 120
        while (app.chat is None or not app.chat.fold.items or app.chat.loading_head) and time.monotonic() < end:
            await pilot.pause(0.05)
        chat = app.chat
        await pilot.pause(0.5)
        handler: list[float] = []
        key: list[float] = []
        await pilot.press("ctrl+f")
        await pilot.pause(0.2)
        transcript = chat.transcript
        original = transcript.search_for

        def timed(query: str):
            t0 = time.perf_counter()
            try:
                return original(query)
            finally:
                handler.append((time.perf_counter() - t0) * 1000)

        transcript.search_for = timed  # type: ignore[method-assign]
        for query in QUERIES:
            await pilot.press("ctrl+a", "ctrl+k")
            await pilot.pause(0.1)
            handler.clear() if query == QUERIES[0] else None
            for ch in query:
                t0 = time.perf_counter()
                await pilot.press("space" if ch == " " else ch)
                await pilot.pause()
                key.append((time.perf_counter() - t0) * 1000)
        handler = handler[-sum(len(q) for q in QUERIES):]
        await pilot.press("escape")
        await pilot.pause(0.2)
        composer: list[float] = []
        for ch in "the same keys in the composer":
            t0 = time.perf_counter()
            await pilot.press("space" if ch == " " else ch)
            await pilot.pause()
            composer.append((time.perf_counter() - t0) * 1000)
        print(f"app (120x40, {len(chat.transcript.views)} items mounted of {len(chat.fold.items):,}):")
        _row("app: search_for (sync, refine, marks, reveal)", handler)
        _row("app: search key -> next refresh (pilot)", key)
        _row("baseline: composer key -> next refresh (pilot)", composer)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2_000)
    ap.add_argument("--chunks", type=int, default=92)
    args = ap.parse_args()
    from tests.ui.synthetic import long_session

    header, events = long_session(args.steps, chunks_per_step=args.chunks)
    domain(header, events)
    asyncio.run(app_keys(header, events))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
