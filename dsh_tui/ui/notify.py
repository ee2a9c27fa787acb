"""Desktop notifications when the terminal is not focused (``[ui] notify``; docs/app.md, "The chat").

When a turn ends or an approval is waiting while the terminal is not focused (Textual's ``App.app_focus``:
terminals report focus in and out, ``CSI ?1004``), the app asks the terminal for a desktop notification:
OSC 9 (iTerm2, WezTerm, kitty, ghostty) or OSC 777 (VTE terminals such as GNOME Terminal, foot, urxvt) where
the terminal is known to show one, else the bell (under tmux too: it passes a bell on as an alert). ``notify``:
``auto`` (that choice, the default), ``bell`` (always the bell) or ``off``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

MODES = ("auto", "bell", "off")
BELL = "\x07"


def protocol(environ: Mapping[str, str] | None = None) -> str:
    """``"osc9"``, ``"osc777"`` or ``"bell"``: what the terminal in ``environ`` shows as a notification."""
    env = os.environ if environ is None else environ
    if env.get("TMUX") or env.get("STY"):  # a multiplexer swallows OSC notifications; it passes bells on
        return "bell"
    program = env.get("TERM_PROGRAM", "")
    term = env.get("TERM", "")
    if program in ("iTerm.app", "WezTerm", "ghostty") or term in ("xterm-kitty", "xterm-ghostty"):
        return "osc9"
    if env.get("VTE_VERSION") or term.startswith(("foot", "rxvt")):
        return "osc777"
    return "bell"


def _clean(text: str) -> str:
    """No control characters (they would end the sequence early) and no ``;`` in OSC 777's title."""
    return "".join(ch if ch.isprintable() else " " for ch in text)


def sequence(kind: str, title: str, body: str) -> str:
    if kind == "osc9":
        return f"\x1b]9;{_clean(f'{title}: {body}')}\x07"
    if kind == "osc777":
        return f"\x1b]777;notify;{_clean(title).replace(';', ',')};{_clean(body)}\x07"
    return BELL


class Notifier:
    """Notifies through ``write`` (a terminal write: ``textual_compat.terminal_write``) when ``focused()`` is
    false."""

    def __init__(self, mode: Any, focused: Any, write: Any, environ: Mapping[str, str] | None = None) -> None:
        self.mode = mode if mode in MODES else "auto"
        self.focused = focused
        self.write = write
        self.kind = "bell" if self.mode == "bell" else protocol(environ)

    def __call__(self, body: str, title: str = "dsh-tui") -> bool:
        """Notify (``True``) unless turned off or the terminal has the focus."""
        if self.mode == "off" or self.focused():
            return False
        return bool(self.write(sequence(self.kind, title, body)))
