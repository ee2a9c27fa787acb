"""UI benchmark: startup, and opening a long session (200,000 events, 2,000 steps, 1,500 tool cards).

Run:  .venv/bin/python tests/bench/bench_ui_long.py [--runs 3] [--only startup|long] [--instructions]
      [--python VENV/bin/python] [--no-bytecode-cache] [--against TREE]

Each figure is measured in a fresh process (headless app, like design/textual-perf.md §5/§6):
- startup: process start -> first frame, and -> the first frame that shows the screen's final text ("complete":
  a footer, status line or notice arriving frames later counts), for DshApp's chat screen, ``dsh-tui`` (browser)
  and ``dsh-tui run``, beside a trivial Textual app measured the same way (baseline); every frame is rendered
  to the string a terminal would be sent, as the real driver does;
- long session: process start -> first paint showing the latest turn, split into store load and UI;
  peak RSS; keystroke-to-paint in the composer (keys posted through the driver, as a terminal does).
Targets (textual-perf.md): startup <= 0.35 s p50; first paint <= 0.8 s p50; RSS <= 250 MB; echo <= 5 ms p50 /
<= 17 ms p95. No assertions: figures are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SESSION_ID = "bench-long"


def _pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def _cpu() -> float:
    """CPU seconds (user + system) this process used so far: steadier than wall time on a loaded machine."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# -- child processes ---------------------------------------------------------------------------------
SCREEN_SIZE = (120, 40)
WATCH = 1.0  # seconds after the first frame during which the start-up children keep recording frames


class FrameLog:
    """Frames of a start-up child: each is rendered to the string a terminal would be sent (the work the
    real driver does on the UI thread; the headless driver skips it) and kept with its time and CPU.

    ``first_frame``: the first frame; ``complete``: the first frame after which the screen's text is the
    one it shows at the end of the watch (so a screen whose footer or status line arrives a frame later
    counts from that later frame). Text only: a cursor blink or a style change is not a change."""

    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self.frames: list[tuple[float, float, str]] = []

    def add(self, app, renderable) -> None:  # noqa: ANN001
        if renderable is not None:
            text = renderable.render_segments(app.console)
            self.frames.append((time.perf_counter() - self.t0, _cpu(), text))
            if os.environ.get("DSH_BENCH_FIRST_FRAME_EXIT"):  # --instructions: count up to the first frame
                os._exit(0)

    def watch(self, app) -> None:  # noqa: ANN001
        """Call from on_mount: exits the app WATCH seconds after its first frame."""
        def check() -> None:
            if self.frames and time.perf_counter() - self.t0 > self.frames[0][0] + WATCH:
                app.exit()
        app.set_interval(0.05, check)

    def result(self) -> dict:
        import re

        from rich.cells import cell_len

        width, height = SCREEN_SIZE
        grid = [[" "] * width for _ in range(height)]
        token = re.compile(r"\x1b\[(\d+);(\d+)H|\x1b\[[0-9;?]*[A-Za-z]|\x1b[^\[]|[\r\n]|[^\x1b\r\n]+")
        states = []
        for _t, _cpu_s, text in self.frames:
            row = col = 0
            for m in token.finditer(text):
                if m.group(1):
                    row, col = int(m.group(1)) - 1, int(m.group(2)) - 1
                    continue
                chunk = m.group(0)
                if chunk[0] in "\x1b\r\n":
                    continue
                for ch in chunk:
                    if 0 <= row < height and 0 <= col < width:
                        grid[row][col] = ch
                    col += max(1, cell_len(ch))
            states.append("\n".join("".join(line) for line in grid))
        final = states[-1]
        i = len(states) - 1
        while i > 0 and states[i - 1] == final:
            i -= 1
        first, done = self.frames[0], self.frames[i]
        return {"first_paint": first[0], "cpu": first[1], "complete": done[0], "cpu_complete": done[1],
                "frames": len(self.frames), "complete_frame": i + 1}


def child_trivial(t0: float) -> None:
    from textual.app import App
    from textual.widgets import Static

    log = FrameLog(t0)

    class Trivial(App):
        def compose(self):
            yield Static("hello")

        def on_mount(self) -> None:
            log.watch(self)

        def _display(self, screen, renderable) -> None:  # noqa: ANN001
            super()._display(screen, renderable)
            log.add(self, renderable)

    Trivial().run(headless=True, size=SCREEN_SIZE)
    print(json.dumps(log.result()), flush=True)


def child_startup(t0: float) -> None:
    from dsh_tui.ui.app import DshApp

    log = FrameLog(t0)

    class App(DshApp):
        def on_mount(self) -> None:
            # Textual also calls DshApp.on_mount itself (handlers run for every class in the MRO):
            # calling super() here would open the chat twice
            log.watch(self)

        def _display(self, screen, renderable) -> None:  # noqa: ANN001
            super()._display(screen, renderable)
            log.add(self, renderable)

    App(None).run(headless=True, size=SCREEN_SIZE)
    print(json.dumps(log.result()), flush=True)


def child_cli(t0: float, command: str) -> None:
    """The real command line path (``dsh-tui`` -> browser, ``dsh-tui run`` -> chat) to the first paint."""
    import dsh_tui.ui.app as app_module
    try:
        from dsh_tui.cli import parse_args
    except ImportError:  # an older tree (the bench is also run against earlier commits): the full parser
        from dsh_tui.cli import build_parser

        def parse_args(argv):  # noqa: ANN001, ANN202
            return build_parser().parse_args(argv)

    base = app_module.DshApp
    log = FrameLog(t0)

    class App(base):
        def on_mount(self) -> None:
            # Textual also calls DshApp.on_mount itself (handlers run for every class in the MRO):
            # calling super() here would open the chat twice
            log.watch(self)

        def _display(self, screen, renderable) -> None:  # noqa: ANN001
            super()._display(screen, renderable)
            log.add(self, renderable)

        def run(self, **_kw):  # noqa: ANN001, ANN202
            return super().run(headless=True, size=SCREEN_SIZE)

    app_module.DshApp = App
    args = parse_args([command] if command != "app" else [])
    if command == "app":
        from dsh_tui.cli import app_cmd

        app_cmd.run(args)
    else:
        args._module.run(args)
    print(json.dumps(log.result()), flush=True)


def child_long(t0: float, root: str, mode: str = "tail") -> None:
    """Open the stored session as the browser does (``DshApp.open_session``): ``tail`` = the app's path
    (tail read painted first, full load after); ``full`` = the previous path (full ``inspect`` first)."""
    import asyncio
    import resource

    from textual import events

    from dsh_tui.store.catalog import SessionRow
    from dsh_tui.ui.app import DshApp

    out: dict[str, float] = {"imports": time.perf_counter() - t0}
    path = next(p for p in Path(root).rglob("*") if p.name.startswith("session.jsonl"))
    row = SessionRow(path=str(path), root=root, revision="", id=SESSION_ID)
    count_only = bool(os.environ.get("DSH_BENCH_FIRST_FRAME_EXIT"))  # --instructions: up to the first paint
    if count_only:  # the full load waits (it runs after the paint; under valgrind its 2 s wait could run out)
        from dsh_tui.store import catalog

        class Held:
            def inspect(self, _id: str) -> None:
                time.sleep(3600)

        catalog._store_for = lambda _row: Held()
        import dsh_tui.ui.app as app_module

        if hasattr(app_module, "_prewarm_markdown"):  # due a second after the first frame: ~50 s under valgrind
            app_module._prewarm_markdown = lambda: None
    paints: list[float] = []
    first_paint: list[float] = []  # the time of the first frame showing the latest turn

    def shows_latest(text: str) -> bool:
        """This frame shows the latest turn: the session is attached and folded to its last turn's footer,
        and the frame has that turn's question (the first paint after the attach can still show an empty
        transcript: its item views are laid out in the next one)."""
        chat = app.chat
        return bool(chat is not None and chat.attached and chat.fold.items and chat.fold.items[-1].kind == "footer"
                    and chat.transcript.views and f"Question {chat.fold.items[-1].turn}:" in text)

    class Bench(DshApp):
        def _display(self, screen, renderable) -> None:  # noqa: ANN001
            super()._display(screen, renderable)
            if renderable is not None:
                text = renderable.render_segments(self.console)  # the work a terminal write needs
                paints.append(time.perf_counter())
                if not first_paint and shows_latest(text):
                    first_paint.append(paints[-1])
                    if count_only:  # exit here: a polling loop would be counted too
                        if os.environ.get("DSH_BENCH_FRAME_OUT"):  # the frame counted to (a test reads it)
                            Path(os.environ["DSH_BENCH_FRAME_OUT"]).write_text(text)
                        os._exit(0)

        def on_mount(self) -> None:  # DshApp.on_mount runs too (Textual calls it for the base class)
            if mode == "tail":
                self.open_session(row)
            else:  # the full load first, then the chat (what the browser did before open_session)
                def load() -> None:
                    from dsh_tui.store import catalog

                    res = catalog._store_for(row).inspect(row.id)
                    self.call_from_thread(self.opener._show_stored, res.header, res.events, None, None, None, None)

                self.run_worker(load, thread=True)

    app = Bench(None, start="none")

    async def run() -> None:
        def stuck(stage: str) -> RuntimeError:  # a stage that never ends says where it stopped
            chat = app.chat
            state = None if chat is None else {"attached": chat.attached, "items": len(chat.fold.items),
                                               "views": len(chat.transcript.views), "loading_head": chat.loading_head}
            return RuntimeError(f"long-session child stuck at {stage}: chat {state}, {len(paints)} paints")

        async with app.run_test(size=(120, 40)) as pilot:
            if count_only:  # _display exits at the paint
                await asyncio.sleep(3600)
            deadline = time.perf_counter() + 120
            while not first_paint:
                if time.perf_counter() > deadline:
                    raise stuck("the tail's first paint")
                await asyncio.sleep(0.001)
            out["first_paint"] = first_paint[0] - t0
            out["last_turn"] = app.chat.fold.items[-1].turn
            while app.chat.loading_head:
                if time.perf_counter() > deadline:
                    raise stuck("folding the head")
                await asyncio.sleep(0.01)
            out["head_folded"] = time.perf_counter() - t0
            out["events"] = len(app.bridge.harness.session.events)
            out["items"] = len(app.chat.fold.items)
            out["mounted_views"] = len(app.chat.transcript.views)
            # keystroke echo: key posted through the driver -> Input changed -> next paint
            composer = app.chat.composer
            composer.focus()
            await pilot.pause(0.2)
            echoes = []
            for i in range(40):
                before = composer.value
                n = len(paints)
                k0 = time.perf_counter()
                app._driver.send_message(events.Key("a", "a"))
                give_up = time.perf_counter() + 5
                while composer.value == before and time.perf_counter() < give_up:
                    await asyncio.sleep(0)
                while len(paints) == n and time.perf_counter() < give_up:
                    await asyncio.sleep(0.0005)
                if len(paints) > n:
                    echoes.append((paints[n] - k0) * 1000)
                await asyncio.sleep(0.05 if i % 2 else 0.1)
            out["echo_p50"] = _pct(echoes, 50)
            out["echo_p95"] = _pct(echoes, 95)
            out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            app.exit()

    asyncio.run(run())
    print(json.dumps(out), flush=True)


# -- parent ------------------------------------------------------------------------------------------
# How the children run (set by main() from the options):
# - python: the interpreter (``--python``: e.g. a venv with a regular, non-editable install of dsh-tui);
# - bytecode: True = the children read and write .pyc files in a cache directory of their own
#   (``PYTHONPYCACHEPREFIX``), as an installed program does (pip compiles on install); False = the
#   inherited environment as is (with PYTHONDONTWRITEBYTECODE=1 every dsh_tui module is compiled from
#   source in every process, while Textual's site-packages .pyc files are read: ``--no-bytecode-cache``).
CHILD = {"python": sys.executable, "bytecode": True, "repo_path": True}
PYCACHE = Path(tempfile.gettempdir()) / "dsh-bench-pycache"


_HOME: list[str] = []


def child_env() -> dict[str, str]:
    env = {**os.environ, "TEXTUAL_ANIMATIONS": "none"}
    if not _HOME:  # one empty home for every child (settings, credentials, index): never the user's
        _HOME.append(tempfile.mkdtemp(prefix="dsh-bench-home-"))
    env.setdefault("DSH_HOME", _HOME[0])
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        env[name] = os.path.join(_HOME[0], name.lower())
    if CHILD["repo_path"]:
        env["PYTHONPATH"] = str(REPO)
    else:  # a regular install: the package comes from the interpreter's site-packages
        env.pop("PYTHONPATH", None)
        env["DSH_BENCH_NO_REPO"] = "1"
    if CHILD["bytecode"]:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    return env


def spawn(kind: str, *extra: str, tree: Path | None = None) -> dict:
    """One child of ``kind``; ``tree``: this bench's child on that checkout's package (``--against``: both
    measured the same way)."""
    env = child_env()
    script = __file__
    if tree is not None:
        env["PYTHONPATH"], env["DSH_BENCH_NO_REPO"] = str(tree), "1"
    t0 = time.perf_counter()
    proc = subprocess.run([CHILD["python"], script, "--child", kind, repr(t0), *extra], capture_output=True,
                          text=True, env=env, timeout=300)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"child {kind} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")


def make_session(root: Path, steps: int, chunks: int) -> int:
    sys.path.insert(0, str(REPO))
    from dsh_tui.store.open import open_store
    from tests.ui.synthetic import long_session

    header, events = long_session(steps, chunks_per_step=chunks)
    header = {**header, "id": SESSION_ID, "cwd": str(root)}
    store = open_store(root)
    store.create(header)
    for i in range(0, len(events), 10_000):
        store.append(SESSION_ID, events[i:i + 10_000])
    tools = sum(1 for e in events if e["type"] == "tool/call")
    print(f"session: {len(events):,} events, {steps:,} steps, {tools:,} tool cards")
    return len(events)


def instructions(kinds: dict[str, tuple[tuple[str, ...], Path | None]] | None = None) -> None:
    """Instructions executed from process start to the first frame (valgrind callgrind, one run each:
    nearly deterministic, unlike times on a shared machine), with the trivial app as the baseline.
    The run is ~50x slower, so a timer or worker due shortly after the first frame may run before it
    and be counted: an upper bound for the app, exact for the trivial one. ``kinds``: name -> (child
    argv, the tree to run it from or None for this one); the trivial app is always counted first."""
    kinds = {"trivial Textual app": (("trivial",), None), **(kinds or {
        "DshApp(None) chat screen": (("startup",), None), "dsh-tui (browser)": (("cli", "app"), None),
        "dsh-tui run (chat)": (("cli", "run"), None)})}
    counts: dict[str, float] = {}
    for name, (argv, tree) in kinds.items():
        env = {**child_env(), "DSH_BENCH_FIRST_FRAME_EXIT": "1", "PYTHONHASHSEED": "0"}
        if tree is not None:  # this bench's child (it stops at the first paint) on that tree's package
            env["PYTHONPATH"], env["DSH_BENCH_NO_REPO"] = str(tree), "1"
        proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", CHILD["python"],
                               __file__, "--child", argv[0], repr(time.perf_counter()), *argv[1:]],
                              capture_output=True, text=True, env=env, timeout=900)
        found = [line for line in proc.stderr.splitlines() if "Collected" in line]
        if not found:
            raise RuntimeError(f"callgrind run of {name} failed:\n{proc.stderr[-3000:]}")
        counts[name] = int(found[-1].split()[-1]) / 1e6
    base = counts["trivial Textual app"]
    print("instructions from process start to the first frame (callgrind, millions; one run each):")
    for name, n in counts.items():
        print(f"  {name:26s} {n:7.0f} M  ({n - base:+5.0f} M, {n / base:.2f}x the trivial app)")


def startup(runs: int, trivial: list[dict]) -> None:
    """Each startup kind interleaved (load drifts), beside the trivial app measured the same way."""
    kinds = {"startup": ("startup",), "dsh-tui (browser)": ("cli", "app"), "dsh-tui run (chat)": ("cli", "run")}
    outs: dict[str, list[dict]] = {k: [] for k in kinds}
    for _ in range(runs):
        for name, argv in kinds.items():
            outs[name].append(spawn(*argv))

    def med(rs: list[dict], key: str) -> float:
        return statistics.median(r[key] for r in rs) * 1000

    base, base_cpu = med(trivial, "first_paint"), med(trivial, "cpu")
    print(f"start-up, p50 of {runs} fresh processes; 'complete' = first frame showing the screen's final text "
          f"[target <= 350 ms p50]; overhead = over the trivial app's {base:.0f} ms (CPU {base_cpu:.0f} ms):")
    labels = {"startup": "DshApp(None) chat screen"}
    for name, rs in outs.items():
        c = med(rs, "complete")
        print(f"  {labels.get(name, name):26s} complete {c:4.0f} ms (max {max(r['complete'] for r in rs) * 1000:.0f},"
              f" overhead {c - base:+4.0f}, CPU {med(rs, 'cpu_complete'):.0f} ms = {med(rs, 'cpu_complete') - base_cpu:+.0f});"
              f" first frame {med(rs, 'first_paint'):4.0f} ms (CPU {med(rs, 'cpu'):.0f}); "
              f"frame {statistics.median(r['complete_frame'] for r in rs):.0f} of the first "
              f"{statistics.median(r['frames'] for r in rs):.0f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--chunks", type=int, default=91, help="text chunks per step (91 -> ~200k events)")
    parser.add_argument("--only", choices=("startup", "long"), help="run one half of the bench")
    parser.add_argument("--instructions", action="store_true",
                        help="also count the instructions to the first frame under valgrind (deterministic; ~20 s "
                             "per start-up; with --only long: to the latest turn's first paint, and the "
                             "--against tree's)")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="children inherit the environment as is (PYTHONDONTWRITEBYTECODE=1 here: dsh_tui "
                             "compiled from source in every process)")
    parser.add_argument("--against", type=Path, metavar="TREE",
                        help="with --only long: also open the session with another checkout's app (e.g. "
                             "`git archive main | tar -x -C TREE`), alternating with this one: a same-run baseline")
    parser.add_argument("--python", help="interpreter for the children (e.g. a venv with a regular install); "
                                         "dsh_tui is then imported from its site-packages, not from this checkout")
    args = parser.parse_args()
    CHILD["bytecode"] = not args.no_bytecode_cache
    if args.python:
        CHILD["python"] = args.python
        CHILD["repo_path"] = False
    if CHILD["bytecode"]:  # untimed: the cache directory gets every module's .pyc (first run only)
        for argv in (("trivial",), ("startup",), ("cli", "app"), ("cli", "run")):
            spawn(*argv)
    print(f"children: {CHILD['python']}; "
          + ("bytecode cached (.pyc read, as an installed program)" if CHILD["bytecode"]
             else f"environment as is (PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})"))

    trivial = [spawn("trivial") for _ in range(args.runs + 2)]
    base = statistics.median(t["first_paint"] for t in trivial)
    print(f"trivial Textual app: first paint {base * 1000:.0f} ms p50 (complete: frame "
          f"{statistics.median(t['complete_frame'] for t in trivial):.0f}), "
          f"CPU {statistics.median(t['cpu'] for t in trivial) * 1000:.0f} ms p50; load average {os.getloadavg()[0]:.1f}")
    if args.only != "long":
        startup(args.runs + 2, trivial)
        if args.instructions:
            instructions()
        if args.only == "startup":
            return

    tmp = Path(tempfile.mkdtemp(prefix="dsh-bench-long-"))
    try:
        make_session(tmp, args.steps, args.chunks)
        both: dict[str, list[dict]] = {"tail": [], "full": []}
        against: list[dict] = []
        for _ in range(args.runs):  # interleaved: the machine's load drifts
            for mode in both:
                both[mode].append(spawn("long", str(tmp), mode))
            if args.against is not None:
                against.append(spawn("long", str(tmp), "tail", tree=args.against))
        if args.instructions:  # the latest turn's first paint (the child exits there; the full load held)
            counted = {"long: this tree": (("long", str(tmp), "tail"), None)}
            if args.against is not None:
                counted[f"long: {args.against}"] = (("long", str(tmp), "tail"), args.against)
            instructions(counted)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    runs = both["tail"]

    def med(key: str, which: list[dict] = runs) -> float:
        return statistics.median(r[key] for r in which)

    def p95(key: str) -> float:
        return _pct([r[key] for r in runs], 95)

    full = both["full"]
    print(f"machine load average now: {os.getloadavg()[0]:.1f} (figures scale with it; compare the ratios)")
    if not runs:  # --runs 0: the instruction counts alone
        return
    print(f"long session ({int(runs[0]['events']):,} events), median of {args.runs} fresh processes:")
    print(f"  first paint of the latest turn (tail read first): {med('first_paint'):.2f} s p50, "
          f"{p95('first_paint'):.2f} s p95 [target <= 0.8 / <= 1.2 s] (imports {med('imports'):.2f} s); "
          f"ratio to the trivial app's first paint {med('first_paint') / base:.1f}")
    if against:
        fp = statistics.median(r["first_paint"] for r in against)
        print(f"  same run, {args.against}'s app: {fp:.2f} s p50 (max {max(r['first_paint'] for r in against):.2f}),"
              f" ratio {fp / base:.1f}; echo p50 {statistics.median(r['echo_p50'] for r in against):.1f} ms, "
              f"p95 {statistics.median(r['echo_p95'] for r in against):.1f} ms")
    print(f"  same run, full load first (the previous path): {med('first_paint', full):.2f} s p50 "
          f"-> tail first is {med('first_paint', full) / med('first_paint'):.1f}x faster")
    print(f"  full load confirmed and whole history folded (background) at {med('head_folded'):.2f} s "
          f"({int(med('items'))} items, same as full-first: {med('items') == med('items', full)}); "
          f"mounted item views {int(med('mounted_views'))}")
    print(f"  peak RSS {med('rss_mb'):.0f} MB  [target <= 250 MB]")
    print(f"  composer keystroke -> paint: p50 {med('echo_p50'):.1f} ms, p95 {med('echo_p95'):.1f} ms "
          f"[target <= 5 / <= 17 ms]")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        kind, t0 = sys.argv[2], float(sys.argv[3])
        if not os.environ.get("DSH_BENCH_NO_REPO"):
            sys.path.insert(0, str(REPO))
        if kind == "trivial":
            child_trivial(t0)
        elif kind == "startup":
            child_startup(t0)
        elif kind == "cli":
            child_cli(t0, sys.argv[4])
        else:
            child_long(t0, sys.argv[4], *sys.argv[5:])
    else:
        try:
            main()
        finally:
            for home in _HOME:
                shutil.rmtree(home, ignore_errors=True)
