"""Small chat widgets: status bar, composer, light input, queue, plan strip, approval panel."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.geometry import Size
from textual.message import Message
from textual.reactive import Reactive
from textual.widget import Widget
from textual.widgets import Button, Input, OptionList, Static, TextArea

from dsh_tui.session.stats import UsageFold, format_tokens
from dsh_tui.session.transcript import PlanState
from dsh_tui.ui.bridge import ApprovalRequest
from dsh_tui.ui.widgets.render import describe_args


class LightInput(Input):
    """Input whose keystrokes repaint only itself.

    The stock Input sets ``virtual_size`` (a layout reactive) on every keystroke, which reflows the
    whole screen (118 ms p50 with a long transcript, textual-perf.md §3). Repaint only.
    """

    virtual_size = Reactive(Size(0, 0), layout=False, repaint=True)

    #: A keystroke (or paste) is waiting for the screen refresh that paints it. The chat screen holds a
    #: transcript flush back meanwhile, so the echo frame stays a cheap repaint of this line instead
    #: of queuing behind a screen-wide reflow of the stream.
    echo_pending = False

    def _typed(self) -> None:
        if not self.echo_pending:
            self.echo_pending = True
            self.call_after_refresh(self._echoed)

    def _echoed(self) -> None:
        self.echo_pending = False

    async def _on_key(self, event: events.Key) -> None:
        self._typed()
        await super()._on_key(event)

    def _on_paste(self, event: events.Paste) -> None:
        # Textual dispatches a message to the handler of every class in the MRO: Input's own
        # ``_on_paste`` runs after this one (calling it here too inserted every paste twice)
        self._typed()


class Composer(TextArea, inherit_bindings=False):
    """The chat's prompt box: grows to a few lines, then scrolls.

    Enter submits (``Composer.Submitted``); Ctrl+J (or Shift+Enter where the terminal sends it) inserts
    a newline; a paste arrives whole, newlines kept. ``value`` is the text (as on an ``Input``).
    """

    DEFAULT_CSS = """
    Composer { height: auto; min-height: 3; max-height: 8; border: tall $primary-muted; padding: 0 1;
               background: $surface; scrollbar-gutter: stable; scrollbar-size-vertical: 1;
               scrollbar-size-horizontal: 0; }
    Composer:focus { border: tall $primary; }
    Composer > .text-area--placeholder { color: $text-muted; }
    Composer.-notice { border: tall $warning; }
    Composer.-notice:focus { border: tall $warning; }
    """

    # TextArea's keys without F6/F7 (select line/all), which would shadow whatever a user remaps to them,
    # and PageUp/PageDown, which scroll the chat's transcript
    BINDINGS = [*(b for b in TextArea.BINDINGS
                  if not isinstance(b, Binding) or b.key not in ("f6", "f7", "pageup", "pagedown")),
                Binding("ctrl+j,shift+enter", "newline", "Newline", id="composer.newline", show=False)]

    @dataclass
    class Submitted(Message):
        composer: Composer
        value: str

        @property
        def control(self) -> Composer:
            return self.composer

    #: As ``LightInput.echo_pending``: a keystroke or paste waits for the refresh that paints it.
    echo_pending = False

    def __init__(self, *, placeholder: str = "", **kwargs) -> None:
        super().__init__(soft_wrap=True, tab_behavior="focus", show_line_numbers=False, highlight_cursor_line=False,
                         placeholder=placeholder, **kwargs)

    # TextArea re-wraps the whole document when its scrollbar comes or goes and on every resize (about
    # 0.5 s each for a 10,000-line paste, which makes the composer grow and its scrollbar appear). The
    # scrollbar's gutter is reserved (scrollbar-gutter: stable) and growing changes only the height:
    # re-wrap only when the wrap width changed.
    def _wrap_is_current(self) -> bool:
        return self.wrap_width == self.wrapped_document._width

    def _watch_show_vertical_scrollbar(self) -> None:
        if self.wrap_width and not self._wrap_is_current():
            self._rewrap_and_refresh_virtual_size()
        self.scroll_cursor_visible()

    def _on_resize(self, event: events.Resize) -> None:
        if self._wrap_is_current():
            event.prevent_default()  # TextArea's ``_on_resize`` (next in the MRO) re-wraps everything
            self._refresh_size()

    @property
    def value(self) -> str:
        return self.text

    @value.setter
    def value(self, text: str) -> None:
        self.load_text(text)
        self.move_cursor(self.document.end)

    def _typed(self) -> None:
        if not self.echo_pending:
            self.echo_pending = True
            self.call_after_refresh(self._echoed)

    def _echoed(self) -> None:
        self.echo_pending = False

    #: Called with Up, Down, Tab, Enter and Esc while a completion list is shown; True when it took the key.
    on_completion_key: Callable[[str], bool] | None = None

    async def _on_key(self, event: events.Key) -> None:
        # TextArea's ``_on_key`` runs after this one (MRO dispatch) unless the default is prevented
        self._typed()
        event.via_composer = True  # type: ignore[attr-defined]  # the chat screen: handled here
        if event.key in ("up", "down", "tab", "enter", "escape") and self.on_completion_key is not None \
                and self.on_completion_key(event.key):
            event.stop()
            event.prevent_default()
            return
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.post_message(self.Submitted(self, self.text))

    async def _on_paste(self, event: events.Paste) -> None:
        self._typed()  # TextArea's ``_on_paste`` inserts the whole text after this one

    #: Called by Up on the composer's top row; True when it took the key (the chat focuses its queue).
    on_top_edge: Callable[[], bool] | None = None

    def action_cursor_up(self, select: bool = False) -> None:
        at_top = self.wrapped_document.location_to_offset(self.cursor_location).y == 0
        if not select and at_top and self.on_top_edge is not None and self.on_top_edge():
            return
        super().action_cursor_up(select)

    def action_newline(self) -> None:
        if not self.read_only:
            result = self.replace("\n", *self.selection, maintain_selection_offset=False)
            self.move_cursor(result.end_location)


PHASE_TEXT = {
    "waiting": "waiting for first token",
    "thinking": "thinking",
    "responding": "responding",
    "tools": "executing tools",
    "retrying": "retrying",
    "compacting": "compacting",
    "approval": "waiting for approval",
}


@dataclass
class StatusInfo:
    status: str = "idle"
    phase: str = ""
    phase_since: float = 0.0
    tools_running: int = 0
    queued: int = 0
    subagents: int = 0  # running subagents below this session
    notice: str = ""


def context_text(percent: float) -> str:
    """Context use as the bar shows it: "<1%" below one percent, one decimal below ten."""
    if percent <= 0:
        return "0%"
    if percent < 1:
        return "<1%"
    if percent < 10:
        return f"{percent:.1f}%"
    return f"{percent:.0f}%"


def _short_hints(hint: str) -> list[str]:
    """Shorter forms of a "No model configured: ..." hint for a narrow status bar, longest first."""
    import re

    first = hint.split(", or ")[0]
    return [first, re.sub(r' for provider "[^"]*"', "", first)]


class StatusBar(Widget):
    """One line: state + phase clock, model/effort, cost, context %, tokens, cache %, queue.

    Laid out by priority: when the line is too narrow, the least important segments are left out
    (cache %, then tokens, the reasoning effort, context %), never the state, the model, the cost, the queue or a
    notice (which is shortened instead)."""

    DEFAULT_CSS = """
    StatusBar { height: 1; background: $panel; color: $text; padding: 0 1; }
    StatusBar.-running { background: $primary-muted; }
    """

    SEPARATOR = "  │ "

    def __init__(self, clock: Callable[[], float] = time.monotonic, **kwargs) -> None:
        super().__init__(**kwargs)
        self.clock = clock
        self._text = Text()
        self.info = StatusInfo()
        self.usage: UsageFold | None = None
        self.model_hint = ""
        # the live route (provider, model, effort) the next request uses: shown before the first turn
        self.route: tuple[str, str, str | None] | None = None
        self.modes: dict[str, str] = {}  # display modes that differ from the default, e.g. "cards hidden"

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)

    def on_resize(self) -> None:
        self.redraw()

    def _tick(self) -> None:
        if self.info.status == "running":
            self.redraw()

    def set_phase(self, phase: str) -> None:
        if phase != self.info.phase:
            self.info.phase = phase
            self.info.phase_since = self.clock()
        self.redraw()

    def set_status(self, status: str) -> None:
        if status != self.info.status:
            self.info.status = status
            self.info.phase_since = self.clock()
            if status == "idle":
                self.info.phase = ""
                self.info.tools_running = 0
        self.set_class(status == "running", "-running")
        self.redraw()

    def set_mode(self, key: str, text: str) -> None:
        """Show ``text`` for the display mode ``key`` (empty: the mode is at its default, nothing shown)."""
        if text:
            self.modes[key] = text
        else:
            self.modes.pop(key, None)
        self.redraw()

    def redraw(self) -> None:
        # repaint only: the bar is one line, so a change never needs a screen-wide layout pass; and only
        # when its text changed (every transcript flush asks, most change nothing here)
        text = self.build()
        if text != self._text or not self._text:
            self._text = text
            self.refresh()

    def render(self) -> Text:
        return self._text

    def segments(self) -> list[tuple[int, Text]]:
        """(priority, text) of every segment in display order; lower priority numbers are kept longer."""
        info = self.info
        out: list[tuple[int, Text]] = []
        if info.status == "running":
            phase = PHASE_TEXT.get(info.phase, info.phase or "running")
            if info.phase == "tools" and info.tools_running:
                phase = f"executing {info.tools_running} tool{'s' if info.tools_running != 1 else ''}"
            elapsed = max(0, int(self.clock() - info.phase_since))
            state = Text("● ", style="bold green")
            state.append(f"{phase} {elapsed}s", style="bold")
        else:
            state = Text("○ idle", style="dim")
        out.append((0, state))
        for mode in self.modes.values():
            out.append((1, Text(mode, style="italic")))
        usage = self.usage
        route = self.route
        model = (route[1] if route else "") or (usage.model if usage is not None else "") or ""
        effort = (route[2] if route else None) or (usage.effort if usage is not None and usage.model == model
                                                   else None)
        if model:
            out.append((1, Text(model, style="bold")))
            if effort:
                out.append((4, Text(f"({effort})")))
        elif self.model_hint:
            out.append((1, Text(self.model_hint, style="yellow")))
        if usage is not None and (model or usage.model):
            cost = usage.cost_usd()
            if not usage.model and usage.prices.get(model) is None:
                cost = None  # no request yet: the cost of the route's model is unknown without its price
            out.append((2, Text(f"${cost:.4f}" if cost is not None else "$?")))
            out.append((3, Text(f"ctx {context_text(usage.context_percent())}")))
            total = usage.total
            out.append((5, Text(f"↑{format_tokens(total.billed_input)} ↓{format_tokens(total.output)}")))
            cache = total.cache_percent()
            if cache is not None:
                out.append((6, Text(f"cache {cache:.0f}%")))
        if info.queued:
            out.append((1, Text(f"{info.queued} queued", style="bold yellow")))
        if info.subagents:
            out.append((1, Text(f"{info.subagents} subagent{'s' if info.subagents != 1 else ''} running",
                                style="bold cyan")))
        if info.notice:
            out.append((7, Text(info.notice, style="bold red")))
        return out

    def build(self, width: int | None = None) -> Text:
        """The line for ``width`` cells (default: the widget's content width; unlimited before layout)."""
        if width is None:
            width = self.content_size.width or 0
        segments = self.segments()
        keep = list(segments)

        separator = self.SEPARATOR

        def line(parts: list[tuple[int, Text]]) -> Text:
            text = Text()
            for i, (priority, part) in enumerate(parts):
                if i and not (priority == 4 and parts[i - 1][0] == 1):
                    text.append(separator)
                elif i:
                    text.append(" ")
                text.append_text(part)
            return text

        text = line(keep)
        if width <= 0:
            return text
        # the notice (an error) is shortened to what is left rather than dropped
        droppable = sorted((p for p, _ in keep if p >= 3 and p != 7), reverse=True)
        for priority in droppable:
            if text.cell_len <= width:
                break
            keep = [seg for seg in keep if seg[0] != priority]
            text = line(keep)
        hint_at = next((i for i, (_, part) in enumerate(keep) if self.model_hint and part.plain == self.model_hint),
                       None)
        if text.cell_len > width and hint_at is not None:
            # the no-model hint in shorter words (its first clause; the provider's name left out)
            for short in _short_hints(self.model_hint):
                keep[hint_at] = (keep[hint_at][0], Text(short, style="yellow"))
                text = line(keep)
                if text.cell_len <= width:
                    break
        if text.cell_len > width:
            separator = " │ "  # tighter separators before anything essential is cut
            text = line(keep)
        if text.cell_len > width:
            text.truncate(width, overflow="ellipsis")
        return text


class PlanStrip(Static):
    """Todo counts above the composer (hidden until the first ``todo/write``)."""

    DEFAULT_CSS = "PlanStrip { height: auto; display: none; color: $text-muted; padding: 0 1; }"

    def show_plan(self, plan: PlanState) -> None:
        self.display = bool(plan.todos)
        current = next((t.get("content", "") for t in plan.todos if t.get("status") == "in_progress"), "")
        text = Text(f"Plan: {plan.describe()}")
        if current:
            text.append(f"  ▶ {current}", style="bold")
        self.update(text)


class QueueList(OptionList):
    """Follow-ups waiting for the next turn: Enter edits, Delete removes, S steers, Esc goes back."""

    DEFAULT_CSS = "QueueList { height: auto; max-height: 5; display: none; border: none; padding: 0 1; }"

    BINDINGS = [
        ("delete", "remove", "Remove"),
        ("s", "steer", "Steer now"),
        ("e", "edit", "Edit"),
        ("escape", "leave", "Back to the composer"),
    ]

    @dataclass
    class Action(Message):
        action: str
        index: int

    def _fire(self, action: str) -> None:
        if self.highlighted is not None:
            self.post_message(self.Action(action, self.highlighted))

    def action_remove(self) -> None:
        self._fire("remove")

    def action_steer(self) -> None:
        self._fire("steer")

    def action_edit(self) -> None:
        self._fire("edit")

    def action_leave(self) -> None:
        self.post_message(self.Action("leave", -1))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.post_message(self.Action("edit", event.option_index))

    def show(self, queued: list[str]) -> None:
        """List ``queued`` with an item always highlighted (the same index, or the last one)."""
        before = self.highlighted
        self.clear_options()
        self.add_options([_queue_label(q) for q in queued])
        self.display = bool(queued)
        if queued:
            self.highlighted = min(before or 0, len(queued) - 1)


def _queue_label(text: str) -> str:
    lines = text.splitlines() or [""]
    more = f"  (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
    return f"⏳ {lines[0][:100]}{more}"


class ApprovalPanel(Vertical):
    """Takes over the composer while a tool call waits: tool, arguments/command, reason, buttons."""

    DEFAULT_CSS = """
    ApprovalPanel { height: auto; max-height: 16; display: none; border: heavy $warning; padding: 0 1; }
    ApprovalPanel #approval-args { max-height: 8; overflow-y: auto; }
    ApprovalPanel Horizontal { height: auto; }
    ApprovalPanel Button { margin-right: 2; width: auto; }
    """

    BINDINGS = [("a", "allow", "Allow once"), ("y", "allow", "Allow once"), ("r", "reject", "Reject"),
                ("n", "reject", "Reject")]

    @dataclass
    class Decided(Message):
        request: ApprovalRequest
        outcome: str

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.request: ApprovalRequest | None = None
        self._built = False

    def _build(self) -> None:
        """Mount the panel's widgets on its first request: Button's stylesheet and six widgets are not on
        the way to the app's first paint (most sessions never ask)."""
        if self._built:
            return
        self._built = True
        self._title, self._args, self._reason = (Static(id="approval-title"), Static(id="approval-args"),
                                                 Static(id="approval-reason"))
        self._allow = Button("Allow once \\[a]", id="allow", variant="warning")
        self.mount(self._title, self._args, self._reason,
                   Horizontal(self._allow, Button("Reject \\[r]", id="reject", variant="error")))

    def show_request(self, request: ApprovalRequest) -> None:
        self._build()
        self.request = request
        self._title.update(Text(f"Approve {request.tool}?", style="bold"))
        self._args.update(Text(describe_args(request.arguments)))
        self._reason.update(Text(request.reason or "", style="italic"))
        self.display = True
        self._allow.focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self._decide("allowed-once" if event.button.id == "allow" else "rejected")

    def action_allow(self) -> None:
        self._decide("allowed-once")

    def action_reject(self) -> None:
        self._decide("rejected")

    def _decide(self, outcome: str) -> None:
        request, self.request = self.request, None
        if request is None:
            return
        self.display = False
        self.post_message(self.Decided(request, outcome))
