""""What the model sees is recorded" (session spec 2.5): every request is re-derivable from the log.

A mixed run (tools, steering, a retried failure, overflow compaction, a second turn) is replayed event by
event into a fresh Session; at the start of each model attempt the fresh session's ``derive_messages()``
and folded request header must equal what the provider actually received.
"""

from __future__ import annotations

from dsh_tui.extensions.compaction import PREAMBLE
from dsh_tui.llm import scripted as s
from dsh_tui.session.log import Session
from tests.runtime.helpers import make_agent, make_tool, run_followup

LONG = "Historical evidence that will be compacted away. " * 80


async def test_every_request_is_reconstructible_from_the_log():
    holder = {}

    async def body(args, ctx):
        if args.get("text") == "steer":
            holder["a"].steer("steering arrives mid-turn")
        return f"result {args.get('text')}"

    script = [
        s.call("c1", "t", {"text": "steer"}),
        s.finish_error("SERVER", "transient"),
        s.calls([("c2", "t", {"text": "a"}), ("c3", "t", {"text": "b"})]),
        s.finish_error("CONTEXT_WINDOW_EXCEEDED", "too long", status=400),
        s.text("summary of the early work"),
        s.text("turn one done"),
        s.text("turn two done"),
    ]
    agent = make_agent(script, [make_tool("t", body, parallel=True)], runtime_context=True,
                       context_sections=[{"name": "env", "text": "cwd=/work"}])
    holder["a"] = agent
    await run_followup(agent, LONG)
    await run_followup(agent, "and now?")
    turn_requests = [r for r in agent.provider.requests if r["purpose"] == "turn"]
    assert len(turn_requests) == 6
    assert any(PREAMBLE in str(r["messages"]) for r in turn_requests[-2:])

    fresh = Session(agent.session.header)
    derived = []
    prev_type = None
    for ev in agent.session.events:
        if ev["type"] == "assistant/chunk" and prev_type != "assistant/chunk":
            header = fresh.request_header()
            derived.append((fresh.derive_messages(), header))
        fresh.append(ev["type"], ev["data"], surface_op=ev.get("surfaceOp"),
                     source_event_seqs=ev.get("sourceEventSeqs"))
        prev_type = ev["type"]
    assert len(derived) == len(turn_requests)
    for (messages, header), request in zip(derived, turn_requests):
        assert messages == request["messages"]
        assert header["config"] == request["config"]
        assert header.get("system") == request["system"] and header.get("tools") == request["tools"]
