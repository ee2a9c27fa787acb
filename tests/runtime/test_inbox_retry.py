"""Inbox operations (runtime spec 3.2, C2, C21) and the retry executor (6.3, C14)."""

from __future__ import annotations

import pytest

from dsh_tui.extensions.retry import local_delay_ms, policy_key
from dsh_tui.llm import scripted as s
from dsh_tui.llm.protocol import RetryPolicy
from dsh_tui.runtime.inbox import Inbox, InboxError
from tests.runtime.helpers import make_agent, make_session, of_type, run_followup


def msg(mid: str, text: str = "x") -> dict:
    return {"id": mid, "role": "user", "content": [{"type": "text", "text": text}], "source": {"kind": "user"}}


def test_inbox_mutations_are_durable_first_and_rebuildable():
    session = make_session()
    notes = []
    seen_in_observer = []
    inbox = Inbox(session, lambda name, p: notes.append((name, p["message"]["id"])))
    session.subscribe(lambda sess, ev: seen_in_observer.append([m["id"] for m in inbox.next_turn]))
    inbox.append("next-turn", msg("a"))
    assert seen_in_observer == [[]]  # observers still see the pre-splice lists
    inbox.append("next-turn", msg("b"))
    inbox.prepend("next-step", msg("c"))
    assert inbox.replace("b", msg("b2")) is True
    assert inbox.remove("a") is True
    assert inbox.remove("nope") is False
    assert [m["id"] for m in inbox.next_turn] == ["b2"] and [m["id"] for m in inbox.next_step] == ["c"]
    assert ("agent/inbox/discarded", "b") in notes and ("agent/inbox/discarded", "a") in notes
    spliced = [e["data"] for e in session.events]
    assert spliced[0] == {"target": "next-turn", "start": 0, "inserted": [msg("a")]}
    assert spliced[3] == {"target": "next-turn", "start": 1, "removedCount": 1, "inserted": [msg("b2")],
                          "outcome": "canceled"}
    rebuilt = Inbox(session)
    assert rebuilt.lists == inbox.lists
    claimed = inbox.claim("next-turn", 1)
    assert [m["id"] for m in claimed] == ["c", "b2"]  # C2: next-step first, then one next-turn message
    assert "outcome" not in session.events[-1]["data"]


def test_inbox_rejects_duplicates_and_bad_splices_without_change():
    session = make_session()
    inbox = Inbox(session)
    inbox.append("next-step", msg("a"))
    n = len(session.events)
    with pytest.raises(InboxError):
        inbox.append("next-turn", msg("a"))
    with pytest.raises(InboxError):
        inbox.splice("next-step", 5, 0, [msg("z")])
    assert len(session.events) == n and [m["id"] for m in inbox.next_step] == ["a"]
    inbox.clear()
    inbox.clear()  # C21: a no-op clear appends nothing
    assert len(session.events) == n + 1


def test_policy_key_and_delays():
    normal = RetryPolicy(max_retries=2, retryable_codes=("SERVER", "RATE_LIMIT"), jitter_ratio=0)
    assert policy_key(normal) == '["normal",2,["RATE_LIMIT","SERVER"],500,10000,0]'
    assert policy_key(RetryPolicy(mode="always")) == '["always",500,10000,0.1]'
    assert [local_delay_ms(normal, r) for r in (1, 2, 3, 10)] == [500, 1000, 2000, 10000]


async def test_retry_after_is_used_exactly_and_retries_are_bounded():
    policy = RetryPolicy(max_retries=2, jitter_ratio=0)
    provider = s.ScriptedProvider([s.finish_error("RATE_LIMIT", "busy", status=429, retry_after_ms=1234),
                                   s.finish_error("SERVER", "down"), s.finish_error("SERVER", "down")],
                                  name="mock", retry_policy=policy)
    agent = make_agent(provider=provider)
    await run_followup(agent, "hi")
    retries = [e["data"] for e in of_type(agent, "llm/retry")]
    assert [(r["retry"], r["delayMs"]) for r in retries] == [(1, 1234), (2, 1000)]
    assert len({r["retryId"] for r in retries}) == 1  # one sequence, one id
    assert len(of_type(agent, "llm/retry-started")) == 2
    reason = of_type(agent, "turn/end")[0]["data"]["reason"]
    assert reason == {"kind": "error", "error": {"message": "down", "code": "SERVER"}}
    assert agent.sleep.delays == [1.234, 1.0]


async def test_retry_after_above_the_cap_gives_up_and_ineligible_codes_delegate():
    policy = RetryPolicy(max_retries=3, jitter_ratio=0, max_delay_ms=1000)
    provider = s.ScriptedProvider([s.finish_error("RATE_LIMIT", "busy", status=429, retry_after_ms=5000)],
                                  name="mock", retry_policy=policy)
    agent = make_agent(provider=provider)
    await run_followup(agent, "hi")
    assert not of_type(agent, "llm/retry")
    agent2 = make_agent([s.finish_error("AUTH", "bad key", status=401)])
    await run_followup(agent2, "hi")
    assert not of_type(agent2, "llm/retry")
    assert of_type(agent2, "turn/end")[0]["data"]["reason"]["error"]["code"] == "AUTH"


async def test_always_mode_retries_any_code():
    policy = RetryPolicy(mode="always", jitter_ratio=0)
    provider = s.ScriptedProvider([s.finish_error("AUTH", "flaky"), s.text("ok")], name="mock", retry_policy=policy)
    agent = make_agent(provider=provider)
    await run_followup(agent, "hi")
    r = of_type(agent, "llm/retry")[0]["data"]
    assert r["mode"] == "always" and "maxRetries" not in r and r["delayMs"] == 500
    assert of_type(agent, "turn/end")[0]["data"]["reason"] == {"kind": "completed"}
