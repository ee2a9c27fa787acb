"""Timeline benchmark: a 200,000-event session in the timeline screen.

    .venv/bin/python tests/bench/bench_timeline.py [--events 200000]

Prints: rows available -> first paint of the span tree (the last turn, folded on the UI thread), the
whole span fold (a worker), flattening with every turn open, scrolling the span tree by 1,000 rows
(p50/p95, each awaited to its paint), a ledger filter over all events, and the memory the screen (tree
included) adds beyond the event data (tracemalloc). Baseline in the same run: textual-perf.md's minimal LineView over
preformatted strings (its strings are counted as its memory).
Targets: first paint <= 100 ms, scroll 1,000 rows <= 33 ms p95, <= 50 MB beyond the events.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def make_events(n: int) -> tuple[dict, list[dict]]:
    """Turns of: prompt, 1-3 steps of ~40 chunks, a tool round, usage; until ``n`` events."""
    header = {"type": "session", "version": 0, "id": "bench-tl", "createdAt": 1_770_000_000_000,
              "cwd": "/work/bench", "delegationDepth": 0}
    ev: list[dict] = []
    t = 1_770_000_000_000
    turn = 0

    def add(tp, data, **extra):
        nonlocal t
        e = {"type": tp, "seq": len(ev), "time": t, "data": data}
        e.update(extra)
        ev.append(e)
        t += 5

    while len(ev) < n - 60:
        turn += 1
        add("turn/start", {"turn": turn})
        for step in (1, 2):
            add("step/start", {"turn": turn, "step": step})
            if step == 1:
                add("user/message", {"id": f"u{turn}", "role": "user", "source": {"kind": "user"},
                                     "content": [{"type": "text", "text": f"question {turn} about the parser"}]},
                    surfaceOp="append")
                add("request/header", {"header": {"config": {"provider": "p", "model": "m"}, "system": "SYS"},
                                       "reason": "initial" if turn == 1 else "change"})
            first = len(ev)
            for k in range(40):
                add("assistant/chunk", {"turn": turn, "step": step,
                                        "chunk": {"type": "text-delta", "index": 0, "text": f"tok{k} "}})
            add("assistant/chunk", {"turn": turn, "step": step, "chunk": {
                "type": "usage", "usage": {"inputTokens": 1000, "outputTokens": 40, "cacheReadTokens": 800}}})
            content = [{"type": "text", "text": "answer"}]
            if step == 1:
                content.append({"type": "tool-call", "id": f"c{turn}", "name": "bash", "arguments": "{}"})
            add("assistant/message", {"turn": turn, "step": step, "message": {
                "id": f"a{turn}.{step}", "role": "assistant", "content": content,
                "source": {"kind": "model", "provider": "p", "model": "m"}}},
                surfaceOp="append", sourceEventSeqs=list(range(first, len(ev))))
            if step == 1:
                call_seq = len(ev)
                add("tool/call", {"turn": turn, "step": 1, "callId": f"c{turn}", "name": "bash", "arguments": "{}"})
                add("tool/result", {"turn": turn, "step": 1, "message": {
                    "id": f"r{turn}", "role": "user", "source": {"kind": "tool", "callId": f"c{turn}"},
                    "content": [{"type": "tool-result", "toolCallId": f"c{turn}",
                                 "content": [{"type": "text", "text": "ok"}]}]}},
                    surfaceOp="append", sourceEventSeqs=[call_seq])
            add("step/end", {"turn": turn, "step": step})
        add("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    return header, ev


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


async def measure(header: dict, events: list[dict]) -> dict:
    from rich.segment import Segment
    from textual.app import App
    from textual.geometry import Size
    from textual.scroll_view import ScrollView
    from textual.strip import Strip

    from dsh_tui.ui.screens.timeline import TimelineScreen

    out: dict = {}

    class Host(App):
        pass

    app = Host()
    async with app.run_test(size=(160, 45)) as pilot:
        gc.collect()
        t0 = time.perf_counter()
        screen = TimelineScreen(header=header, events=events)
        await app.push_screen(screen)
        tree = screen.spans
        while tree.first_paint_at is None:
            await asyncio.sleep(0.001)
        out["rows_to_first_paint_ms"] = (tree.first_paint_at - t0) * 1000
        painted = tree.paints
        while not screen.folded.is_set():
            await asyncio.sleep(0.005)
        out["spans_ready_ms"] = (time.perf_counter() - t0) * 1000
        await pilot.pause()
        out["first_paint_rows_rendered"] = painted
        t1 = time.perf_counter()
        for turn in screen.fold.turns:
            turn.open = True
        tree.set_tree(screen.fold, screen.events)
        out["open_all_turns_ms"] = (time.perf_counter() - t1) * 1000
        out["tree_rows_all_open"] = tree.count
        tree.move_to(0)
        await pilot.pause()
        lat = []
        rows = tree.scrollable_content_region.height
        for _ in range(20):
            p0 = tree.paints
            t1 = time.perf_counter()
            target = tree.scroll_offset.y + 1000
            if target > tree.max_scroll_y:  # wrap (a small log: between the two ends)
                target = 0 if tree.scroll_offset.y else tree.max_scroll_y
            tree.scroll_to(y=target, animate=False, immediate=True)
            deadline = time.perf_counter() + 5
            while tree.paints < p0 + rows and time.perf_counter() < deadline:  # awaited to the repaint of every visible row
                await asyncio.sleep(0.0005)
            lat.append((tree.last_paint_at - t1) * 1000)
            await pilot.pause()
        out["scroll_1000_p50_ms"] = statistics.median(lat)
        out["scroll_1000_p95_ms"] = pct(lat, 0.95)
        screen.action_toggle_ledger()
        await pilot.pause()
        ledger = screen.ledger
        t1 = time.perf_counter()
        n = ledger.apply_filter(types="tool/")
        await pilot.pause()
        out["filter_type_all_events_ms"] = (time.perf_counter() - t1) * 1000
        out["filter_rows"] = n
        await app.pop_screen()
        await pilot.pause()

        # Baseline: textual-perf.md's LineView over preformatted strings (strings made here, counted).
        class LineView(ScrollView):
            def __init__(self, lines):
                super().__init__()
                self.lines = lines
                self.virtual_size = Size(120, len(lines))

            paints = 0
            last_paint_at = 0.0

            def render_line(self, y):
                self.paints += 1
                self.last_paint_at = time.perf_counter()
                row = self.scroll_offset.y + y
                if row >= len(self.lines):
                    return Strip.blank(self.size.width)
                return Strip([Segment(self.lines[row])]).crop_extend(0, self.size.width, None)

        gc.collect()
        t2 = time.perf_counter()
        lines = [f"{e['seq']:>7} {e['type']:<20} {str(e['data'])[:90]}" for e in events]
        t3 = time.perf_counter()
        view = LineView(lines)
        await app.screen.mount(view)
        await pilot.pause()
        out["baseline_lineview_format_ms"] = (t3 - t2) * 1000
        out["baseline_lineview_first_paint_ms"] = (time.perf_counter() - t3) * 1000
        lat = []
        rows = view.scrollable_content_region.height
        for _ in range(20):
            p0 = view.paints
            t1 = time.perf_counter()
            target = view.scroll_offset.y + 1000
            view.scroll_to(y=target if target <= view.max_scroll_y else 0, animate=False, immediate=True)
            deadline = time.perf_counter() + 5
            while view.paints < p0 + rows and time.perf_counter() < deadline:
                await asyncio.sleep(0.0005)
            lat.append((view.last_paint_at - t1) * 1000)
            await pilot.pause()
        out["baseline_scroll_1000_p95_ms"] = pct(lat, 0.95)
        await view.remove()
        del lines, view

        # Memory (a separate pass: tracemalloc slows Python several times over).
        gc.collect()
        tracemalloc.start()
        m0 = tracemalloc.get_traced_memory()[0]
        screen = TimelineScreen(header=header, events=events)
        await app.push_screen(screen)
        while not screen.folded.is_set():
            await asyncio.sleep(0.01)
        await pilot.pause()
        gc.collect()
        out["screen_memory_MB"] = (tracemalloc.get_traced_memory()[0] - m0) / 1e6
        await app.pop_screen()
        gc.collect()
        m1 = tracemalloc.get_traced_memory()[0]
        strings = [f"{e['seq']:>7} {e['type']:<20} {str(e['data'])[:90]}" for e in events]
        out["baseline_lineview_strings_MB"] = (tracemalloc.get_traced_memory()[0] - m1) / 1e6
        tracemalloc.stop()
        del strings
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=200_000)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    header, events = make_events(args.events)
    out: dict = {"events": len(events), "generate_s": round(time.perf_counter() - t0, 2)}
    from dsh_tui.session.spans import fold_spans

    t0 = time.perf_counter()
    fold = fold_spans(events)
    out["fold_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    out["turns"] = len(fold.turns)
    res = asyncio.run(measure(header, events))
    out.update({k: round(v, 1) if isinstance(v, float) else v for k, v in res.items()})
    out["ratio_first_paint_to_baseline"] = round(
        res["rows_to_first_paint_ms"] / (res["baseline_lineview_first_paint_ms"] + res["baseline_lineview_format_ms"]), 2)
    out["ratio_scroll_p95_to_baseline"] = round(res["scroll_1000_p95_ms"] / res["baseline_scroll_1000_p95_ms"], 2)
    for k, v in out.items():
        print(f"{k:>36}: {v}")
    return out


if __name__ == "__main__":
    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
    main()
