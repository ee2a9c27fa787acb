"""dsh's session-title text rules: ``clean``, ``truncate_utf8``, ``normalize`` and the
fallback title of a prompt. Pure functions; the plugins that append titles are in
``dsh_tui.extensions.titles``.
"""

from __future__ import annotations

import re
from typing import Any

FALLBACK_MAX_WORDS = 5
FALLBACK_MAX_BYTES = 40
MAX_TITLE_BYTES = 80

EMPTY_TITLE = "session title must contain visible characters"

# (1) OSC: ESC ] or U+009D through the first BEL or ESC \ inclusive, or to the end if unterminated
_OSC = re.compile(r"(?:\x1b\]|\x9d).*?(?:\x07|\x1b\\|\Z)", re.S)
# (2) CSI: ESC [ or U+009B, parameter bytes, intermediate bytes, one final byte
_CSI = re.compile(r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]")
# (3) ESC + one char in 0x40-0x5F
_ESC = re.compile(r"\x1b[\x40-\x5f]")
# (4) C0/C1 controls except TAB, LF, CR (whitespace, collapsed below); (5) invisible format characters
_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
                       "\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]")
# (6) JS ``\s``: Unicode whitespace (Python's ``\s`` on str is the same set plus U+001C-001F, removed above)
_SPACE = re.compile(r"\s+")


def clean(text: str) -> str:
    """Terminal escapes and invisible characters removed, whitespace runs collapsed to one space, trimmed."""
    text = _OSC.sub("", text)
    text = _CSI.sub("", text)
    text = _ESC.sub("", text)
    text = _CONTROLS.sub("", text)
    return _SPACE.sub(" ", text).strip(" ")


def truncate_utf8(text: str, max_bytes: int) -> str:
    """``text`` if it fits in ``max_bytes`` UTF-8 bytes, else its longest whole-code-point prefix that does."""
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text
    return raw[:max(0, max_bytes)].decode("utf-8", "ignore")


def normalize(text: str, max_bytes: int = MAX_TITLE_BYTES) -> str:
    return truncate_utf8(clean(text), max_bytes).rstrip()


def fallback_title(text: str, max_words: int = FALLBACK_MAX_WORDS, max_bytes: int = FALLBACK_MAX_BYTES) -> str:
    """The first ``max_words`` space-separated words of ``clean(text)``, cut to ``max_bytes`` (no ellipsis)."""
    words = clean(text).split(" ")[:max_words]
    return truncate_utf8(" ".join(words), max_bytes).rstrip()


def user_title(text: str) -> str:
    """A title the user typed, normalized to 80 bytes; ``ValueError`` (dsh's message) when nothing is left."""
    title = normalize(text if isinstance(text, str) else "")
    if not title:
        raise ValueError(EMPTY_TITLE)
    return title


def user_title_data(text: str) -> dict[str, Any]:
    """The ``session/title`` data of a rename: it pins the title (no later automatic title replaces it)."""
    return {"title": user_title(text), "messageSeqs": [], "source": {"kind": "user"}}


def message_text(message: Any) -> str:
    """A human ``user/message``'s text blocks joined with ``\\n`` (what titles are made from)."""
    if not isinstance(message, dict):
        return ""
    parts = [b.get("text", "") for b in message.get("content") or []
             if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]
    return "\n".join(parts)


def is_eligible(message: Any) -> bool:
    """A ``user/message`` data dict a title may be made from: a human's (``source.kind == "user"``) with
    visible text."""
    if not isinstance(message, dict):
        return False
    source = message.get("source")
    if not isinstance(source, dict) or source.get("kind") != "user":
        return False
    return bool(clean(message_text(message)))
