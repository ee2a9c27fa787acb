"""The timeline as a trace viewer: a span tree on a time axis, an inspector, the raw event ledger.

Left: the span tree (``tree.py``; spans from ``dsh_tui/session/spans.py``) under a time-axis scale of
the selected row's turn; **e** swaps it for the ledger of every event (filters: ``type:`` ``turn:`` and
text). Right: the inspector of the selected row (``pane.py``, ``InspectorPane``; what a request was and
what changed since the previous one: ``inspector.py``): the item first, then collapsible sections; for a
model request the default section is what changed since the previous request, then the messages, system
prompt and tool schemas; **c** / **C** copy the request. **w** makes the inspector wide, then full-screen.

First paint: the tail of the log (from the last ``turn/start``) is folded on the UI thread and shown
at once; the whole log folds in a worker and replaces it. Live: the app wakes the top screen when the
bridge has events (``live_events_ready``); the screen folds the new tail of the chat's session at most
every ``LIVE_INTERVAL`` seconds and follows the running turn while the cursor is on the last row.

The screen keeps the keys, the tree/ledger swap, the inspector's width, the background fold and live
follow, which all act on the same cursor and fold state; the row formatting (``tree.py``) and the
inspector pane are their own modules.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from dsh_tui.session.spans import Node, SpanFold, fold_spans
from dsh_tui.ui.screens.timeline.pane import InspectorPane
from dsh_tui.ui.screens.timeline.tree import SpanTree, axis_text, expandable
from dsh_tui.ui.widgets.input import LightInput
from dsh_tui.ui.widgets.ledger import Ledger

if TYPE_CHECKING:
    from dsh_tui.ui.bridge import SessionBackend

LIVE_INTERVAL = 0.1  # seconds between live refreshes (at most)
CLOCK_INTERVAL = 0.5  # seconds between repaints of a running turn's growing spans
TAIL_LIMIT = 20_000  # events folded on the UI thread for the first paint (more: wait for the worker)
INSPECT_DELAY = 0.05  # the inspector follows the cursor after it rests this long


def parse_filter(text: str) -> tuple[str, int | None, str]:
    """``type:tool/ turn:2 some words`` -> (types, turn, text)."""
    types, turn, rest = [], None, []
    for word in text.split():
        if word.startswith("type:"):
            types.append(word[5:])
        elif word.startswith("turn:") and word[5:].isdigit():
            turn = int(word[5:])
        else:
            rest.append(word)
    return ",".join(types), turn, " ".join(rest)


class TimelineScreen(Screen):
    """See the module docstring."""

    HELP = """
## Timeline

A span tree of the session: turn → step → model request (waiting ░, decoding █, usage, the message
with its streamed chunks folded) → tool calls (approval wait ▒, execution ▓, result); retries,
compaction and subagent children too. Bars share the time axis of their turn.

**↑ ↓** move · **← →** collapse / expand · **Enter** inspect (Esc back) · **[ ]** previous / next turn ·
**w** inspector wide / full-screen · **c** copy the request as JSON · **C** as `curl` (key redacted) ·
**e** raw events ledger (**/** filter: `type:tool/` `turn:3` text) · **f** follow the running turn.
"""

    DEFAULT_CSS = """
    TimelineScreen { layout: vertical; }
    TimelineScreen #body { height: 1fr; }
    TimelineScreen #left { width: 3fr; min-width: 40; }
    TimelineScreen #axis { height: 1; padding: 0 0; background: $boost; }
    TimelineScreen #ledger-filter { height: 3; border: tall $primary-muted; display: none; }
    TimelineScreen #ledger-filter:focus { border: tall $primary; }
    TimelineScreen Ledger { display: none; }
    TimelineScreen.-ledger Ledger { display: block; }
    TimelineScreen.-ledger #ledger-filter { display: block; }
    TimelineScreen.-ledger SpanTree { display: none; }
    TimelineScreen.-ledger #axis { display: none; }
    TimelineScreen #inspector { width: 2fr; border-left: solid $primary-muted; padding: 0 1; }
    TimelineScreen #inspector:focus-within { border-left: solid $primary; }
    TimelineScreen.-wide #left { width: 2fr; min-width: 30; }
    TimelineScreen.-wide #inspector { width: 3fr; }
    TimelineScreen.-full #left { display: none; }
    TimelineScreen.-full #inspector { width: 1fr; border-left: none; }
    TimelineScreen #inspect-head { margin-bottom: 1; }
    TimelineScreen Collapsible { padding-bottom: 0; border-top: none; }
    TimelineScreen .section-body { padding: 0 0 0 2; }
    """

    BINDINGS = [
        Binding("escape", "back", "Back", id="timeline.back"),
        Binding("w", "inspector_size", "Wide", id="timeline.wide"),
        Binding("c", "copy('json')", "Copy JSON", id="timeline.copy_json"),
        Binding("C", "copy('curl')", "Copy curl", id="timeline.copy_curl"),
        Binding("e", "toggle_ledger", "Events", id="timeline.ledger"),
        Binding("f", "follow", "Follow", id="timeline.follow"),
        Binding("left_square_bracket", "turn(-1)", "Prev turn", show=False, id="timeline.prev"),
        Binding("right_square_bracket", "turn(1)", "Next turn", show=False, id="timeline.next"),
        Binding("slash", "focus_filter", "Filter", show=False, id="timeline.filter"),
    ]

    def __init__(self, app: Any = None, *, header: dict | None = None, events: list[dict] | None = None,
                 focus_seq: int | None = None) -> None:
        super().__init__()
        self._live: SessionBackend | None = None  # the chat's live harness (its session followed while it runs)
        self._harness: SessionBackend | None = getattr(getattr(app, "bridge", None), "harness", None) if app is not None else None
        if events is None and app is not None:
            header, events = self._from_chat(app)
        self.header = header or {}
        self.events: list[dict] = events if events is not None else []
        self.focus_seq = focus_seq
        self.fold: SpanFold = SpanFold()
        self.folded = threading.Event()  # the whole log's tree is shown (UI thread)
        self._fold_done = threading.Event()
        self._fold_result: SpanFold | None = None
        self.following = focus_seq is None
        self._live_timer: Any = None
        self._inspect_timer: Any = None
        self._inspected: Node | int | None = None
        self.inspector = InspectorPane(self)  # the right pane: the row's sections, a request's diff, copies
        self.last_copy: str | None = None  # the toast of the last copy (tests read it)

    def _from_chat(self, app: Any) -> tuple[dict | None, list[dict]]:
        """The chat screen's session (when opened from the chat screen through the app hook)."""
        harness = self._harness
        if harness is not None:
            self._live = harness
            return harness.header(), harness.events()
        fold = getattr(getattr(app, "chat", None), "fold", None)
        return (getattr(fold, "header", None), [])

    # -- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="body"):
            with Vertical(id="left"):
                yield Static("", id="axis")
                self.spans = SpanTree(id="tree")
                yield self.spans
                yield LightInput(placeholder="Filter events: type:tool/  turn:2  text…", id="ledger-filter")
                self.ledger = Ledger(id="ledger")
                yield self.ledger
            with VerticalScroll(id="inspector"):
                yield Static("", id="inspect-head")
                yield Vertical(id="inspect-body")
        yield Footer()

    def on_mount(self) -> None:
        self.ledger.set_events(self.events, None)
        if self.focus_seq is not None:
            self.ledger.show_seq(self.focus_seq)
        elif self.events:
            self.ledger.move_to(len(self.events) - 1)
        self.spans.focus()
        tail = self._tail_fold()
        if tail is not None:
            self._show_fold(tail, final=False)
        self.call_after_refresh(self._fold_all)  # paint first; the whole fold holds the GIL for a while
        if self._live is not None:
            self.set_interval(CLOCK_INTERVAL, self._tick)

    def _tick(self) -> None:
        """A live view: a running turn's spans grow with the clock (waiting for a tool or an answer)."""
        running = bool(self.fold.turns) and self.fold.turns[-1].end is None
        if not running:
            if self.spans.now is not None:
                self.spans.now = None
                self.spans.invalidate()
            return
        self.spans.now = int(time.time() * 1000)
        self.spans.invalidate()
        self._show_axis()

    def _tail_fold(self) -> SpanFold | None:
        """The span tree of the last turn (folded here, for the first paint), or None if too long."""
        n = len(self.events)
        lo = max(0, n - TAIL_LIMIT)
        start = None
        for k in range(n - 1, lo - 1, -1):
            if self.events[k].get("type") == "turn/start":
                start = k
                break
        if start is None:
            return None if n > TAIL_LIMIT else fold_spans(self.events)
        fold = SpanFold()
        fold.turn_of.extend([0] * start)  # not used: the whole fold replaces this one
        fold.apply_all(self.events[start:])
        return fold

    @work(thread=True, exclusive=True, group="timeline-fold", description="fold the span tree")
    def _fold_all(self) -> None:
        n = len(self.events)
        fold = SpanFold()
        fold.apply_all(self.events[:n])
        self._fold_result = fold
        self._fold_done.set()
        self.app.call_from_thread(self._folded, fold)

    def _folded(self, fold: SpanFold) -> None:
        if self.folded.is_set():
            return
        for e in self.events[fold.count:]:  # live events that arrived while the worker folded
            fold.apply(e)
        self._show_fold(fold, final=True)
        self.ledger.turn_of = fold.turn_of
        self.ledger.invalidate()
        self.folded.set()

    def _show_fold(self, fold: SpanFold, *, final: bool) -> None:
        """Put ``fold`` on screen: open the focused (or last) turn, keep the cursor's item."""
        old = self.spans.current
        self.fold = fold
        self._attach_children()
        target: Node | int | None = None
        if self.focus_seq is not None and final:
            target = fold.node_at(self.focus_seq)
            if target is not None and target.kind == "message" and self.focus_seq != target.seq:
                target.open = True
                target = self.focus_seq if self.events[self.focus_seq].get("type") == "assistant/chunk" else target
        elif isinstance(old, Node) and final:
            target = self._same_node(old, fold)
        anchor = target if isinstance(target, Node) else (fold.node_at(self.focus_seq) if final and self.focus_seq
                                                           is not None else None)
        turn = anchor.turn_node() if isinstance(anchor, Node) else (fold.turns[-1] if fold.turns else None)
        if turn is not None:
            turn.open = True
        p = anchor.parent if isinstance(anchor, Node) else None
        while p is not None:
            p.open = True
            p = p.parent
        self.spans.set_tree(fold, self.events)
        if target is not None and self.spans.show(target):
            pass
        elif self.following or not final:
            self.spans.move_to(self.spans.count - 1)
        self._show_axis()

    def _same_node(self, old: Node, fold: SpanFold) -> Node | None:
        """The node of ``fold`` for a node of an earlier fold (same kind and start seq)."""
        for root in fold.roots:
            for n in root.walk():
                if n.seq == old.seq and n.kind == old.kind:
                    return n
        return None

    def _attach_children(self) -> None:
        """Subagent children (from the live harness) as nodes under the tool call that started them."""
        if self._harness is None:
            return
        kids = self._harness.child_spans()
        if not kids:
            return
        tools = {n.ref: n for root in self.fold.roots for n in root.walk() if n.kind == "tool"}
        for c in kids:
            tool = tools.get(str(c.get("callId") or ""))
            if tool is None:
                continue
            node = next((k for k in tool.children if k.kind == "subagent" and k.ref == c.get("id")), None)
            if node is None:
                node = tool.add(Node("subagent", f"subagent {c.get('label') or ''}".strip(), tool.seq,
                                     int(c.get("start") or tool.start), turn=tool.turn, step=tool.step,
                                     ref=str(c.get("id"))))
            node.end = c.get("end")
            node.state = c.get("state") or ("running" if node.end is None else "ok")
            node.detail = str(c.get("id") or "")

    # -- the axis and the inspector ----------------------------------------------------------------
    def _show_axis(self) -> None:
        item = self.spans.current
        node = item if isinstance(item, Node) else self._message_of(item)
        width = self.spans.size.width or 80
        runs = axis_text(node, self.fold, self.spans.label_width(width), width, self.spans.now)
        text = Text(no_wrap=True, overflow="crop")
        for s, style in runs:
            text.append(s, style)
        self.query_one("#axis", Static).update(text)

    def _message_of(self, seq: int | None) -> Node | None:
        if seq is None:
            return None
        for row in reversed(self.spans.rows[: self.spans.cursor + 1]):
            if isinstance(row, Node):
                return row
        return None

    @on(SpanTree.Highlighted)
    def _highlighted(self, event: SpanTree.Highlighted) -> None:
        if event.list is self.ledger:
            self._ledger_highlighted()
            return
        if event.list is not self.spans:
            return
        self._show_axis()
        if self._inspect_timer is not None:
            self._inspect_timer.stop()
        self._inspect_timer = self.set_timer(INSPECT_DELAY, self._inspect_current)

    def _inspect_current(self) -> None:
        self._inspect_timer = None
        if self.spans.first_paint_at is None and self.spans.count:  # the tree paints first
            self._inspect_timer = self.set_timer(INSPECT_DELAY, self._inspect_current)
            return
        item = self.spans.current
        if item is None or item is self._inspected:
            return
        self._inspected = item
        self._inspect(item)

    def _inspect(self, item: Node | int) -> None:
        self.inspector.show(item)

    # -- live -----------------------------------------------------------------------------------
    def live_events_ready(self) -> None:
        """The app's wake-up for new session events (the bridge's ``EventsReady``): refresh soon."""
        if self._live is None or self._live_timer is not None:
            return
        self._live_timer = self.set_timer(LIVE_INTERVAL, self._pull_live)

    def _pull_live(self) -> None:
        self._live_timer = None
        live = self._live
        if live is None:
            return
        n = len(self.events)
        try:
            new = live.events(n)
        except Exception:  # noqa: BLE001 - a session replaced under us (a resume): nothing to follow
            return
        if not new:
            return
        at_end = self.spans.cursor >= self.spans.count - 1
        self.events.extend(new)
        if self.folded.is_set():  # else the worker's fold catches up in _folded
            for e in new:
                self.fold.apply(e)
        keep = self.spans.current
        if self.folded.is_set():
            self._attach_children()
            last = self.fold.turns[-1] if self.fold.turns else None
            if last is not None and self.following:
                last.open = True
            self.spans.set_tree(self.fold, self.events, keep=None if (self.following and at_end) else keep)
            if self.following and at_end:
                self.spans.move_to(self.spans.count - 1)
        self.ledger.set_rows(len(self.events), keep_cursor=True)
        self._show_axis()
        item = self.spans.current
        if isinstance(item, Node):
            self.inspector.refresh_head(item)

    def action_follow(self) -> None:
        self.following = not self.following
        if self.following:
            self.spans.move_to(self.spans.count - 1)
        self.notify("Following the running turn" if self.following else "Not following", timeout=2)

    # -- keys -----------------------------------------------------------------------------------
    def action_collapse(self) -> None:
        item = self.spans.current
        if isinstance(item, int):
            target = self._message_of(item)
            if target is not None:
                target.open = False
                self.spans.set_tree(self.fold, self.events, keep=target)
            return
        if item is None:
            return
        if item.open and expandable(item):
            item.open = False
            self.spans.set_tree(self.fold, self.events, keep=item)
        elif item.parent is not None:
            self.spans.show(item.parent)

    def action_expand(self) -> None:
        item = self.spans.current
        if not isinstance(item, Node) or not expandable(item):
            return
        if not item.open:
            item.open = True
            self.spans.set_tree(self.fold, self.events, keep=item)
        else:
            self.spans.move_to(self.spans.cursor + 1)

    @on(SpanTree.Selected)
    def _selected(self, event: SpanTree.Selected) -> None:
        if event.list is self.spans:
            self.action_inspect()

    def action_inspect(self) -> None:
        """Enter: inspect the row now and put the focus in the inspector (Esc returns)."""
        if self.spans.has_focus or self.ledger.has_focus:
            if self.spans.has_focus:
                self._inspected = None
                self._inspect_current()
            self.query_one("#inspector", VerticalScroll).focus()

    def action_inspector_size(self) -> None:
        if self.has_class("-full"):
            self.remove_class("-full")
        elif self.has_class("-wide"):
            self.remove_class("-wide")
            self.add_class("-full")
        else:
            self.add_class("-wide")
        self.call_after_refresh(self._show_axis)

    def action_turn(self, delta: int) -> None:
        turns = [r for r in self.spans.rows if isinstance(r, Node) and r.kind == "turn"]
        if not turns:
            return
        item = self.spans.current
        cur = item.turn_node() if isinstance(item, Node) else None
        i = turns.index(cur) if cur in turns else len(turns) - 1
        i = max(0, min(len(turns) - 1, i + delta))
        self.spans.show(turns[i])
        self.ledger.show_seq(turns[i].seq, exact=False)

    def action_toggle_ledger(self) -> None:
        self.toggle_class("-ledger")
        if self.has_class("-ledger"):
            item = self.spans.current
            seq = item if isinstance(item, int) else item.seq if isinstance(item, Node) else None
            if seq is not None:
                self.ledger.show_seq(seq, exact=False)
            self.ledger.focus()
        else:
            self.spans.focus()

    def action_focus_filter(self) -> None:
        if not self.has_class("-ledger"):
            self.action_toggle_ledger()
        self.query_one("#ledger-filter", Input).focus()

    def action_back(self) -> None:
        box = self.query_one("#ledger-filter", Input)
        if box.value:
            box.value = ""
            self.ledger.focus()
            return
        inspector = self.query_one("#inspector", VerticalScroll)
        if self.focused is not None and inspector in self.focused.ancestors_with_self:
            (self.ledger if self.has_class("-ledger") else self.spans).focus()
            return
        if self.has_class("-full"):
            self.remove_class("-full")
            return
        self.app.pop_screen()

    # -- copy ----------------------------------------------------------------------------------
    def action_copy(self, form: str) -> None:
        self.inspector.copy(form)

    # -- the ledger -------------------------------------------------------------------------------
    @on(Input.Changed, "#ledger-filter")
    def _filter(self, event: Input.Changed) -> None:
        types, turn, text = parse_filter(event.value)
        if turn is not None and not self.folded.is_set() and self._fold_done.wait(30) \
                and self._fold_result is not None:
            self._folded(self._fold_result)  # a turn filter needs the turn of each event
        self.ledger.apply_filter(types=types, turn=turn, text=text)

    @on(Input.Submitted, "#ledger-filter")
    def _filter_done(self) -> None:
        self.ledger.focus()

    def _ledger_highlighted(self) -> None:
        if not self.has_class("-ledger"):
            return
        seq = self.ledger.current_seq
        if seq is None:
            return
        self._inspected = seq
        self._inspect(seq)

    def on_resize(self) -> None:
        self._show_axis()
