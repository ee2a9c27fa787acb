"""dsh-tui ⇄ real dsh: logs written by one load in the other and decode to exactly the same events."""

from __future__ import annotations

import shutil

import orjson
import pytest

from dsh_tui.store import jsonl, zstdframes
from tests.conftest import FIXTURES
from tests.store.jsonl_helpers import fixture_events, header, write_log

# the peer is dsh 0.1 (npm 0.1.0-rc.8): it reads only format v0, so the sessions dsh-tui starts here are v0
# ([storage] format = "v0"); dsh 0.2 and format v4, the default, are tests/interop/test_dsh02_*.py
pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("session_format_v0")]

SNAP = FIXTURES / "examples" / "acp-agent" / "tests" / "snapshots"
WEB = FIXTURES / "apps" / "web" / "tests" / "snapshots"


def _mixed_events() -> list[dict]:
    """A realistic log with every packing shape: reasoning, text and tool-call rows, short runs, a
    backwards clock (negative dt) and an ignorable event of a type dsh does not know."""
    events = fixture_events("tool-call-turn")
    t = 1_800_000_000_000
    out = []
    for i, ev in enumerate(events):
        ev = dict(ev)
        ev["time"] = t + (i * 11 if i % 17 else -i * 5)  # a clock step backwards now and then
        out.append(ev)
    unknown = {"type": "x-future/hint", "seq": len(out), "time": t, "data": {"note": "é😀\ud800x"}, "ignorable": True}
    step_end = next(i for i, e in enumerate(out) if e["type"] == "step/end")
    out.insert(step_end, unknown)
    for i, ev in enumerate(out):
        ev["seq"] = i
    return out


def _write_ours(root, compression, cases):
    store = jsonl.JsonlStore(root, compression)
    written = {}
    for sid, events, batches in cases:
        hdr = header(sid, cwd="/work/interop-project")
        write_log(store, hdr, events, batches)
        written[sid] = (hdr, events)
    return store, written


def _strip(header_obj: dict) -> dict:
    return {k: v for k, v in header_obj.items() if k != "type"}


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_dsh_loads_what_dsh_tui_writes(dsh_peer, tmp_path, compression):
    base = fixture_events("tool-call-turn")
    reasoning = fixture_events("text-turn")
    cases = [
        ("one-batch", base, [10_000]),
        ("every-event", base, [1]),
        ("mixed-batches", base, [2, 1, 5, 3]),
        ("forty", reasoning, [40]),
        ("clock-and-ignorable", _mixed_events(), [7, 60]),
    ]
    root = tmp_path / "root"
    _store, written = _write_ours(root, compression, cases)
    report = dsh_peer.load(root, inspect=True, dump=True)
    assert report.returncode == 0, report.sessions
    by_id = {s["id"]: s for s in report.sessions}
    assert set(by_id) == set(written)
    for sid, (hdr, events) in written.items():
        s = by_id[sid]
        assert s["ok"], s
        assert s["header"] == _strip(hdr)
        assert report.events[sid] == events, sid
        assert s["bytesBefore"] == s["bytesAfter"]


def _damage(path, compression):
    data = path.read_bytes()
    if compression == "none":
        # cut in the middle of the line after the last tool/call: an open turn with a pending call
        idx = data.rindex(b'"type":"tool/call"')
        nl = data.index(b"\n", idx)
        cut = nl + 1 + 25
    else:
        frames = zstdframes.scan_frames(data).frames
        s, e = frames[-1]
        cut = e - 2  # checksum torn: the frame's complete records are recoverable
    path.write_bytes(data[:cut])


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_torn_tails_repair_the_same_way_in_both(dsh_peer, tmp_path, compression):
    events = fixture_events("tool-call-turn")
    call = next(i for i, e in enumerate(events) if e["type"] == "tool/call")
    keep = events[: call + 3]  # ends inside the turn
    root_ours = tmp_path / "ours"
    store, _ = _write_ours(root_ours, compression, [("torn", keep, [call + 1, 1])])
    _damage(store.locate(header("torn", cwd="/work/interop-project")), compression)
    root_dsh = tmp_path / "dsh"
    shutil.copytree(root_ours, root_dsh)

    ours = jsonl.JsonlStore(root_ours, compression).load("torn")  # commits truncation + closers
    assert ours.committed and ours.closers
    dsh_repair = dsh_peer.load(root_dsh, dump=True)  # dsh's own load commits its repair
    assert dsh_repair.sessions[0]["ok"], dsh_repair.sessions
    assert dsh_repair.sessions[0]["repaired"]
    assert ours.events == dsh_repair.events["torn"]

    # our repaired file loads in dsh with no further repair, and dsh's repaired file loads in ours
    check = dsh_peer.load(root_ours, inspect=True, dump=True)
    assert check.sessions[0]["ok"], check.sessions
    assert check.events["torn"] == ours.events
    theirs = jsonl.JsonlStore(root_dsh, compression).inspect("torn")
    assert not theirs.repaired and theirs.events == ours.events


READ_CASES = [
    ("tool-call-turn", SNAP / "tool-call-turn" / "session.jsonl", "2,1,5,3"),
    ("text-turn", SNAP / "text-turn" / "session.jsonl", None),
    ("packed-chunks", SNAP / "packed-chunks" / "session.jsonl", "1"),
    ("parallel-tools", SNAP / "parallel-tool-calls" / "session.jsonl", "40"),
    ("fork-child", SNAP / "subagent-fork-in-process" / "session.1.jsonl", "3"),
    ("legacy-web", WEB / "fresh-round-trip" / "session.jsonl", "9,2"),
    ("compaction", FIXTURES / "examples/headless-agent/tests/snapshots/compaction-recovery/session.jsonl", None),
]


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_dsh_tui_reads_what_dsh_writes(dsh_peer, tmp_path, compression):
    root = tmp_path / "root"
    for sid, path, batch in READ_CASES:
        dsh_peer.write(root, path, compression=compression, batch=batch, realize=True, session_id=sid,
                       cwd="/tmp/dsh-interop-cwd")
    report = dsh_peer.load(root, inspect=True, dump=True)
    assert report.returncode == 0, report.sessions
    store = jsonl.JsonlStore(root, compression)
    listed = {h["id"]: h for h in store.list()}
    assert set(listed) == {sid for sid, _, _ in READ_CASES}
    for s in report.sessions:
        sid = s["id"]
        assert _strip(listed[sid]) == s["header"]
        ours = store.inspect(sid)
        assert ours.events == report.events[sid], sid
        assert orjson.dumps(list(ours.events)) == orjson.dumps(report.events[sid])  # same key order too
        assert store.read_from(sid, 5) == [e for e in report.events[sid] if e["seq"] >= 5]
        raw = store.read_raw(sid)
        assert raw is not None and raw.content.count("\n") >= 2


def test_dsh_live_mode_log_loads_in_dsh_tui(dsh_peer, tmp_path):
    """dsh's own Session + write-behind (wall-clock times, its batching) → dsh-tui reads it."""
    root = tmp_path / "live"
    src = SNAP / "tool-call-turn" / "session.jsonl"
    dsh_peer.write(root, src, compression="zstd", realize=True, session_id="live-1", extra=["--mode", "live"])
    report = dsh_peer.load(root, inspect=True, dump=True)
    ours = jsonl.JsonlStore(root, "zstd").inspect("live-1")
    assert report.sessions[0]["ok"]
    assert ours.events == report.events["live-1"]
    assert len(ours.events) == len(fixture_events("tool-call-turn"))


async def test_a_session_with_skills_loads_in_dsh_with_the_same_catalog_texts(dsh_peer, tmp_path, monkeypatch):
    """A session dsh-tui started in a workspace with AGENTS.md and a skill (instructions, catalog, a user's
    /name invocation, the skill tool, a /title command) is loaded by the real dsh persistence; dsh derives
    the same model messages."""
    from dsh_tui.llm import scripted
    from dsh_tui.llm.scripted import ScriptedProvider
    from dsh_tui.runtime.host import AgentHost, HostSpec
    from dsh_tui.store.open import open_store

    for name in ("HOME", "DSH_HOME", "DSH_AGENTS_HOME"):
        monkeypatch.setenv(name, str(tmp_path / "home" / name))
    work = tmp_path / "ws"
    skill = work / ".dsh" / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text('---\nname: deploy\ndescription: Ship <it> & "check"\n---\nShip carefully.\n')
    (work / "AGENTS.md").write_text("Deploy only from main.\n")
    provider = ScriptedProvider([scripted.call("c1", "skill", {"name": "deploy"}), scripted.text("done")],
                                name="mock")
    root = tmp_path / "root"
    host = await AgentHost.open(HostSpec(root=root, cwd=work, provider=provider, model="mock-model",
                                         store=open_store(root), plugins=()))
    try:
        await host.agent.commands.run(host.agent, "/title Skills interop")
        result = await host.run_turn("please /deploy")
        ours = host.session.derive_messages().to_list()
        sid = host.session.id
    finally:
        await host.close()
    assert result.reason == {"kind": "completed"}
    kinds = [m["source"].get("kind") for m in ours if m["role"] == "user"]
    assert kinds == ["user", "agent-instructions", "plugin", "skill-catalog", "skill-invocation", "tool"]
    report = dsh_peer.load(root, inspect=True, messages=True)
    assert report.returncode == 0, report.sessions
    assert [s["ok"] for s in report.sessions] == [True]
    theirs = report.messages[sid]
    assert theirs == orjson.loads(orjson.dumps(ours))
    catalog = next(m for m in theirs if m["source"].get("kind") == "skill-catalog")
    assert "- `deploy`: Ship &lt;it&gt; &amp; \"check\"\n" in catalog["content"][0]["text"]
    instructions = next(m for m in theirs if m["source"].get("kind") == "agent-instructions")
    assert "Instructions from: AGENTS.md\n\nDeploy only from main.\n" in instructions["content"][0]["text"]
