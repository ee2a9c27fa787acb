"""The status bar: model, phase, tokens, cost and context use, bound to live agent events."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.text import Text
from textual.widget import Widget

from dsh_tui.session.stats import UsageFold, format_tokens

PHASE_TEXT = {
    "waiting": "waiting for first token",
    "thinking": "thinking",
    "responding": "responding",
    "tools": "executing tools",
    "retrying": "retrying",
    "compacting": "compacting",
    "approval": "waiting for approval",
    "question": "waiting for your answer",
}


PRESET_STYLES = {"read-only": "cyan", "workspace-write": "", "full-access": "bold red"}


class StatusInfo:
    """What the bar shows besides usage (a plain class: a dataclass costs ~3 M instructions to make, on the way
    to the first frame)."""

    def __init__(self) -> None:
        self.status = "idle"
        self.phase = ""
        self.phase_since = 0.0
        self.tools_running = 0
        self.queued = 0
        self.steering = 0  # steered into the running turn, not yet taken by a step
        self.subagents = 0  # running subagents below this session
        self.notice = ""


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
    """One line: state + phase clock, model/effort, permission mode, cost, context %, tokens, cache %, queue.

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
        self.route: tuple[str | None, str | None, str | None] | None = None
        self.modes: dict[str, str] = {}  # display modes that differ from the default, e.g. "cards hidden"
        self.preset = ""  # the live session's permission mode (F4 cycles it), shown after the model
        self.sandbox = ""  # "sandbox" | "no sandbox" | "" (turned off): the OS sandbox of commands, after the mode

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

    def segments(self) -> list[tuple[float, Text]]:
        """(priority, text) of every segment in display order; lower priority numbers are kept longer."""
        info = self.info
        out: list[tuple[float, Text]] = []
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
        if self.preset:  # safety-relevant: kept after the model, before the cost, whatever the state
            out.append((1.5, Text(self.preset, style=PRESET_STYLES.get(self.preset, ""))))
        if self.sandbox:
            out.append((1.6, Text(self.sandbox, style="green" if self.sandbox == "sandbox" else "yellow")))
        if usage is not None and (model or usage.model):
            cost = usage.cost_usd()
            if not usage.model and usage.prices.get(model) is None:
                cost = None  # no request yet: the cost of the route's model is unknown without its price
            # an unknown cost ("$?") says little: it goes early on a narrow line
            out.append((2, Text(f"${cost:.4f}")) if cost is not None else (5.5, Text("$?")))
            out.append((3, Text(f"ctx {context_text(usage.context_percent())}")))
            total = usage.total
            out.append((5, Text(f"↑{format_tokens(total.billed_input)} ↓{format_tokens(total.output)}")))
            cache = total.cache_percent()
            if cache is not None:
                out.append((6, Text(f"cache {cache:.0f}%")))
        if info.queued:
            out.append((1, Text(f"{info.queued} queued", style="bold yellow")))
        if info.steering:
            out.append((1, Text(f"{info.steering} steering", style="bold magenta")))
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

        def line(parts: list[tuple[float, Text]]) -> Text:
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
        # the notice (an error) is shortened to what is left rather than dropped; the cost goes only after
        # tighter separators did not make room
        droppable = sorted({p for p, _ in keep if p >= 2 and p != 7}, reverse=True)
        for priority in droppable:
            if text.cell_len <= width:
                break
            if priority < 3 and separator == self.SEPARATOR:
                separator = " │ "
                text = line(keep)
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
