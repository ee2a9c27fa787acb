"""Incremental Server-Sent Events framing (WHATWG ``text/event-stream``), byte oriented.

``SseDecoder.feed(data)`` takes raw bytes exactly as they come off the socket (reads may split
anywhere, including inside a UTF-8 sequence or between ``\\r`` and ``\\n``) and returns the
``data`` payloads of every event completed by those bytes, as ``bytes`` (UTF-8, multi-line data
joined with ``\\n``). An event is dispatched only at its terminating blank line, as in the
``eventsource-parser`` package dsh uses: a trailing event with no blank line is never delivered.
Comment lines (``: keep-alive``) produce nothing but are counted in ``comments``; ``event``,
``id`` and ``retry`` fields are accepted and ignored (chat-completions streams do not use them).

Buffering is linear: the bytes of a line still incomplete are kept as a list of reads and joined once
when the line ends, so one 40 MB line costs one copy, not one per read. A line longer than
``MAX_LINE_BYTES`` (64 MiB) raises :class:`SseLineTooLong` (no chat-completions event comes near it).

The decoder is on the provider's hot path (one call per socket read, one payload per token), so
it works on bytes with ``bytes.split`` and keeps the common ``data: {...}\\n\\n`` shape cheap.
"""

from __future__ import annotations

from dsh_tui.session.errors import DshError

_CR = b"\r"
_LF = b"\n"
_CRLF = b"\r\n"


DATA = b"data: "
MAX_LINE_BYTES = 64 << 20


class SseLineTooLong(DshError, ValueError):
    """One SSE line grew past ``MAX_LINE_BYTES`` without a line break."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"an event-stream line longer than {limit >> 20} MiB")
        self.limit = limit


class SseDecoder:
    __slots__ = ("_buf", "_parts", "_pending", "_data", "_one", "comments", "max_line")

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self._buf = b""  # the incomplete last line
        self._parts: list[bytes] = []  # reads of a long incomplete line not yet joined (after _buf)
        self._pending = 0  # len(_buf) + the lengths of _parts
        self.max_line = max_line
        self._data: list[bytes] = []  # data lines of the event being built, each as b"data: <value>"
        self._one: bytes | None = None
        self.comments = 0  # comment lines seen (transport activity, never an event)

    def feed(self, chunk: bytes) -> list[bytes]:
        """Consume bytes; return the payloads of the events they complete, in order."""
        return [event[6:] for event in self.feed_framed(chunk)]

    def feed_framed(self, chunk: bytes) -> list[bytes]:
        """Like ``feed``, but each payload comes as ``b"data: " + payload`` (for a one-line event, the
        very line received: no copy). The provider's hot loop matches whole lines this way."""
        if self._buf or self._parts:
            # (a held-back CR at the end of _buf ends the line whatever follows: take the full path)
            if _LF not in chunk and _CR not in chunk and not self._buf.endswith(_CR):
                # still inside the same line: keep the read, join once when the line ends (linear)
                self._pending += len(chunk)
                if self._pending > self.max_line:
                    raise SseLineTooLong(self.max_line)
                self._parts.append(chunk)
                return []
            if self._parts:
                chunk = b"".join([self._buf, *self._parts, chunk])
                self._parts.clear()
            else:
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
        self._pending = len(self._buf)
        if self._pending > self.max_line:
            raise SseLineTooLong(self.max_line)
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
        if self._parts:
            self._buf = b"".join([self._buf, *self._parts])
            self._parts.clear()
        if self._buf.endswith(_CR):
            self._buf = self._buf[:-1]
            out = self.feed_framed(_LF)
        self._buf = b""
        self._pending = 0
        self._data.clear()
        self._one = None
        return out
