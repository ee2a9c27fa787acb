"""The timeline inspector: lanes per turn, a virtualised ledger of every event, and an inspector.

Lanes (top) show the selected turn: steps, model requests split into waiting (time to first token,
``░``) and decoding (``█``), tool executions side by side (one row per parallel slot), retries and
compaction, with per-step and per-turn tokens. The ledger (left) is a Line-API list of all events,
filtered by ``type:``, ``turn:`` and free text. The inspector (right) shows the selected event's raw
JSON and, for an event inside a model request, the system prompt, tool schemas and the message list
exactly as the model received them (``derive_messages`` over the log before the request's first chunk).
"""

from __future__ import annotations

import json
import threading
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from dsh_tui.session.stats import Usage
from dsh_tui.session.timeline import (
    Span,
    TimelineFold,
    TurnLane,
    dispatch_seq,
    fold_timeline,
    request_header_at,
)
from dsh_tui.ui.widgets.input import LightInput
from dsh_tui.ui.widgets.ledger import Ledger


def _fmt_ms(ms: int | None) -> str:
    if ms is None:
        return "…"
    return f"{ms} ms" if ms < 1000 else f"{ms / 1000:.2f} s"


def _usage_text(u: Usage) -> str:
    return f"in {u.input:,} · cached {u.cache_read:,} · out {u.output:,} · reasoning {u.reasoning:,}"


def render_lane(lane: TurnLane, width: int, children: dict[int, list[dict]] | None = None) -> Text:
    """The lanes of one turn as text bars on a shared time axis. ``children``: by the seq of a subagent
    tool call, the children it started (``{"label", "start", "end", "state"}``, epoch ms): one lane each,
    right under the tool lanes."""
    label_w = 12
    bar_w = max(10, width - label_w - 2)
    ends = [s.end for s in lane.spans if s.end is not None] + [lane.end or lane.start]
    t0 = lane.start
    t1 = max([t0 + 1, *ends])
    scale = bar_w / (t1 - t0)

    def col(t: int) -> int:
        return max(0, min(bar_w - 1, int((t - t0) * scale)))

    out = Text(no_wrap=True, overflow="crop")
    reason = lane.reason or "open"
    out.append(f"Turn {lane.turn}", "bold")
    out.append(f"  {reason}  {_fmt_ms(lane.duration_ms)}  ·  {_usage_text(lane.usage)}\n", "dim")

    def row(label: str, cells: list[tuple[int, int, str, str]]) -> None:
        line = [" "] * bar_w
        styles: list[str] = [""] * bar_w
        for a, b, ch, style in cells:
            for x in range(a, max(a + 1, b)):
                if 0 <= x < bar_w:
                    line[x], styles[x] = ch, style
        out.append(f"{label:<{label_w}}", "dim")
        for ch, style in zip(line, styles, strict=True):
            out.append(ch, style)
        out.append("\n")

    marks = []
    for s in lane.steps:
        marks.append((col(s.start), col(s.start) + 1, "│", "bold"))
    row("steps", marks)
    reqs = lane.of_kind("request")
    cells = []
    for r in reqs:
        ft = r.first_token if r.first_token is not None else (r.end if r.end is not None else t1)
        end = r.end if r.end is not None else t1
        style = "red" if r.state == "error" else "yellow" if r.state == "aborted" else "cyan"
        cells.append((col(r.start), col(ft) + 1, "░", style))
        if r.first_token is not None:
            cells.append((col(ft), col(end) + 1, "█", style))
    row("requests", cells)
    tools = lane.of_kind("tool")
    slots = sorted({t.slot for t in tools})
    for slot in slots:
        cells = []
        for t in tools:
            if t.slot != slot:
                continue
            style = {"ok": "green", "error": "red", "aborted": "yellow", "unknown": "magenta"}.get(t.state, "white")
            cells.append((col(t.start), col(t.end if t.end is not None else t1) + 1, "▓", style))
        row(f"tools[{slot}]", cells)
    child_rows = [(t, c) for t in tools for c in (children or {}).get(t.seq, [])]
    for _t, c in child_rows:
        style = {"completed": "green", "error": "red", "aborted": "yellow", "max-tokens": "red"}.get(
            c.get("state"), "magenta")
        end = c.get("end") if c.get("end") is not None else t1
        row(f"↳ {str(c.get('label') or 'subagent')[:label_w - 3]}",
            [(col(c["start"]), col(end) + 1, "▚", style)])
    for kind, ch, style in (("retry", "╌", "red"), ("compaction", "▒", "blue")):
        spans = lane.of_kind(kind)
        if spans:
            row(kind, [(col(s.start), col(s.end if s.end is not None else t1) + 1, ch, style) for s in spans])
    for r in reqs:
        out.append(f"  {r.label:<24} wait {_fmt_ms(r.waiting_ms):>9}  decode {_fmt_ms(r.decoding_ms):>9}  {r.state}\n",
                   "dim")
    for t in tools:
        out.append(f"  tool {t.label:<19} slot {t.slot}  {_fmt_ms(t.duration_ms):>9}  {t.state}\n", "dim")
    for _t, c in child_rows:
        dur = None if c.get("end") is None else c["end"] - c["start"]
        out.append(f"    ↳ subagent {str(c.get('label'))[:30]:<30} {_fmt_ms(dur):>9}  {c.get('state') or 'running'}"
                   f"  {c.get('id', '')}\n", "dim")
    for s in lane.steps:
        out.append(f"  step {s.step:<3} {_usage_text(s.usage)}\n", "dim")
    return out


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


def request_view(header: dict, events: list[dict], seq: int) -> dict | None:
    """System prompt, tools and messages of the model request that ``seq`` belongs to, or None."""
    d = dispatch_seq(events, seq)
    if d is None:
        return None
    req_header = request_header_at(events, d)
    messages: Any
    try:
        from dsh_tui.session.log import Session

        prefix = [e for e in events[:d]]
        session = Session(header, prefix)
        messages = session.derive_messages().to_list()  # json.dumps below needs a real list
        canonical = session.request_header()
        if canonical is not None:
            req_header = canonical
    except ImportError:
        messages = "(the session core is not available to derive messages)"
    except Exception as err:  # noqa: BLE001 - an inspector shows what it can
        messages = f"(cannot derive messages: {err})"
    return {"dispatch_seq": d, "header": req_header, "messages": messages}


class TimelineScreen(Screen):
    """See the module docstring."""

    HELP = """
## Timeline

**[** / **]** previous / next turn. The ledger lists every event: **↑ ↓ PgUp PgDn Home End**.
Filter with `type:tool/` `type:user/message,turn/end` `turn:3` and any text; **Esc** clears it.
The inspector shows the raw event and, inside a model request, what the model received.
"""

    DEFAULT_CSS = """
    TimelineScreen { layout: vertical; }
    TimelineScreen #lanes { height: auto; max-height: 45%; padding: 0 1; border-bottom: solid $primary-muted; }
    TimelineScreen #ledger-filter { height: 3; border: tall $primary-muted; }
    TimelineScreen #ledger-filter:focus { border: tall $primary; }
    TimelineScreen #body { height: 1fr; }
    TimelineScreen Ledger { width: 3fr; min-width: 60; }
    TimelineScreen #inspector { width: 2fr; max-width: 72; border-left: solid $primary-muted; padding: 0 1; }
    """

    BINDINGS = [
        Binding("escape", "back", "Back", id="timeline.back"),
        Binding("left_square_bracket", "turn(-1)", "Prev turn", id="timeline.prev"),
        Binding("right_square_bracket", "turn(1)", "Next turn", id="timeline.next"),
        Binding("slash", "focus_filter", "Filter", id="timeline.filter"),
    ]

    def __init__(self, app: Any = None, *, header: dict | None = None, events: list[dict] | None = None,
                 focus_seq: int | None = None) -> None:
        super().__init__()
        if events is None and app is not None:
            header, events = self._from_chat(app)
        self.header = header or {}
        self.events: list[dict] = events or []
        # subagent children by the seq of the tool call that started them (the chat's live harness knows them)
        self.subagent_lanes: dict[int, list[dict]] = {}
        harness = getattr(getattr(app, "bridge", None), "harness", None) if app is not None else None
        spans = getattr(harness, "child_spans", None)
        if callable(spans):
            by_call = {e["data"].get("callId"): e["seq"] for e in self.events if e.get("type") == "tool/call"}
            for c in spans():
                seq = by_call.get(c.get("callId"))
                if seq is not None:
                    self.subagent_lanes.setdefault(seq, []).append(c)
        self.focus_seq = focus_seq
        # The ledger paints as soon as the events exist; the lanes fold (O(events)) runs in a worker.
        self.fold: TimelineFold = TimelineFold()
        self.turn_index = 0
        self.folded = threading.Event()  # lanes shown (UI thread)
        self._fold_done = threading.Event()  # fold computed (worker)
        self._fold_result: TimelineFold | None = None

    @staticmethod
    def _from_chat(app: Any) -> tuple[dict | None, list[dict]]:
        """The chat screen's session (when opened from the chat screen through the app hook)."""
        chat = getattr(app, "chat", None)
        harness = getattr(getattr(app, "bridge", None), "harness", None)
        session = getattr(harness, "session", None)
        if session is not None:
            return session.header, list(session.events)
        fold = getattr(chat, "fold", None)
        return (getattr(fold, "header", None), [])

    def compose(self) -> ComposeResult:
        yield Static("", id="lanes")
        yield LightInput(placeholder="Filter events: type:tool/  turn:2  text…", id="ledger-filter")
        with Horizontal(id="body"):
            self.ledger = Ledger(id="ledger")
            yield self.ledger
            with VerticalScroll(id="inspector"):
                yield Static("", id="inspect")
        yield Footer()

    def on_mount(self) -> None:
        self.ledger.set_events(self.events, None)
        self.ledger.focus()
        if self.focus_seq is not None:
            self.ledger.show_seq(self.focus_seq)
        elif self.events:
            self.ledger.move_to(len(self.events) - 1)
        self.query_one("#lanes", Static).update(Text("Folding the timeline…", "dim"))
        self.call_after_refresh(self._fold)  # paint the ledger first; the fold holds the GIL for a while

    @work(thread=True, exclusive=True, group="timeline-fold", description="fold timeline")
    def _fold(self) -> None:
        fold = fold_timeline(self.events)
        self._fold_result = fold
        self._fold_done.set()
        self.app.call_from_thread(self._folded, fold)

    def _folded(self, fold: TimelineFold) -> None:
        if self.folded.is_set():
            return
        self.fold = fold
        self.ledger.turn_of = fold.turn_of
        self.ledger.invalidate()
        self.turn_index = len(fold.turns) - 1
        seq = self.ledger.current_seq
        if seq is not None and seq < len(fold.turn_of) and fold.turn_of[seq]:
            for i, lane in enumerate(fold.turns):
                if lane.turn == fold.turn_of[seq]:
                    self.turn_index = i
        self._show_turn()
        self.folded.set()

    # -- lanes --------------------------------------------------------------------------------
    def _show_turn(self) -> None:
        lanes = self.query_one("#lanes", Static)
        if not self.folded.is_set() and not self.fold.turns:
            return
        if not self.fold.turns:
            lanes.update(Text("No turns in this session.", "dim"))
            return
        self.turn_index = max(0, min(len(self.fold.turns) - 1, self.turn_index))
        width = max(40, (self.size.width or 100) - 2)
        lanes.update(render_lane(self.fold.turns[self.turn_index], width, self.subagent_lanes))

    def action_turn(self, delta: int) -> None:
        self.turn_index += delta
        self._show_turn()
        if self.fold.turns:
            self.ledger.show_seq(self.fold.turns[self.turn_index].seq, exact=False)

    def on_resize(self) -> None:
        self._show_turn()

    # -- ledger and inspector -----------------------------------------------------------------
    @on(Ledger.Highlighted)
    def _highlighted(self, event: Ledger.Highlighted) -> None:
        seq = self.ledger.current_seq
        if seq is None:
            self.query_one("#inspect", Static).update("")
            return
        turn = self.fold.turn_of[seq] if seq < len(self.fold.turn_of) else 0
        if turn:
            for i, lane in enumerate(self.fold.turns):
                if lane.turn == turn and i != self.turn_index:
                    self.turn_index = i
                    self._show_turn()
                    break
        self._inspect(seq)

    def _inspect(self, seq: int) -> None:
        event = self.events[seq]
        text = Text()
        text.append(f"#{seq} {event.get('type')}\n", "bold")
        text.append(json.dumps(event, indent=2, ensure_ascii=False))
        text.append("\n")
        self.query_one("#inspect", Static).update(text)
        if dispatch_seq(self.events, seq) is not None:
            self._load_request(seq)

    @work(thread=True, exclusive=True, group="timeline-request", description="derive request")
    def _load_request(self, seq: int) -> None:
        view = request_view(self.header, self.events, seq)
        if view is not None:
            self.app.call_from_thread(self._show_request, seq, view)

    def _show_request(self, seq: int, view: dict) -> None:
        if self.ledger.current_seq != seq:
            return
        event = self.events[seq]
        header = view["header"] or {}
        text = Text()
        text.append(f"#{seq} {event.get('type')}  ·  request dispatched before #{view['dispatch_seq']}\n", "bold")
        text.append("\nModel\n", "bold underline")
        text.append(json.dumps(header.get("config"), ensure_ascii=False) + "\n")
        text.append("\nSystem prompt\n", "bold underline")
        text.append(str(header.get("system", "")) + "\n")
        tools = header.get("tools") or []
        text.append(f"\nTools ({len(tools) if isinstance(tools, list) else '?'})\n", "bold underline")
        text.append(json.dumps(tools, indent=2, ensure_ascii=False) + "\n")
        msgs = view["messages"]
        count = len(msgs) if isinstance(msgs, list) else "?"
        text.append(f"\nMessages ({count})\n", "bold underline")
        text.append((json.dumps(msgs, indent=2, ensure_ascii=False) if isinstance(msgs, list) else str(msgs)) + "\n")
        text.append("\nEvent\n", "bold underline")
        text.append(json.dumps(event, indent=2, ensure_ascii=False) + "\n")
        self.query_one("#inspect", Static).update(text)

    @on(Input.Changed, "#ledger-filter")
    def _filter(self, event: Input.Changed) -> None:
        types, turn, text = parse_filter(event.value)
        if turn is not None and not self.folded.is_set() and self._fold_done.wait(30):
            self._folded(self._fold_result)  # a turn filter needs the turn of each event
        self.ledger.apply_filter(types=types, turn=turn, text=text)

    @on(Input.Submitted, "#ledger-filter")
    def _filter_done(self) -> None:
        self.ledger.focus()

    def action_focus_filter(self) -> None:
        self.query_one("#ledger-filter", Input).focus()

    def action_back(self) -> None:
        box = self.query_one("#ledger-filter", Input)
        if box.value:
            box.value = ""
            self.ledger.focus()
            return
        self.app.pop_screen()

    def lane_spans(self) -> list[Span]:
        """Spans of the shown turn (tests read it)."""
        return self.fold.turns[self.turn_index].spans if self.fold.turns else []
