"""Every dsh recording under fixtures/dsh loads, re-renders byte-identically and derives messages."""

from __future__ import annotations

import re
from collections.abc import Sequence

import orjson
import pytest

from dsh_tui.session.errors import DshError
from dsh_tui.store import fixture, jsonl
from tests.conftest import FIXTURES, INVENTORY
from tests.store.jsonl_helpers import session_logs

LOGS = session_logs()


def _replay_only_dirs() -> set[str]:
    """Scenario dirs tagged ``replay-only`` in the corpus inventory (tests/fixtures/dsh-inventory.tsv)."""
    dirs = set()
    for line in INVENTORY.read_text().splitlines():
        if line and not line.startswith("#"):
            scenario, _files, tags = line.split("\t")
            if "replay-only" in tags.split(", "):
                dirs.add(scenario)
    return dirs


REPLAY_ONLY = _replay_only_dirs()


def _rel(path) -> str:
    return str(path.relative_to(FIXTURES))


def test_the_corpus_is_all_there():
    # 128 logs of the session-format reference, and the 35 of the scenarios added with their ACP, JSON-RPC
    # and stream-json expectations (tests/fixtures/dsh/README.md)
    assert len(LOGS) == 163
    assert len(REPLAY_ONLY) >= 10


@pytest.mark.parametrize("path", LOGS, ids=_rel)
def test_fixture_loads_rerenders_and_derives(path):
    data = path.read_bytes()
    log = fixture.open_log_file(path)
    assert log.projected or len(log.events) == 0
    assert log.torn is None
    # canonical re-render (header verbatim, body re-packed, projected again) is byte-identical
    assert fixture.render_canonical(log) == data
    scenario = str(path.parent.relative_to(FIXTURES))
    try:
        prepared = fixture.prepare_file(log)
    except DshError as err:
        assert scenario in REPLAY_ONLY, f"{_rel(path)} refused but is not replay-only: {err}"
        msg = str(err)
        assert str(path) in msg and "\n" not in msg and re.search(r"seq \d+", msg), msg
        return
    messages = prepared.session.derive_messages()
    assert isinstance(messages, Sequence) and isinstance(messages.to_list(), list) and messages == messages.to_list()
    surface_ids = [e["data"].get("message", e["data"]).get("id") for e in prepared.stored
                   if e["type"] in ("user/message", "assistant/message", "tool/result")]
    assert all(isinstance(m["id"], str) for m in messages)
    assert {m["id"] for m in messages} <= set(surface_ids)
    # decoding is layout-blind: the same events, re-packed in one batch, decode identically
    complete = jsonl.header_line({**_realizable(log.header)}) + jsonl.encode_lines(log.events)
    assert jsonl.scan_buffer(complete, "none", lenient=True).events == log.events


def _realizable(h: dict) -> dict:
    out = {"id": h.get("id"), "createdAt": h.get("createdAt", 0), "delegationDepth": h.get("delegationDepth", 0)}
    if "cwd" in h:
        out["cwd"] = h["cwd"]
    return out


def test_replay_only_files_are_refused_with_a_reason():
    refused = []
    for path in LOGS:
        if str(path.parent.relative_to(FIXTURES)) not in REPLAY_ONLY:
            continue
        try:
            fixture.prepare_file(fixture.open_log_file(path))
        except DshError as err:
            refused.append((path, str(err)))
    assert len(refused) >= 12
    assert all("failed validation" in msg for _, msg in refused)


TOU = FIXTURES / "examples/headless-agent/tests/semantic-checkpoint-snapshots/tool-outcome-unknown"


def test_tool_outcome_unknown_repair_reproduces_expected_closers(tmp_path):
    """Cut the expected log where the crash happened (after tool/call); repair must append exactly the
    recorded closers: the TOOL_OUTCOME_UNKNOWN result, step/end, turn/end{interrupted}."""
    expected = fixture.open_log_file(TOU / "session.expected.jsonl")
    events = expected.events
    crash = next(i for i, e in enumerate(events) if e["type"] == "tool/call") + 1
    recorded_closers = events[crash : crash + 3]
    assert [e["type"] for e in recorded_closers] == ["tool/result", "step/end", "turn/end"]
    for compression in ("none", "zstd"):
        path = tmp_path / f"crashed-{compression}.jsonl"
        body = jsonl.encode_batch(events[:crash], compression)
        head = expected.prefix.header_record
        path.write_bytes((jsonl.zstdframes.compress_frame(head) if compression == "zstd" else head) + body)
        before, prepared = jsonl.repair_file(path, lenient=True)
        assert prepared.closers == recorded_closers
        assert orjson.dumps(prepared.closers) == orjson.dumps(recorded_closers)  # key order as dsh writes it
        after = jsonl.scan_buffer(path.read_bytes(), compression, lenient=True)
        assert after.events == events[: crash + 3]
        # a second repair is a no-op and leaves the file byte-identical
        data = path.read_bytes()
        jsonl.repair_file(path, lenient=True)
        assert path.read_bytes() == data
