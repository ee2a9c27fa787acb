"""Text from a model, made safe to show: UTF-16 as JavaScript holds it, and no terminal control sequences.

A provider streams text as JSON strings, and a JSON string may carry UTF-16 surrogates: a gateway slicing
strings by length splits an emoji into ``"\\ud83d"`` and ``"\\ude00"`` across two chunks, and a cut at
``max_tokens`` leaves half a pair. dsh (JavaScript) keeps such text as UTF-16 code units: the two halves
concatenated are one character again, and a lone half is stored as the escape ``\\udXXX``
(``session.jsonutil.dumps``). Python keeps them as separate surrogate code points, which no UTF-8 stream
can hold.

* :func:`js_join` — surrogate pairs joined into their character (as JavaScript string concatenation
  reads them); a lone surrogate is kept (the log stores it as dsh does).
* :func:`well_formed` — :func:`js_join`, then each lone surrogate replaced with U+FFFD (what JavaScript's
  ``TextEncoder`` writes for it): always encodable as UTF-8.
* :func:`for_terminal` — :func:`well_formed`, then every terminal control sequence removed (ESC and its
  CSI / OSC / DCS / other sequences, C0 controls but ``\\n`` and ``\\t``, DEL and C1 controls), so
  that a model cannot write the clipboard (OSC 52), retitle the window (OSC 0), clear the screen or move
  the cursor over earlier output. ``\\r\\n`` becomes ``\\n``. The log keeps the text as it came.
"""

from __future__ import annotations

import re
from functools import cache

# compiled on first use, not at import: this module is on the way to the app's first frame (its line filter),
# and the surrogate ranges make these the slowest patterns to compile there (~8 M instructions, #29)
_SURROGATE = "[\ud800-\udfff]"
# ESC-introduced sequences (ECMA-48): CSI ``ESC [ params final``, OSC / DCS / SOS / PM / APC strings
# ended by BEL or ST (``ESC \\``) or unterminated to the end of the text, and two-character escapes.
# The 8-bit C1 forms (``\x9b`` CSI, ``\x9d`` OSC, ...) likewise.
_SEQUENCE = (
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"  # CSI (final byte may be missing at the end)
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC, DCS, SOS, PM, APC
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?"  # other escapes (charset selection, RIS ``ESC c``, ...) or a lone ESC
)
_CONTROL = r"[\x00-\x08\x0b-\x1f\x7f-\x9f]"


@cache
def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


_CRLF = "\r\n"


def js_join(text: str) -> str:
    """Surrogate pairs (two code points in Python) joined into one character; lone surrogates kept."""
    if not _re(_SURROGATE).search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def well_formed(text: str) -> str:
    """:func:`js_join`, then each lone surrogate as U+FFFD: text any UTF-8 stream can carry."""
    if not _re(_SURROGATE).search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


_UNSAFE = "[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]"


def needs_cleaning(text: str) -> bool:
    """True when :func:`for_terminal` would change ``text`` (a control character or a surrogate)."""
    # every such character is a control (Cc) or a surrogate (Cs), which ``isprintable`` is false for: printable
    # text (nearly every line drawn) needs no pattern
    return not text.isprintable() and _re(_UNSAFE).search(text) is not None


def for_terminal(text: str) -> str:
    """Model text to write to a terminal: well-formed, with no control sequence but newlines and tabs."""
    text = well_formed(text)
    if not _re(_CONTROL).search(text):
        return text
    if _CRLF in text:
        text = text.replace(_CRLF, "\n")
    text = _re(_SEQUENCE).sub("", text)
    return _re(_CONTROL).sub("", text)
