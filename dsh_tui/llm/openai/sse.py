"""Incremental Server-Sent Events framing (WHATWG ``text/event-stream``), byte oriented.

``SseDecoder.feed(data)`` takes raw bytes exactly as they come off the socket (reads may split
anywhere, including inside a UTF-8 sequence or between ``\\r`` and ``\\n``) and returns the
``data`` payloads of every event completed by those bytes, as ``bytes`` (UTF-8, multi-line data
joined with ``\\n``). An event is dispatched only at its terminating blank line, as in the
``eventsource-parser`` package dsh uses: a trailing event with no blank line is never delivered.
Comment lines (``: keep-alive``) produce nothing but are counted in ``comments``; ``event``,
``id`` and ``retry`` fields are accepted and ignored (chat-completions streams do not use them).

The decoder is on the provider's hot path (one call per socket read, one payload per token), so
it works on bytes with ``bytes.split`` and keeps the common ``data: {...}\\n\\n`` shape cheap.
"""

from __future__ import annotations

_CR = b"\r"
_LF = b"\n"
_CRLF = b"\r\n"


DATA = b"data: "


class SseDecoder:
    __slots__ = ("_buf", "_data", "_one", "comments")

    def __init__(self) -> None:
        self._buf = b""  # the incomplete last line
        self._data: list[bytes] = []  # data lines of the event being built, each as b"data: <value>"
        self._one: bytes | None = None
        self.comments = 0  # comment lines seen (transport activity, never an event)

    def feed(self, chunk: bytes) -> list[bytes]:
        """Consume bytes; return the payloads of the events they complete, in order."""
        return [event[6:] for event in self.feed_framed(chunk)]

    def feed_framed(self, chunk: bytes) -> list[bytes]:
        """Like ``feed``, but each payload comes as ``b"data: " + payload`` (for a one-line event, the
        very line received: no copy). The provider's hot loop matches whole lines this way."""
        if self._buf:
            chunk = self._buf + chunk
        if _CR in chunk:
            # A lone CR ends a line too; hold a CR at the very end back, its LF may follow.
            hold = chunk.endswith(_CR)
            if hold:
                chunk = chunk[:-1]
            chunk = chunk.replace(_CRLF, _LF).replace(_CR, _LF)
            if hold:
                chunk += _CR
        lines = chunk.split(_LF)
        # The incomplete last line (possibly ending in a held-back CR) waits for more bytes.
        self._buf = lines.pop()
        out: list[bytes] = []
        append = out.append
        data = self._data
        # ``one``: the only data line of the event being built (the common case, no list needed).
        one = self._one
        for line in lines:
            if not line:  # blank line: dispatch the event, if it has data
                if one is not None:
                    append(one)
                    one = None
                elif data:
                    append(DATA + _LF.join(d[6:] for d in data))
                    data.clear()
                continue
            if line.startswith(DATA):
                pass
            elif line.startswith(b"data:"):
                line = DATA + line[5:]
            elif line == b"data":  # a "data" field with no colon: an empty data line
                line = DATA
            else:
                if line.startswith(b":"):
                    self.comments += 1
                continue  # a comment, or event / id / retry / unknown fields: ignored
            if one is None and not data:
                one = line
            else:
                if one is not None:
                    data.append(one)
                    one = None
                data.append(line)
        self._one = one
        return out

    def close(self) -> list[bytes]:
        """End of stream: a held-back CR completes its line; an unterminated event is dropped."""
        return [event[6:] for event in self.close_framed()]

    def close_framed(self) -> list[bytes]:
        out: list[bytes] = []
        if self._buf.endswith(_CR):
            self._buf = self._buf[:-1] + _LF
            out = self.feed_framed(b"")
        self._buf = b""
        self._data.clear()
        self._one = None
        return out
