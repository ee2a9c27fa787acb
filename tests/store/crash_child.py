"""Scripted sessions for the durability tests, and the child process of the SIGKILL crash suite.

As a module: builders that append a realistic dsh turn (inbox splices, request header, streamed chunks,
assistant message, tool calls and results) to anything with ``Session.append``'s signature — the real
``Session``, or ``EventList`` which just assigns seq/time (for backend tests that need plain event lists).

As a script (``python crash_child.py ROOT BACKEND SEED``): runs a scripted session through the real
store, writer and semantic checkpoints, printing one line per milestone on stdout (the pipe to the parent):
  ``durable N SHA``   a flush/background write returned: events[:N] are fsynced, SHA = sha256 of their JSON
  ``request T S``     a model request was checkpointed and is "in flight" (turn T, step S)
  ``tool T S ID``     a tool body is running (its tool/call was checkpointed)
  ``chunks T S K``    K chunks of the current stream have been appended
  ``done``            the script finished and the writer closed
The parent kills it with SIGKILL at a random milestone and checks the log.
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

CHILD_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROVIDER = "deepseek"
MODEL = "deepseek-chat"


class EventList:
    """A plain event list with ``Session.append``'s signature (seq = index, time from a counter)."""

    def __init__(self, start_time: int = 1_700_000_000_000, step_ms: int = 1) -> None:
        self.events: list[dict] = []
        self._t = start_time
        self._step = step_ms

    def append(self, type, data, *, surface_op=None, source_event_seqs=None):  # noqa: A002
        ev = {"type": type, "seq": len(self.events), "time": self._t, "data": data}
        self._t += self._step
        if source_event_seqs is not None:
            ev["sourceEventSeqs"] = list(source_event_seqs)
        if surface_op is not None:
            ev["surfaceOp"] = surface_op
        self.events.append(ev)
        return ev


def user_msg(mid: str, text: str) -> dict:
    return {"id": mid, "role": "user", "content": [{"type": "text", "text": text}], "source": {"kind": "user"}}


def begin_turn(log, turn: int, prompt: str, rng: random.Random) -> None:
    mid = f"m-{turn}-{rng.getrandbits(32):08x}"
    msg = user_msg(mid, prompt)
    log.append("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [msg]})
    log.append("turn/start", {"turn": turn})
    log.append("agent/inbox/spliced", {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []})
    log.append("step/start", {"turn": turn, "step": 1})
    log.append("user/message", msg, surface_op="append")


def request(log, turn: int, first: bool) -> None:
    """The first request of a log records its header and route; later unchanged ones record nothing."""
    if not first:
        return
    header = {"config": {"provider": PROVIDER, "model": MODEL, "maxTokens": 4096}, "system": "You are a test."}
    log.append("request/header", {"header": header, "reason": "initial" if first else "change"})
    log.append("request/context", {"provider": PROVIDER, "model": MODEL, "contextWindow": 65536})


def stream(log, turn: int, step: int, pieces: list[str], tool_calls=(), on_chunk=None) -> dict:
    """Chunks of one attempt then the assistant message citing them; returns the message event."""
    seqs = []

    def chunk(c):
        seqs.append(log.append("assistant/chunk", {"turn": turn, "step": step, "chunk": c})["seq"])
        if on_chunk is not None:
            on_chunk(len(seqs))

    chunk({"type": "block-start", "index": 0, "blockType": "text"})
    for p in pieces:
        chunk({"type": "text-delta", "index": 0, "text": p})
    text = "".join(pieces)
    chunk({"type": "block-end", "index": 0, "block": {"type": "text", "text": text}})
    content = [{"type": "text", "text": text}]
    for i, (cid, name, args) in enumerate(tool_calls, start=1):
        chunk({"type": "block-start", "index": i, "blockType": "tool-call"})
        half = len(args) // 2
        for part in (args[:half], args[half:]):
            chunk({"type": "tool-call-delta", "index": i, "id": cid, "name": name, "argumentsDelta": part})
        block = {"type": "tool-call", "id": cid, "name": name, "arguments": args}
        chunk({"type": "block-end", "index": i, "block": block})
        content.append(block)
    usage = {"inputTokens": 100, "outputTokens": len(pieces)}
    chunk({"type": "usage", "usage": usage})
    chunk({"type": "finish", "reason": {"kind": "tool-calls" if tool_calls else "stop"}})
    msg = {
        "id": f"a-{turn}-{step}-{len(log.events)}",
        "role": "assistant",
        "content": content,
        "source": {"kind": "model", "provider": PROVIDER, "model": MODEL},
    }
    return log.append(
        "assistant/message", {"turn": turn, "step": step, "message": msg, "usage": usage},
        surface_op="append", source_event_seqs=seqs,
    )


def tool_call(log, turn: int, step: int, cid: str, name: str, args: str) -> int:
    return log.append("tool/call", {"turn": turn, "step": step, "callId": cid, "name": name, "arguments": args})["seq"]


def tool_result(log, turn: int, step: int, cid: str, call_seq: int, text: str) -> None:
    msg = {
        "id": f"r-{cid}",
        "role": "user",
        "content": [{"type": "tool-result", "toolCallId": cid, "content": [{"type": "text", "text": text}]}],
        "source": {"kind": "tool", "callId": cid},
    }
    log.append("tool/result", {"turn": turn, "step": step, "message": msg}, surface_op="append",
               source_event_seqs=[call_seq])


def end_step(log, turn, step):
    log.append("step/end", {"turn": turn, "step": step})


def end_turn(log, turn, kind="completed"):
    log.append("turn/end", {"turn": turn, "reason": {"kind": kind}})


def words(rng: random.Random, n: int) -> list[str]:
    vocab = ["alpha ", "beta ", "gamma ", "δέλτα ", "日本 ", "x", "\n", "tool ", "🙂", "the "]
    return [rng.choice(vocab) for _ in range(n)]


def scripted_turn(log, turn: int, rng: random.Random, *, first: bool, chunks: int = 40, tools: int = 1) -> None:
    """A complete turn without any I/O hooks (for building fixtures and differential inputs)."""
    begin_turn(log, turn, f"prompt {turn}", rng)
    request(log, turn, first)
    calls = [(f"call-{turn}-{i}", "read_file", f'{{"path":"f{i}.txt"}}') for i in range(tools)]
    stream(log, turn, 1, words(rng, chunks), calls)
    seqs = {cid: tool_call(log, turn, 1, cid, name, args) for cid, name, args in calls}
    for cid, _, _ in calls:
        tool_result(log, turn, 1, cid, seqs[cid], f"contents of {cid}")
    end_step(log, turn, 1)
    if calls:
        log.append("step/start", {"turn": turn, "step": 2})
        stream(log, turn, 2, words(rng, chunks // 2))
        end_step(log, turn, 2)
    end_turn(log, turn)


def build_log(turns: int = 2, seed: int = 1, chunks: int = 40, tools: int = 1) -> list[dict]:
    rng = random.Random(seed)
    log = EventList()
    for t in range(1, turns + 1):
        scripted_turn(log, t, rng, first=t == 1, chunks=chunks, tools=tools)
    return log.events


# --------------------------------------------------------------------------------------------- child


HANG = os.environ.get("CRASH_CHILD_HANG", "")


def _say(line: str) -> None:
    os.write(1, (line + "\n").encode())


def _milestone(kind: str, line: str) -> None:
    """Report a milestone; with CRASH_CHILD_HANG=kind:prefix matching it, stop here until killed."""
    _say(line)
    if HANG:
        want_kind, _, prefix = HANG.partition(":")
        arg = line.split()[-1] if kind == "tool" else line.split()[1]
        if want_kind == kind and arg.startswith(prefix):
            while True:
                time.sleep(60)


def _digest(events: list[dict]) -> str:
    from dsh_tui.session import jsonutil

    return hashlib.sha256("\n".join(jsonutil.dumps(e) for e in events).encode()).hexdigest()[:16]


def open_backend(root: str, backend: str):
    from dsh_tui.store.open import open_store

    if backend == "sqlite":
        return open_store(root, backend="sqlite")
    return open_store(root, backend="jsonl", compression="zstd" if backend == "zstd" else "none")


def child_main(root: str, backend: str, seed: int, session_id: str) -> None:
    import asyncio

    from dsh_tui.session.headers import make_header
    from dsh_tui.store import lifecycle

    rng = random.Random(seed)
    store = open_backend(root, backend)
    header = make_header(session_id, cwd="/tmp/crash-work", created_at=1_700_000_000_000)
    session, writer = lifecycle.start(store, header, window_ms=rng.choice([5, 20, 200]))

    def on_flush(n: int) -> None:
        _say(f"durable {n} {_digest(session.events[:n])}")

    writer.on_flush = on_flush

    async def script() -> None:
        for turn in range(1, 4):
            begin_turn(session, turn, f"prompt {turn}", rng)
            await writer.checkpoint("pre-step")
            request(session, turn, turn == 1)
            await writer.checkpoint("request")
            _milestone("request", f"request {turn} 1")
            time.sleep(rng.random() * 0.01)  # the model "thinks"
            calls = [(f"call-{turn}-{i}", "bash", f'{{"cmd":"echo {i}"}}') for i in range(rng.randint(0, 2))]

            def on_chunk(k: int, turn=turn) -> None:
                if k % 25 == 0:
                    _say(f"chunks {turn} 1 {k}")
                    time.sleep(0.002)

            stream(session, turn, 1, words(rng, rng.randint(20, 150)), calls, on_chunk)
            for cid, name, args in calls:
                seq = tool_call(session, turn, 1, cid, name, args)
                await writer.checkpoint("tool")
                _milestone("tool", f"tool {turn} 1 {cid}")
                time.sleep(rng.random() * 0.01)  # the tool body runs
                tool_result(session, turn, 1, cid, seq, f"ran {cid}")
            if calls:  # every call answered, the step not yet ended; the last field: events so far
                _milestone("result", f"result {turn} 1 {len(session.events)}")
            end_step(session, turn, 1)
            end_turn(session, turn)
            time.sleep(rng.random() * 0.01)
        writer.close()
        _say("done")

    asyncio.run(script())


if __name__ == "__main__":
    child_main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else "crash-session")
