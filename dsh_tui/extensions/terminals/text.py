"""What the model reads of a terminal: dsh's sanitized line text (``Sanitizer``: escapes removed, the prompt
marker found, CR/CRLF made newlines) and bounded buffers of it (``BoundedText``), for the local shell
backend (``local.py``)."""

from __future__ import annotations

#: the OSC ``133;D;`` marker ``PROMPT_COMMAND`` emits before the controlled prompt
PROMPT_MARKER_PREFIX = "133;D;"


def utf8_tail(text: str, max_bytes: int) -> tuple[str, bool]:
    data = text.encode()
    if len(data) <= max_bytes:
        return text, False
    return data[len(data) - max_bytes:].decode("utf-8", "ignore"), True


class BoundedText:
    """dsh's ``BoundedTextBuffer``: the newest ``max_bytes`` (and ``max_lines``) of appended text."""

    def __init__(self, max_bytes: int, max_lines: int | None = None) -> None:
        self.value = ""
        self.dropped = False
        self.max_bytes = max_bytes
        self.max_lines = max_lines

    def append(self, text: str) -> None:
        if not text:
            return
        self.value += text
        if self.max_lines is not None:
            lines = self.value.split("\n")
            if len(lines) > self.max_lines:
                self.value = "\n".join(lines[len(lines) - self.max_lines:])
                self.dropped = True
        self.value, cut = utf8_tail(self.value, self.max_bytes)
        self.dropped = self.dropped or cut

    def consume(self) -> dict:
        out = {"delta": self.value, "truncated": self.dropped}
        self.value, self.dropped = "", False
        return out


def normalize_terminal_text(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x07", "")


class Sanitizer:
    """dsh's ``TerminalSanitizer``: CSI/OSC/two-byte escapes removed (a sequence split across chunks carried
    over), the prompt marker reported, CRLF and lone CR made newlines."""

    def __init__(self, max_pending_bytes: int) -> None:
        self.max_pending = max_pending_bytes
        self.pending = ""
        self.discard: str | None = None
        self.discard_osc_escape = False
        self.trailing_cr = False
        self.tracking_tail = False

    def push(self, chunk: str) -> tuple[str, bool, str | None]:
        """(printable text, whether the prompt marker completed, printable text after the latest marker)."""
        self.pending += self._discard_prefix(chunk)
        text: list[str] = []
        tail: list[str] = []
        prompt = False
        include_tail = self.tracking_tail
        p = self.pending
        i = 0

        def add(value: str) -> None:
            text.append(value)
            if self.tracking_tail:
                tail.append(value)

        while i < len(p):
            esc = p.find("\x1b", i)
            if esc < 0:
                add(p[i:])
                i = len(p)
                break
            add(p[i:esc])
            if esc + 1 >= len(p):
                i = esc
                break
            kind = p[esc + 1]
            if kind == "]":
                bel = p.find("\x07", esc + 2)
                st = p.find("\x1b\\", esc + 2)
                if bel >= 0 and st >= 0:
                    end = min(bel + 1, st + 2)
                elif bel >= 0:
                    end = bel + 1
                elif st >= 0:
                    end = st + 2
                else:
                    i = esc
                    break
                term = 1 if p[end - 1] == "\x07" else 2
                if p[esc + 2:end - term].startswith(PROMPT_MARKER_PREFIX):
                    prompt = True
                    self.tracking_tail = True
                    include_tail = True
                    tail = []
                i = end
                continue
            if kind == "[":
                end = esc + 2
                while end < len(p) and not (0x40 <= ord(p[end]) <= 0x7E):
                    end += 1
                if end >= len(p):
                    i = esc
                    break
                i = end + 1
                continue
            i = esc + 2
        self.pending = p[i:]
        if len(self.pending.encode()) > self.max_pending:
            self.discard = "osc" if self.pending[1:2] == "]" else "csi"
            self.pending = ""
        return self._normalize("".join(text)), prompt, ("".join(tail) if include_tail else None)

    def flush(self) -> str:
        text = "" if self.pending.startswith("\x1b") else self.pending
        self.pending = ""
        self.discard = None
        self.discard_osc_escape = False
        self.tracking_tail = False
        out = self._normalize(text)
        if not self.trailing_cr:
            return out
        self.trailing_cr = False
        return out + "\n"

    def _normalize(self, text: str) -> str:
        complete = "\r" + text if self.trailing_cr else text
        self.trailing_cr = False
        if complete.endswith("\r"):
            complete = complete[:-1]
            self.trailing_cr = True
        return normalize_terminal_text(complete)

    def _discard_prefix(self, chunk: str) -> str:
        if self.discard is None:
            return chunk
        if self.discard == "csi":
            for i, ch in enumerate(chunk):
                if 0x40 <= ord(ch) <= 0x7E:
                    self.discard = None
                    return chunk[i + 1:]
            return ""
        i = 0
        if self.discard_osc_escape:
            self.discard_osc_escape = False
            if chunk.startswith("\\"):
                self.discard = None
                return chunk[1:]
        while i < len(chunk):
            if chunk[i] == "\x07":
                self.discard = None
                return chunk[i + 1:]
            if chunk[i] == "\x1b":
                if chunk[i + 1:i + 2] == "\\":
                    self.discard = None
                    return chunk[i + 2:]
                if i + 1 == len(chunk):
                    self.discard_osc_escape = True
            i += 1
        return ""
