"""Turn control on a long session (run: ``.venv/bin/python tests/bench/bench_turns.py [STEPS]``).

Builds a synthetic log of about 200,000 events (``tests/ui/synthetic.py``; STEPS default 2,300) and times
the rewind picker's prompt list (``runtime.turns.prompts`` over a copy of the events, as
``ui/screens/rewind.py`` does in a worker thread, so the UI loop never waits for it; target <= 100 ms at 200k
events on an idle machine) and the failed-turn lookup F5 uses (``runtime.turns.failed_prompt``, read from the
end; target <= 1 ms). The baseline, measured in the same run, is one bare pass over the events reading
each type.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def _best(fn, runs: int = 7) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main(steps: int = 2_300) -> None:
    from dsh_tui.runtime.turns import failed_prompt, prompts
    from tests.ui.synthetic import long_session

    _header, events = long_session(steps)
    n = len(events)
    # the last turn failed: what F5 finds
    events[-1] = {**events[-1], "data": {**events[-1]["data"], "reason": {"kind": "error", "error": {}}}} \
        if events[-1]["type"] == "turn/end" else events[-1]
    baseline = _best(lambda: [e["type"] for e in events])
    picker = _best(lambda: prompts(list(events)))
    failed = _best(lambda: failed_prompt(events), runs=101)
    count = len(prompts(events))
    print(f"events: {n:,}  prompts: {count:,}")
    print(f"baseline (one pass reading each type): {baseline:8.1f} ms")
    print(f"rewind picker list (copy + prompts):   {picker:8.1f} ms   target <= 100 ms")
    print(f"failed-turn lookup (from the end):     {failed:8.3f} ms   target <= 1 ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2_300)
