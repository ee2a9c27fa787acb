"""Plugin overhead (run: ``.venv/bin/python tests/bench/bench_plugins.py [STEPS] [CHUNKS] [ROUNDS]``).

1. STEPS (default 5,000) steps of one tool call each, with no user plugin vs 10 no-op plugins each listening on
   ``agent/pre-step``, ``agent/request``, ``llm/stream`` and ``tools/pre-execute``/``execute``/``post-execute``
   (targets: <= 1.5x the driver overhead with none, and <= 1 ms per step). The driver overhead is the run minus
   direct appends of the same events to a fresh Session (the baseline, measured in the same run).
2. One step streaming CHUNKS (default 50,000) one-character deltas, with and without one ``llm/stream``
   pass-through wrapper (target: <= 2 us per chunk).
Rounds alternate the variants (ROUNDS, default 5) and report medians; the check is off (no invariant).
3. ``--startup RUNS [--instructions]``: ``dsh-tui run`` (the chat, a key set so the harness opens and the plugins load) to its
   first paint with 5 plugins configured in settings.toml vs none, RUNS fresh processes each, interleaved
   (target: within 10 ms). Uses the frame log of ``bench_ui_long.py``; ``--instructions`` counts
   instructions to the first frame under callgrind instead (one run each, repeatable).
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import time
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # run as a script: ``tests`` is importable from the repository root
    sys.path.insert(0, str(REPO))

from dsh_tui.llm import scripted as s  # noqa: E402
from dsh_tui.runtime import Agent, AgentConfig  # noqa: E402
from dsh_tui.runtime.plugins import Plugins, PluginSpec, builtin_specs  # noqa: E402
from dsh_tui.session.headers import make_header  # noqa: E402
from dsh_tui.session.log import Session  # noqa: E402
from tests.bench.bench_driver import noop_tool  # noqa: E402

EVENTS = ("agent/pre-step", "agent/request", "llm/stream", "tools/pre-execute", "tools/execute",
          "tools/post-execute")


def _noop_plugin(i: int) -> types.SimpleNamespace:
    def apply(ctx):
        async def through(payload, next):
            return await next()

        for name in EVENTS:
            ctx.on(name, through)

    return types.SimpleNamespace(name=f"noop-{i}", apply=apply)


def _wrapper_plugin() -> types.SimpleNamespace:
    def apply(ctx):
        async def wrap(payload, next):
            inner = await next()

            async def gen():
                async for chunk in inner:
                    yield chunk

            return gen()

        ctx.on("llm/stream", wrap)

    return types.SimpleNamespace(name="wrapper", apply=apply)


def _agent(responses: list, plugins: list) -> Agent:
    session = Session(make_header("bench", cwd="/bench", created_at=1))
    provider = s.ScriptedProvider(responses, name="bench", record=False)
    config = AgentConfig(model="bench-model", cwd="/bench", runtime_context=False, preset="full-access",
                         compaction=False, check_requests=False)
    specs = builtin_specs() + [PluginSpec(p.name, "sdk", obj=p) for p in plugins]
    return Agent(session, provider, [noop_tool()], config=config, plugins=Plugins(specs))


async def _steps(steps: int, plugins: list) -> tuple[float, float]:
    agent = _agent([s.call(f"c{i}", "noop", {}) for i in range(steps - 1)] + [s.text("done")], plugins)
    gc.collect()
    t0 = time.perf_counter()
    agent.followup("go")
    await agent.wait_idle()
    run = time.perf_counter() - t0
    events = agent.session.events
    fresh = Session(make_header("baseline", cwd="/bench", created_at=1))
    t0 = time.perf_counter()
    for e in events:
        fresh.append(e["type"], e["data"], surface_op=e.get("surfaceOp"), source_event_seqs=e.get("sourceEventSeqs"))
    return run, time.perf_counter() - t0


async def _stream(chunks: int, plugins: list) -> float:
    agent = _agent([s.text("x" * chunks, chunk_size=1)], plugins)
    gc.collect()
    t0 = time.perf_counter()
    agent.followup("go")
    await agent.wait_idle()
    return time.perf_counter() - t0


async def main_async(steps: int, chunks: int, rounds: int) -> None:
    none_oh, ten_oh, plain, wrapped = [], [], [], []
    for _ in range(rounds):
        run, base = await _steps(steps, [])
        none_oh.append((run - base) * 1000 / steps)
        run, base = await _steps(steps, [_noop_plugin(i) for i in range(10)])
        ten_oh.append((run - base) * 1000 / steps)
        plain.append(await _stream(chunks, []))
        wrapped.append(await _stream(chunks, [_wrapper_plugin()]))
    med = statistics.median
    print(f"driver overhead per step, {steps} steps, median of {rounds} alternating rounds:")
    print(f"  no user plugin          {med(none_oh):.3f} ms/step   (range {min(none_oh):.3f}-{max(none_oh):.3f})")
    print(f"  10 no-op plugins x {len(EVENTS)}   {med(ten_oh):.3f} ms/step   (range {min(ten_oh):.3f}-{max(ten_oh):.3f})")
    print(f"  ratio {med(ten_oh) / med(none_oh):.2f}x (target <= 1.5x, and <= 1 ms/step)")
    per_chunk = (med(wrapped) - med(plain)) * 1e6 / chunks
    print(f"streaming {chunks} chunks: plain {med(plain) * 1000:.0f} ms, with one llm/stream pass-through wrapper "
          f"{med(wrapped) * 1000:.0f} ms: {per_chunk:+.2f} us/chunk (target <= 2 us)")


def startup(runs: int, instructions: bool = False) -> None:
    import os
    import tempfile

    from tests.bench import bench_ui_long as ui

    mods = Path(tempfile.mkdtemp(prefix="dsh-bench-plugins-"))
    for i in range(5):
        (mods / f"bench_plugin_{i}.py").write_text(
            f"name = 'bench-{i}'\n"
            "def apply(ctx):\n"
            "    async def through(payload, next):\n"
            "        return await next()\n"
            "    for event in ('agent/pre-step', 'agent/request', 'llm/stream', 'tools/pre-execute'):\n"
            "        ctx.on(event, through)\n")
    settings = "".join(f'[plugins.bench-{i}]\nmodule = "bench_plugin_{i}"\n' for i in range(5))
    env = ui.child_env()
    config = Path(env["XDG_CONFIG_HOME"]) / "dsh-tui"
    config.mkdir(parents=True, exist_ok=True)
    os.environ.update(DEEPSEEK_API_KEY="sk-bench-not-real", DEEPSEEK_BASE_URL="http://127.0.0.1:9")
    base_env = ui.child_env

    def child_env() -> dict[str, str]:  # the children also import the plugin modules
        env = base_env()
        env["PYTHONPATH"] = os.pathsep.join([str(mods), env.get("PYTHONPATH", "")])
        return env

    ui.child_env = child_env
    if instructions:  # callgrind: instructions to the first frame (repeatable, unlike times here)
        import subprocess

        counts = {}
        for name in ("none", "5 plugins"):
            (config / "settings.toml").write_text(settings if name != "none" else "")
            env = {**ui.child_env(), "DSH_BENCH_FIRST_FRAME_EXIT": "1", "PYTHONHASHSEED": "0"}
            proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                                   ui.__file__, "--child", "cli", "0.0", "run"], capture_output=True, text=True,
                                  env=env, timeout=900)
            found = [line for line in proc.stderr.splitlines() if "Collected" in line]
            if not found:
                raise RuntimeError(f"callgrind run failed:\n{proc.stderr[-2000:]}")
            counts[name] = int(found[-1].split()[-1]) / 1e6
        print(f"dsh-tui run to its first frame (callgrind): no plugins {counts['none']:.1f} M instructions, "
              f"5 plugins configured {counts['5 plugins']:.1f} M ({counts['5 plugins'] - counts['none']:+.1f} M)")
        return
    firsts: dict[str, list[float]] = {"none": [], "5 plugins": []}
    for _ in range(runs):
        for name in firsts:
            (config / "settings.toml").write_text(settings if name != "none" else "")
            firsts[name].append(ui.spawn("cli", "run")["first_paint"] * 1000)
    none, five = statistics.median(firsts["none"]), statistics.median(firsts["5 plugins"])
    print(f"dsh-tui run to its first paint, median of {runs} fresh processes each, interleaved:")
    print(f"  no plugins configured   {none:5.0f} ms   (range {min(firsts['none']):.0f}-{max(firsts['none']):.0f})")
    print(f"  5 plugins configured    {five:5.0f} ms   (range {min(firsts['5 plugins']):.0f}-"
          f"{max(firsts['5 plugins']):.0f})")
    print(f"  difference {five - none:+.0f} ms (target within 10 ms)")


def main(argv: list[str]) -> None:
    if argv[:1] == ["--startup"]:
        startup(int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else 9, instructions="--instructions" in argv)
        return
    steps = int(argv[0]) if argv else 5000
    chunks = int(argv[1]) if len(argv) > 1 else 50_000
    rounds = int(argv[2]) if len(argv) > 2 else 5
    asyncio.run(main_async(steps, chunks, rounds))


if __name__ == "__main__":
    main(sys.argv[1:])
