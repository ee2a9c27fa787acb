"""Cold load of a large format-v4 session log (dsh 0.2's format), dsh-tui against the real dsh 0.2.

    .venv/bin/python tests/bench/bench_load_v4.py [--events 1000000] [--rounds 3] [--no-dsh] [--keep DIR]

Generates a v4 log the way dsh 0.2 writes one: the recorded ``edit`` session of the dsh 0.2 corpus
(``tests/fixtures/dsh02/edit``: a read and an edit round, each assistant message with its embedded stream)
replayed turn after turn with fresh ids, in 40-event zstd frames. Then, each round in fresh processes:

* dsh-tui ``inspect`` (read-only open: decode + crash rules + Session validation, as ``log check``, the
  browser and export do) and ``load`` (resume: the same plus the kept ``Session``), time and peak RSS;
* dsh 0.2 resuming the same file (``dsh --profile headless --session-id ID``) against a stalled Messages
  server: the time from its start until it appends its ``session/end-seed`` (the log is loaded and validated),
  minus the same for the one-turn corpus session (its start-up), and its peak RSS (``VmHWM``) at that moment.

Prints the figures and the dsh-tui / dsh ratios (docs/performance.md records them).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

CORPUS = ROOT / "tests" / "fixtures" / "dsh02" / "edit"
BATCH = 40
_SKIP = {"system/message", "request/header", "request/context", "session/title", "session/title-llm-request",
         "session-log-deepseek/delivery-accepted"}
_UUID = re.compile(r'"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"')


def _corpus() -> tuple[Path, dict, list[dict]]:
    import zstandard

    log = next(CORPUS.rglob("session.v4.jsonl.zstd"))
    with zstandard.ZstdDecompressor().stream_reader(log.open("rb")) as r:
        lines = [json.loads(x) for x in r.read().splitlines()]
    return log, lines[0], lines[1:]


def generate(root: Path, n_events: int) -> tuple[Path, str, int]:
    """A v4 log of about ``n_events`` events under ``root`` (dsh's layout); returns its path, id and count."""
    import orjson

    from dsh_tui.store import layout, zstdframes
    from dsh_tui.store.jsonl.codec import header_line

    _, header, events = _corpus()
    end = next(i for i, e in enumerate(events) if e["type"] == "turn/end")
    first = events[: end + 1]
    start = next(i for i, e in enumerate(first) if e["type"] == "turn/start") - 1  # its inbox splice
    # a turn as dsh 0.2 writes one after the first: no system prompt, request header, title or runtime-context
    # snapshot again (dsh writes those once, and again only when they change)
    template = [e for e in first[start:] if e["type"] not in _SKIP
                and not (e["type"] == "user/message" and e["data"]["source"]["kind"] == "runtime-context")]
    sid = f"session-{uuid.uuid4()}"
    first = json.loads(json.dumps(first).replace(json.dumps(header["id"]), json.dumps(sid)))  # delivery markers
    header = {**header, "id": sid}
    path = layout.log_path(root, header["cwd"], sid, "zstd", 4)
    path.parent.mkdir(parents=True)
    text = orjson.dumps(template).decode()
    n = 0
    with open(path, "wb") as f:
        f.write(zstdframes.compress_frame(header_line(header)))
        pending: list[bytes] = []

        def put(e: dict) -> None:
            nonlocal n
            pending.append(orjson.dumps(e) + b"\n")
            n += 1
            if len(pending) == BATCH:
                f.write(zstdframes.compress_frame(b"".join(pending)))
                pending.clear()

        for e in first:
            put(e)
        turn = 1
        while n < n_events:  # streamed: the generator never holds the whole log
            turn += 1
            base = n
            old_seqs = {e["seq"]: base + k for k, e in enumerate(template)}
            for k, e in enumerate(json.loads(_UUID.sub(lambda _m: f'"{uuid.uuid4()}"', text))):
                e["seq"] = base + k
                d = e["data"]
                if isinstance(d, dict) and "turn" in d:
                    d["turn"] = turn
                if "sourceEventSeqs" in e:
                    e["sourceEventSeqs"] = [old_seqs[s] for s in e["sourceEventSeqs"]]
                put(e)
        if pending:
            f.write(zstdframes.compress_frame(b"".join(pending)))
    return path, sid, n


_CHILD = """
import resource, sys, time
sys.path.insert(0, {root!r})
from dsh_tui.store.jsonl import JsonlStore
t = time.perf_counter()
store = JsonlStore({sessions!r})
res = getattr(store, {how!r})({sid!r})
dt = time.perf_counter() - t
print(dt, len(res.events), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def dsh_tui_load(sessions: Path, sid: str, how: str) -> tuple[float, int]:
    code = _CHILD.format(root=str(ROOT), sessions=str(sessions), sid=sid, how=how)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=1800, check=True)
    dt, _, rss = out.stdout.split()
    return float(dt), int(rss) // 1024


def dsh_load(home: Path, log: Path, sid: str, cwd: str) -> tuple[float, int]:
    """Seconds until dsh 0.2 appends its ``session/end-seed`` to ``log``, and its VmHWM (MiB) then."""
    from tests.interop.dsh02 import install
    from tests.interop.dsh02_corpus import _env, stall
    from tests.llm.sse_server import ScriptServer

    size = log.stat().st_size
    Path(cwd).mkdir(parents=True, exist_ok=True)
    with ScriptServer() as server:
        server.push(stall())
        t = time.perf_counter()
        proc = subprocess.Popen([str(install()), "--profile", "headless", "--session-id", sid, "go on"], cwd=cwd,
                                env=_env(home, server.base_url), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        hwm = 0
        try:
            while log.stat().st_size == size:
                if proc.poll() is not None:
                    raise RuntimeError(f"dsh exited {proc.returncode} before loading the session")
                hwm = max(hwm, _hwm(proc.pid))
                time.sleep(0.005)
            dt = time.perf_counter() - t
            hwm = max(hwm, _hwm(proc.pid))
        finally:
            proc.kill()
            proc.wait()
    return dt, hwm // 1024


def _hwm(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-dsh", action="store_true")
    ap.add_argument("--keep", type=Path)
    args = ap.parse_args(argv)
    tmp = Path(args.keep or tempfile.mkdtemp(prefix="bench-v4-"))
    try:
        home = tmp / "home"
        sessions = home / "sessions"
        t = time.perf_counter()
        log, sid, n = generate(sessions, args.events)
        print(f"generated {n:,} events, {log.stat().st_size / 2**20:.1f} MiB zstd in {time.perf_counter() - t:.1f} s",
              flush=True)
        _, small_header, _ = _corpus()
        cwd = small_header["cwd"]
        rows = []
        for r in range(args.rounds):
            row = {}
            row["inspect"] = dsh_tui_load(sessions, sid, "inspect")
            row["load"] = dsh_tui_load(sessions, sid, "load")
            if not args.no_dsh:
                work = tmp / f"dsh{r}"
                shutil.copytree(home, work)
                big = next(work.rglob(f"{sid}/session.v4.jsonl.zstd"))
                row["dsh"] = dsh_load(work, big, sid, cwd)
                small_home = tmp / f"small{r}"
                shutil.copytree(CORPUS / "sessions", small_home / "sessions")
                row["dsh_small"] = dsh_load(small_home, next(small_home.rglob("session.v4.jsonl.zstd")),
                                            small_header["id"], cwd)
                shutil.rmtree(work)
                shutil.rmtree(small_home)
            rows.append(row)
            print(json.dumps(row), flush=True)
        med = {k: (statistics.median(r[k][0] for r in rows), statistics.median(r[k][1] for r in rows))
               for k in rows[0]}
        print(f"dsh-tui inspect: {med['inspect'][0]:.2f} s, {med['inspect'][1]} MiB peak RSS")
        print(f"dsh-tui load:    {med['load'][0]:.2f} s, {med['load'][1]} MiB peak RSS")
        if "dsh" in med:
            net = med["dsh"][0] - med["dsh_small"][0]
            print(f"dsh 0.2 resume to end-seed: {med['dsh'][0]:.2f} s ({net:.2f} s beyond its start-up), "
                  f"{med['dsh'][1]} MiB peak RSS")
            print(f"ratios: inspect time {med['inspect'][0] / net:.2f}x, load time {med['load'][0] / net:.2f}x, "
                  f"inspect RSS {med['inspect'][1] / med['dsh'][1]:.2f}x, load RSS {med['load'][1] / med['dsh'][1]:.2f}x")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
