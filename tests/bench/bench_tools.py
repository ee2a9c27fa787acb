"""Built-in tool throughput on a synthetic tree, against a same-run baseline.

Run: .venv/bin/python tests/bench/bench_tools.py [--files N] [--mib M]

Figures: glob '*' and grep over N small files (baseline: a bare os.walk that reads every file);
read of the last page of an M MiB log (baseline: reading and splitting the whole file);
bash round trip of `true` (baseline: the same via subprocess.run).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from dsh_tui.tools import builtin_tools  # noqa: E402
from dsh_tui.tools.base import ToolContext  # noqa: E402


def build(root: Path, files: int) -> None:
    for i in range(files):
        d = root / f"pkg{i % 50}" / f"mod{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.py").write_text("".join(f"def fn_{i}_{j}(x):\n    return x + {j}\n" for j in range(20)))
    (root / ".gitignore").write_text("pkg49/\n")
    (root / ".git").mkdir(exist_ok=True)


def timed(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--mib", type=int, default=64)
    opts = ap.parse_args()
    tools = {t.name: t for t in builtin_tools()}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        build(root, opts.files)
        log = root / "big.log"
        with open(log, "w") as fh:
            line = "x" * 99 + "\n"
            for _ in range(opts.mib * 1024 * 1024 // 100):
                fh.write(line)

        def ctx() -> ToolContext:
            return ToolContext(call_id="b", name="b", cwd=root, workspace=root, spill_dir=Path(tmp) / "spill")

        def run(name, args):
            return asyncio.run(tools[name].execute(args, ctx()))

        def baseline_walk():
            n = 0
            for dirpath, _dirs, names in os.walk(root):
                for name in names:
                    with open(os.path.join(dirpath, name), "rb") as fh:
                        n += fh.read().count(b"return x + 7\n")
            return n

        base = timed(baseline_walk)
        glob_t = timed(lambda: run("glob", {"pattern": "*.py"}))
        grep_t = timed(lambda: run("grep", {"pattern": r"return x \+ 7$"}))
        print(f"tree: {opts.files} files")
        print(f"  baseline walk+read  {base * 1000:8.1f} ms")
        print(f"  glob *.py           {glob_t * 1000:8.1f} ms  ratio {glob_t / base:5.2f}")
        print(f"  grep                {grep_t * 1000:8.1f} ms  ratio {grep_t / base:5.2f}")

        total = opts.mib * 1024 * 1024 // 100
        base = timed(lambda: len(log.read_bytes().decode().split("\n")), 2)
        read_t = timed(lambda: run("read", {"file_path": "big.log", "offset": total - 10}), 2)
        print(f"read: {opts.mib} MiB, {total} lines")
        print(f"  baseline read+split {base * 1000:8.1f} ms")
        print(f"  read last page      {read_t * 1000:8.1f} ms  ratio {read_t / base:5.2f}")

        base = timed(lambda: subprocess.run(["bash", "-c", "true"], check=True), 5)
        bash_t = timed(lambda: run("bash", {"command": "true", "description": "noop"}), 5)
        print("bash: `true`")
        print(f"  baseline subprocess {base * 1000:8.1f} ms")
        print(f"  bash tool           {bash_t * 1000:8.1f} ms  ratio {bash_t / base:5.2f}")


if __name__ == "__main__":
    main()
