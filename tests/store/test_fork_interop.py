"""dsh-tui's fork against dsh's own: the published ``SessionStore.fork`` (``@deepseek-ai/dsh-session``) run on
the same stored parent and boundary, its child persisted by dsh's JSONL backend. The two child files must be
identical line for line (packed rows included) apart from the child id, ``createdAt`` and the time of
``session/end-seed``; the refusals must carry the same codes."""

from __future__ import annotations

import json
import random

import pytest
import zstandard

from dsh_tui.session.headers import make_header
from dsh_tui.store import lifecycle
from dsh_tui.store.lifecycle import ForkError
from tests.conftest import FIXTURES
from tests.interop.conftest import dsh_peer  # noqa: F401 - the session-scoped peer fixture
from tests.interop.fork_peer import dsh_fork
from tests.store import crash_child as cc

pytestmark = pytest.mark.interop

SNAP = FIXTURES / "examples" / "acp-agent" / "tests" / "snapshots"
PARENT = "fork-parent"


def _raw_lines(store, session_id: str) -> list[str]:
    path = store.locate(store.inspect(session_id).header)
    data = path.read_bytes()
    if path.name.endswith(".zstd"):
        with open(path, "rb") as f:
            data = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True).read()
    return data.decode().splitlines()


def _normalized(lines: list[str]) -> list:
    """Header without id/createdAt, the seed lines verbatim, end-seed without its time."""
    head = {k: v for k, v in json.loads(lines[0]).items() if k not in ("id", "createdAt")}
    last = json.loads(lines[-1])
    assert last["type"] == "session/end-seed"
    del last["time"]
    return [head, *lines[1:-1], last]


def _dsh_tui_parent(root, compression) -> None:
    """A parent written by dsh-tui's writer: three turns (packed chunk runs, tools), a title and the next
    prompt's inbox insert after each turn, turn 3's prompt queued while turn 2 runs."""
    store = cc.open_backend(str(root), compression)
    session, writer = lifecycle.start(store, make_header(PARENT, cwd="/tmp/dsh-interop-cwd", created_at=1), window_ms=5)
    rng = random.Random(11)
    for t in (1, 2, 3):
        cc.scripted_turn(session, t, rng, first=t == 1, chunks=9)
        session.append("session/title", {"title": f"after {t}", "messageSeqs": [], "source": {"kind": "user"}})
    writer.close()


@pytest.mark.parametrize("compression", ["none", "zstd"])
@pytest.mark.parametrize("writer", ["dsh", "dsh-tui"])
def test_a_fork_child_is_the_one_dsh_writes_from_the_same_parent_and_boundary(dsh_peer, tmp_path, compression,  # noqa: F811
                                                                              writer):
    root = tmp_path / "root"
    if writer == "dsh":
        dsh_peer.write(root, SNAP / "multi-turn" / "session.jsonl", compression=compression, batch="7,40,3",
                       realize=True, session_id=PARENT, cwd="/tmp/dsh-interop-cwd")
    else:
        _dsh_tui_parent(root, compression)
    store = cc.open_backend(str(root), compression)
    parent = store.inspect(PARENT).events
    ends = [e["seq"] for e in parent if e["type"] == "turn/end"]
    assert len(ends) >= 2 and parent[ends[0] + 1]["type"] != "turn/start"  # standalone events after turn 1
    forks = [(f"ours-t{n}", {"at_turn": n}) for n in range(1, len(ends) + 1)]
    forks.append(("ours-default", {}))
    forks.append(("ours-standalone", {"at_seq": ends[0] + 1}))  # a legal boundary after a turn's end
    for i, (cid, kwargs) in enumerate(forks):
        ours = lifecycle.fork(store, PARENT, child_id=cid, **kwargs)
        boundary = ours["seedLength"] - 1
        if "at_turn" in kwargs:
            assert boundary == ends[kwargs["at_turn"] - 1]  # "after turn N" = turn N's turn/end
        if not kwargs:
            assert boundary == ends[-1]
        theirs = dsh_fork(dsh_peer, root, PARENT, f"theirs-{i}", boundary=boundary, compression=compression)
        assert theirs == {"id": f"theirs-{i}", "seedLength": ours["seedLength"]}
        assert _normalized(_raw_lines(store, cid)) == _normalized(_raw_lines(store, f"theirs-{i}")), kwargs
    report = dsh_peer.load(root, inspect=True, dump=True)  # dsh reads every child dsh-tui wrote
    assert report.returncode == 0 and all(s["ok"] for s in report.sessions), report.sessions
    for cid, _ in forks:
        n = store.inspect(cid).header["seedLength"]
        assert report.events[cid][:n] == parent[:n]


def test_fork_refusals_carry_dsh_s_codes(dsh_peer, tmp_path):  # noqa: F811
    root = tmp_path / "root"
    dsh_peer.write(root, SNAP / "multi-turn" / "session.jsonl", compression="zstd", realize=True,
                   session_id=PARENT, cwd="/tmp/dsh-interop-cwd")
    store = cc.open_backend(str(root), "zstd")
    parent = store.inspect(PARENT).events
    start2 = next(e["seq"] for e in parent if e["type"] == "turn/start" and e["data"]["turn"] == 2)
    # (the live parent in dsh has one more event, its resume end-seed: boundaries past it are out of range)
    for boundary in (start2, start2 + 2, len(parent) + 1, -1):
        theirs = dsh_fork(dsh_peer, root, PARENT, "theirs", boundary=boundary)
        with pytest.raises(ForkError) as err:
            lifecycle.fork(store, PARENT, at_seq=boundary, child_id="ours")
        assert err.value.code == theirs["code"], (boundary, theirs, str(err.value))
    theirs = dsh_fork(dsh_peer, root, PARENT, PARENT, boundary=1)  # a taken child id is refused first
    assert theirs["code"] == "SESSION_ALREADY_EXISTS"
    with pytest.raises(ForkError) as err:
        lifecycle.fork(store, PARENT, at_turn=1, child_id=PARENT)
    assert err.value.code == "SESSION_ALREADY_EXISTS"
    assert [h["id"] for h in store.list()] == [PARENT]
