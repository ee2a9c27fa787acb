"""The app attaches a loaded format-v4 session without expanding its log (issue #27's memory bar, in the
app): the bridge hands the UI a compact snapshot of the events, which folds into the same transcript as the
parsed events. A real v4 log (the bench's generator, from the dsh 0.2 corpus) loaded through the JSONL store;
the harness is a holder of that real Session (``Bridge.attach`` reads nothing else of it)."""

from __future__ import annotations

from types import SimpleNamespace

import orjson
import zstandard

from dsh_tui.session.rows import EventList
from dsh_tui.session.transcript import TranscriptFold
from dsh_tui.session.transcript.fold import tail_start
from dsh_tui.store.jsonl import JsonlStore
from dsh_tui.ui.bridge import ATTACH, Bridge
from tests.bench.bench_load_v4 import generate


def test_attach_of_a_loaded_v4_session_stays_compact(tmp_path):
    path, sid, n = generate(tmp_path / "sessions", 2000)
    with zstandard.ZstdDecompressor().stream_reader(path.open("rb")) as r:
        eager = [orjson.loads(x) for x in r.read().splitlines()[1:]]
    res = JsonlStore(str(tmp_path / "sessions")).load(sid)
    bridge = Bridge(lambda _kind: None)
    bridge.attach(SimpleNamespace(session=res.session))
    events, _ = bridge.drain()
    attached = events[0]
    assert attached["type"] == ATTACH
    snap = attached["events"]
    assert type(snap) is EventList and snap.has_blocks()  # not a list of every event parsed
    assert snap[:n] == eager and len(snap) == n + 1
    res.session.append("session/end-seed", {})  # a later append is not in the snapshot (it comes as an event)
    assert len(snap) == n + 1
    bridge.stop()

    def fold(evs):
        f = TranscriptFold(res.header)
        for e in evs:
            f.apply(e)
        return [(type(i).__name__, repr(getattr(i, "text", None))) for i in f.items]

    assert fold(snap[:n]) == fold(eager)
    assert tail_start(snap, 200) == tail_start(eager, 200)
