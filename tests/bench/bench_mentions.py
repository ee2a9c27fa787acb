"""``@`` completion over a big workspace (run: ``.venv/bin/python tests/bench/bench_mentions.py [FILES]``).

Builds a workspace of FILES files (default 100,000: 1,000 directories of 100) in a temp dir, opens the real app
on it (scripted model) and types ``@`` then ``file_07`` one key at a time. Reports, for each key, the time from
the key until the completion list shows its results (target: the first results <= 50 ms after a keystroke),
and the longest stall of the UI loop (a 5 ms timer's largest gap) while the index builds in its thread
(target: the UI never blocks: no gap near the build time).

Baseline, same run and same app: the same keys over a 100-file workspace (the index is complete at once), run
before and after the big one: what a key costs the UI on this machine now, whatever the index's size.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path


def make_workspace(root: Path, files: int) -> Path:
    ws = root / "ws"
    per_dir = 100
    for d in range(max(1, files // per_dir)):
        sub = ws / f"pkg_{d:04d}" / "src"
        sub.mkdir(parents=True)
        for f in range(min(per_dir, files - d * per_dir)):
            (sub / f"file_{f:03d}.py").touch()
    (ws / "node_modules" / "big").mkdir(parents=True)
    return ws


async def bench(files: int, root: Path) -> dict:
    from dsh_tui.llm.scripted import ScriptedProvider
    from dsh_tui.ui.app import DshApp
    from dsh_tui.ui.harness import HarnessSpec, open_harness
    from dsh_tui.ui.settings import UiSettings

    ws = make_workspace(root, files)
    provider = ScriptedProvider([], name="mock")
    spec = HarnessSpec(root=root / "sessions", cwd=ws, provider=provider, model="mock-model", plugins=())
    app = DshApp(lambda bridge: open_harness(bridge, spec), settings=UiSettings(values={"ui.theme": "dsh-dark"}))
    out: dict = {"files": files, "keys": []}
    async with app.run_test(size=(100, 36)) as pilot:
        while app.bridge.harness is None:
            await pilot.pause(0.02)
        gaps: list[float] = []
        last = [time.perf_counter()]

        def tick() -> None:
            now = time.perf_counter()
            gaps.append(now - last[0])
            last[0] = now

        app.set_interval(0.005, tick)
        chat = app.chat
        composer = chat.composer
        key_at = [0.0]
        shown_at: list[float] = []
        on_key, refresh = type(composer)._on_key, chat.completer.refresh

        async def timed_key(self, event):  # when the key reaches the composer
            key_at[0] = time.perf_counter()
            await on_key(self, event)

        def timed_refresh():  # the list filled (or emptied) for the new text
            refresh()
            shown_at.append(time.perf_counter())

        type(composer)._on_key = timed_key
        chat.completer.refresh = timed_refresh
        for key in "@file_07":
            shown_at.clear()
            await pilot.press(key)
            while not shown_at and time.perf_counter() - key_at[0] < 5:
                await asyncio.sleep(0.001)
            await pilot.pause()
            out["keys"].append((key, (shown_at[0] - key_at[0]) * 1000 if shown_at else float("nan"),
                                len(chat.completion.candidates)))
        type(composer)._on_key = on_key
        index = app.chat.completer.path_index
        t0 = time.perf_counter()
        while not index.done.is_set():
            await pilot.pause(0.01)
        out["build_wait_ms"] = (time.perf_counter() - t0) * 1000
        out["indexed"] = len(index.entries)
        out["max_gap_ms"] = max(gaps, default=0) * 1000
        t0 = time.perf_counter()
        results = index.search("file_07")
        out["search_ms"] = (time.perf_counter() - t0) * 1000
        out["results"] = len(results)
    return out


BASELINE_FILES = 100


def _summary(r: dict) -> str:
    times = [ms for _k, ms, _n in r["keys"]]
    return (f"first key {times[0]:.1f} ms, median {statistics.median(times):.1f} ms, max {max(times):.1f} ms; "
            f"longest UI-loop gap {r['max_gap_ms']:.1f} ms")


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    runs = []
    for n in (BASELINE_FILES, files, BASELINE_FILES):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(asyncio.run(bench(n, Path(tmp))))
    base1, r, base2 = runs
    for key, ms, n in r["keys"]:
        print(f"key {key!r}: list shown after {ms:.1f} ms ({n} results)")
    print(f"index: {r['indexed']} entries (cap 10,000); build finished {r['build_wait_ms']:.0f} ms after the keys; "
          f"search over the full index {r['search_ms']:.1f} ms ({r['results']} results)")
    print(f"longest UI-loop gap while typing and indexing: {r['max_gap_ms']:.1f} ms")
    print(f"{files:>7} files:               {_summary(r)}   (target: first results <= 50 ms; the UI never blocks)")
    print(f"{BASELINE_FILES:>7} files (baseline, before): {_summary(base1)}")
    print(f"{BASELINE_FILES:>7} files (baseline, after):  {_summary(base2)}")


if __name__ == "__main__":
    main()
