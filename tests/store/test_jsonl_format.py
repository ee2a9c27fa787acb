"""JSONL storage: layout, zstd frames, the line scanner (torn vs corrupt), the write path."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap

import orjson
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_tui.session import rows
from dsh_tui.session.errors import SessionCorruptionError, SessionFormatUnsupportedError
from dsh_tui.store import jsonl, layout, zstdframes
from tests.store.jsonl_helpers import fixture_events, header, line_ends, write_log

# ---------------------------------------------------------------------------------------- layout


@pytest.mark.parametrize(
    ("raw", "encoded"),
    [
        ("abc-DEF_1.2", "abc-DEF_1.2"),
        (".", "~002E"),
        ("..", "~002E~002E"),
        ("...", "..."),
        ("a/b", "a~002Fb"),
        ("~", "~007E"),
        ("é", "~00E9"),
        ("😀", "~D83D~DE00"),  # non-BMP: two UTF-16 code units
        ("x\ud800y", "x~D800y"),  # lone surrogate survives
        ("../etc", "..~002Fetc"),
        ("a b\x00", "a~0020b~0000"),
    ],
)
def test_encode_segment_matches_dsh(raw, encoded):
    assert layout.encode_segment(raw) == encoded
    assert layout.decode_segment(encoded) == raw


def test_encode_segment_rejects_empty():
    with pytest.raises(layout.LayoutError):
        layout.encode_segment("")


@pytest.mark.parametrize(
    ("cwd", "key"),
    [
        ("/home/me/proj", "--home-me-proj--"),
        ("/", "--root--"),
        ("///a//b", "--a-b--"),
        ("C:\\Users\\me", "--C-Users-me--"),
        ("/a-b/c", "--a-b-c--"),
        ("/a/b-c", "--a-b-c--"),  # lossy by design
        ("/-x", "--x--"),  # every leading '-' is stripped
        ("/tmp/é~", "--tmp-~00E9~007E--"),
        ("/😀", "--~D83D~DE00--"),
    ],
)
def test_project_key_matches_dsh(cwd, key):
    assert layout.project_key(cwd) == key


def test_project_key_is_bounded():
    key = layout.project_key("/" + "a" * 400)
    assert key == "--" + "a" * 251 + "--"


def test_log_path_layout(tmp_path):
    assert layout.log_path(tmp_path, "/w/p", "id/1", "zstd") == tmp_path / "--w-p--" / "id~002F1" / "session.jsonl.zstd"
    assert layout.log_path(tmp_path, None, "x", "none") == tmp_path / "_no-cwd" / "x" / "session.jsonl"


# ------------------------------------------------------------------------------------ zstd frames


def test_frame_scanner_finds_every_frame_and_torn_starts():
    frames = [zstdframes.compress_frame(b'{"a":%d}\n' % i * (i + 1)) for i in range(4)]
    buf = b"".join(frames)
    scan = zstdframes.scan_frames(buf)
    ends = []
    off = 0
    for f in frames:
        ends.append((off, off + len(f)))
        off += len(f)
    assert scan.frames == ends and scan.torn_start is None
    for cut in range(len(buf)):
        s = zstdframes.scan_frames(buf[:cut])
        complete = [r for r in ends if r[1] <= cut]
        assert s.frames == complete
        expect_torn = None if cut == (complete[-1][1] if complete else 0) else (complete[-1][1] if complete else 0)
        assert s.torn_start == expect_torn


def test_frames_have_checksum_and_decode():
    frame = zstdframes.compress_frame(b"hello\n")
    assert frame[:4] == b"\x28\xb5\x2f\xfd"
    assert frame[4] & 0x04  # checksum flag
    assert zstdframes.decode_frame(frame) == b"hello\n"
    assert zstandard.ZstdDecompressor().decompress(frame) == b"hello\n"


def test_bad_magic_and_reserved_bits_are_corruption():
    frame = zstdframes.compress_frame(b"hello\n")
    with pytest.raises(SessionCorruptionError, match="magic"):
        zstdframes.scan_frames(frame + b"\x00\x01\x02\x03\x04")
    bad = bytearray(frame)
    bad[4] |= 0x08
    with pytest.raises(SessionCorruptionError, match="reserved"):
        zstdframes.scan_frames(bytes(bad))


# ----------------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("compression", ["none", "zstd"])
@pytest.mark.parametrize("batches", [[10_000], [1], [2, 1, 5, 3], [40]])
def test_round_trip_any_batching(tmp_path, compression, batches):
    events = fixture_events()
    store = jsonl.JsonlStore(tmp_path / "root", compression)
    path = write_log(store, header(), events, batches)
    buf = path.read_bytes()
    prefix = jsonl.scan_buffer(buf, compression)
    assert prefix.torn is None
    assert prefix.events == events
    assert orjson.dumps(prefix.events.to_list()) == orjson.dumps(events)  # key order survives too
    if compression == "zstd":
        n_batches = -(-len(events) // batches[0]) if len(batches) == 1 else None
        frames = zstdframes.scan_frames(buf).frames
        if n_batches is not None:
            assert len(frames) == 1 + n_batches  # one frame for the header, one per batch
        first = zstdframes.decode_frame(buf[frames[0][0] : frames[0][1]])
        assert first == jsonl.header_line(header())


def test_packing_is_per_batch(tmp_path):
    events = fixture_events()
    one = jsonl.JsonlStore(tmp_path / "a", "none")
    many = jsonl.JsonlStore(tmp_path / "b", "none")
    p1 = write_log(one, header(), events, [10_000])
    p2 = write_log(many, header(), events, [1])
    lines1 = p1.read_bytes().count(b"\n")
    lines2 = p2.read_bytes().count(b"\n")
    assert b"-chunks" in p1.read_bytes() and b"-chunks" not in p2.read_bytes()
    assert lines2 == len(events) + 1 and lines1 < lines2


def test_lazy_materialisation_and_modes(tmp_path):
    root = tmp_path / "root"
    store = jsonl.JsonlStore(root, "zstd")
    hdr = header()
    store.create(hdr)
    assert not root.exists()  # nothing until the first non-empty append
    assert store.list() == []
    store.append(hdr["id"], [])
    assert not root.exists()
    events = fixture_events()
    store.append(hdr["id"], events[:3])
    path = store.locate(hdr)
    assert path.exists()
    for d in (root, path.parent.parent, path.parent):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["session.jsonl.zstd"]  # temp file removed
    store.append(hdr["id"], events[3:])
    assert jsonl.scan_buffer(path.read_bytes()).events == events
    with pytest.raises(jsonl.StoreError, match="already"):
        jsonl.JsonlStore(root, "zstd").create(hdr)


def test_append_rejects_wrong_first_seq_and_gaps(tmp_path):
    events = fixture_events()
    store = jsonl.JsonlStore(tmp_path, "none")
    hdr = header()
    store.create(hdr)
    with pytest.raises(Exception, match="seq mismatch"):
        store.append(hdr["id"], events[1:3])
    store.append(hdr["id"], events[:3])
    size = store.locate(hdr).stat().st_size
    with pytest.raises(Exception, match="seq mismatch"):
        store.append(hdr["id"], [events[3], events[5]])
    bad = dict(events[3], data={"x": float("nan")})
    with pytest.raises(Exception, match="NaN"):
        store.append(hdr["id"], [bad])
    assert store.locate(hdr).stat().st_size == size


def test_list_reads_headers_only(tmp_path):
    root = tmp_path / "root"
    for comp in ("none", "zstd"):
        store = jsonl.JsonlStore(root / comp, comp)
        a = header("a", cwd="/p/one")
        b = header("b", cwd=None)
        events = fixture_events()
        write_log(store, a, events, [50])
        write_log(store, b, events, [50])
        # damage every body byte: list() must not care (it reads only the header)
        for h in (a, b):
            path = store.locate(h)
            data = path.read_bytes()
            if comp == "none":
                first = data.index(b"\n") + 1
            else:
                first = zstdframes.scan_frames(data).frames[0][1]
            path.write_bytes(data[:first] + b"\xff" * (len(data) - first))
        assert sorted(h["id"] for h in store.list()) == ["a", "b"]
        snaps = store.list_snapshots()
        assert {s.header["id"] for s in snaps} == {"a", "b"}
        assert all(s.revision.count(":") == 4 for s in snaps)
        assert (root / comp / "_no-cwd" / "b").is_dir()


def test_list_skips_half_written_and_checks_identity(tmp_path):
    store = jsonl.JsonlStore(tmp_path, "none")
    write_log(store, header("good"), fixture_events(), [100])
    half = tmp_path / "--x--" / "half" / "session.jsonl"
    half.parent.mkdir(parents=True)
    half.write_bytes(b'{"type":"session","version":0,"id":"half"')
    assert [h["id"] for h in store.list()] == ["good"]
    # a header whose id/cwd name another directory is an identity error
    moved = tmp_path / "--elsewhere--" / "good2" / "session.jsonl"
    moved.parent.mkdir(parents=True)
    moved.write_bytes(jsonl.header_line(header("good2", cwd="/work/project")))
    with pytest.raises(layout.LayoutError, match="identify"):
        store.list()


def test_one_encoding_per_root_and_flat_layout(tmp_path):
    zs = jsonl.JsonlStore(tmp_path, "zstd")
    write_log(zs, header("z1"), fixture_events(), [100])
    raw = jsonl.JsonlStore(tmp_path, "none")
    with pytest.raises(jsonl.StoreError, match="compression"):
        raw.list()
    flat_root = tmp_path / "flat"
    (flat_root / "--p--").mkdir(parents=True)
    (flat_root / "--p--" / "old.jsonl").write_bytes(b"")
    with pytest.raises(jsonl.StoreError, match="flat-file"):
        jsonl.JsonlStore(flat_root, "none").list()


def test_path_traversal_ids_are_neutralised(tmp_path):
    store = jsonl.JsonlStore(tmp_path / "root", "none")
    hdr = header("../../escape")
    write_log(store, hdr, fixture_events()[:5], [5])
    assert store.locate(hdr).is_relative_to(tmp_path / "root")
    assert not (tmp_path / "escape").exists()
    assert [h["id"] for h in store.list()] == ["../../escape"]


def test_header_rules(tmp_path):
    good = jsonl.header_line(header())
    assert jsonl.parse_header_record(good)["id"] == "sess-1"
    no_depth = b'{"type":"session","version":0,"id":"x","createdAt":1}\n'
    with pytest.raises(SessionCorruptionError, match="not a session header"):
        jsonl.parse_header_record(no_depth)
    assert jsonl.parse_header_record(no_depth, lenient=True)["id"] == "x"
    with pytest.raises(SessionFormatUnsupportedError, match="newer"):
        jsonl.parse_header_record(b'{"type":"session","version":5,"nonsense":true}\n')
    with pytest.raises(SessionCorruptionError, match="retired"):
        jsonl.parse_header_record(
            b'{"type":"session","version":0,"id":"x","createdAt":1,"delegationDepth":0,"sandboxMode":"x"}\n'
        )
    long_header = jsonl.header_line(header(cwd="/" + "d" * 9000))
    assert len(long_header) > 8192
    store = jsonl.JsonlStore(tmp_path, "none")
    write_log(store, header(cwd="/" + "d" * 9000), fixture_events()[:3], [3])
    assert [h["cwd"] for h in store.list()] == ["/" + "d" * 9000]


# ------------------------------------------------------------------ torn tail versus corruption


def _raw_log(tmp_path, batches=(13,), scenario="tool-call-turn"):
    events = fixture_events(scenario)
    store = jsonl.JsonlStore(tmp_path / "raw", "none")
    path = write_log(store, header(), events, list(batches))
    return events, path.read_bytes()


TRUNCATION_SCENARIOS = ["tool-call-turn", "cancel", "error-finish"]


@pytest.mark.parametrize("scenario", TRUNCATION_SCENARIOS)
def test_raw_truncation_at_every_byte_offset(tmp_path, scenario):
    events, data = _raw_log(tmp_path, scenario=scenario)
    ends = line_ends(data)
    # logical events per line
    counts = [len(rows.expand_line(orjson.loads(data[a:b]))) for a, b in zip(ends, ends[1:])]
    for cut in range(len(data) + 1):
        buf = data[:cut]
        if cut < ends[0]:
            with pytest.raises(SessionCorruptionError, match="header"):
                jsonl.scan_buffer(buf, "none")
            continue
        complete = [e for e in ends if e <= cut]
        n = sum(counts[: len(complete) - 1])
        prefix = jsonl.scan_buffer(buf, "none")
        assert prefix.events == events[:n], cut
        committed = complete[-1]
        assert (prefix.torn is None) == (committed == cut)
        if prefix.torn:
            assert prefix.torn.truncate_to == committed


@pytest.mark.parametrize("scenario", TRUNCATION_SCENARIOS)
def test_zstd_truncation_at_every_byte_offset(tmp_path, scenario):
    events = fixture_events(scenario)
    store = jsonl.JsonlStore(tmp_path / "z", "zstd")
    path = write_log(store, header(), events, [9, 4, 30])
    data = path.read_bytes()
    frames = zstdframes.scan_frames(data).frames
    per_frame = [
        sum(len(rows.expand_line(orjson.loads(ln))) for ln in zstdframes.decode_frame(data[s:e]).splitlines())
        for s, e in frames[1:]
    ]
    for cut in range(len(data) + 1):
        buf = data[:cut]
        if cut < frames[0][1]:
            with pytest.raises(SessionCorruptionError):
                jsonl.scan_buffer(buf, "zstd")
            continue
        done = [f for f in frames[1:] if f[1] <= cut]
        base = sum(per_frame[: len(done)])
        prefix = jsonl.scan_buffer(buf, "zstd")
        assert prefix.events == events[: len(prefix.events)], cut
        if len(done) == len(frames) - 1:
            assert prefix.torn is None and len(prefix.events) == len(events)
            continue
        torn_frame = frames[len(done) + 1]
        if cut == (done[-1][1] if done else frames[0][1]):
            assert prefix.torn is None and len(prefix.events) == base
            continue
        assert prefix.torn is not None and prefix.torn.truncate_to == torn_frame[0]
        assert len(prefix.events) >= base
        assert prefix.torn.recovered_events == prefix.events[base:]
        if cut >= torn_frame[1] - 4:  # only the checksum is missing: every record is recoverable
            assert len(prefix.events) == base + per_frame[len(done)]


def test_zstd_torn_frame_keeps_complete_records_of_complete_blocks(tmp_path):
    # a batch larger than one zstd block (128 KiB): cutting in the second block keeps the first block's lines
    events = fixture_events()
    big = []
    for i in range(3000):
        big.append({"type": "session/title", "seq": i, "time": 5 + i,
                    "data": {"title": os.urandom(40).hex(), "messageSeqs": [], "source": {"kind": "fallback"}}})
    store = jsonl.JsonlStore(tmp_path, "zstd")
    hdr = header()
    path = write_log(store, hdr, big, [3000])
    data = path.read_bytes()
    frames = zstdframes.scan_frames(data).frames
    cut = frames[1][1] - 1000
    prefix = jsonl.scan_buffer(data[:cut], "zstd")
    assert prefix.torn.truncate_to == frames[1][0]
    assert 0 < len(prefix.events) < 3000
    assert prefix.events == big[: len(prefix.events)]
    del events


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")[:-1]


def test_damage_before_a_later_turn_end_is_corruption(tmp_path):
    events, data = _raw_log(tmp_path, batches=(1,))
    lines = _lines(data)
    turn_end_lines = [i for i, ln in enumerate(lines) if b'"turn/end"' in ln]
    assert turn_end_lines, "fixture has a turn/end"
    last_te = turn_end_lines[-1]
    for damage in ("garbage", "blank", "gap"):
        victim = 5
        mod = list(lines)
        if damage == "garbage":
            mod[victim] = b'{"type":'
        elif damage == "blank":
            mod[victim] = b""
        else:
            del mod[victim]
        buf = b"\n".join(mod) + b"\n"
        with pytest.raises(SessionCorruptionError, match="corrupt session log"):
            jsonl.scan_buffer(buf, "none")
        # the same damage after the last turn/end is a torn tail
        mod = list(lines)
        after = last_te + 1
        if after >= len(mod):
            mod.append(b'{"type":"step/start","seq":999,"time":0,"data":{}}')
        if damage == "garbage":
            mod[after] = b'{"type":'
        elif damage == "blank":
            mod[after] = b""
        else:
            mod[after] = mod[after].replace(b'"seq":', b'"seq":1', 1)
        buf = b"\n".join(mod) + b"\n"
        prefix = jsonl.scan_buffer(buf, "none")
        assert prefix.events == events[: after - 1]
        assert prefix.torn is not None
        assert prefix.torn.truncate_to == sum(len(x) + 1 for x in mod[:after])


def test_malformed_packed_row_in_committed_region_is_corruption(tmp_path):
    events, data = _raw_log(tmp_path, batches=(10_000,))
    lines = _lines(data)
    i = next(k for k, ln in enumerate(lines) if b"-chunks" in ln)
    row = orjson.loads(lines[i])
    row["data"]["dt"] = row["data"]["dt"] + [1]
    lines[i] = orjson.dumps(row)
    with pytest.raises(SessionCorruptionError):
        jsonl.scan_buffer(b"\n".join(lines) + b"\n", "none")


def test_complete_zstd_frame_with_torn_record_is_corruption(tmp_path):
    hdr_frame = zstdframes.compress_frame(jsonl.header_line(header()))
    events = fixture_events()
    body = jsonl.encode_lines(events[:5])
    data = hdr_frame + zstdframes.compress_frame(body[:-10])
    with pytest.raises(SessionCorruptionError, match="torn JSONL record"):
        jsonl.scan_buffer(data, "zstd")
    two_headers = zstdframes.compress_frame(jsonl.header_line(header()) * 2)
    with pytest.raises(SessionCorruptionError, match="exactly one header"):
        jsonl.scan_buffer(two_headers, "zstd")


def test_flipped_byte_in_a_complete_frame_is_corruption(tmp_path):
    events = fixture_events()
    store = jsonl.JsonlStore(tmp_path, "zstd")
    path = write_log(store, header(), events, [40])
    data = path.read_bytes()
    frames = zstdframes.scan_frames(data).frames
    s, e = frames[1]  # a complete middle frame
    # frame header: magic(4) + descriptor(1) + window/fcs + first block header(3)
    desc = data[s + 4]
    single = bool(desc & 0x20)
    fcs_flag = desc >> 6
    fcs = (1 if single else 0) if fcs_flag == 0 else 1 << fcs_flag
    payload_start = s + 5 + (0 if single else 1) + fcs + 3
    rejected = harmless = 0
    for off in range(payload_start, e):
        bad = bytearray(data)
        bad[off] ^= 0x5A
        try:
            prefix = jsonl.scan_buffer(bytes(bad), "zstd")
        except SessionCorruptionError:
            rejected += 1
            continue
        # a flip in bits the decoder never reads leaves the content (and its checksum) intact;
        # anything else must be rejected, never silently decoded differently or treated as torn
        assert prefix.torn is None and prefix.events == events, off - s
        harmless += 1
    assert rejected > 100 and harmless <= rejected // 20
    bad = bytearray(data)
    bad[s] ^= 0xFF  # magic
    with pytest.raises(SessionCorruptionError, match="magic"):
        jsonl.scan_buffer(bytes(bad), "zstd")


def _big_zstd_log(tmp_path, content_size: bool = True) -> tuple[bytes, list[dict]]:
    """A zstd log of several decode batches (incompressible text), each batch one frame of 10 events."""
    rnd = __import__("random").Random(7)
    events = fixture_events()[:4]  # up to the open step
    events = [dict(e, seq=i) for i, e in enumerate(events)]
    while len(events) < 1200:
        text = "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz0123456789 ") for _ in range(600))
        events.append({"type": "assistant/chunk", "seq": len(events), "time": 1_700_000_000_000 + len(events),
                       "data": {"turn": 1, "step": 1, "chunk": {"type": "block-start", "index": 0, "note": text}}})
    cctx = zstandard.ZstdCompressor(level=3, write_checksum=True, write_content_size=content_size)
    out = [zstdframes.compress_frame(jsonl.header_line(header()))]
    for i in range(0, len(events), 10):
        out.append(cctx.compress(jsonl.encode_lines(events[i : i + 10])))
    return b"".join(out), events


@pytest.mark.parametrize("content_size", [True, False])
def test_a_log_of_many_decode_batches_reads_whole_and_names_a_damaged_late_frame(tmp_path, content_size,
                                                                                monkeypatch):
    """Batches decode in a helper thread (the batch decoder needs each frame's content size: without it the
    frame-by-frame path reads the same); a damaged frame deep in the file is named by its offset."""
    monkeypatch.setattr(zstdframes, "BATCH_BYTES", 32 << 10)
    monkeypatch.setattr(jsonl.decode, "RAW_SLICE", 100_000)  # the file is read in slices that cut frames
    data, events = _big_zstd_log(tmp_path, content_size)
    assert len(data) > 8 * zstdframes.BATCH_BYTES
    prefix = jsonl.scan_buffer(data, "zstd")
    assert prefix.torn is None and prefix.events == events
    frames = zstdframes.scan_frames(data).frames
    s, e = frames[-7]
    bad = bytearray(data)
    bad[e - 2] ^= 0x5A  # its checksum
    with pytest.raises(SessionCorruptionError, match=f"frame at byte {s} failed validation"):
        jsonl.scan_buffer(bytes(bad), "zstd")
    torn = jsonl.scan_buffer(data[: frames[-1][0] + 9], "zstd")  # the last frame cut: every earlier batch reads
    assert torn.torn is not None and torn.torn.truncate_to == frames[-1][0]
    assert torn.events == events[: len(events) - 10]
    s, _ = frames[-20]  # past the first slices: the message names the offset in the file
    bad = bytearray(data)
    bad[s] ^= 0xFF
    with pytest.raises(SessionCorruptionError, match=f"invalid frame magic at byte {s}$"):
        jsonl.scan_buffer(bytes(bad), "zstd")
    path = tmp_path / "big.jsonl.zstd"
    path.write_bytes(data)
    assert jsonl.scan_file(path).events == events  # from disk, slice by slice


# ------------------------------------------------------------------------ rollback on a failed write


def test_append_failing_part_way_leaves_previous_length(tmp_path):
    """A real RLIMIT_FSIZE in a subprocess makes the write fail part-way; the file must roll back."""
    events = fixture_events()
    store = jsonl.JsonlStore(tmp_path / "root", "none")
    hdr = header()
    path = write_log(store, hdr, events[:20], [20])
    before = path.read_bytes()
    script = textwrap.dedent(
        f"""
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        from dsh_tui.store import jsonl
        from tests.store.jsonl_helpers import fixture_events
        events = fixture_events()
        store = jsonl.JsonlStore({str(tmp_path / "root")!r}, "none")
        store._cursor[{hdr["id"]!r}] = ({hdr!r}, 20)  # known length: no load needed
        limit = {len(before)} + 200
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
        try:
            store.append({hdr["id"]!r}, events[20:])
        except OSError as err:
            print("failed", err.errno)
            sys.exit(0)
        print("no failure")
        sys.exit(3)
        """
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("failed")
    assert path.read_bytes() == before
    # and the same batch succeeds afterwards (the unchanged cursor retries it)
    fresh = jsonl.JsonlStore(tmp_path / "root", "none")
    fresh._cursor[hdr["id"]] = (hdr, 20)
    fresh.append(hdr["id"], events[20:])
    assert jsonl.scan_buffer(path.read_bytes()).events == events


# ------------------------------------------------------------- fast row expansion == session core


_ints = st.integers(min_value=-(2**53) - 3, max_value=2**53 + 3)
_small = st.integers(min_value=-5, max_value=5)


@st.composite
def _rows(draw):
    tag = draw(st.sampled_from(["text-chunks", "reasoning-chunks", "tool-call-chunks"]))
    n = draw(st.integers(min_value=0, max_value=6))
    members = draw(st.lists(st.one_of(st.text(max_size=3), st.just(1)) if draw(st.booleans()) and
                            draw(st.integers(0, 9)) == 0 else st.text(max_size=3), min_size=n, max_size=n))
    dt_len = max(0, n - 1) if draw(st.integers(0, 9)) else max(0, n + draw(_small))
    dt = draw(st.lists(st.one_of(_small, _ints) if draw(st.booleans()) else _small, min_size=dt_len,
                       max_size=dt_len))
    data = {"turn": draw(st.sampled_from([1, 2, 1.5, True, "1"])), "step": 1, "index": draw(st.sampled_from([0, 3]))}
    if tag == "tool-call-chunks":
        data["id"] = draw(st.sampled_from(["call_1", 7]))
        if draw(st.booleans()):
            data["name"] = draw(st.sampled_from(["bash", None]))
        data["dt"] = dt
        data["args"] = members
    else:
        data["dt"] = dt
        data["texts"] = members
    if draw(st.integers(0, 9)) == 0:
        data["extra"] = 1
    row = {"type": tag, "seq0": draw(st.one_of(st.integers(0, 10), _ints)),
           "time0": draw(st.one_of(_small, _ints)), "data": data}
    if draw(st.integers(0, 12)) == 0:
        row["ignorable"] = True
    return row


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_rows())
def test_fast_row_expansion_matches_session_core(row):
    try:
        expected = rows.expand_line(row)
    except SessionCorruptionError:
        with pytest.raises(SessionCorruptionError):
            jsonl._expand_row(row)
        return
    got = jsonl._expand_row(row)
    assert got == expected
    assert orjson.dumps(got) == orjson.dumps(expected)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_rows())
def test_compact_row_validation_matches_session_core(row):
    """The scanner keeps a row compact (rows.lazy_row) exactly when the reference decoder expands it as a row,
    and its members then read as the reference's events."""
    run = rows.lazy_row(row)
    try:
        expected = rows.expand_line(row)
    except SessionCorruptionError:
        assert run is None
        return
    if not rows.is_packed_row(row):  # an ignorable row-tagged event is an event
        assert run is None and expected == [row]
        return
    assert run is not None
    assert orjson.dumps(run.events()) == orjson.dumps(expected)
    assert [run.event(k) for k in range(len(run))] == expected and run.events(1) == expected[1:]


def test_row_tagged_ignorable_event_stays_logical(tmp_path):
    """dsh 0.1.1's backend differential: an ignorable event whose type is a storage-row tag is a logical
    event, not a row (the npm peer 0.1.0-rc.8 still reads such a line as a malformed row)."""
    events = fixture_events()
    odd = {"type": "text-chunks", "seq": len(events), "time": 5, "data": {"x": 1}, "ignorable": True}
    store = jsonl.JsonlStore(tmp_path, "zstd")
    hdr = header()
    path = write_log(store, hdr, events + [odd], [200])
    prefix = jsonl.scan_buffer(path.read_bytes(), "zstd")
    assert prefix.events == events + [odd] and prefix.torn is None


def test_lone_surrogates_round_trip(tmp_path):
    """JavaScript strings may hold lone surrogates; dsh writes them as \\udXXX escapes."""
    events = fixture_events()[:3]
    odd = {"type": "session/title", "seq": 3, "time": 9,
           "data": {"title": "a\ud800b\udfff😀", "messageSeqs": [], "source": {"kind": "fallback"}}}
    for comp in ("none", "zstd"):
        store = jsonl.JsonlStore(tmp_path / comp, comp)
        path = write_log(store, header(), events + [odd, dict(events[2], seq=4)], [2, 3])
        plain = jsonl.decode_raw_text(path.read_bytes(), comp)
        assert b"\\ud800" in plain and b"\\udfff" in plain and "😀".encode() in plain
        assert jsonl.scan_buffer(path.read_bytes(), comp).events == events + [odd, dict(events[2], seq=4)]


def test_threads_decoding_and_encoding_frames_at_once_do_not_disturb_each_other():
    """The app reads headers on one thread while the harness worker loads or appends on another: each thread
    has its own zstd contexts (one shared context made healthy frames fail their checks)."""
    import threading

    texts = [os.urandom(20_000).hex().encode() for _ in range(24)]
    frames = [zstdframes.compress_frame(t) for t in texts]
    errors: list[str] = []

    def work() -> None:
        try:
            for _ in range(15):
                for text, frame in zip(texts, frames, strict=True):
                    if zstdframes.decode_frame(frame) != text:
                        errors.append("decoded differently")
                    if zstdframes.decode_frame(zstdframes.compress_frame(text)) != text:
                        errors.append("round trip differs")
        except Exception as err:  # noqa: BLE001 - any failure is the finding
            errors.append(repr(err)[:200])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
