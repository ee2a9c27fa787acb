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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Pool = dict[str, str]
_Share = Callable[[str, str], str]  # the pool's setdefault


def _block(b: dict[str, Any], sd: _Share) -> None:
    """A content block: its string fields (type, text, id, name, arguments, toolCallId), and a tool result's
    nested content."""
    for k, v in b.items():
        if v.__class__ is str:
            b[k] = sd(v, v)
        elif k == "content" and v.__class__ is list:
            for inner in v:
                _block(inner, sd)


def _chunk(ev: dict[str, Any], pool: Pool) -> None:
    c = ev["data"]["chunk"]
    if c["type"] == "block-end":
        _block(c["block"], pool.setdefault)


#: ``share_block(block, pool.setdefault)``: a content block's strings shared (the JSONL scanner calls it for a
#: ``block-end`` chunk's block itself, sparing a call per chunk)
share_block = _block


def _message(m: dict[str, Any], sd: _Share) -> None:
    """A message's content blocks and its source's strings (kind, provider, model, callId ...)."""
    for b in m["content"]:
        _block(b, sd)
    src = m["source"]
    for k, v in src.items():
        if v.__class__ is str:
            src[k] = sd(v, v)


def _message_in_data(ev: dict[str, Any], pool: Pool) -> None:
    """assistant/message, tool/result: ``data.message``, and the surfaceOp."""
    sd = pool.setdefault
    _message(ev["data"]["message"], sd)
    v = ev["surfaceOp"]
    if v.__class__ is str:
        ev["surfaceOp"] = sd(v, v)


def _assistant_message(ev: dict[str, Any], pool: Pool) -> None:
    """assistant/message: as ``_message_in_data``, and (format v4) its embedded ``stream``, whose ``block-end``
    chunks repeat the message's blocks."""
    _message_in_data(ev, pool)
    stream = ev["data"].get("stream")
    if stream.__class__ is list:
        sd = pool.setdefault
        for entry in stream:
            if entry["type"] == "chunk":
                c = entry["chunk"]
                if c["type"] == "block-end":
                    _block(c["block"], sd)


def _user_message(ev: dict[str, Any], pool: Pool) -> None:
    """user/message: the message is the data (the same texts as its ``agent/inbox/spliced`` delivery)."""
    _message(ev["data"], pool.setdefault)


def _inbox_spliced(ev: dict[str, Any], pool: Pool) -> None:
    sd = pool.setdefault
    for m in ev["data"].get("inserted") or ():
        _message(m, sd)


def _tool_call(ev: dict[str, Any], pool: Pool) -> None:
    d = ev["data"]
    sd = pool.setdefault
    for k in ("callId", "arguments"):
        v = d[k]
        if v.__class__ is str:
            d[k] = sd(v, v)


SHARERS: dict[str, Callable[[dict[str, Any], Pool], None]] = {
    "assistant/chunk": _chunk,
    "assistant/message": _assistant_message,
    "user/message": _user_message,
    "agent/inbox/spliced": _inbox_spliced,
    "tool/call": _tool_call,
    "tool/result": _message_in_data,
}
