"""Per-turn snapshot cost (run: ``.venv/bin/python tests/bench/bench_snapshots.py [FILES] [ROUNDS]``).

A workspace of FILES (default 10,000) small files in 100 folders, a ``.gitignore`` and one ignored folder;
the store of the ``workspace-changes`` built-in (``dsh_tui/extensions/undo/store.py``). Prints: the first
snapshot (every file hashed once), a snapshot with nothing changed, one after a command changed 10 files and
created 5, and ``changes()`` between the two (target: <= 100 ms per turn snapshot on 10k files). Medians of
ROUNDS (default 7).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from dsh_tui.extensions.undo.store import SnapshotStore  # noqa: E402


def make_workspace(root: Path, files: int) -> None:
    for i in range(files):
        d = root / f"pkg{i % 100:03d}"
        d.mkdir(exist_ok=True)
        (d / f"mod{i:05d}.py").write_text(f"# module {i}\n" + "x = 1\n" * (i % 40), encoding="utf-8")
    (root / ".gitignore").write_text("build/\n", encoding="utf-8")
    (root / "build").mkdir()
    for i in range(200):
        (root / "build" / f"o{i}.bin").write_bytes(b"\0" * 100)


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    with tempfile.TemporaryDirectory() as tmp:
        ws, base = Path(tmp) / "ws", Path(tmp) / "store"
        ws.mkdir()
        make_workspace(ws, files)
        store = SnapshotStore(ws, base)
        t = time.perf_counter()
        first = store.snapshot()
        cold = time.perf_counter() - t
        idle, changed, diff = [], [], []
        for r in range(rounds):
            t = time.perf_counter()
            before = store.snapshot()
            idle.append(time.perf_counter() - t)
            for i in range(10):
                (ws / f"pkg{i:03d}" / f"mod{i:05d}.py").write_text(f"changed {r}\n", encoding="utf-8")
            for i in range(5):
                (ws / f"new{r}_{i}.txt").write_text("new\n", encoding="utf-8")
            t = time.perf_counter()
            after = store.snapshot()
            changed.append(time.perf_counter() - t)
            t = time.perf_counter()
            listed = store.changes(before.tree, after.tree)
            diff.append(time.perf_counter() - t)
            assert len(listed) == 15, len(listed)
        del first
        ms = lambda xs: f"{statistics.median(xs) * 1000:.1f} ms"  # noqa: E731
        print(f"{files} files: first snapshot {cold * 1000:.0f} ms; unchanged {ms(idle)}; "
              f"10 changed + 5 new {ms(changed)}; changes() {ms(diff)} (medians of {rounds}; target <= 100 ms)")


if __name__ == "__main__":
    main()
