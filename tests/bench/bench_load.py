"""Cold load of a large session log, raw and zstd, against a same-run baseline and the real dsh.

    .venv/bin/python tests/bench/bench_load.py [--events 1000000] [--repeat 3] [--rounds 5] [--no-dsh] [--keep DIR]

Generates a realistic log (the recorded ``tool-call-turn`` round — reasoning/text/tool-call chunk
runs packed into rows, tool rounds, messages — replayed turn after turn with fresh ids, written in
40-event batches exactly as the store writes them: one zstd frame per batch), then measures, each in
a fresh subprocess (peak RSS from ``getrusage(RUSAGE_CHILDREN)`` of a one-child wrapper):

* baseline: bare ``orjson.loads`` / ``json.loads`` of every plaintext line of the raw file;
* dsh-tui decode: ``scan_file`` (frames, rows validated and kept compact as ``rows.EventList`` slots,
  seq checked, torn/corrupt rules);
* dsh-tui inspect: ``JsonlStore.inspect`` (decode + legacy import + closers + Session validation);
* dsh: ``load.mjs --inspect --time`` on the same files when the interop peer is installed; then
  ``--rounds`` head-to-head rounds, each one dsh-tui load and one dsh load back to back (alternating which
  goes first), whose per-round ratios are robust to a machine whose speed drifts during the run.

Prints logical events/s, MB/s, peak RSS and the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SESSION_ID = "bench-session"
CWD = "/bench/project"
BATCH = 40


def _template() -> list[dict]:
    from tests.store.jsonl_helpers import fixture_events

    return fixture_events("tool-call-turn")


_ID_RE = re.compile(r'"(call_[A-Za-z0-9_]+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"')


def generate(raw_root: Path, zstd_root: Path | None, n_events: int) -> tuple[Path, Path | None, int]:
    """Write the same log to a raw and (optionally) a zstd root; returns paths and the event count."""
    import orjson

    from dsh_tui.session.headers import make_header
    from dsh_tui.store import jsonl

    template = _template()
    text = orjson.dumps(template).decode()
    text = text.replace('"system":"{{system}}"', '"system":"You are a coding agent."')
    text = text.replace('"tools":"{{tools}}"', '"tools":[]')
    ids = sorted(set(_ID_RE.findall(text)))
    hdr = make_header(SESSION_ID, cwd=CWD, created_at=1_760_000_000_000)
    targets = [(jsonl.JsonlStore(raw_root, "none"), "none")]
    if zstd_root is not None:
        targets.append((jsonl.JsonlStore(zstd_root, "zstd"), "zstd"))
    from dsh_tui.store import zstdframes

    files = []
    for store, comp in targets:
        path = store.locate(hdr)
        path.parent.mkdir(parents=True, exist_ok=True)
        f = open(path, "wb")  # noqa: SIM115 - closed below, after every batch is written
        f.write(jsonl.header_line(hdr) if comp == "none" else zstdframes.compress_frame(jsonl.header_line(hdr)))
        files.append((f, comp))
    seq = 0
    turn = 0
    t = 1_760_000_000_000
    pending: list[dict] = []
    while seq < n_events:
        turn += 1
        per_turn = text
        for old in ids:
            per_turn = per_turn.replace(f'"{old}"', f'"{old}-{turn}"')
        per_turn = re.sub(r'"turn":1([,}])', rf'"turn":{turn}\1', per_turn)
        base = seq
        for ev in orjson.loads(per_turn):
            ev["seq"] = seq
            t += 3
            ev["time"] = t
            if "sourceEventSeqs" in ev:
                ev["sourceEventSeqs"] = [s + base for s in ev["sourceEventSeqs"]]
            if ev["type"] == "session/title":
                ev["data"]["messageSeqs"] = [s + base for s in ev["data"]["messageSeqs"]]
            pending.append(ev)
            seq += 1
            if len(pending) == BATCH:
                for f, comp in files:
                    f.write(jsonl.encode_batch(pending, comp))
                pending = []
    if pending:
        for f, comp in files:
            f.write(jsonl.encode_batch(pending, comp))
    paths = []
    for f, _ in files:
        paths.append(Path(f.name))
        f.close()
    return paths[0], (paths[1] if len(paths) > 1 else None), seq


# --------------------------------------------------------------------------------- measurements


def _measure_child(kind: str, path: str, repeat: int) -> None:
    """Runs inside a fresh interpreter; prints {"seconds": best, "events": n}."""
    best = float("inf")
    n = 0
    for _ in range(repeat):
        if kind == "baseline-orjson":
            import orjson

            t0 = time.perf_counter()
            with open(path, "rb") as f:
                data = f.read()
            parts = data.split(b"\n")
            parts.pop()
            for line in parts:
                orjson.loads(line)
            n = len(parts) - 1
            elapsed = time.perf_counter() - t0
            del parts, data
        elif kind == "baseline-json":
            t0 = time.perf_counter()
            with open(path, "rb") as f:
                lines = f.read().decode("utf-8").split("\n")
            lines.pop()
            for line in lines:
                json.loads(line)
            n = len(lines) - 1
            elapsed = time.perf_counter() - t0
            del lines
        elif kind == "decode":
            from dsh_tui.store import jsonl

            t0 = time.perf_counter()
            prefix = jsonl.scan_file(Path(path))
            n = len(prefix.events)
            elapsed = time.perf_counter() - t0
            del prefix
        elif kind == "inspect":
            from dsh_tui.session import log, repair  # noqa: F401 - imported by a load on first use
            from dsh_tui.store import jsonl

            # the modules a load imports on first use are imported before the clock starts, as dsh's timer
            # starts after its modules are loaded (they cost 20-40 ms once per process, not per load)
            comp = "zstd" if path.endswith(".zstd") else "none"
            root = Path(path).parents[2]
            t0 = time.perf_counter()
            res = jsonl.JsonlStore(root, comp).inspect(SESSION_ID)
            n = len(res.events)
            elapsed = time.perf_counter() - t0
            del res
        else:
            raise SystemExit(f"unknown kind {kind}")
        best = min(best, elapsed)  # freeing the result is not part of the load (dsh's timer excludes it too)
    print(json.dumps({"seconds": best, "events": n}))


def _run_with_rss(argv: list[str], cwd: Path | None = None) -> tuple[str, int]:
    """Run argv as the only child of a fresh wrapper; returns (child stdout, child peak RSS bytes)."""
    wrapper = (
        "import resource, subprocess, sys, json\n"
        "p = subprocess.run(json.loads(sys.argv[1]), capture_output=True, text=True, cwd=sys.argv[2] or None)\n"
        "sys.stderr.write(p.stderr)\n"
        "print(json.dumps({'out': p.stdout, 'rc': p.returncode,"
        " 'rss': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))\n"
    )
    out = subprocess.run([sys.executable, "-c", wrapper, json.dumps(argv), str(cwd or "")],
                         capture_output=True, text=True, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    if res["rc"] not in (0,):
        raise RuntimeError(f"{argv[:3]} failed: {out.stderr[-2000:]}")
    return res["out"], res["rss"]


def measure(kind: str, path: Path, repeat: int) -> dict:
    out, rss = _run_with_rss([sys.executable, __file__, "--child", kind, str(path), "--repeat", str(repeat)], ROOT)
    res = json.loads(out.strip().splitlines()[-1])
    res["rss"] = rss
    return res


def measure_dsh(root: Path, repeat: int) -> dict | None:
    try:
        from tests.interop.peer import PeerUnavailable, install

        peer_dir = install()
    except (PeerUnavailable, OSError) as err:
        print(f"  (dsh peer unavailable: {err})")
        return None
    node = peer_dir / "node_modules" / ".bin" / "node"
    out, rss = _run_with_rss([str(node), str(peer_dir / "load.mjs"), "--root", str(root), "--inspect", "--time",
                              "--repeat", str(repeat)], peer_dir)
    summary = json.loads(out.strip().splitlines()[0])
    if not summary.get("ok"):
        raise RuntimeError(f"dsh failed to load the bench log: {summary}")
    return {"seconds": summary["ms"] / 1000, "events": summary["events"], "rss": rss}


def head_to_head(path: Path, root: Path, rounds: int) -> list[tuple[dict, dict]]:
    """``rounds`` single loads of dsh-tui and dsh, interleaved (the order alternates), as (ours, dsh) results:
    a machine whose speed drifts during the run moves both sides of a round alike, and a process that loads
    once shows the peak RSS of one load (dsh's --repeat keeps earlier loads' garbage on its heap)."""
    pairs = []
    for r in range(rounds):
        res: dict[str, dict] = {}
        for who in (("ours", "dsh") if r % 2 == 0 else ("dsh", "ours")):
            if who == "ours":
                res[who] = measure("inspect", path, 1)
            else:
                d = measure_dsh(root, 1)
                if d is None:
                    return pairs
                res[who] = d
        pairs.append((res["ours"], res["dsh"]))
    return pairs


def _fmt(label: str, res: dict, size: int, baseline: float | None) -> str:
    eps = res["events"] / res["seconds"] if res["seconds"] else float("inf")
    ratio = f"  x{res['seconds'] / baseline:5.2f} of baseline" if baseline else ""
    return (f"  {label:<28} {res['seconds'] * 1000:8.0f} ms  {eps / 1e3:8.0f}k ev/s  "
            f"{size / 1e6 / res['seconds']:7.1f} MB/s  peak RSS {res['rss'] / 2**20:6.0f} MiB{ratio}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-dsh", action="store_true")
    ap.add_argument("--rounds", type=int, default=5,
                    help="interleaved dsh-tui/dsh load pairs per encoding (0: none)")
    ap.add_argument("--keep", type=Path, default=None, help="generate into DIR and keep it")
    ap.add_argument("--child", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _measure_child(args.child[0], args.child[1], args.repeat)
        return 0
    tmp = args.keep or Path(tempfile.mkdtemp(prefix="dsh-tui-bench-"))
    raw_root, zstd_root = tmp / "raw", tmp / "zstd"
    t0 = time.perf_counter()
    raw, zst, n = generate(raw_root, zstd_root, args.events)
    lines = raw.read_bytes().count(b"\n")
    print(f"generated {n:,} logical events in {lines:,} lines ({time.perf_counter() - t0:.1f} s): "
          f"raw {raw.stat().st_size / 1e6:.1f} MB, zstd {zst.stat().st_size / 1e6:.1f} MB")
    size = raw.stat().st_size  # MB/s are plaintext MB/s for both encodings
    base = measure("baseline-orjson", raw, args.repeat)
    base["events"] = n  # per logical event, for comparison
    print("baseline (same plaintext lines, this run):")
    print(_fmt("orjson.loads per line", base, size, None))
    js = measure("baseline-json", raw, args.repeat)
    js["events"] = n
    print(_fmt("json.loads per line", js, size, base["seconds"]))
    results = {}
    for comp, path in (("raw", raw), ("zstd", zst)):
        print(f"{comp}:")
        for kind in ("decode", "inspect"):
            res = measure(kind, path, args.repeat)
            assert res["events"] >= n, res
            results[(comp, kind)] = res
            print(_fmt(f"dsh-tui {kind}", res, size, base["seconds"]))
        if not args.no_dsh:
            root = raw_root if comp == "raw" else zstd_root
            d = measure_dsh(root, args.repeat)
            if d is not None:
                print(_fmt("dsh load.mjs --inspect", d, size, base["seconds"]))
                ours = results[(comp, "inspect")]
                # (dsh's peak RSS over --repeat loads holds earlier loads' garbage: compare RSS head to head)
                print(f"  ratio dsh-tui inspect / dsh, best of {args.repeat}: time x{ours['seconds'] / d['seconds']:.2f}")
                pairs = head_to_head(path, root, args.rounds)
                if pairs:
                    ratios = sorted(a["seconds"] / b["seconds"] for a, b in pairs)
                    print(f"  head to head, {len(pairs)} interleaved rounds of one load each (dsh-tui s / dsh s): "
                          + ", ".join(f"{a['seconds']:.2f}/{b['seconds']:.2f}" for a, b in pairs))
                    print(f"  time ratio per round: median x{statistics.median(ratios):.2f}, "
                          f"range x{ratios[0]:.2f}..x{ratios[-1]:.2f}")
                    ours_rss = statistics.median(a["rss"] for a, _ in pairs)
                    dsh_rss = statistics.median(b["rss"] for _, b in pairs)
                    print(f"  peak RSS of one load, median: dsh-tui {ours_rss / 2**20:.0f} MiB, "
                          f"dsh {dsh_rss / 2**20:.0f} MiB: x{ours_rss / dsh_rss:.2f}")
    if args.keep is None:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
