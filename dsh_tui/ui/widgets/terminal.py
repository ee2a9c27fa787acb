"""The terminal card above the composer: the live screen of the agent's persistent terminals (the
``terminals`` plugin), and the user attached to one (``Enter``): keys go to the terminal until ``Ctrl+]`` or
``F12`` detaches. So a person can answer the prompt a command the agent started is stuck on.

The screen is the terminal emulator's (``pyte``) view of the PTY, read on a timer; keys are written to the
PTY's master as a terminal would send them.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from rich.text import Text
from textual import events
from textual.widgets import Static

LINES = 8  # screen lines shown
DETACH_KEYS = ("ctrl+right_square_bracket", "f12")
KEYS = {"enter": "\r", "tab": "\t", "backspace": "\x7f", "escape": "\x1b", "delete": "\x1b[3~",
        "up": "\x1b[A", "down": "\x1b[B", "right": "\x1b[C", "left": "\x1b[D", "home": "\x1b[H", "end": "\x1b[F",
        "pageup": "\x1b[5~", "pagedown": "\x1b[6~", "shift+tab": "\x1b[Z"}


def key_bytes(event: events.Key) -> bytes | None:
    """What a terminal sends for ``event`` (None: nothing)."""
    if event.key in KEYS:
        return KEYS[event.key].encode()
    if event.key.startswith("ctrl+") and len(event.key) == 6 and event.key[5].isalpha():
        return bytes([ord(event.key[5].lower()) - ord("a") + 1])
    if event.character and (event.is_printable or event.character in "\r\t"):
        return event.character.encode()
    return None


class TerminalCard(Static, can_focus=True):
    """The live screen of one of the agent's terminals (Up/Down: another one)."""

    def __init__(self, service: Any = None, **kwargs: Any) -> None:
        super().__init__("", markup=False, **kwargs)
        self.service = service  # the agent's TerminalService (dsh_tui.extensions.terminals)
        self.sid: str | None = None
        self.user_attached = False
        self._last: tuple = ()

    # -- what is shown ------------------------------------------------------------------------------
    def sessions(self) -> list[tuple[str, Any, Any]]:
        service = self.service
        if service is None:
            return []
        return [(sid, rec, rec.session) for sid, rec in list(service.sessions.items())]

    def poll(self) -> bool:
        """Redraw from the live terminals; False when there is none (the card hides)."""
        live = self.sessions()
        if not live:
            self.sid = None
            self.user_attached = False
            return False
        ids = [sid for sid, _r, _s in live]
        if self.sid not in ids:
            self.sid = ids[-1]
            self.user_attached = False
        sid, rec, session = next(t for t in live if t[0] == self.sid)
        screen_of = getattr(session, "screen", None)
        try:
            lines = screen_of() if screen_of is not None else []
        except Exception:  # noqa: BLE001 - read while the harness thread writes it: the next tick redraws
            return True
        status = session.status()
        state = "running" if status.get("kind") == "running" else "exited"
        name = f" ({rec.name})" if rec.name else ""
        more = f" · {ids.index(sid) + 1}/{len(ids)} (Up/Down)" if len(ids) > 1 else ""
        if self.user_attached:
            hint = "attached: keys go to the terminal · Ctrl+] or F12 detaches"
        elif self.has_focus:
            hint = "Enter attaches · Esc back to the composer"
        else:
            hint = "F6 focuses"
        key = (sid, state, tuple(lines[-LINES:]), hint, more)
        if key == self._last:
            return True
        self._last = key
        text = Text()
        text.append(f"▣ terminal {sid}{name} · {state}{more} · {hint}\n", style="bold")
        text.append("\n".join(lines[-LINES:]) or "(no output yet)")
        self.update(text)
        self.set_class(self.user_attached, "-attached")
        return True

    # -- keys ---------------------------------------------------------------------------------------
    def write(self, data: bytes) -> None:
        session = self.service.session(self.sid) if self.service is not None and self.sid else None
        master = getattr(session, "master", None)
        if master is None:
            return
        with contextlib.suppress(OSError):
            os.write(master, data)

    def on_key(self, event: events.Key) -> None:
        if self.user_attached:
            event.stop()
            event.prevent_default()
            if event.key in DETACH_KEYS:
                self.user_attached = False
            else:
                data = key_bytes(event)
                if data:
                    self.write(data)
            self.poll()
            return
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.user_attached = self.sid is not None
            self.poll()
        elif event.key in ("up", "down"):
            event.stop()
            ids = [sid for sid, _r, _s in self.sessions()]
            if self.sid in ids and len(ids) > 1:
                self.sid = ids[(ids.index(self.sid) + (1 if event.key == "down" else -1)) % len(ids)]
            self.poll()
        elif event.key == "escape":
            event.stop()
            event.prevent_default()
            with contextlib.suppress(Exception):
                self.screen.query_one("#composer").focus()
            self.poll()

    def on_blur(self) -> None:
        self.user_attached = False
        self.poll()

    def on_focus(self) -> None:
        self.poll()
