"""The browser's session rows on a ``LineList``: title, state, age, size; plain entries for the lineage."""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size

from dsh_tui.session.stats import format_tokens
from dsh_tui.store.catalog import SessionRow
from dsh_tui.ui.widgets.linelist import LineList, Spans

UNREADABLE_STATE = "unreadable"


OPEN_HERE = "open here"  # the session this app has open (its lock is this process's)


STATE_WIDTH = 11


# the catalog's states, as the state column shows them (each fits STATE_WIDTH)
STATE_LABEL = {"open elsewhere": "elsewhere"}


STATE_STYLE = {
    "completed": "green",
    "interrupted": "yellow",
    "failed": "red",
    "cancelled": "yellow",
    "blocked": "yellow",
    "max tokens": "yellow",
    "open elsewhere": "cyan",
    OPEN_HERE: "bold cyan",
    "unreadable": "red",
    "blank": "dim",
    "in trash": "dim",
    "archived": "dim",
    "indexing…": "dim italic",
}


INDEXING_STATE = "indexing…"  # a session directory listed before its header was read


def ago(ms: int, now_ms: int) -> str:
    """A short relative time ("5m", "3h", "2d") or the date for older activity."""
    if not ms:
        return "-"
    delta = max(0, now_ms - ms) // 1000
    if delta < 60:
        return "now"
    if delta < 3600:
        return f"{delta // 60}m"
    if delta < 86400:
        return f"{delta // 3600}h"
    if delta < 86400 * 30:
        return f"{delta // 86400}d"
    return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC).strftime("%Y-%m-%d")


@dataclass
class ListEntry:
    """One visible browser line: a session, with its lineage depth, or a content-search hit under it."""

    row: SessionRow
    depth: int = 0
    hit_seq: int | None = None
    hit_text: str = ""
    hit_marks: tuple[tuple[int, int], ...] = ()  # (start, end) of the matched words in ``hit_text``
    fork_point: int | None = None  # seq where a fork child leaves its parent
    fork_turn: int | None = None  # the parent's turn the fork child was made after


class PlainEntries(Sequence):
    """Top-level entries over a list of rows, made on access (a 10k-row filter result costs no objects)."""

    __slots__ = ("rows",)

    def __init__(self, rows: list[SessionRow]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index):  # noqa: ANN001 - Sequence protocol (int or slice)
        if isinstance(index, slice):
            return [ListEntry(r) for r in self.rows[index]]
        return ListEntry(self.rows[index])


class SessionList(LineList):
    """The browser's list: title, workspace, last activity, turns, tokens, state (one line each)."""

    def __init__(self, *, now_ms: Callable[[], int], show_workspace: bool = True, **kwargs) -> None:
        super().__init__(self._format, empty_text="No sessions", **kwargs)
        self.entries: Sequence[ListEntry] = []
        self.now_ms = now_ms
        self.show_workspace = show_workspace
        self.live_id: str | None = None  # the session this app has open ("open here")

    def set_entries(self, entries: Sequence[ListEntry], *, keep_cursor: bool = False) -> None:
        self.entries = entries
        self.set_rows(len(entries), keep_cursor=keep_cursor)

    @property
    def current(self) -> ListEntry | None:
        if 0 <= self.cursor < len(self.entries):
            return self.entries[self.cursor]
        return None

    def _format(self, index: int, width: int) -> Spans:
        e = self.entries[index]
        r = e.row
        indent = "  " * e.depth
        if e.hit_seq is not None:
            hit: Spans = [(f"{indent}    #{e.hit_seq} ", "dim")]
            at = 0
            for a, b in e.hit_marks:  # the matched words highlighted, the rest as it is
                hit += [(e.hit_text[at:a], "italic"), (e.hit_text[a:b], "bold reverse")]
                at = b
            hit.append((e.hit_text[at:], "italic"))
            return [(text.replace("\n", " "), style) for text, style in hit if text]
        state = r.state
        if r.id is not None and r.id == self.live_id and state == "open elsewhere":
            state = OPEN_HERE
        right = f" {ago(r.updated_at, self.now_ms()):>5} {r.turns:>4}t {format_tokens(r.tokens, m_digits=1):>6} "
        label = STATE_LABEL.get(state, state)
        state_col = f"{label[:STATE_WIDTH]:<{STATE_WIDTH}} "
        room = max(1, width - len(right) - len(state_col))
        left: Spans = [(indent, "")]
        if e.depth:
            lineage = "↳ sub " if r.is_subagent else "↳ fork "
            if not r.is_subagent and e.fork_turn is not None:
                lineage += f"after turn {e.fork_turn} "
            left.append((lineage, "dim"))
        if state == INDEXING_STATE:
            left.append((os.path.relpath(os.path.dirname(r.path), r.root), "dim"))
        elif state == UNREADABLE_STATE:
            left.append((r.title or r.id or os.path.relpath(r.path, r.root), "red"))
            left.append((f"  unreadable: {r.reason}", "red italic"))
        else:
            left.append((r.display_title or "(untitled)", "bold" if state != "blank" else "dim"))
            if not r.indexed:
                left.append((" …", "dim"))
        if self.show_workspace and r.cwd:
            left.append((f"  {r.cwd}", "dim"))
        if r.children and e.depth == 0:
            left.append((f"  [{len(r.children)}↳]", "dim"))
        out: Spans = []
        used = 0
        for text, style in left:
            n = cell_len(text)
            if used + n > room:
                text = set_cell_size(text, max(0, room - used - 1)) + "…"
                out.append((text, style))
                used = room
                break
            out.append((text, style))
            used += n
        out.append((" " * (room - used), ""))
        out.append((right, "dim"))
        out.append((state_col, STATE_STYLE.get(state, "")))
        return out
