"""SIGKILL crash campaign: >= 200 trials per backend (raw JSONL, zstd JSONL, SQLite).

    .venv/bin/python tests/bench/bench_crash.py [--trials 200] [--backends none,zstd,sqlite] [--seed 1] [--dsh]

Each trial runs tests/store/crash_child.py (a scripted session through the real writer and checkpoints) and
kills it with SIGKILL at a random milestone; the parent applies the same checks as tests/store/test_crash.py
(every flushed event present and unchanged, tail balanced by exactly the closers, repair committed once).
Prints, per backend: trials, failures, how many logs needed closers / a torn-tail cut, kills that landed in a
tool body or a model request, and the mean child run time beside the same-run baseline of a child that
finishes without being killed. With ``--dsh`` (JSONL backends), real dsh (the interop peer) also repairs an
untouched copy of every crashed log, and its repaired events must equal dsh-tui's.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.store.test_crash import check_trial, run_trial  # noqa: E402


def campaign(backend: str, trials: int, seed: int, peer=None) -> dict:
    rng = random.Random(seed)
    stats = {"trials": 0, "failures": 0, "repaired": 0, "closers": 0, "truncated": 0, "in_tool": 0,
             "in_request": 0, "empty": 0, "finished": 0, "max_durable": 0, "secs": 0.0, "dsh_checked": 0}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(trials):
            root = Path(tmp) / f"t{i}"
            t0 = time.perf_counter()
            trial = run_trial(root, backend, rng.randrange(1 << 30))
            stats["secs"] += time.perf_counter() - t0
            stats["trials"] += 1
            theirs = Path(tmp) / f"dsh{i}"
            if peer is not None and root.exists():
                shutil.copytree(root, theirs)
            try:
                res = check_trial(trial)
                if peer is not None and res is not None:
                    report = peer.load(theirs, dump=True)
                    assert report.returncode == 0, report.sessions
                    assert report.events[trial.session_id] == res.events, "dsh repaired differently"
                    stats["dsh_checked"] += 1
            except Exception:  # noqa: BLE001 - report and keep counting
                stats["failures"] += 1
                print(f"FAIL {backend} trial {i}: killed after {trial.killed_after!r}", file=sys.stderr)
                traceback.print_exc()
                continue
            killed = trial.killed_after or ""
            stats["in_tool"] += killed.startswith("tool")
            stats["in_request"] += killed.startswith("request")
            stats["finished"] += trial.finished
            if res is None:
                stats["empty"] += 1
                continue
            stats["repaired"] += res.repaired
            stats["closers"] += bool(res.closers)
            stats["truncated"] += bool(res.truncated_bytes)
            stats["max_durable"] = max(stats["max_durable"], trial.durable[0] if trial.durable else 0)
    return stats


def baseline(backend: str, n: int = 5) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        for i in range(n):
            run_trial(Path(tmp) / f"b{i}", backend, 1000 + i, kill_at="never")
        return (time.perf_counter() - t0) / n


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--backends", default="none,zstd,sqlite")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dsh", action="store_true", help="also let real dsh repair each JSONL crash log")
    args = ap.parse_args()
    peer = None
    if args.dsh:
        from tests.interop.peer import get_peer

        peer = get_peer()
    bad = 0
    for backend in args.backends.split(","):
        base = baseline(backend)
        s = campaign(backend, args.trials, args.seed, peer if backend != "sqlite" else None)
        mean = s["secs"] / max(1, s["trials"])
        print(
            f"{backend:6s} trials={s['trials']} failures={s['failures']} repaired={s['repaired']} "
            f"with_closers={s['closers']} torn_cut={s['truncated']} killed_in_tool={s['in_tool']} "
            f"killed_in_request={s['in_request']} nothing_durable={s['empty']} ran_to_end={s['finished']} "
            f"max_durable_events={s['max_durable']} dsh_agreed={s['dsh_checked']} mean_trial={mean * 1000:.0f}ms "
            f"baseline_full_run={base * 1000:.0f}ms ratio={mean / base:.2f}",
            flush=True,
        )
        bad += s["failures"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
