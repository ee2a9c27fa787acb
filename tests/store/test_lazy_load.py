"""Cold loads keep packed rows compact (``rows.EventList``): the scanned log, the validated Session and the
torn-tail recovery read exactly as the eager expansion of the same lines, on every dsh recording."""

from __future__ import annotations

import orjson
import pytest

from dsh_tui.session import legacy, repair, rows
from dsh_tui.session.errors import DshError
from dsh_tui.store import fixture, jsonl, zstdframes
from tests.conftest import FIXTURES
from tests.store.jsonl_helpers import fixture_events, header, write_log


def _logs() -> list:
    out = []
    for path in sorted(FIXTURES.rglob("*.jsonl")):
        with open(path, "rb") as f:
            if f.read(17) == b'{"type":"session"':
                out.append(path)
    return out


def _eager(plain: bytes) -> list[dict]:
    """The reference: every body line parsed and expanded by the session core, one by one."""
    lines = plain.split(b"\n")[1:-1]
    return rows.expand_lines([orjson.loads(line) for line in lines])


@pytest.mark.parametrize("path", _logs(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_recording_re_stored_reads_the_same_lazily(path, tmp_path):
    log = fixture.open_log_file(path)
    events = [dict(e, time=1_700_000_000_000 + 3 * e["seq"]) for e in log.events]
    if not events:
        return
    hdr = header(session_id="lazy", cwd="/w")
    for comp in ("none", "zstd"):
        store = jsonl.JsonlStore(tmp_path / comp, comp)
        f = write_log(store, hdr, events, [40, 7])
        buf = f.read_bytes()
        prefix = jsonl.scan_buffer(buf, comp)
        eager = _eager(jsonl.decode_raw_text(buf, comp))
        assert eager == events
        lazy = prefix.events
        assert type(lazy) is rows.EventList and lazy == eager and list(reversed(lazy)) == eager[::-1]
        assert orjson.dumps(lazy.to_list()) == orjson.dumps(eager)
        assert all(lazy[i] == eager[i] for i in range(len(eager)))
        has_rows = any(rows.is_packed_row(orjson.loads(line)) for line in
                       jsonl.decode_raw_text(buf, comp).split(b"\n")[1:-1])
        assert (lazy.packed_count() > 0) == has_rows
        try:
            res = store.inspect("lazy")
        except DshError:
            continue  # a recording the validator refuses (replay-only): the decode above is what matters
        imported = legacy.import_legacy(eager, "lazy")  # the eager path: a plain list all along
        assert res.events == imported + repair.interrupted_turn_closers(imported)
        assert orjson.dumps(list(res.events)) == orjson.dumps(imported + res.closers)
        assert res.session.events[: len(res.events)] == list(res.events) and res.session.first_live_seq == len(res.events)
        assert (type(res.session.events) is rows.EventList) == has_rows


def test_a_torn_zstd_frame_recovers_packed_members_as_dicts(tmp_path):
    events = fixture_events()
    first = next(i for i, e in enumerate(events) if e["type"] == "assistant/chunk"
                 and e["data"]["chunk"]["type"] == "reasoning-delta")
    store = jsonl.JsonlStore(tmp_path, "zstd")
    path = write_log(store, header(), events, [first, len(events) - first])  # the last frame starts with a row
    data = path.read_bytes()
    fs = zstdframes.scan_frames(data)
    last_s, last_e = fs.frames[-1]
    plain_tail = zstdframes.decode_frame(data[last_s:last_e], last_s)
    assert any(rows.is_packed_row(orjson.loads(x)) for x in plain_tail.split(b"\n")[:-1])
    torn = data[:last_e - 3]  # the last frame loses its end: its complete lines are recovered
    prefix = jsonl.scan_buffer(torn, "zstd")
    assert prefix.torn is not None and prefix.torn.truncate_to == last_s
    rec = prefix.torn.recovered_events
    assert type(rec) is list and all(type(e) is dict for e in rec) and rec
    assert rec == events[first:] and prefix.events == events  # only the checksum is lost: every record is back
