"""Small builders for session tests."""

from __future__ import annotations

import itertools

from dsh_tui.session.headers import make_header
from dsh_tui.session.log import Session


def ticking_clock(start: int = 1000):
    c = itertools.count(start)
    return lambda: next(c)


def new_session(seed=None, **kw) -> Session:
    return Session(make_header("sess-1", cwd="/work", created_at=5), seed, clock=kw.pop("clock", ticking_clock()), **kw)


def user_msg(text="hi", mid="u1", kind="user"):
    return {"content": [{"type": "text", "text": text}], "source": {"kind": kind}, "role": "user", "id": mid}


def asst_msg(text="ok", mid="a1", calls=()):
    content = [{"type": "text", "text": text}] if text else []
    content += [{"type": "tool-call", "id": c, "name": "bash", "arguments": "{}"} for c in calls]
    return {"role": "assistant", "content": content,
            "source": {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"}, "id": mid}


def tool_msg(call_id, text="out", mid=None, is_error=None):
    block = {"type": "tool-result", "toolCallId": call_id, "content": [{"type": "text", "text": text}]}
    if is_error is not None:
        block["isError"] = is_error
    return {"id": mid or f"r-{call_id}", "role": "user", "source": {"kind": "tool", "callId": call_id},
            "content": [block]}


def open_step(s: Session, turn=None, step=None):
    if s.open_turn is None:
        s.append("turn/start", {"turn": s.last_turn + 1})
    s.append("step/start", {"turn": s.open_turn, "step": s.last_step + 1})


def chunk_data(s: Session, text="x", index=0):
    return {"turn": s.open_turn, "step": s.open_step, "chunk": {"type": "text-delta", "index": index, "text": text}}
