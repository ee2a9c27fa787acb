"""The subagent card: the tool card of a ``subagent``/``subagent_fork`` call plus the child's live state
(phase, current tool, tokens, elapsed) while it runs and its result when it settles. Focusable: Enter
opens the child's live transcript (``dsh_tui.ui.screens.subagent``)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text
from textual.binding import Binding
from textual.message import Message

from dsh_tui.session.stats import format_tokens
from dsh_tui.ui.widgets.item import ItemView
from dsh_tui.ui.widgets.render import CachedLines
from dsh_tui.ui.widgets.toolcard import STATE_ICON, STATE_STYLE, render_tool

SUBAGENT_TOOLS = ("subagent", "subagent_fork")
OUTCOME_TEXT = {"completed": ("✓", "finished", "green"), "aborted": ("⏹", "stopped", "yellow"),
                "max-tokens": ("✗", "ran out of room", "red"), "blocked": ("✗", "declined", "red"),
                "error": ("✗", "failed", "red")}


def _elapsed(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def live_line(snap: dict[str, Any]) -> Text:
    """``↳ ● running · turn 1 step 2 · bash · 1.2k tok · 12s`` or ``↳ ✓ finished · … — first result line``."""
    line = Text("↳ ", style="dim", no_wrap=True, overflow="ellipsis")
    status = snap.get("status")
    facts = []
    if status == "settled" and snap.get("outcome"):
        outcome = snap["outcome"]
        icon, word, style = OUTCOME_TEXT.get(outcome.get("kind"), ("✗", str(outcome.get("kind")), "red"))
        line.append(f"{icon} {word}", style=f"bold {style}")
    elif status in ("running", "idle"):
        line.append("● running" if status == "running" else "○ idle", style="bold green" if status == "running"
                    else "dim")
        if snap.get("phase"):
            facts.append(snap["phase"])
        if snap.get("tool"):
            facts.append(snap["tool"])
    else:
        line.append(f"○ {status}", style="dim")
    facts.append(f"{'~' if snap.get('estimated') else ''}{format_tokens(int(snap.get('tokens') or 0))} tok")
    facts.append(_elapsed(float(snap.get("elapsed") or 0)))
    for fact in facts:
        line.append(" · ", style="dim")
        line.append(fact)
    line.append("   Shift+Tab, Enter: open", style="dim italic")
    return line


def result_line(snap: dict[str, Any]) -> Text | None:
    """The first line of a settled child's result, on one row (cut with an ellipsis)."""
    outcome = snap.get("outcome") or {}
    text = (outcome.get("text") or "").strip()
    if snap.get("status") != "settled" or not text:
        return None
    out = Text("  ", no_wrap=True, overflow="ellipsis")
    out.append(" ".join(text.splitlines()[0].split())[:500])
    return out


class SubagentCard(ItemView):
    """A ``subagent``/``subagent_fork`` tool card with the child's live line."""

    can_focus = True
    DEFAULT_CSS = """
    SubagentCard:focus { background: $primary-muted; }
    """
    BINDINGS = [Binding("enter", "open", "Open subagent", id="subagent.open")]

    class Open(Message):
        def __init__(self, child_id: str) -> None:
            super().__init__()
            self.child_id = child_id

    _fitted = False  # the last live line fitted on one row (a same-height repaint needs no reflow)
    _card_key: tuple[int, bool, tuple | None] | None = None  # (item version, expanded, snapshot) last drawn

    def snap(self) -> dict[str, Any] | None:
        return getattr(self.state, "subagents", {}).get(getattr(self.item, "call_id", None))

    def refresh_item(self) -> None:
        snap = self.snap()
        key = (self.item.version, self.expanded(), _snap_key(snap))
        if key == self._card_key:
            return
        before, self._card_key = self._card_key, key
        # a live-line change (phase, tool, tokens, seconds) keeps the card's height: repaint it alone, no
        # screen-wide reflow (8 cards ticking every second would reflow the transcript 8 times a second)
        width = self.size.width - 4 if self.size.width else 0
        fits = snap is not None and 0 < len(live_line(snap)) <= width and result_line(snap) is None
        same_shape = (before is not None and before[:2] == key[:2] and before[2] is not None and key[2] is not None
                      and before[2][0] == key[2][0] and fits and self._fitted)
        self._fitted = fits
        self.update(CachedLines(render_card(self.item, snap, key[1])), layout=not same_shape)

    def on_click(self) -> None:
        self.action_open()

    def action_open(self) -> None:
        snap = self.snap()
        if snap is not None:
            self.post_message(self.Open(snap["id"]))
        else:
            self.app.notify("This subagent did not run in this app session.", timeout=4)


def _snap_key(snap: dict[str, Any] | None) -> tuple | None:
    if snap is None:
        return None
    return (snap.get("status"), snap.get("phase"), snap.get("tool"), snap.get("tokens"), snap.get("estimated"),
            int(snap.get("elapsed") or 0),
            (snap.get("outcome") or {}).get("kind"))


def card_head(item: Any) -> Text:
    """``✓ subagent  <description>`` (the delegated task's display label, not the raw arguments)."""
    args = item.args()
    head = Text()
    head.append(f"{STATE_ICON.get(item.state, '·')} ", style=STATE_STYLE.get(item.state, ""))
    head.append(item.name, style="bold")
    label = args.get("description") if isinstance(args, dict) else None
    if isinstance(label, str) and label.strip():
        head.append("  ")
        head.append(" ".join(label.split())[:100])
    if isinstance(args, dict) and args.get("run_in_background") is not False and item.name == "subagent":
        head.append("  background", style="dim")
    if item.state in ("error", "aborted") and item.result:
        first = str(item.result).strip().splitlines()[0] if str(item.result).strip() else ""
        head.append("  " + first[:120], style="red" if item.state == "error" else "yellow")
    return head


def render_card(item: Any, snap: dict[str, Any] | None, expanded: bool) -> RenderableType:
    head = render_tool(item, True) if expanded else card_head(item)
    if snap is None:
        return head
    result = result_line(snap)
    return Group(head, live_line(snap)) if result is None else Group(head, live_line(snap), result)
