"""Titles and project instructions: what they cost the turn (run: ``.venv/bin/python tests/bench/bench_titles.py
[ROUNDS] [FILES] [DEPTH]``).

1. Time to first byte of a session's first model request (``followup`` to the first ``assistant/chunk`` in
   the log), with the LLM title on vs off, against the same local server process (tests/llm/sse_server.py
   serving one SSE body to every POST, the title request included), real ``OpenAICompatProvider``, rounds
   interleaved (ROUNDS, default 30), medians. Target: no measurable difference (the title request is sent
   beside the turn's, after it).
2. Instruction discovery on a workspace DEPTH (default 20) directories deep holding FILES (default 10,000)
   files: the first step's baseline (home + root..cwd with the cwd at the deepest directory) and a later
   step's probe after a ``read`` of a file DEPTH levels below a cwd at the root. Target: <= 20 ms per step.
   Printed beside the same run's ``os.walk`` of the tree (what a naive discovery would pay).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from dsh_tui.extensions.instructions import InstructionsConfig, Workspace  # noqa: E402
from dsh_tui.llm.openai import OpenAICompatProvider  # noqa: E402
from dsh_tui.llm.protocol import ModelInfo  # noqa: E402
from dsh_tui.runtime import Agent, AgentConfig  # noqa: E402
from dsh_tui.runtime.plugins import Plugins, builtin_specs  # noqa: E402
from dsh_tui.session.headers import make_header  # noqa: E402
from dsh_tui.session.log import Session  # noqa: E402
from tests.bench.bench_provider import ServerProcess, render_stream  # noqa: E402


async def _first_byte(provider: OpenAICompatProvider, titles: bool, workdir: Path) -> tuple[float, int]:
    """ms from followup() to the first streamed chunk in the log; and how many title requests went out."""
    specs = builtin_specs(features=True)
    for spec in specs:
        if spec.id == "session-title-llm":
            spec.enabled = titles
    session = Session(make_header("bench", cwd=str(workdir), created_at=1))
    agent = Agent(session, provider, [], config=AgentConfig(model="deepseek-v4-flash", cwd=str(workdir),
                                                            runtime_context=False, check_requests=False),
                  plugins=Plugins(specs))
    first = asyncio.get_running_loop().create_future()

    def observe(_s, ev):
        if ev["type"] == "assistant/chunk" and not first.done():
            first.set_result(time.perf_counter())

    session.subscribe(observe)
    t0 = time.perf_counter()
    agent.followup("Summarize the build failures in the CI log")
    t1 = await asyncio.wait_for(first, 30)
    await agent.wait_idle()
    await agent.bus.parallel("session/flush", {"agent": agent}, scope=agent.id)
    sent = sum(1 for e in session.events if e["type"] == "session/title-llm-request")
    await agent.dispose()
    return (t1 - t0) * 1000, sent


async def bench_first_byte(rounds: int = 30) -> dict:
    server = ServerProcess(render_stream(20))
    work = Path(tempfile.mkdtemp(prefix="dsh-bench-titles-"))
    # one provider (one connection pool) for the whole run, as in the app: a new session per round
    provider = OpenAICompatProvider("bench", server.url, lambda: "sk-bench",
                                    {"deepseek-v4-flash": ModelInfo(context_window=100_000)})
    try:
        on: list[float] = []
        off: list[float] = []
        sent = 0
        for i in range(rounds + 2):  # two warm-up rounds (connections, imports) are not counted
            for titles in ((True, False) if i % 2 else (False, True)):
                ms, n = await _first_byte(provider, titles, work)
                if i >= 2:
                    (on if titles else off).append(ms)
                    sent += n if titles else 0
    finally:
        await provider.aclose()
        server.close()
        shutil.rmtree(work, ignore_errors=True)
    return {"rounds": rounds, "on_ms": statistics.median(on), "off_ms": statistics.median(off),
            "off_spread_ms": statistics.median(abs(x - statistics.median(off)) for x in off),
            "title_requests": sent}


def make_tree(base: Path, files: int, depth: int) -> tuple[Path, list[Path]]:
    """``depth`` nested directories under ``base`` (a project root with .git), ``files`` files spread over
    them, an AGENTS.md every fifth level; returns the root and the directories top to bottom."""
    root = base / "proj"
    (root / ".git").mkdir(parents=True)
    dirs = [root]
    for i in range(depth):
        dirs.append(dirs[-1] / f"level{i:02d}")
    dirs[-1].mkdir(parents=True)
    for i, d in enumerate(dirs):
        if i % 5 == 0:
            (d / "AGENTS.md").write_text(f"Rules for level {i}.\n")
    per = files // len(dirs)
    for d in dirs:
        for j in range(per):
            (d / f"file{j:05d}.txt").write_bytes(b"x\n")
    return root, dirs


def bench_discovery(files: int = 10_000, depth: int = 20, repeats: int = 20) -> dict:
    base = Path(tempfile.mkdtemp(prefix="dsh-bench-instr-"))
    try:
        root, dirs = make_tree(base, files, depth)
        config = InstructionsConfig(dshHome=str(base / "home"))
        deep = dirs[-1]
        baseline_ms = []
        probe_ms = []
        walk_ms = []
        found = 0
        for _ in range(repeats):
            t = time.perf_counter()
            found = len(Workspace(deep, config).baseline_sources())  # first step, cwd at the bottom
            baseline_ms.append((time.perf_counter() - t) * 1000)
            ws = Workspace(root, config)  # a later step, cwd at the root, a read 20 levels down
            t = time.perf_counter()
            rel = os.path.relpath(deep / "file00000.txt", root)
            probed = [s for d in ws.dirs_to(rel) for s in ws.probe(d)]
            probe_ms.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            n = sum(len(fs) for _, _, fs in os.walk(root))
            walk_ms.append((time.perf_counter() - t) * 1000)
        return {"files": n, "depth": depth, "instruction_files": found, "probed_files": len(probed),
                "baseline_ms": statistics.median(baseline_ms), "probe_ms": statistics.median(probe_ms),
                "walk_ms": statistics.median(walk_ms)}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main(argv: list[str] | None = None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    rounds = int(argv[0]) if argv else 30
    files = int(argv[1]) if len(argv) > 1 else 10_000
    depth = int(argv[2]) if len(argv) > 2 else 20
    a = asyncio.run(bench_first_byte(rounds))
    print(f"first model request, time to first byte ({a['rounds']} rounds each, interleaved, medians):")
    print(f"  titles off (baseline) {a['off_ms']:7.2f} ms   (median deviation {a['off_spread_ms']:.2f} ms)")
    print(f"  titles on             {a['on_ms']:7.2f} ms   difference {a['on_ms'] - a['off_ms']:+.2f} ms; "
          f"{a['title_requests']} title requests sent beside the turns")
    b = bench_discovery(files, depth)
    print(f"instruction discovery, {b['files']} files, {b['depth']} levels ({b['instruction_files']} AGENTS.md on "
          f"the path), medians:")
    print(f"  first step (baseline, root..cwd)      {b['baseline_ms']:6.2f} ms   (target <= 20 ms)")
    print(f"  later step (read {b['depth']} levels down)      {b['probe_ms']:6.2f} ms   (target <= 20 ms)")
    print(f"  same run: os.walk of the tree          {b['walk_ms']:6.2f} ms   (what a walk would cost)")
    return {"first_byte": a, "discovery": b}


if __name__ == "__main__":
    main()
