"""The OS sandbox's cost per command (docs/sandbox.md): a sandboxed ``true`` vs an unsandboxed one.

    .venv/bin/python tests/bench/bench_sandbox.py [--rounds 40]

Both go through the ``bash`` tool's process path (``run_bash``: a ``bash -c true`` with pipes, in its own
process group), interleaved round by round so that the machine's load hits both alike; the sandboxed one is
confined by the real bubblewrap under ``workspace-write`` (its command temp dir made and removed too). Prints
the median and p90 of each and the median difference (target: <= 30 ms per command). Also the one-off probe
(``bwrap ... true`` once per process).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from dsh_tui.tools import sandbox as sb  # noqa: E402
from dsh_tui.tools.bash import run_bash  # noqa: E402

TARGET_MS = 30.0


async def one(ws: str, sandbox: sb.Sandbox | None) -> float:
    cancelled = asyncio.Event()
    start = time.perf_counter()
    confined = None if sandbox is None else sandbox.confine(["bash", "-c", "true"], mode="workspace-write",
                                                               workspace=ws, cwd=ws)
    try:
        result = await run_bash("true", cwd=ws, timeout_ms=30_000, cancelled=cancelled, env={"PATH": "/usr/bin:/bin"},
                                argv=None if confined is None else confined.argv)
    finally:
        if confined is not None:
            confined.cleanup()
    elapsed = (time.perf_counter() - start) * 1000
    assert result["exitCode"] == 0, result
    return elapsed


async def bench(rounds: int) -> dict:
    t0 = time.perf_counter()
    sb._PROBES.clear()
    sandbox, note = sb.probe(sb.SandboxSettings(mode="bwrap"))
    probe_ms = (time.perf_counter() - t0) * 1000
    if sandbox is None:
        raise SystemExit(f"no sandbox here: {note}")
    with tempfile.TemporaryDirectory() as ws:
        for _ in range(3):  # warm-up
            await one(ws, None)
            await one(ws, sandbox)
        plain, boxed = [], []
        for _ in range(rounds):
            plain.append(await one(ws, None))
            boxed.append(await one(ws, sandbox))
    return {"rounds": rounds, "probe_ms": probe_ms, "plain": plain, "boxed": boxed}


def summary(values: list[float]) -> str:
    ordered = sorted(values)
    return f"median {statistics.median(ordered):.1f} ms, p90 {ordered[int(len(ordered) * 0.9) - 1]:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    out = asyncio.run(bench(args.rounds))
    diff = statistics.median(b - p for b, p in zip(out["boxed"], out["plain"], strict=True))
    try:
        load = Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        load = "?"
    print(f"probe (once per process): {out['probe_ms']:.1f} ms")
    print(f"unsandboxed true: {summary(out['plain'])}")
    print(f"sandboxed true:   {summary(out['boxed'])}")
    print(f"overhead per command: median {diff:.1f} ms (target <= {TARGET_MS:.0f} ms) "
          f"{'OK' if diff <= TARGET_MS else 'OVER'}; {out['rounds']} rounds, load {load}")


if __name__ == "__main__":
    main()
