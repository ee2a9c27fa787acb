"""``dsh-tui log check|cat|messages|repair`` through the real command line (subprocesses)."""

from __future__ import annotations

import json
import subprocess
import sys

import orjson

from dsh_tui.store import fixture, jsonl
from tests.conftest import FIXTURES, REPO
from tests.store.jsonl_helpers import fixture_events, header, write_log

SNAP = FIXTURES / "examples" / "acp-agent" / "tests" / "snapshots"


def dsh_tui(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dsh_tui", "log", *args], cwd=REPO, capture_output=True,
                          timeout=120)


def _assert_one_line_failure(proc, name: str) -> None:
    assert proc.returncode != 0
    err = proc.stderr.decode()
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dsh-tui: ") and name in lines[0], err


def _all_logs() -> list[str]:
    out = []
    for path in sorted(FIXTURES.rglob("*.jsonl")):
        with open(path, "rb") as f:
            if f.read(17) == b'{"type":"session"':
                out.append(str(path))
    return out


def test_check_every_fixture_in_one_run():
    logs = _all_logs()
    proc = dsh_tui("check", *logs)
    rows = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert [r["file"] for r in rows] == logs
    for r in rows:
        assert set(r) >= {"file", "ok", "events", "turns", "steps", "open_turn", "error"}
        assert (r["error"] is None) == r["ok"]
    bad = [r for r in rows if not r["ok"]]
    assert 0 < len(bad) <= 15  # the replay-only stubs named in spec §6.1
    assert proc.returncode == 1  # not every file is ok
    fork = next(r for r in rows if r["file"].endswith("subagent-fork-in-process/session.1.jsonl"))
    assert fork["seed_length"] == 42 and fork["parent"] and fork["turns"] == 2
    good = [r["file"] for r in rows if r["ok"]][:20]
    assert dsh_tui("check", *good).returncode == 0


def test_check_runtime_logs_raw_zstd_and_open_turn(tmp_path):
    events = fixture_events()
    for comp in ("none", "zstd"):
        store = jsonl.JsonlStore(tmp_path / comp, comp)
        hdr = header(f"s-{comp}")
        path = write_log(store, hdr, events[:66], [30])
        proc = dsh_tui("check", str(path))
        row = json.loads(proc.stdout)
        assert proc.returncode == 0, row
        assert row["ok"] and row["events"] == 66 and row["turns"] == 1 and row["steps"] == 1
        assert row["open_turn"] is True  # ends inside the turn (a crash)
    strict = dsh_tui("check", "--mode", "strict", str(SNAP / "text-turn" / "session.jsonl"))
    row = json.loads(strict.stdout)
    assert strict.returncode == 1 and not row["ok"] and "projected" in row["error"]


def test_cat_canonical_is_byte_identical_for_fixtures():
    for rel in ("text-turn/session.jsonl", "packed-chunks/session.jsonl", "subagent-fork-in-process/session.1.jsonl"):
        path = SNAP / rel
        proc = dsh_tui("cat", "--canonical", str(path))
        assert proc.returncode == 0
        assert proc.stdout == path.read_bytes()
    web = FIXTURES / "apps/web/tests/snapshots/steering/session.jsonl"
    assert dsh_tui("cat", "--canonical", str(web)).stdout == web.read_bytes()


def test_cat_prints_logical_events_with_exact_envelopes(tmp_path):
    events = fixture_events()
    store = jsonl.JsonlStore(tmp_path, "zstd")
    path = write_log(store, header(), events[:70], [1, 9])
    proc = dsh_tui("cat", str(path))
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert [orjson.loads(x) for x in lines] == events[:70]  # rows expanded, no closers added
    assert lines == [orjson.dumps(e) for e in events[:70]]  # exactly the envelope fields, in order
    canon = dsh_tui("cat", "--canonical", str(path)).stdout
    assert canon == jsonl.header_line(header()) + jsonl.encode_lines(events[:70])


def test_cat_applies_legacy_import():
    path = FIXTURES / "apps/web/tests/snapshots/steering/session.jsonl"
    proc = dsh_tui("cat", str(path))
    events = [orjson.loads(x) for x in proc.stdout.splitlines()]
    data = path.read_bytes()
    assert b'"trigger"' in data and b'"provenance"' in data  # legacy v0 shapes on disk
    assert all("trigger" not in e["data"] for e in events if e["type"] == "turn/start")
    assistant = [e["data"] for e in events if e["type"] == "assistant/message"]
    assert assistant and all("provenance" not in d and d["message"]["source"]["kind"] == "model" for d in assistant)
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert events[-1]["type"] == "turn/end"  # no closers added


def test_messages_is_derive_messages():
    path = SNAP / "parallel-tool-calls" / "session.jsonl"
    proc = dsh_tui("messages", str(path))
    assert proc.returncode == 0
    got = json.loads(proc.stdout)
    expected = fixture.prepare_file(fixture.open_log_file(path)).session.derive_messages().to_list()
    assert got == json.loads(orjson.dumps(expected))
    # independent of derive_messages: what the recorded two-read turn shows the model, written out by hand
    # (message id, role, source kind, [(block type, call id or text start)])
    shown = [(m["id"], m["role"], m["source"]["kind"],
              [(b["type"], b.get("id") or b.get("toolCallId") or b["text"][:20]) for b in m["content"]]) for m in got]
    assert shown == [
        ("e306a97e-4da2-4b50-bec4-90ede1237df4", "user", "user", [("text", "Use the read tool tw")]),
        ("02b21476-4349-49c1-a1b8-91d80c27ef0d", "user", "plugin", [("text", "Current runtime cont")]),
        ("2de71b6c-3820-4fc4-99c9-0a2c8a1f8e9b", "assistant", "model",
         [("tool-call", "call_read_a"), ("tool-call", "call_read_b")]),
        ("418e6b3d-9166-432a-8e56-839a87079295", "user", "tool", [("tool-result", "call_read_a")]),
        ("f92c11c2-0d44-4a61-a4f0-913dcc765e77", "user", "tool", [("tool-result", "call_read_b")]),
        ("fdbb9418-bd61-4ec5-9bb9-fa73f632b242", "assistant", "model", [("text", "DONE")]),
    ]


def test_repair_in_place(tmp_path):
    events = fixture_events()
    store = jsonl.JsonlStore(tmp_path, "none")
    call = next(i for i, e in enumerate(events) if e["type"] == "tool/call")
    path = write_log(store, header(), events[: call + 1], [100])
    healthy_other = write_log(store, header("done"), events, [100])
    before = healthy_other.read_bytes()
    proc = dsh_tui("repair", str(healthy_other))
    assert proc.returncode == 0 and b"nothing to do" in proc.stdout
    assert healthy_other.read_bytes() == before  # byte-identical

    path.write_bytes(path.read_bytes() + b'{"type":"tool/res')  # torn tail
    proc = dsh_tui("repair", str(path))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert "torn tail of 17 bytes" in out and "3 closers" in out
    repaired = jsonl.scan_buffer(path.read_bytes(), "none")
    assert repaired.torn is None
    assert [e["type"] for e in repaired.events[-3:]] == ["tool/result", "step/end", "turn/end"]
    again = path.read_bytes()
    assert dsh_tui("repair", str(path)).returncode == 0 and path.read_bytes() == again


def test_failures_are_one_clear_line(tmp_path):
    missing = tmp_path / "nope.jsonl"
    _assert_one_line_failure(dsh_tui("cat", str(missing)), str(missing))
    _assert_one_line_failure(dsh_tui("messages", str(tmp_path)), str(tmp_path))
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"\x00\x01 not json\n")
    _assert_one_line_failure(dsh_tui("repair", str(garbage)), str(garbage))
    corrupt = tmp_path / "corrupt.jsonl"
    data = (SNAP / "multi-turn" / "session.jsonl").read_bytes().splitlines(keepends=True)
    corrupt.write_bytes(b"".join(data[:3] + [b"{oops\n"] + data[3:]))
    proc = dsh_tui("cat", str(corrupt))
    _assert_one_line_failure(proc, str(corrupt))
    assert b"corrupt" in proc.stderr
    proc = dsh_tui("check", str(corrupt))
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]
    newer = tmp_path / "newer.jsonl"
    newer.write_bytes(b'{"type":"session","version":7,"id":"n","createdAt":0}\n')
    proc = dsh_tui("messages", str(newer))
    _assert_one_line_failure(proc, str(newer))
    assert b"newer" in proc.stderr


def test_a_placeholder_in_a_late_zstd_frame_is_found_batch_by_batch(tmp_path, monkeypatch):
    """Placeholders are searched for a batch of frames at a time (never the whole plaintext at once)."""
    from dsh_tui.store import zstdframes

    monkeypatch.setattr(zstdframes, "BATCH_BYTES", 512)  # many batches
    events = orjson.loads(orjson.dumps(fixture_events()).replace(b"{{", b"(("))  # the recording has some
    late = max(i for i, e in enumerate(events) if e["type"] == "user/message")
    marked = [dict(e) for e in events]
    marked[late] = {**events[late], "data": {**events[late]["data"], "note": "{{workspace}}"}}
    for name, evs in (("clean", events), ("marked", marked)):
        store = jsonl.JsonlStore(tmp_path / name, "zstd")
        path = write_log(store, header(name), evs, [3] * (len(evs) // 3 + 1))
        assert len(zstdframes.scan_frames(path.read_bytes()).frames) > 10
        if name == "clean":
            assert not fixture.open_log_file(path, "auto").lenient
            assert fixture.open_log_file(path, "strict").events == events
        else:
            assert fixture.open_log_file(path, "auto").lenient  # auto turns lenient on a placeholder
            try:
                fixture.open_log_file(path, "strict")
            except fixture.LogFileError as err:
                assert "placeholders" in str(err)
            else:
                raise AssertionError("strict mode accepted a placeholder in a late frame")
