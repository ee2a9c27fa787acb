"""The inbox rebuild on construction (dsh ``Inbox``): only the ``agent/inbox/spliced`` events after the header's
``seedLength`` count, so a fork child never replays input its parent had queued, even when its seed holds
the splice; a resumed session (no ``seedLength``) gets back exactly what its splices fold to."""

from __future__ import annotations

import random

from dsh_tui.llm import scripted as s
from dsh_tui.llm.scripted import ScriptedProvider
from dsh_tui.runtime.inbox import Inbox
from dsh_tui.session.headers import make_header
from dsh_tui.session.log import Session
from dsh_tui.store import lifecycle
from tests.runtime.helpers import make_agent
from tests.store import crash_child as cc

SID = "inbox-parent"


def msg(mid: str, text: str) -> dict:
    return {"id": mid, "role": "user", "content": [{"type": "text", "text": text}], "source": {"kind": "user"}}


def _parent_with_queued_input(log) -> None:
    """Turn 1 completed, then (between turns) the next turn's prompt and a next-step context queued."""
    cc.scripted_turn(log, 1, random.Random(3), first=True, chunks=6)
    log.append("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [msg("p2", "PARENT TURN 2")]})
    log.append("agent/inbox/spliced", {"target": "next-step", "start": 0, "inserted": [msg("c2", "PARENT CONTEXT")]})


def _ids(inbox: Inbox) -> tuple[list[str], list[str]]:
    return [m["id"] for m in inbox.next_turn], [m["id"] for m in inbox.next_step]


def test_a_seed_holding_splices_rebuilds_an_empty_inbox_and_later_splices_still_count():
    parent = Session(make_header(SID, cwd="/work", created_at=1), clock=lambda: 5)
    _parent_with_queued_input(parent)
    assert _ids(Inbox(parent)) == (["p2"], ["c2"])  # the parent itself keeps its queue (resume rule)
    seed = list(parent.events)
    header = make_header("child", cwd="/work", created_at=2, parent_session=SID, seed_length=len(seed))
    child = Session(header, seed, clock=lambda: 6)
    assert child.events[-1]["type"] == "session/end-seed"
    assert _ids(Inbox(child)) == ([], [])
    # the child's own queued input (after the seed) is rebuilt on its next construction (its resume)
    Inbox(child).append("next-turn", msg("k1", "CHILD PROMPT"))
    resumed = Session(header, list(child.events), clock=lambda: 7)
    assert _ids(Inbox(resumed)) == (["k1"], [])
    # a resumed session that was never forked (no seedLength) gets back everything its splices fold to
    plain = Session(make_header(SID, cwd="/work", created_at=1), list(parent.events), clock=lambda: 8)
    assert _ids(Inbox(plain)) == (["p2"], ["c2"])


async def test_a_child_forked_through_a_queued_prompt_never_sends_it(tmp_path):
    store = cc.open_backend(str(tmp_path / "root"), "zstd")
    session, writer = lifecycle.start(store, make_header(SID, cwd=str(tmp_path), created_at=1), window_ms=60_000)
    _parent_with_queued_input(session)
    writer.close()
    # an explicit seq may end on standalone events after a turn (dsh's legal boundary): the seed then holds
    # the parent's queued prompt and context
    child = lifecycle.fork(store, SID, at_seq=len(session.events) - 1)
    assert child["seedLength"] == len(session.events)
    resumed, writer = lifecycle.resume(cc.open_backend(str(tmp_path / "root"), "zstd"), child["id"])
    provider = ScriptedProvider([s.text("child answer")], name="mock")
    agent = make_agent(session=resumed, provider=provider, tmp_path=tmp_path)
    try:
        assert _ids(agent.inbox) == ([], [])
        agent.followup("CHILD PROMPT")
        await agent.wait_idle()
        await agent.dispose()
    finally:
        writer.close()
    (request,) = provider.requests
    sent = repr(request)
    assert "CHILD PROMPT" in sent and "PARENT TURN 2" not in sent and "PARENT CONTEXT" not in sent
    ends = [e["data"] for e in resumed.events[child["seedLength"]:] if e["type"] == "turn/end"]
    assert ends == [{"turn": 2, "reason": {"kind": "completed"}}]
