"""Generated long sessions (valid dsh event shapes) for transcript tests and UI benchmarks."""

from __future__ import annotations

import json
from typing import Any


def long_session(steps: int, *, tools_every: int = 4, chunks_per_step: int = 80) -> tuple[dict, list[dict[str, Any]]]:
    """(header, events): one turn per 2 steps; a tool call in most steps; ``chunks_per_step`` text chunks each."""
    header = {"type": "session", "version": 0, "id": "synthetic", "createdAt": 0, "cwd": "/w", "delegationDepth": 0}
    events: list[dict[str, Any]] = []

    def add(type_: str, data: dict, **extra: Any) -> int:
        seq = len(events)
        events.append({"type": type_, "seq": seq, "time": 1_000 * seq, "data": data, **extra})
        return seq

    turn = 0
    for s in range(steps):
        step = s % 2 + 1
        if step == 1:
            turn += 1
            add("turn/start", {"turn": turn})
        add("step/start", {"turn": turn, "step": step})
        if step == 1:
            add("user/message", {"role": "user", "id": f"u{turn}", "source": {"kind": "user"},
                                 "content": [{"type": "text", "text": f"Question {turn}: please look at module {turn}."}]},
                surfaceOp="append")
        text = f"Step {s}: here is **what I found** in `module_{turn}.py`.\n\n" + "lorem ipsum dolor sit amet " * 6
        n = len(text)
        pieces = [text[i * n // chunks_per_step:(i + 1) * n // chunks_per_step] for i in range(chunks_per_step)]
        first = len(events)
        add("assistant/chunk", {"turn": turn, "step": step, "chunk": {"type": "block-start", "index": 0, "blockType": "text"}})
        for piece in pieces:
            add("assistant/chunk", {"turn": turn, "step": step, "chunk": {"type": "text-delta", "index": 0, "text": piece}})
        content: list[dict] = [{"type": "text", "text": text}]
        call = s % tools_every != tools_every - 1
        if call:
            args = json.dumps({"command": f"grep -rn thing{s} src/"})
            content.append({"type": "tool-call", "id": f"c{s}", "name": "bash", "arguments": args})
        add("assistant/chunk", {"turn": turn, "step": step, "chunk": {"type": "usage",
                                                                       "usage": {"inputTokens": 1000, "outputTokens": 80}}})
        add("assistant/message", {"turn": turn, "step": step, "message": {
            "role": "assistant", "id": f"a{s}", "content": content,
            "source": {"kind": "model", "provider": "p", "model": "m"}}},
            surfaceOp="append", sourceEventSeqs=list(range(first, len(events))))
        if call:
            c = add("tool/call", {"turn": turn, "step": step, "callId": f"c{s}", "name": "bash", "arguments": args})
            add("tool/result", {"turn": turn, "step": step, "message": {
                "role": "user", "id": f"r{s}", "source": {"kind": "tool", "callId": f"c{s}"},
                "content": [{"type": "tool-result", "toolCallId": f"c{s}", "isError": False,
                             "content": [{"type": "text", "text": f"src/a.py:{s}: thing{s}\n[exit code: 0]"}]}]}},
                surfaceOp="append", sourceEventSeqs=[c])
        add("step/end", {"turn": turn, "step": step})
        if step == 2:
            add("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    if steps % 2:
        add("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    return header, events
