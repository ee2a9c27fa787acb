"""UI benchmark: streaming an answer at 200 and 2,000 tok/s through the real bridge, fold and widgets.

Run:  .venv/bin/python tests/bench/bench_ui_stream.py [--seconds 10]

A harness thread appends ``assistant/chunk`` text deltas (4-character tokens, prose paragraphs with a
code fence every 6th paragraph, like design/textual-perf.md §2) at the given rate under ~100 history
items; the app drains them through the bridge (<= 20 Hz), folds them and renders. Measured, beside an
idle baseline in the same run:
- event-loop lag: an asyncio task sleeping 10 ms, actual minus requested wake-up (p50/p95/p99);
- display backlog: characters due by now minus characters painted, in ms of stream (p99);
- key echo during the stream: a key every 250 ms posted through the driver -> composer repainted;
- drain: time from the stream's end to the full text painted;
- screen reflows during the stream (each a screen-wide layout plus a repaint of what moved).
Targets: lag p99 <= 50 ms at 200 tok/s and <= 100 ms at 2,000 tok/s; backlog p99 <= 100 ms; echo p95 <= 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from textual import events  # noqa: E402

from dsh_tui.ui.app import DshApp  # noqa: E402
from dsh_tui.ui.bridge import BackendDefaults  # noqa: E402
from dsh_tui.ui.replay import RecordedSession  # noqa: E402
from dsh_tui.ui.settings import UiSettings  # noqa: E402
from tests.ui.synthetic import long_session  # noqa: E402


def _pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def stream_text(chars: int) -> str:
    out, n = [], 0
    while sum(map(len, out)) < chars:
        n += 1
        if n % 6 == 0:
            out.append("```python\ndef f(x):\n    y = x * 2\n    return y + 1\n\n```\n\n")
        else:
            out.append(f"Prose line number {n} with some words in it to fill sixty chars.\n" * 2 + "\n")
    return "".join(out)[:chars]


class StreamHarness(BackendDefaults):
    """Publishes a turn whose answer streams at ``rate`` tokens/s for ``seconds`` (harness thread)."""

    def __init__(self, rate: int, seconds: float) -> None:
        header, history = long_session(50, chunks_per_step=4)  # ~100 transcript items above the stream
        self.session = RecordedSession(header)
        self.session.events = list(history)
        self.rate, self.seconds = rate, seconds
        self.text = stream_text(int(rate * seconds * 4))
        self.t0: float | None = None
        self.fed = 0
        self.ended: float | None = None
        self.go = threading.Event()

    def _add(self, type_: str, data: dict, **extra) -> None:
        self.session.publish({"type": type_, "seq": len(self.session.events), "time": int(time.time() * 1000),
                              "data": data, **extra})

    async def run(self) -> None:
        turn = 26
        self._add("turn/start", {"turn": turn})
        self._add("step/start", {"turn": turn, "step": 1})
        self._add("user/message", {"role": "user", "id": "bench", "source": {"kind": "user"},
                                   "content": [{"type": "text", "text": "stream please"}]}, surfaceOp="append")
        chunk = {"turn": turn, "step": 1}
        self._add("assistant/chunk", {**chunk, "chunk": {"type": "block-start", "index": 0, "blockType": "text"}})
        tokens = [self.text[i:i + 4] for i in range(0, len(self.text), 4)]
        self.t0 = time.perf_counter()
        sent = 0
        while sent < len(tokens):
            due = min(len(tokens), int((time.perf_counter() - self.t0) * self.rate) + 1)
            while sent < due:
                self._add("assistant/chunk", {**chunk, "chunk": {"type": "text-delta", "index": 0, "text": tokens[sent]}})
                self.fed += len(tokens[sent])
                sent += 1
            await asyncio.sleep(0.001)
        self.ended = time.perf_counter()
        self._add("assistant/message", {**chunk, "message": {"role": "assistant", "id": "m", "content": [
            {"type": "text", "text": self.text}], "source": {"kind": "model", "provider": "p", "model": "m"}}},
            surfaceOp="append")
        self._add("step/end", chunk)
        self._add("turn/end", {"turn": turn, "reason": {"kind": "completed"}})

    async def send(self, text: str, mode: str, images: bool = True) -> None:
        await self.run()


async def measure(rate: int | None, seconds: float) -> dict[str, float]:
    harness = StreamHarness(rate or 1, seconds)
    paints: list[tuple[float, int]] = []

    class Bench(DshApp):
        def _display(self, screen, renderable) -> None:  # noqa: ANN001
            super()._display(screen, renderable)
            if renderable is not None:
                renderable.render_segments(self.console)
                chat = self.chat
                shown = 0
                if chat is not None and chat.fold.items and chat.fold.items[-1].kind == "assistant":
                    shown = len(chat.fold.items[-1].text)
                elif chat is not None and chat.fold.items and chat.fold.items[-1].kind == "footer":
                    shown = len(harness.text)
                paints.append((time.perf_counter(), shown))

    async def factory(_bridge):
        return harness

    app = Bench(factory, settings=UiSettings(values={"ui.theme": "dsh-dark"}))
    lags: list[float] = []
    backlog: list[float] = []
    echoes: list[float] = []
    out: dict[str, float] = {}
    async with app.run_test(size=(120, 40)) as pilot:
        while app.chat is None or not app.chat.fold.items:
            await pilot.pause(0.01)
        composer = app.chat.composer
        composer.focus()
        await pilot.pause(0.3)
        stop = asyncio.Event()

        async def sampler() -> None:
            while not stop.is_set():
                t = time.perf_counter()
                await asyncio.sleep(0.01)
                now = time.perf_counter()
                lags.append((now - t - 0.01) * 1000)
                if rate and harness.t0 is not None and harness.ended is None:
                    due = min(len(harness.text), (now - harness.t0) * rate * 4)
                    shown = paints[-1][1] if paints else 0
                    backlog.append(max(0.0, (due - shown) / (rate * 4) * 1000))

        async def typist() -> None:
            while not stop.is_set():
                await asyncio.sleep(0.25)
                before, n = composer.value, len(paints)
                k0 = time.perf_counter()
                app._driver.send_message(events.Key("a", "a"))
                while composer.value == before and not stop.is_set():
                    await asyncio.sleep(0)
                while len(paints) == n and not stop.is_set():
                    await asyncio.sleep(0.0005)
                if len(paints) > n:
                    echoes.append((paints[n][0] - k0) * 1000)

        tasks = [asyncio.create_task(sampler()), asyncio.create_task(typist())]
        chat = app.chat
        layouts = [0]
        screen_layout = chat._refresh_layout

        def counted_layout(*args, **kwargs):  # screen-wide reflows (each also repaints what moved)
            layouts[0] += 1
            return screen_layout(*args, **kwargs)

        chat._refresh_layout = counted_layout
        if rate:
            app.bridge.send("go", "followup")
            while harness.ended is None:
                await asyncio.sleep(0.05)
            while not paints or paints[-1][1] < len(harness.text):
                await asyncio.sleep(0.005)
            out["drain_ms"] = (paints[-1][0] - harness.ended) * 1000
            out["fed_s"] = harness.ended - harness.t0
            out["flushes"] = app.chat.flushes
            out["layouts"] = layouts[0]
        else:
            await asyncio.sleep(seconds)
        stop.set()
        await asyncio.gather(*tasks)
    out.update(lag_p50=_pct(lags, 50), lag_p95=_pct(lags, 95), lag_p99=_pct(lags, 99),
               backlog_p99=_pct(backlog, 99), echo_p50=_pct(echoes, 50), echo_p95=_pct(echoes, 95))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=1, help="repeat the set; the medians of the runs are printed last")
    args = parser.parse_args()
    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
    keys = ("lag_p99", "backlog_p99", "echo_p95")
    results: dict[str, list[dict[str, float]]] = {"idle": [], "200": [], "2000": []}
    for run in range(args.runs):
        if args.runs > 1:
            print(f"-- run {run + 1}/{args.runs}")
        print(f"machine load average now: {os.getloadavg()[0]:.1f} (figures scale with it; compare the ratios)")
        idle = asyncio.run(measure(None, min(args.seconds, 4.0)))
        results["idle"].append(idle)
        print(f"idle baseline:    lag p50/p95/p99 {idle['lag_p50']:.1f} / {idle['lag_p95']:.1f} / {idle['lag_p99']:.1f} ms, "
              f"key echo p50/p95 {idle['echo_p50']:.1f} / {idle['echo_p95']:.1f} ms")
        for rate, lag_target in ((200, 50), (2000, 100)):
            r = asyncio.run(measure(rate, args.seconds))
            results[str(rate)].append(r)
            print(f"{rate:>5} tok/s:      lag p50/p95/p99 {r['lag_p50']:.1f} / {r['lag_p95']:.1f} / {r['lag_p99']:.1f} ms "
                  f"[p99 target <= {lag_target}] (p99 x{r['lag_p99'] / max(idle['lag_p99'], 0.1):.1f} idle); "
                  f"backlog p99 {r['backlog_p99']:.0f} ms [<= 100]; key echo p50/p95 {r['echo_p50']:.1f} / "
                  f"{r['echo_p95']:.1f} ms [p95 <= 50]; fed in {r['fed_s']:.2f} s, drained {r['drain_ms']:.0f} ms after "
                  f"the end; {int(r['flushes'])} UI drains, {int(r['layouts'])} screen reflows")
    if args.runs > 1:
        print(f"-- medians of {args.runs} runs [min-max]:")
        for name in ("idle", "200", "2000"):
            cells = []
            for key in keys if name != "idle" else ("lag_p99", "echo_p95"):
                values = sorted(r[key] for r in results[name])
                cells.append(f"{key} {statistics.median(values):.0f} [{values[0]:.0f}-{values[-1]:.0f}] ms")
            print(f"{name:>5}: " + ", ".join(cells))


if __name__ == "__main__":
    main()
