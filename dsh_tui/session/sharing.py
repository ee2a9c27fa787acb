"""One string object for the texts a log stores several times over (a memory measure for loads).

dsh records a model step's output more than once: every content block's strings (reasoning and answer text,
a tool call's id, name and arguments) are in the ``block-end`` chunk that closes the block and again in the
step's ``assistant/message``; a tool call's id and arguments also in ``tool/call``, its id twice more in the
``tool/result``. A JSON parser gives each occurrence its own object. A decoder calls
``SHARERS[event_type](event, pool)`` on each event it has just parsed, with one ``pool`` dict per load, and
the sharer replaces those strings with the pool's one equal string (the first occurrence). Format v4 stores a
step's blocks in the message and again in its embedded ``stream``, and a prompt in ``agent/inbox/spliced`` and
again in its ``user/message``.

The event is unchanged as JSON: only a ``str`` is ever replaced, by an equal ``str``. A sharer stops at the
first place the event does not have the shape it expects (``KeyError``, ``TypeError``, ``AttributeError``;
the caller ignores them: validation reports malformed events later).

The message sharers walk the rest of the event's data as they go and return True when no float anywhere in
``data`` is NaN, ±Infinity or -0 (``jsonutil._floats_ok``), so the seed check need not walk it a second time
(the JSONL scanner notes those events, ``LineScanner.floats_checked``); False (or None) says nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .jsonutil import _floats_ok

Pool = dict[str, str]
_Share = Callable[[str, str], str]  # the pool's setdefault


def _block(b: dict[str, Any], sd: _Share) -> bool:
    """A content block: its string fields (type, text, id, name, arguments, toolCallId), and a tool result's
    nested content. True: no bad float in the block."""
    ok = True
    for k, v in b.items():
        c = v.__class__
        if c is str:
            b[k] = sd(v, v)
        elif k == "content" and c is list:
            for inner in v:
                if not _block(inner, sd):
                    ok = False
        elif c is not int and c is not bool and v is not None and not _floats_ok(v):
            ok = False
    return ok


def _rest_ok(d: dict[str, Any], walked: str, walked2: str) -> bool:
    """No bad float in the values of ``d`` other than those at ``walked`` and ``walked2`` (already walked)."""
    for k, v in d.items():
        c = v.__class__
        if (c is not str and c is not int and c is not bool and v is not None and k != walked and k != walked2
                and not _floats_ok(v)):
            return False
    return True


def _chunk(ev: dict[str, Any], pool: Pool) -> None:
    c = ev["data"]["chunk"]
    if c["type"] == "block-end":
        _block(c["block"], pool.setdefault)


#: ``share_block(block, pool.setdefault)``: a content block's strings shared (the JSONL scanner calls it for a
#: ``block-end`` chunk's block itself, sparing a call per chunk)
share_block = _block


def _message(m: dict[str, Any], sd: _Share) -> bool:
    """A message's content blocks and its source's strings (kind, provider, model, callId ...). True: no bad
    float in the message."""
    ok = m.__class__ is dict
    content = m["content"]
    src = m["source"]
    for b in content:
        if not _block(b, sd):
            ok = False
    for k, v in src.items():
        c = v.__class__
        if c is str:
            src[k] = sd(v, v)
        elif c is not int and c is not bool and v is not None and not _floats_ok(v):
            ok = False
    if not ok or content.__class__ is not list or src.__class__ is not dict:
        return False  # (or walked as something else: say nothing)
    if len(m) == 4:  # the usual role, content, source, id
        return (m.get("role").__class__ is str and m.get("id").__class__ is str) or _rest_ok(m, "content", "source")
    return _rest_ok(m, "content", "source")


def _message_in_data(ev: dict[str, Any], pool: Pool) -> bool:
    """assistant/message, tool/result: ``data.message``, and the surfaceOp. True: no bad float in ``data``."""
    sd = pool.setdefault
    d = ev["data"]
    ok = _message(d["message"], sd)
    v = ev["surfaceOp"]
    if v.__class__ is str:
        ev["surfaceOp"] = sd(v, v)
    return ok and d.__class__ is dict and _rest_ok(d, "message", "message")


def _assistant_message(ev: dict[str, Any], pool: Pool) -> bool:
    """assistant/message: as ``_message_in_data``, and (format v4) its embedded ``stream``, whose ``block-end``
    chunks repeat the message's blocks."""
    ok = _message_in_data(ev, pool)
    stream = ev["data"].get("stream")
    if stream.__class__ is list:
        sd = pool.setdefault
        for entry in stream:
            if entry["type"] == "chunk":
                c = entry["chunk"]
                if c["type"] == "block-end":
                    _block(c["block"], sd)
    return ok


def _user_message(ev: dict[str, Any], pool: Pool) -> bool:
    """user/message: the message is the data (the same texts as its ``agent/inbox/spliced`` delivery)."""
    d = ev["data"]
    return _message(d, pool.setdefault) and d.__class__ is dict


def _inbox_spliced(ev: dict[str, Any], pool: Pool) -> bool:
    sd = pool.setdefault
    d = ev["data"]
    inserted = d.get("inserted")
    ok = True
    for m in inserted or ():
        if not _message(m, sd):
            ok = False
    if inserted.__class__ is not list:
        return False  # (absent, or walked as something else: say nothing)
    return ok and d.__class__ is dict and _rest_ok(d, "inserted", "inserted")


def _tool_call(ev: dict[str, Any], pool: Pool) -> None:
    d = ev["data"]
    sd = pool.setdefault
    for k in ("callId", "arguments"):
        v = d[k]
        if v.__class__ is str:
            d[k] = sd(v, v)


SHARERS: dict[str, Callable[[dict[str, Any], Pool], bool | None]] = {
    "assistant/chunk": _chunk,
    "assistant/message": _assistant_message,
    "user/message": _user_message,
    "agent/inbox/spliced": _inbox_spliced,
    "tool/call": _tool_call,
    "tool/result": _message_in_data,
}
