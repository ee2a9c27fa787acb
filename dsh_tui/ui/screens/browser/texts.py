"""What the session browser says: its help (F1), the scope line, the progress line and an empty list's text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh_tui.store import catalog as cat

if TYPE_CHECKING:
    from .screen import BrowserScreen

HELP = """
## Sessions

Type to filter by title, first prompt, workspace or id; **↓** / **Enter** moves to the list.
**Tab** toggles this workspace / all workspaces. **Ctrl+F** searches message and tool-output text.
**Ctrl+N** starts a new session here. **Esc** clears the filter, then goes back to the chat;
**Ctrl+B** goes back to the chat at once.

In the list, letters are commands (type **/** to filter): **Enter** open read-only · **r** resume ·
**f** fork at a turn · **n** rename · **e** export · **a** archive · **d** delete (to the trash) ·
**t** timeline · **c** show subagents · **T** trash (**Enter** restores; resume and fork need a
restore first) · **A** archived sessions (**Enter** unarchives).
"""


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def empty_text(screen: BrowserScreen, text: str) -> str:
    """What an empty list says, and what to do about it."""
    if screen.trash_mode:
        return "No archived sessions (a archives one)." if screen.actions.in_archive() else "The trash is empty."
    if screen.search_mode:
        return "No message or tool output matches." if text.strip() else "Type to search messages and tool output."
    if text:
        return "No session matches (Esc clears the filter)."
    if not screen._scanned:
        return "Looking for sessions…"
    if screen.rows and not screen.scope_all:
        return "No sessions in this workspace: Tab shows every workspace, Ctrl+N starts one here."
    return "No sessions yet: Ctrl+N to start one here."


def scope_label(screen: BrowserScreen, shown: int) -> str:
    """The scope line: this workspace or all, the counts, the bucket or the content search."""
    if screen.trash_mode:
        return (f"Archive · {plural(shown, 'session')}   (Enter unarchives, Esc goes back)"
                if screen.actions.in_archive()
                else f"Trash · {plural(shown, 'session')}   (Enter restores, Esc goes back)")
    here = len(screen.listing.scoped(screen.rows, False))
    every = len(screen.listing.scoped(screen.rows, True))
    if screen.scope_all:
        label = f"All workspaces · {plural(every, 'session')}   [Tab] this workspace: {here}"
    else:
        rest = f" · {plural(here, 'session')}   [Tab] all workspaces: {every}"
        room = (screen.size.width or 120) - 2 - len("This workspace ()") - len(rest)
        where = screen.cwd if len(screen.cwd) <= room else "…" + screen.cwd[-max(room - 1, 8):]
        label = f"This workspace ({where}){rest}"
    if screen.search_mode:
        label = f"Content search · {plural(shown, 'session')} match   " + label
    return label


def progress_label(screen: BrowserScreen) -> str:
    """The progress line: the logs on disk (or in the bucket), indexing n/N, the unreadable ones."""
    rows = screen.rows
    unreadable = sum(1 for r in rows if r.state == cat.UNREADABLE)
    if screen.trash_mode:
        where = ", ".join(sorted({r.root for r in rows})) or (
            "the archive" if screen.actions.in_archive() else "the trash")
        prog = f"{plural(len(rows), 'log')} in {where}"
    elif screen.indexing is not None:
        done, total = screen.indexing
        prog = f"Indexing {done}/{total}…"
    else:
        prog = f"{plural(len(rows), 'log')} on disk"
    if unreadable and screen.indexing is None:
        prog += f" · {unreadable} unreadable"
    return prog
