"""Cold loads keep packed rows compact (``rows.EventList``): the scanned log, the validated Session and the
torn-tail recovery read exactly as the eager expansion of the same lines, on every dsh recording."""

from __future__ import annotations

import orjson
import pytest

from dsh_tui.session import legacy, repair, rows
from dsh_tui.session.errors import DshError, SessionCorruptionError, SessionValidationError
from dsh_tui.store import fixture, jsonl, zstdframes
from tests.conftest import FIXTURES
from tests.store.jsonl_helpers import fixture_events, header, session_logs, write_log


def _eager(plain: bytes) -> list[dict]:
    """The reference: every body line parsed and expanded by the session core, one by one."""
    lines = plain.split(b"\n")[1:-1]
    return rows.expand_lines([orjson.loads(line) for line in lines])


@pytest.mark.parametrize("path", session_logs(), ids=lambda p: str(p.relative_to(FIXTURES)))
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
        assert res.session is None  # inspect validates without keeping a Session
        kept = jsonl.prepare(jsonl.scan_buffer(buf, comp), session_id="lazy").session  # the one load() keeps
        assert kept.events[: len(res.events)] == list(res.events) and kept.first_live_seq == len(res.events)
        assert (type(kept.events) is rows.EventList) == has_rows


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


def _raw_log_with(token: bytes, tmp_path, name: str, compression: str = "none") -> jsonl.JsonlStore:
    """A small complete log whose session/title data carries ``token`` verbatim as a number."""
    from dsh_tui.session import jsonutil

    evs = fixture_events()[:12]
    title = {"type": "session/title", "seq": len(evs), "time": 9,
             "data": {"title": "t -0.5 e-400", "messageSeqs": [], "source": {"kind": "fallback"}, "x": 12345}}
    store = jsonl.JsonlStore(tmp_path / name, compression)
    h = header(name)
    path = store.locate(h)
    path.parent.mkdir(parents=True)
    body = jsonl.encode_lines(evs + [title]).replace(b'"x":12345', b'"x":' + token)
    head = jsonutil.dumps_bytes(h) + b"\n"
    path.write_bytes(head + body if compression == "none"
                     else zstdframes.compress_frame(head) + zstdframes.compress_frame(body))
    return store


@pytest.mark.parametrize("token", [b"-0.0", b"-0e0", b"-0E+00", b"-0.000e5", b"-1e-400", b"-12.5E-0330"])
@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_a_negative_zero_float_is_refused_as_by_the_eager_session(token, compression, tmp_path):
    from dsh_tui.session.log import Session

    store = _raw_log_with(token, tmp_path, "neg", compression)
    prefix = jsonl.scan_file(store.find("neg"))
    with pytest.raises(SessionValidationError) as direct:
        Session(prefix.header, list(prefix.events))  # a plain list seed
    with pytest.raises(SessionCorruptionError) as err:
        store.inspect("neg")
    assert str(direct.value) in str(err.value) and "-0 is not lossless JSON" in str(err.value)


@pytest.mark.parametrize("token", [b"0.0", b"-0", b"-1.5", b"1e-400", b"-1e-30", b"-5e-324", b"2.5E+3"])
def test_other_numbers_load(token, tmp_path):
    store = _raw_log_with(token, tmp_path, "ok")
    res = store.inspect("ok")
    assert res.events[12]["data"]["x"] == orjson.loads(token)
    assert store.load("ok").session.events[12]["data"]["x"] == orjson.loads(token)


def test_a_lone_surrogate_line_with_an_overflowing_number_is_refused(tmp_path):
    """The fallback parser (lone surrogates) reads 1e400 as inf, which validation refuses."""
    store = _raw_log_with(b"1e400", tmp_path, "inf")
    path = store.find("inf")
    path.write_bytes(path.read_bytes().replace(b'"title":"t -0.5', b'"title":"\\ud800 t -0.5'))
    prefix = jsonl.scan_file(path)
    assert prefix.events[12]["data"]["x"] == float("inf")
    with pytest.raises(SessionCorruptionError, match="Infinity is not lossless JSON"):
        store.inspect("inf")


@pytest.mark.parametrize("type_value", [b"[]", b'{"a":1}', b"5", b"null"])
@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_an_event_whose_type_is_not_a_string_is_named_not_a_crash(type_value, compression, tmp_path):
    """A type that is not even hashable reaches validation (and its clear error) instead of a TypeError, also
    inside the open turn the crash closers walk."""
    store = jsonl.JsonlStore(tmp_path / compression, compression)
    path = write_log(store, header(session_id="odd"), fixture_events()[:12], [12])
    plain = jsonl.decode_raw_text(path.read_bytes(), compression)
    head, body = plain.split(b"\n", 1)
    body = body.replace(b'{"type":"step/start"', b'{"type":' + type_value, 1)
    assert body != plain.split(b"\n", 1)[1]
    path.write_bytes(head + b"\n" + body if compression == "none"
                     else zstdframes.compress_frame(head + b"\n") + zstdframes.compress_frame(body))
    with pytest.raises(SessionCorruptionError, match="type must be a non-empty string"):
        store.inspect("odd")


def _expected_looks(events: rows.EventList) -> tuple[list[int], list[int]]:
    plain = events.plain()
    roles = [legacy.type_role(e.get("type")) if type(e) is dict else legacy.REFUSE for e in plain]
    return ([p for p, r in enumerate(roles) if r & legacy.IMPORT], [p for p, r in enumerate(roles) if r & legacy.REFUSE])


def test_the_scanner_notes_exactly_the_events_the_legacy_passes_look_at(tmp_path):
    """Hot loop (stored form) and slow path (fixture form, rows expanded) alike, legacy and unknown types too."""
    checked = 0
    for path in session_logs():
        prefix = jsonl.scan_buffer(path.read_bytes(), None, lenient=True, projected=None)  # fixture form: slow path
        assert tuple(map(list, prefix.looks)) == _expected_looks(prefix.events), path
        checked += bool(prefix.looks[0]) + bool(prefix.looks[1])
    assert checked > 100
    evs = fixture_events()[:20]
    evs[3] = {"type": "steering/message", "seq": 3, "time": 1, "data": {"text": "x"}}  # legacy and unknown
    evs[5] = {"type": "plugin/new", "seq": 5, "time": 1, "data": {}, "ignorable": True}
    evs[6] = {"type": [], "seq": 6, "time": 1, "data": {}}
    store = jsonl.JsonlStore(tmp_path, "none")
    path = write_log(store, header(), evs, [7, 13])
    prefix = jsonl.scan_buffer(path.read_bytes(), "none")
    assert tuple(map(list, prefix.looks)) == _expected_looks(prefix.events)
    plain = prefix.events.plain()
    assert {plain[p]["seq"] for p in prefix.looks[0]} >= {3} and {plain[p]["seq"] for p in prefix.looks[1]} >= {3, 5, 6}
