"""Session-layer benchmark: in-memory validated appends, derive_messages cost at 1k vs 1M events, seed
validation of a 1M-event log, pack/expand throughput. Every figure is printed beside a baseline measured in
the same run (bare list appends / iteration of the same dicts).

    .venv/bin/python tests/bench/bench_session.py            # full size (1M events)
    .venv/bin/python tests/bench/bench_session.py --small    # tiny run (used by the test suite)
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from dsh_tui.session import rows  # noqa: E402
from dsh_tui.session.headers import make_header  # noqa: E402
from dsh_tui.session.log import Session  # noqa: E402

MSG_EVERY = 50  # one surface message per 50 events (chunks dominate real logs)


def best(fn, repeat=3):
    out = []
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def chunk_data(i):
    return {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": f"tok{i}"}}


def user_msg(i):
    return {"content": [{"type": "text", "text": f"m{i}"}], "source": {"kind": "user"}, "role": "user", "id": f"u{i}"}


def grow(s: Session, n: int) -> None:
    """Append until the log has n events: chunks, with a user message every MSG_EVERY events."""
    i = len(s.events)
    while i < n:
        if i % MSG_EVERY == 0:
            s.append("user/message", user_msg(i), surface_op="append")
        else:
            s.append("assistant/chunk", chunk_data(i))
        i += 1


def new_session() -> Session:
    s = Session(make_header("bench", cwd="/bench"), clock=lambda: 1_700_000_000_000)
    s.append("turn/start", {"turn": 1})
    s.append("step/start", {"turn": 1, "step": 1})
    return s


def bench_append(n: int) -> dict:
    datas = [chunk_data(i) for i in range(n)]

    def with_session():
        s = new_session()
        ap = s.append
        for d in datas:
            ap("assistant/chunk", d)

    def baseline():
        lst = []
        ap = lst.append
        for i, d in enumerate(datas):
            ap({"type": "assistant/chunk", "seq": i, "time": 1_700_000_000_000, "data": d})

    t_s = best(with_session)
    t_b = best(baseline)
    return {"n": n, "session_eps": n / t_s, "baseline_eps": n / t_b, "ratio": t_s / t_b}


def per_append_cost(s: Session, k: int) -> tuple[float, float, float]:
    """(µs per append of a chunk, µs per append of a message + derive_messages(), µs of a bare list copy of the
    same number of messages (what the earlier copying derive_messages paid on top), µs per append of a message +
    derive_messages().to_list()) measured at the session's current size; the session grows by 3k events."""
    base = len(s.events)
    t = time.perf_counter()
    for i in range(k):
        s.append("assistant/chunk", chunk_data(base + i))
    chunk_us = (time.perf_counter() - t) / k * 1e6
    s.derive_messages()
    t = time.perf_counter()
    for i in range(k):
        s.append("user/message", user_msg(base + k + i), surface_op="append")
        s.derive_messages()
    msg_us = (time.perf_counter() - t) / k * 1e6
    msgs = s.derive_messages().to_list()
    t = time.perf_counter()
    for _ in range(k):
        list(msgs)
    copy_us = (time.perf_counter() - t) / k * 1e6
    base = len(s.events)
    t = time.perf_counter()
    for i in range(k):
        s.append("user/message", user_msg(base + i), surface_op="append")
        s.derive_messages().to_list()
    list_us = (time.perf_counter() - t) / k * 1e6
    return chunk_us, msg_us, copy_us, list_us


def bench_flat(small_n: int, big_n: int, k: int, rounds: int = 5) -> dict:
    """Both sessions are built first; the per-append measurements then alternate between them and the best
    round of each is kept (the machine is shared: alternating keeps load drift out of the ratio)."""
    small = new_session()
    grow(small, small_n)
    big = new_session()
    grow(big, big_n)
    res_small, res_big = [], []
    for _ in range(rounds):
        gc.collect()
        res_small.append(per_append_cost(small, k))
        gc.collect()
        res_big.append(per_append_cost(big, k))

    def best_of(res):
        return tuple(min(r[i] for r in res) for i in range(4))

    c1, m1, cp1, v1 = best_of(res_small)
    c2, m2, cp2, v2 = best_of(res_big)
    return {"small": small_n, "big": big_n, "chunk_us": (c1, c2), "msg_derive_us": (m1, m2), "copy_us": (cp1, cp2),
            "msg_list_us": (v1, v2),
            "messages_big": len(big.derive_messages())}


def seed_events(n: int) -> list[dict]:
    evs = [{"type": "turn/start", "seq": 0, "time": 0, "data": {"turn": 1}},
           {"type": "step/start", "seq": 1, "time": 0, "data": {"turn": 1, "step": 1}}]
    for i in range(2, n):
        if i % MSG_EVERY == 0:
            evs.append({"type": "user/message", "seq": i, "time": i, "data": user_msg(i), "surfaceOp": "append"})
        else:
            evs.append({"type": "assistant/chunk", "seq": i, "time": i, "data": chunk_data(i)})
    return evs


def bench_seed(n: int) -> dict:
    evs = seed_events(n)
    header = make_header("bench", cwd="/bench")
    t_s = best(lambda: Session(header, evs, clock=lambda: 0))

    def baseline():
        lst = []
        ap = lst.append
        for e in evs:
            ap(e)

    t_b = best(baseline)
    packed = rows.pack_batch(evs)
    t_p = best(lambda: rows.pack_batch(evs))
    t_x = best(lambda: rows.expand_lines(packed))
    flat, runs = rows.expand_lines_with_runs(packed)
    t_r = best(lambda: Session(header, flat, clock=lambda: 0, packed_runs=runs))
    return {"n": n, "seed_s": t_s, "baseline_s": t_b, "ratio": t_s / t_b, "pack_s": t_p, "expand_s": t_x,
            "lines": len(packed), "runs_s": t_r, "runs": len(runs)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="tiny sizes (smoke run)")
    args = ap.parse_args(argv)
    n_append, small, big, k, n_seed = (2_000, 500, 5_000, 100, 3_000) if args.small else \
        (200_000, 1_000, 1_000_000, 2_000, 1_000_000)

    a = bench_append(n_append)
    print(f"append (validated, in memory): {a['n']:,} assistant/chunk events: {a['session_eps']:,.0f} events/s; "
          f"baseline bare list append of the same dicts {a['baseline_eps']:,.0f}/s; ratio {a['ratio']:.2f}x slower")
    f = bench_flat(small, big, k)
    c1, c2 = f["chunk_us"]
    m1, m2 = f["msg_derive_us"]
    p1, p2 = f["copy_us"]
    print(f"per-append cost at {small:,} vs {big:,} events (k={k}):")
    print(f"  append chunk:                 {c1:7.2f} µs vs {c2:7.2f} µs  ratio {c2 / c1:.2f}")
    print(f"  append message + derive_messages() (O(1) snapshot): {m1:7.2f} µs vs {m2:7.2f} µs  ratio {m2 / m1:.2f} "
          f"(target <= 1.5)")
    v1, v2 = f["msg_list_us"]
    print(f"  reference: append message + derive_messages().to_list() (a real list): {v1:7.2f} µs vs {v2:7.2f} µs  "
          f"ratio {v2 / v1:.2f}; of which the bare list() copy of the {f['messages_big']:,} messages: "
          f"{p1:.2f} µs vs {p2:.2f} µs")
    s = bench_seed(n_seed)
    print(f"seed validation (Session(header, seed)) of {s['n']:,} events: {s['seed_s']:.3f} s "
          f"({s['n'] / s['seed_s']:,.0f} events/s); baseline bare iteration {s['baseline_s']:.3f} s; "
          f"ratio {s['ratio']:.1f}x")
    print(f"  same log with packed_runs ({s['runs']:,} decoded rows trusted): {s['runs_s']:.3f} s "
          f"({s['n'] / s['runs_s']:,.0f} events/s); ratio {s['runs_s'] / s['baseline_s']:.1f}x the bare iteration")
    print(f"pack_batch: {s['pack_s']:.3f} s -> {s['lines']:,} lines; expand_lines: {s['expand_s']:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
