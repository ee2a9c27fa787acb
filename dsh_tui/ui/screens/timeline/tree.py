"""The span tree as a Line-API list: one row per visible node, a label column and a time-axis bar.

Rows are the flattened open part of the tree (a list of nodes; a message that is open adds the seqs of
its chunks as plain ints). Each bar is drawn on the time axis of the row's own turn (start -> end, or
the latest event while it runs), so rows of one turn line up and parallel tool calls show their
overlap. Formatting is lazy (visible rows only), like the ledger.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual.binding import Binding

from dsh_tui.session.spans import Node, SpanFold
from dsh_tui.session.timeline import summarize
from dsh_tui.ui.widgets.linelist import LineList

ICON = {"turn": "", "step": "", "request": "⇄ ", "waiting": "", "decoding": "", "usage": "Σ ",
        "message": "✎ ", "tool": "⚙ ", "approval": "? ", "execution": "", "result": "↩ ", "retry": "↻ ",
        "compaction": "⇊ ", "subagent": "↳ ", "files": "± "}
BAR = {"turn": "━", "step": "─", "waiting": "░", "decoding": "█", "approval": "▒", "execution": "▓",
       "retry": "╌", "compaction": "▒", "subagent": "▚"}
STATE_STYLE = {"ok": "green", "completed": "green", "error": "red", "failed": "red", "aborted": "yellow",
               "interrupted": "yellow", "unknown": "magenta", "rejected": "red", "cancelled": "yellow",
               "unavailable": "red", "allowed-once": "yellow", "running": "bold cyan", "max-tokens": "red",
               "pending": "dim", "undone": "yellow"}
KIND_STYLE = {"turn": "bold", "step": "bold", "request": "cyan", "tool": "yellow", "message": "magenta",
              "retry": "red", "compaction": "blue", "approval": "yellow", "subagent": "magenta", "files": "green"}


def fmt_ms(ms: int | None) -> str:
    if ms is None:
        return "…"
    if ms < 0:
        return "?"
    return f"{ms} ms" if ms < 1000 else f"{ms / 1000:.2f} s" if ms < 60_000 else f"{ms / 60_000:.1f} m"


def flatten(roots: Sequence[Node], events: Sequence[dict] | None = None) -> list[Node | int]:
    """The visible rows: every node whose ancestors are all open (an open message lists its chunks)."""
    rows: list[Node | int] = []

    def rec(n: Node) -> None:
        rows.append(n)
        if not n.open:
            return
        if n.kind == "message" and n.first_chunk is not None and events is not None:
            end = n.end_seq if n.end_seq is not None else len(events) - 1
            rows.extend(s for s in range(n.first_chunk, min(end, len(events) - 1) + 1)
                        if events[s].get("type") == "assistant/chunk")
        for c in n.children:
            rec(c)

    for r in roots:
        rec(r)
    return rows


def expandable(n: Node) -> bool:
    return bool(n.children) or (n.kind == "message" and n.chunks > 0)


def window(n: Node, fold: SpanFold, now: int | None = None) -> tuple[int, int]:
    """The time window a row's bar is drawn in: its turn (or itself between turns). A running turn ends
    at ``now`` (a live view's clock) or else at the latest event."""
    turn = n.turn_node() or n
    t0 = turn.start
    t1 = turn.end if turn.end is not None else max(fold.last_time, now or 0, t0)
    return t0, max(t1, t0 + 1)


def bar_cells(n: Node, fold: SpanFold, width: int, now: int | None = None) -> list[tuple[str, str]]:
    """The bar of ``n`` as (text, style) runs over ``width`` cells."""
    if width <= 0:
        return []
    t0, t1 = window(n, fold, now)
    scale = width / (t1 - t0)
    live_end = t1

    def col(t: int) -> int:
        return max(0, min(width - 1, int((t - t0) * scale)))

    cells = [" "] * width
    styles = [""] * width

    def paint(a: int, b: int, ch: str, style: str) -> None:
        for x in range(col(a), max(col(a) + 1, col(b) + (1 if b > a else 0))):
            if 0 <= x < width:
                cells[x], styles[x] = ch, style

    style = STATE_STYLE.get(n.state, "")
    end = n.end if n.end is not None else live_end
    if n.point:
        paint(n.start, n.start, "◆", style or "magenta")
    elif n.kind == "request":
        ft = n.first_token if n.first_token is not None else end
        paint(n.start, ft, "░", style)
        if n.first_token is not None:
            paint(ft, end, "█", style)
    elif n.kind == "tool":
        ex = n.children[-1] if n.children and n.children[-1].kind in ("execution", "result") else None
        ex = next((c for c in n.children if c.kind == "execution"), ex)
        ex_start = ex.start if ex is not None else n.start
        if ex is not None and ex.state == "pending":  # still waiting for the user
            paint(n.start, end, "▒", "yellow")
        else:
            paint(n.start, ex_start, "▒", "yellow")
            paint(ex_start, end, "▓", style)
    elif n.state == "pending":
        pass
    else:
        paint(n.start, end, BAR.get(n.kind, "─"), style)
    out: list[tuple[str, str]] = []
    run, run_style = "", styles[0]
    for ch, st in zip(cells, styles, strict=True):
        if st != run_style:
            out.append((run, run_style))
            run, run_style = "", st
        run += ch
    out.append((run, run_style))
    return out


class SpanTree(LineList):
    """The span tree rows; ``rows`` holds nodes (and chunk seqs under an open message)."""

    BINDINGS = [
        Binding("left", "screen.collapse", "Collapse", key_display="←", id="spans.collapse"),
        Binding("right", "screen.expand", "Expand", key_display="→", id="spans.expand"),
        Binding("enter", "screen.inspect", "Inspect", id="spans.inspect"),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(self._format, empty_text="Folding the timeline…", **kwargs)
        self.fold: SpanFold = SpanFold()
        self.events: Sequence[dict] = []
        self.rows: list[Node | int] = []
        self.now: int | None = None  # a live view's clock (epoch ms): running spans grow to it

    def set_tree(self, fold: SpanFold, events: Sequence[dict], *, keep: Node | int | None = None) -> None:
        """Re-flatten (after a fold, an expand or live events); the cursor stays on ``keep`` if shown."""
        self.fold, self.events = fold, events
        self.rows = flatten(fold.roots, events)
        self.set_rows(len(self.rows), keep_cursor=True)
        if keep is not None:
            self.show(keep)

    def show(self, target: Node | int) -> bool:
        try:
            i = self.rows.index(target)
        except ValueError:
            return False
        self.move_to(i)
        return True

    @property
    def current(self) -> Node | int | None:
        if not self.rows or not 0 <= self.cursor < len(self.rows):
            return None
        return self.rows[self.cursor]

    def label_width(self, width: int) -> int:
        return max(18, min(48, int(width * 0.48)))

    def _format(self, row: int, width: int) -> list[tuple[str, str]]:
        item = self.rows[row]
        lw = self.label_width(width)
        if isinstance(item, int):
            e = self.events[item]
            head = f"{'':{10}}#{item} "
            text = summarize(e, max(0, lw - len(head)))
            return [(head, "dim"), (f"{text:<{max(0, lw - len(head))}}", "dim")]
        n = item
        depth = n.depth
        twisty = ("▾ " if n.open else "▸ ") if expandable(n) else "  "
        label = n.label
        if n.kind == "tool":
            label = f"{n.label} {n.detail}".strip()
        elif n.kind in ("retry", "turn", "files") and n.detail:
            label = f"{n.label} {n.detail}"
        elif n.kind == "message" and n.chunks:
            label = f"{n.label or '(empty)'}  [{n.chunks} chunks]"
        slot = f" [{n.slot}]" if n.kind == "tool" and _parallel(n) else ""
        text = f"{'  ' * depth}{twisty}{ICON.get(n.kind, '')}"
        room = max(1, lw - len(text) - len(slot))
        label = label.replace("\n", " ")
        label = label if len(label) <= room else label[: room - 1] + "…"
        if n.point:
            dur = ""
        elif n.state == "pending":
            dur = "pending"
        elif n.end is None and self.now is not None and n.state == "running":
            dur = fmt_ms(max(self.now, self.fold.last_time) - n.start) + "…"
        else:
            dur = fmt_ms(n.duration_ms if n.end is not None else None)
        out = [(text, "dim"), (f"{label:<{room}}", KIND_STYLE.get(n.kind, "")), (slot, "bold yellow"),
               (f" {dur:>8} ", STATE_STYLE.get(n.state, "dim") if n.state in ("error", "running") else "dim")]
        out.extend(bar_cells(n, self.fold, width - lw - 10, self.now))
        return out


def _parallel(tool: Node) -> bool:
    """Whether the tool's step ran more than one call at a time (then each row shows its slot)."""
    parent = tool.parent
    return parent is not None and any(c.kind == "tool" and c.slot > 0 for c in parent.children)


def axis_text(n: Node | None, fold: SpanFold, label_width: int, width: int,
              now: int | None = None) -> list[tuple[str, str]]:
    """A scale for the time axis of ``n``'s turn: ticks at round intervals over the bar column."""
    bar_w = width - label_width - 10
    if n is None or bar_w < 8:
        return [("", "")]
    t0, t1 = window(n, fold, now)
    span = t1 - t0
    step = _nice_step(span, max(2, bar_w // 10))
    cells = [" "] * bar_w
    ticks = 0
    t = 0
    while t <= span:
        x = int(t * bar_w / span)
        label = "│" + (fmt_ms(t).replace(" ", "").replace(".00", "") if t else "0")
        if x + len(label) <= bar_w:
            for i, ch in enumerate(label):
                cells[x + i] = ch
        ticks += 1
        t += step
    turn = n.turn_node()
    head = f"{(turn.label if turn else 'time')} · axis {fmt_ms(span)}"
    return [(f"{head[:label_width]:<{label_width}}", "bold"), (" " * 10, ""), ("".join(cells), "dim")]


def _nice_step(span: int, ticks: int) -> int:
    raw = max(1, span // max(1, ticks))
    for base in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000,
                 120_000, 300_000, 600_000, 1_800_000, 3_600_000):
        if base >= raw:
            return base
    return raw
