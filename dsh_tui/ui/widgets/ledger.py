"""The event ledger: every event of a session as one virtualised line, with type/turn/text filters.

Rows are formatted on demand from the event dicts (nothing is precomputed per event), so a 200k-event
log is on screen as soon as its events are; a filter builds an index array of matching seqs.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

from dsh_tui.session.timeline import summarize
from dsh_tui.ui.widgets.linelist import LineList

TYPE_STYLE = {
    "turn/start": "bold green",
    "turn/end": "bold green",
    "step/start": "green",
    "step/end": "green",
    "user/message": "bold cyan",
    "assistant/message": "bold magenta",
    "assistant/chunk": "dim",
    "tool/call": "yellow",
    "tool/result": "yellow",
    "request/header": "blue",
    "llm/retry": "red",
    "llm/retry-started": "red",
}


def type_matches(etype: str, wanted: str) -> bool:
    """``wanted`` is an exact type, a prefix ending in ``/`` (``tool/``), or a comma list of those."""
    for w in wanted.split(","):
        w = w.strip()
        if not w:
            continue
        if etype == w or (w.endswith("/") and etype.startswith(w)) or (w.endswith("*") and etype.startswith(w[:-1])):
            return True
    return False


def filter_seqs(events: Sequence[dict[str, Any]], turn_of: Sequence[int] | None, *, types: str = "",
                turn: int | None = None, text: str = "") -> array | None:
    """Seqs of the events passing every filter, or None when no filter is set (= all events)."""
    if not types.strip() and turn is None and not text.strip():
        return None
    needle = text.lower().strip()
    out = array("l")
    for i, e in enumerate(events):
        if turn is not None and (turn_of is None or turn_of[i] != turn):
            continue
        etype = e.get("type", "")
        if types.strip() and not type_matches(etype, types):
            continue
        if needle and needle not in etype and needle not in summarize(e, 100_000).lower():
            continue
        out.append(i)
    return out


class Ledger(LineList):
    """Every event (or the filtered subset) as ``seq  +time  turn  type  summary``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(self._format, empty_text="No events match", **kwargs)
        self.events: Sequence[dict[str, Any]] = []
        self.turn_of: Sequence[int] | None = None
        self.view: array | None = None  # filtered seqs; None = all
        self.t0 = 0

    def set_events(self, events: Sequence[dict[str, Any]], turn_of: Sequence[int] | None = None) -> None:
        self.events = events
        self.turn_of = turn_of
        self.view = None
        self.t0 = next((e["time"] for e in events if isinstance(e.get("time"), int) and e["time"] > 0), 0)
        self.set_rows(len(events))

    def apply_filter(self, *, types: str = "", turn: int | None = None, text: str = "") -> int:
        """Filter the rows; returns the number shown. The cursor stays on the same event if it still shows."""
        current = self.current_seq
        self.view = filter_seqs(self.events, self.turn_of, types=types, turn=turn, text=text)
        n = len(self.events) if self.view is None else len(self.view)
        self.set_rows(n)
        if current is not None:
            self.show_seq(current, exact=False)
        return n

    def seq_at(self, row: int) -> int:
        return row if self.view is None else self.view[row]

    @property
    def current_seq(self) -> int | None:
        if not self.count:
            return None
        return self.seq_at(self.cursor)

    def show_seq(self, seq: int, *, exact: bool = True) -> bool:
        """Move the cursor to ``seq`` (or, unless exact, to the first shown row after it)."""
        if self.view is None:
            if 0 <= seq < len(self.events):
                self.move_to(seq)
                return True
            return False
        import bisect

        i = bisect.bisect_left(self.view, seq)
        if i < len(self.view) and (self.view[i] == seq or not exact):
            self.move_to(i)
            return True
        return False

    def _format(self, row: int, width: int) -> list[tuple[str, str]]:
        seq = self.seq_at(row)
        e = self.events[seq]
        etype = e.get("type", "?")
        t = e.get("time") if isinstance(e.get("time"), int) else 0
        rel = (t - self.t0) / 1000 if self.t0 and t else 0.0
        turn = self.turn_of[seq] if self.turn_of is not None and seq < len(self.turn_of) else 0
        head = f"{seq:>7} {rel:>9.3f}s {turn or '':>4} "
        used = len(head) + 21
        return [(head, "dim"), (f"{etype:<20} ", TYPE_STYLE.get(etype, "")), (summarize(e, max(0, width - used)), "")]
