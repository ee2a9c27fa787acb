"""A 10,000-line bracketed paste into the chat's composer (run: ``.venv/bin/python tests/bench/bench_composer.py
[--runs N] [--lines N]``).

Opens the real app (scripted model, real harness and writer) and, per run, posts what the terminal driver
posts for a bracketed paste of LINES lines (default 10,000, ~400 kB), then reports:

- paste -> on screen: from the paste event until the composer holds every line and the frame showing its
  end has been painted (target: <= 100 ms), and the UI thread's CPU time over the same span (what the
  paste costs, without the waits a loaded machine adds);
- key after the paste: one typed character, from the key until its frame (the composer stays usable),
  beside the same key in the empty composer (the pilot's own cost per key);
- Enter -> sent (the last run only; the others clear the composer, so every paste lands in the same short
  chat): from Enter until the ``user/message`` holding the whole paste is in the session log (checked
  equal to the paste). This includes the transcript laying out the 10,000-line prompt, which
  holds the UI thread (and the GIL the harness thread needs) for most of it.

With ``--history SESSIONS`` it also times the history's read of past prompts
(``dsh_tui/store/catalog/prompts.py``, run in a thread by the app) over SESSIONS generated sessions in 20
workspaces (``bench_catalog.py``'s generator): the first read (the catalog indexes what it has not seen) and
a warm one, beside the catalog's warm ``scan()`` alone (the ``stat`` of every log, which a read pays too).

Baseline, same run, same machine: the same paste into a stock Textual ``TextArea`` with the composer's size
rules (soft wrap, 3-8 rows) in a bare app, measured before dsh_tui is imported (so with Textual's wrapping
as shipped, without ``textual_compat.fast_wrap``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

PASTE_LINES = 10_000


def paste_text(lines: int) -> str:
    return "\n".join(f"{n:05d} ERROR something failed at step {n} in module_{n % 97}.py" for n in range(lines))


async def _painted(widget) -> float:
    done = asyncio.get_running_loop().create_future()
    widget.call_after_refresh(lambda: done.done() or done.set_result(time.perf_counter()))
    return await asyncio.wait_for(done, 30)


CPU: list[float] = []  # the UI thread's CPU time of each paste (wall time on a loaded machine waits too)


async def _land(app, area, text: str, lines: int) -> float:
    from textual import events

    t0, c0 = time.perf_counter(), time.thread_time()
    app.post_message(events.Paste(text))
    while area.document.line_count < lines:
        await asyncio.sleep(0)
    painted = await _painted(area)
    CPU.append((time.thread_time() - c0) * 1000)
    return (painted - t0) * 1000


async def run_composer(root: Path, text: str, lines: int, runs: int) -> dict[str, list[float]]:
    from dsh_tui.llm.scripted import ScriptedProvider
    from dsh_tui.llm.scripted import text as answer
    from dsh_tui.ui.app import DshApp
    from dsh_tui.ui.harness import HarnessSpec, open_harness
    from dsh_tui.ui.settings import UiSettings

    (root / "ws").mkdir()
    provider = ScriptedProvider([answer("read it")], name="mock")
    spec = HarnessSpec(root=root / "sessions", cwd=root / "ws", provider=provider, model="mock-model", plugins=())
    app = DshApp(lambda bridge: open_harness(bridge, spec), settings=UiSettings(values={"ui.theme": "dsh-dark"}))
    out: dict[str, list[float]] = {"land": [], "key": [], "key_empty": [], "send": []}
    async with app.run_test(size=(120, 36)) as pilot:
        while app.bridge.harness is None:
            await pilot.pause(0.02)
        composer = app.chat.composer
        session = app.bridge.harness.session
        for run in range(runs):
            await pilot.pause(0.1)
            t0 = time.perf_counter()
            await pilot.press("x")  # the same key in an empty composer: the pilot's own cost per key
            out["key_empty"].append((await _painted(composer) - t0) * 1000)
            await pilot.press("backspace")
            await pilot.pause(0.1)
            out["land"].append(await _land(app, composer, text, lines))
            t0 = time.perf_counter()
            await pilot.press("x")
            out["key"].append((await _painted(composer) - t0) * 1000)
            await pilot.press("backspace")
            if run < runs - 1:
                composer.value = ""  # the transcript stays as it was: each paste lands in the same chat
                continue
            before = len(session.events)
            t0 = time.perf_counter()
            await pilot.press("enter")  # the last paste is sent
            sent = None
            while sent is None:
                await asyncio.sleep(0.001)
                sent = next((e for e in session.events[before:] if e["type"] == "user/message"
                             and e["data"]["source"]["kind"] == "user"), None)
            out["send"].append((time.perf_counter() - t0) * 1000)
            got = sent["data"]["content"][0]["text"]
            assert got == text, f"the paste was not sent whole: {len(got)} vs {len(text)}"
    return out


async def run_stock(text: str, lines: int, runs: int) -> list[float]:
    from textual.app import App, ComposeResult
    from textual.widgets import TextArea

    class Bare(App):
        CSS = "TextArea { height: auto; min-height: 3; max-height: 8; } Static { height: 1fr; }"

        def compose(self) -> ComposeResult:
            from textual.widgets import Static

            yield Static("transcript")
            yield TextArea(soft_wrap=True, show_line_numbers=False, id="area")

    out = []
    app = Bare()
    async with app.run_test(size=(120, 36)) as pilot:
        area = app.query_one(TextArea)
        area.focus()
        for _ in range(runs):
            await pilot.pause(0.1)
            out.append(await _land(app, area, text, lines))
            area.load_text("")
    return out


def run_history(root: Path, sessions: int) -> dict[str, float]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_catalog import generate

    from dsh_tui.store.catalog import Catalog
    from dsh_tui.store.catalog.prompts import workspace_prompts

    generate(root / "sessions", sessions, 0, 0)
    out: dict[str, float] = {}
    catalog = Catalog([root / "sessions"], root / "cat.sqlite")
    t0 = time.perf_counter()
    prompts = workspace_prompts(catalog, "/work/project-3")
    out["cold"] = (time.perf_counter() - t0) * 1000
    out["prompts"] = len(prompts)
    warm, scans = [], []
    for _ in range(5):
        t0 = time.perf_counter()
        workspace_prompts(catalog, "/work/project-3")
        warm.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        catalog.scan()
        scans.append((time.perf_counter() - t0) * 1000)
    out["warm"], out["scan"] = statistics.median(warm), statistics.median(scans)
    catalog.close()
    return out


def _fmt(values: list[float]) -> str:
    return f"median {statistics.median(values):.0f} ms (min {min(values):.0f}, max {max(values):.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--lines", type=int, default=PASTE_LINES)
    parser.add_argument("--history", type=int, default=0, metavar="SESSIONS")
    args = parser.parse_args()
    text = paste_text(args.lines)
    stock = asyncio.run(run_stock(text, args.lines, args.runs))  # first: dsh_tui not imported yet, Textual as shipped
    stock_cpu = CPU[:]
    CPU.clear()
    with tempfile.TemporaryDirectory() as tmp:
        composer = asyncio.run(run_composer(Path(tmp), text, args.lines, args.runs))
    print(f"{args.lines:,}-line paste ({len(text) / 1000:.0f} kB), {args.runs} runs, 120x36")
    print(f"paste -> on screen, composer:        {_fmt(composer['land'])}   (target <= 100 ms)")
    print(f"paste -> on screen, stock TextArea:  {_fmt(stock)}   (baseline)")
    print(f"UI thread CPU of the paste:          composer {_fmt(CPU)}; stock TextArea {_fmt(stock_cpu)}")
    print(f"key after the paste -> its frame:    {_fmt(composer['key'])}")
    print(f"key, empty composer -> its frame:    {_fmt(composer['key_empty'])}   (baseline)")
    print(f"Enter -> whole paste in the log:     {composer['send'][0]:.0f} ms (the last run's paste, sent)")
    print("per run, paste -> on screen (ms):", " ".join(f"{v:.0f}" for v in composer["land"]))
    if args.history:
        with tempfile.TemporaryDirectory() as tmp:
            h = run_history(Path(tmp), args.history)
        print(f"history of one workspace out of {args.history:,} sessions ({h['prompts']:.0f} prompts): first read "
              f"{h['cold']:.0f} ms (indexes them), warm {h['warm']:.0f} ms; the catalog's warm scan alone "
              f"{h['scan']:.0f} ms (baseline)")


if __name__ == "__main__":
    main()
