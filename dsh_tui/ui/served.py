"""The app served to a browser (``dsh-tui serve``): what changes when ``DSH_TUI_SERVED=1``.

Browsers keep some keys for themselves and never pass them to the page: Ctrl+T (new tab), Ctrl+W (close
tab), Ctrl+N (new window), Ctrl+Tab (next tab) and their Shift variants. The app binds two of them; served,
each gets a function-key alternative, listed first so the footer and the F1 help show it (the Ctrl key still
works where a browser passes it on). Function keys, not Alt+letter: a text field takes Alt+N as the letter
"n", and on macOS Option+letter types a symbol. A ``[keymap]`` entry in settings.toml for the same binding
id wins.
"""

from __future__ import annotations

import os

SERVED_ENV = "DSH_TUI_SERVED"  # set by the server in every app process it starts
SERVER_PID_ENV = "DSH_TUI_SERVER_PID"  # the server's pid: the app process ends with it (``dsh_tui.cli``)

# binding id -> keys when served (the browser-kept key last)
SERVED_KEYS: dict[str, str] = {
    "browser.new": "f2,ctrl+n",  # Ctrl+N: the browser's new window
    "app.timeline": "f3,ctrl+t",  # Ctrl+T: the browser's new tab
}


def is_served() -> bool:
    return os.environ.get(SERVED_ENV) == "1"


def keymap(user: dict[str, str]) -> dict[str, str]:
    """The keymap to apply: the served alternatives (when served) under the user's own entries."""
    return {**SERVED_KEYS, **user} if is_served() else dict(user)


def _display(key: str) -> str:
    return "+".join(part.capitalize() if len(part) > 1 else part.upper() for part in key.split("+"))


def help_text(text: str) -> str:
    """A screen's F1 help as served: each browser-kept key named by its alternative ("Ctrl+N" -> "F2")."""
    if not is_served():
        return text
    for keys in SERVED_KEYS.values():
        parts = keys.split(",")
        text = text.replace(_display(parts[-1]), _display(parts[0]))
    return text
