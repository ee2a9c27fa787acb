"""The chat screen: transcript, plan strip, queue, approval takeover, composer and status bar.

Session events reach this screen only through the bridge's queue; they are drained at most
``1 / FLUSH_INTERVAL`` times per second (20 Hz), folded with the same ``TranscriptFold`` a cold load
uses, and the resulting item changes are applied in one batch.

The composer's completion (``chat_completion.py``) and slash commands (``chat_commands.py``) are mixins of
``ChatScreen``. Over 500 lines for a reason: what is left is one screen's state machine (the stream flush,
the session attach, running/queue/approval/steer phases, focus and key routing), whose handlers all read
and write the same state; Textual registers ``@on`` handlers only on the screen class itself.
"""

from __future__ import annotations

import gc
import time
from functools import cached_property
from typing import TYPE_CHECKING, Any

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static, TextArea

from dsh_tui.harness_messages import (
    ApprovalAsked,
    ApprovalClosed,
    ApprovalRequest,
    HarnessFailed,
    HarnessMessage,
    ModelChanged,
    Notice,
    PhaseChanged,
    PluginFailed,
    PresetChanged,
    QuestionAsked,
    QuestionClosed,
    SandboxChanged,
    StatusChanged,
    SubagentSnapshot,
    TurnFailed,
)
from dsh_tui.session.transcript import PLAN, TranscriptFold, tail_start
from dsh_tui.ui.bridge import ATTACH, Bridge, Harness
from dsh_tui.ui.history import ChatHistory
from dsh_tui.ui.screens import chat_modes
from dsh_tui.ui.screens.chat_commands import CommandFinished, CommandOutput, CommandsMixin, ShellFinished
from dsh_tui.ui.screens.chat_completion import CompletionMixin
from dsh_tui.ui.textual_compat import key_is_bound, paint_now
from dsh_tui.ui.widgets.composer import Composer
from dsh_tui.ui.widgets.item import ViewState
from dsh_tui.ui.widgets.question import QuestionPanel  # its @on handlers below need the class
from dsh_tui.ui.widgets.status import StatusBar
from dsh_tui.ui.widgets.transcript import FIRST_PAINT_ITEMS, MAX_MOUNTED, TranscriptView

if TYPE_CHECKING:  # built (and their modules imported) on first use: not on the way to the first frame
    from dsh_tui.ui.widgets.approval import ApprovalPanel
    from dsh_tui.ui.widgets.completion import CompletionList
    from dsh_tui.ui.widgets.plan import PlanStrip
    from dsh_tui.ui.widgets.queue import QueueList
    from dsh_tui.ui.widgets.searchbar import SearchBar

FLUSH_INTERVAL = 0.05
WATCHDOG_S = 1.0  # how often the chat checks that it drains and that a turn the log ended has ended here
FREEZE_EVERY = 2.0  # seconds between gc.freeze() calls while a turn streams
TAIL_EVENTS = 6_000  # a longer log shows its last turns first and folds the rest in the background

PLACEHOLDER = "Ask the agent…  (F1 for help)"
READ_ONLY_PLACEHOLDER = "Read-only view of a stored session. Type, then Enter resumes it here and sends."
HINT_IDLE = "Enter send · Ctrl+J newline"
HINT_FAILED = "F5 retry · Enter send · Esc Esc rewind"
HINT_RUNNING = "Enter queue · Ctrl+S steer · Esc cancel"
HINT_RUNNING_SWAPPED = "Enter steer · Ctrl+S queue · Esc cancel"
HINT_QUEUE = "s steer now · e edit · Del remove · Esc back"  # the queue has the focus: its keys, not the composer's
HINT_READ_ONLY = "read-only · Enter resumes here"
HINT_NO_MODEL = "no model configured (see above) · your text is kept"
BOTTOM_HINT = "↓ back to bottom (Ctrl+End)"




class ChatScreen(CompletionMixin, CommandsMixin, Screen):
    """One live (or replayed) session."""

    HELP = """
## Chat

- **Enter** sends while idle; **Ctrl+J** inserts a newline; a paste arrives whole (20 lines or more show
  as `[Pasted text #1 +N lines]`, sent whole; **F2** expands them); **Ctrl+G** edits the
  draft in `$VISUAL` / `$EDITOR`. While the agent runs,
  Enter queues a follow-up for the next turn and **Ctrl+S** (or Ctrl+Enter where the terminal sends it)
  steers into the running turn (swap them with `chat.enter_steers`).
- **Up** on the composer's first line / **Down** on its last recall earlier prompts (this session's, then
  this workspace's past sessions'); Down past the newest brings the draft back. **Ctrl+L** searches them
  as you type (Ctrl+L or Up: older match, Down: newer, **Enter** keeps it, **Esc** restores the draft).
- **Esc** (or **Ctrl+C**) cancels the running turn; the partial answer stays, marked. Ctrl+C while idle
  clears the composer (**Ctrl+Z** brings the text back); **Ctrl+Q** quits. **Esc Esc** while idle rewinds: pick
  an earlier prompt, the session is forked just before it (the original is kept) and the prompt is put
  back in the composer to edit and resend.
- **F5** (or `/retry`) sends the failed last turn's prompt again. **F4** cycles the permission mode
  (read-only → workspace-write → full-access; also `/permission [mode]`), shown in the status bar.
  `/model [name] [effort]` switches this session's model and reasoning effort.
- Approvals: **a** allow once, **s** allow this command (or this tool with these arguments) for the rest
  of the session, **r** reject, **e** reject with a reason the model reads — only while the panel has the
  focus. While you type in the composer the panel does not take it: **Tab** moves to the panel. Keys in
  the panel's first 0.6 s go back to the composer; Enter alone decides nothing.
- Questions from the model (and plan reviews): **1**–**9** choose an option, typing gives another answer
  (or, for a plan, feedback that keeps planning), **Enter** sends, **Esc** dismisses it to reply in the
  composer; the approval panel's guard applies (Tab moves to it while you type).
- **F8** (or `/plan`, `/plan off`) turns plan mode on or off: read-only tools until you approve the plan.
  `/goal <objective>` sets a goal the agent keeps working on, round after round (`/goal` shows it; `pause`,
  `resume`, `edit`, `clear`); the status bar shows plan mode and the goal.
- **Ctrl+O** cycles tool cards collapsed → expanded → hidden; **Ctrl+R** shows or hides reasoning
  (the status bar shows what is not at its default).
- **PageUp / PageDown** scroll the transcript; **Ctrl+End** goes back to the bottom; **Ctrl+Home** loads
  earlier items.
- **Ctrl+F** searches the whole session: **Enter** (or F3, Up) goes to the previous (older) match,
  **Shift+Enter** (Shift+F3, Down) to the next, **Esc** closes the bar.
- **Shift+Tab** from the composer selects the latest item (**Up/Down** move, **Esc** goes back): **c** copies
  it (OSC 52 clipboard; a file when too big), **b** copies its next code block (**1**–**9** pick one),
  **Enter** expands or collapses a tool card alone, **v** opens the whole output in a viewer (**Ctrl+F**
  finds in it, **Esc** returns).
- The queue (above the composer, **Ctrl+Down** or **Up** from the composer's first line): **s** steers the
  highlighted message now, **e** edits, **Delete** removes, **Esc** goes back to the composer. Quitting
  keeps what is queued: it comes back in the composer when the session is resumed.
- A read-only view (opened from the session browser): **Enter** in the composer resumes the session
  here and sends what you typed.
- **Ctrl+B** opens the session browser (Esc or Ctrl+B comes back here);
  **Ctrl+T** the timeline of this session (its spans, and what changed between model requests);
  **Ctrl+P** the command palette; **Ctrl+Q** quits and prints how to resume.
"""

    DEFAULT_CSS = """
    ChatScreen { layout: vertical; }
    ChatScreen #composer { border-title-align: right; border-title-color: $accent; }
    ChatScreen #steering { height: auto; max-height: 3; display: none; color: $accent; padding: 0 1;
                           text-wrap: nowrap; text-overflow: ellipsis; }
    ChatScreen #composer-note { height: auto; display: none; color: $warning; padding: 0 1; }
    ChatScreen #chat-title { height: 1; padding: 0 1; background: $panel; text-style: bold; }
    ChatScreen #command-output { height: auto; max-height: 50%; display: none; padding: 0 1;
                                 border-left: thick $accent; overflow-y: auto; }
    ChatScreen #command-output.-error { border-left: thick $error; }
    ChatScreen #terminal-card { height: auto; max-height: 12; padding: 0 1; border-left: thick $panel-lighten-2;
                                text-wrap: nowrap; text-overflow: ellipsis; }
    ChatScreen #terminal-card:focus { border-left: thick $accent; }
    ChatScreen #terminal-card.-attached { border-left: thick $success; }
    """

    BINDINGS = [
        Binding("escape", "cancel", "Cancel turn", id="chat.cancel"),
        # priority: the composer's own Ctrl+C copies (it still does while text is selected there)
        Binding("ctrl+c", "interrupt", "Interrupt", id="chat.interrupt", show=False, priority=True),
        Binding("ctrl+o", "cycle_cards", "Tool cards", id="chat.cards"),
        Binding("ctrl+r", "toggle_reasoning", "Reasoning", id="chat.reasoning"),
        Binding("ctrl+end", "back_to_bottom", "Bottom", id="chat.bottom", show=False),
        Binding("ctrl+home", "load_earlier", "Earlier", id="chat.earlier", show=False),
        Binding("ctrl+f", "find", "Find", id="chat.find", show=False),
        # Alt+Enter reaches the app as Enter in xterm and tmux, Ctrl+Enter only with the kitty keyboard
        # protocol: Ctrl+S is the key every terminal sends (flow control is off in the app's raw mode)
        Binding("ctrl+s,ctrl+enter", "steer", "Steer", id="composer.steer", show=False),
        Binding("ctrl+down", "focus_queue", "Queue", id="chat.queue", show=False),
        Binding("f6", "focus_terminal", "Terminal", id="chat.terminal", show=False),
        Binding("f4", "cycle_permission", "Permission mode", id="chat.permission", show=False),
        Binding("f5", "retry", "Retry failed turn", id="chat.retry", show=False),
        Binding("f8", "toggle_plan", "Plan mode", id="chat.plan", show=False),
        # priority: the composer's own PageUp/PageDown would move its cursor
        Binding("pageup", "page_transcript(-1)", "Scroll transcript up", id="chat.pageup", show=False,
                priority=True),
        Binding("pagedown", "page_transcript(1)", "Scroll transcript down", id="chat.pagedown", show=False,
                priority=True),
    ]

    def __init__(self, bridge: Bridge, *, enter_steers: bool = False, model_hint: str = "",
                 clock=time.monotonic, show_time: bool = True,
                 prices: dict[str, tuple[float, float, float]] | None = None) -> None:
        super().__init__()
        self.bridge = bridge
        self.enter_steers = enter_steers
        self.prices = prices
        self.fold = TranscriptFold(prices=prices)
        self.state = ViewState()
        self.state.show_time = show_time
        self.clock = clock
        self.queue: list[str] = []
        self.running = False
        self.pending_approvals: list[ApprovalRequest] = []
        self.pending_questions: list[Any] = []  # ask_user_question / plan reviews waiting (chat_modes.py)
        self.mode_fold: Any = None  # plan mode and the goal, for the status bar (chat_modes.ModeFold)
        self._last_flush = 0.0
        self._flush_timer = None
        self._model_hint = model_hint
        self.flushes = 0  # drains applied (tests and benches read it)
        self.subagents: dict[str, dict] = {}  # child id -> live snapshot (see _subagent_changed)
        self._subagent_timer: Any = None
        self._flush_cost = 0.0
        self._last_freeze = 0.0
        self.loading_head = False
        self.attached = False  # a session's events have been received
        self._ready = False  # mounted: the widgets a flush updates exist
        # set by the app before the attach when the events are only the tail of a stored log (read by
        # dsh_tui.store.tail): the older part arrives later through complete_history()
        self.expect_head = False
        self.tail_of: TranscriptFold | None = None  # the tail fold waiting for complete_history()
        self.on_attached: Any = None  # called once after the next attach (the app's first-paint hook)
        self._pending_seq: int | None = None
        # set by the app on a read-only view of a stored session: ``resume(text)`` resumes it in a new
        # chat that sends ``text``; returns "" or why it could not (no model configured)
        self.resume: Any = None
        self.send_on_attach = False  # send the composer's text once the harness is attached
        self._attach_text: str | None = None  # the text Enter sent then (what is typed after it stays)
        self.initial_text = ""  # put in the composer when the screen mounts
        self.read_only = False
        self._redirecting = False  # keys typed elsewhere are going to the composer (on_key)
        self._steers: list[str] = []  # steered into the running turn, not yet seen as a user message
        self._image_refused: str | None = None  # a prompt held back for its images: sent as text if sent again
        self.title_bar: Static | None = None
        self.title_text = ""  # what the title header shows
        self._path_index: Any = None  # dsh_tui.runtime.filerefs.PathIndex of the cwd, built on the first @
        self._index_timer: Any = None
        self._completion_pending = False
        self._skill_names: list[tuple[str, str]] | None = None  # user-invocable skills, read when / opens
        self.last_failed = False  # the last turn ended with an error: F5 retries it (ui/screens/rewind.py)
        self._turn_end_seq: Any = None  # seq of the last turn/end this screen applied (the watchdog's mark)
        self._stuck_ticks = 0

    def compose(self) -> ComposeResult:
        self.terminal_card: Any = None  # built when the agent first has a terminal (_poll_terminals)
        self.transcript = TranscriptView(self.fold, self.state, id="transcript")
        yield self.transcript
        # the search bar, plan strip, steer row, queue, approval panel, note, command output and completion
        # list are built and mounted on first use, between the transcript and the composer in the order of
        # _LAZY_ORDER (_ensure_mounted): most sessions never show them, and neither they nor their modules
        # are on the way to the first paint (the properties below)
        self.question = QuestionPanel(id="question")  # mounted on first use too (chat_modes)
        self.composer = Composer(placeholder=PLACEHOLDER, id="composer")
        self.composer.border_subtitle = HINT_IDLE
        self.composer.on_top_edge = self.action_focus_queue
        self.composer.on_completion_key = self._completion_key
        self.composer.prompt_history = ChatHistory(self)  # Up/Down and Ctrl+L: dsh_tui/ui/history.py
        yield self.composer
        self.status = StatusBar(clock=self.clock, id="status")
        self.status.model_hint = self._model_hint
        yield self.status

    def _show_title(self) -> None:
        """The session's title in a one-line header, mounted when the session first has one."""
        title = self.fold.title
        bar = self.title_bar
        if title is None and bar is None:
            return
        text = title or ""
        if bar is None:
            self.title_bar = bar = Static(text, id="chat-title", markup=False)
            self.mount(bar, before=self.transcript)
        elif self.title_text != text:
            bar.update(text)
        self.title_text = text

    def on_mount(self) -> None:
        self.composer.cursor_blink = bool(self.app.settings.get("ui.cursor_blink", True)) \
            if hasattr(self.app, "settings") else True
        self.status.usage = self.fold.usage
        self.status.redraw()
        self.composer.focus()
        if self.initial_text:
            self.composer.value = self.initial_text
        if self._model_hint and self.bridge.loop is None:
            self.say(self._model_hint)  # no harness is coming: say what to set, inline
            self._update_composer_hint()
        self.set_interval(0.25, self._update_bottom_hint)
        self.set_interval(0.25, self._poll_terminals)
        self.set_interval(WATCHDOG_S, self._watchdog)
        self._ready = True
        self.events_ready()  # whatever the bridge delivered before the screen was composed

    _LAZY_ORDER = ("search_bar", "plan_strip", "steer_row", "queue_list", "approval", "question", "note", "terminal_card",
                   "command_output", "completion", "composer")

    @cached_property
    def search_bar(self) -> SearchBar:
        from dsh_tui.ui.widgets.searchbar import SearchBar

        return SearchBar(self.transcript, id="search")

    @cached_property
    def plan_strip(self) -> PlanStrip:
        from dsh_tui.ui.widgets.plan import PlanStrip

        return PlanStrip(id="plan")

    @cached_property
    def queue_list(self) -> QueueList:
        from dsh_tui.ui.widgets.queue import QueueList

        return QueueList(id="queue")

    @cached_property
    def steer_row(self) -> Static:  # steers the running turn has not taken yet
        return Static("", id="steering", markup=False)

    @cached_property
    def approval(self) -> ApprovalPanel:
        from dsh_tui.ui.widgets.approval import ApprovalPanel

        return ApprovalPanel(id="approval")

    @cached_property
    def note(self) -> Static:
        return Static("", id="composer-note", markup=False)  # error texts may hold [brackets]

    @cached_property
    def command_output(self) -> CommandOutput:
        return CommandOutput(id="command-output")  # plain text too

    @cached_property
    def completion(self) -> CompletionList:
        from dsh_tui.ui.widgets.completion import CompletionList

        return CompletionList(id="completion")

    def _built(self, name: str) -> Any:
        """The lazily built widget ``name`` if it was built, else None (without building it)."""
        return self.__dict__.get(name)

    def _approval_shown(self) -> bool:
        approval = self._built("approval")
        return approval is not None and approval.is_attached and approval.display

    def _hide_completion(self) -> None:
        if self._built("completion") is not None:
            self.completion.hide()

    def _ensure_mounted(self, widget: Any) -> None:
        """Mount a lazily built widget (bottom hint, plan strip, queue, approval panel) in its place:
        before the first of the widgets that follow it in ``_LAZY_ORDER`` that is mounted."""
        if widget.is_attached:
            return
        order = self._LAZY_ORDER
        own = "composer" if widget is self.composer else next(n for n in order if self._built(n) is widget)
        for name in order[order.index(own) + 1:]:
            after = self.composer if name == "composer" else self._built(name)
            if after is not None and after.is_attached:
                self.mount(widget, before=after)
                return
        self.mount(widget)

    def _show_plan(self, plan: Any) -> None:
        if plan.todos or self.plan_strip.is_attached:
            self._ensure_mounted(self.plan_strip)
            self.plan_strip.show_plan(plan)

    def set_model_hint(self, hint: str) -> None:
        """How to configure a model (shown in the status bar and above the composer while no model is
        configured)."""
        self._model_hint = hint
        self.status.model_hint = hint
        self.status.redraw()
        if hint and self.bridge.harness is None:
            self.say(hint)
        self._update_composer_hint()

    def say(self, text: str) -> None:
        """One line (wrapped) above the composer, in the warning colour: why a prompt was not sent."""
        if text:
            self._ensure_mounted(self.note)
        if self.note.is_attached:
            self.note.update(text)
            self.note.display = bool(text)
        self.composer.set_class(bool(text), "-notice")

    def _update_composer_hint(self) -> None:
        """The composer says what Enter does now: send, queue (and how to steer), or resume."""
        composer = self.composer
        if self._model_hint and self.bridge.harness is None and self.bridge.loop is None:
            composer.border_subtitle = HINT_NO_MODEL
            composer.placeholder = PLACEHOLDER
        elif self.read_only:
            harness = self.bridge.harness
            reason = harness.read_only_reason if harness is not None else None  # e.g. a parent's subagent
            composer.border_subtitle = HINT_READ_ONLY if reason is None else "Esc back"
            composer.placeholder = reason or READ_ONLY_PLACEHOLDER
        elif self._built("queue_list") is not None and self.queue_list.has_focus:
            composer.border_subtitle = HINT_QUEUE
            composer.placeholder = PLACEHOLDER
        elif self.running:
            composer.border_subtitle = HINT_RUNNING_SWAPPED if self.enter_steers else HINT_RUNNING
            composer.placeholder = PLACEHOLDER
        else:
            composer.border_subtitle = HINT_FAILED if self.last_failed else HINT_IDLE
            composer.placeholder = PLACEHOLDER

    # -- harness -> UI ---------------------------------------------------------------------------
    async def _on_update(self, message: Any) -> None:
        # the composer's repaint after a keystroke: paint it now, not at the next frame tick (Screen's own
        # handler, which marks the composer dirty, runs after this one)
        if message.widget is self.composer and self.composer.echo_pending:
            self.call_next(paint_now, self)

    def events_ready(self) -> None:
        """Called (on the UI thread) when the bridge has something; coalesces to <= 20 Hz."""
        if not self._ready:  # the bridge can post before this screen is composed: on_mount drains it
            return
        now = time.monotonic()
        # adaptive coalescing: never spend more than about a third of the loop on transcript updates
        interval = max(FLUSH_INTERVAL, 1.5 * self._flush_cost)
        wait = interval - (now - self._last_flush)
        if wait <= 0:
            self.flush()
        elif self._flush_timer is None:
            self._flush_timer = self.set_timer(wait, self.flush)

    def flush(self) -> None:
        self._flush_timer = None
        if self.composer.echo_pending and not getattr(self, "_echo_deferred", False):
            # a keystroke waits for its paint: let that frame be the composer's cheap repaint and apply
            # the stream right after it (once: a fast typist does not hold the stream back)
            self._echo_deferred = True
            self._flush_timer = "after-echo"  # a flush is due: events_ready schedules no other
            self.call_after_refresh(self.flush)
            return
        self._echo_deferred = False
        self._last_flush = time.monotonic()
        self.call_after_refresh(self._measure_flush, self._last_flush)
        events, messages = self.bridge.drain()
        if not events and not messages:
            return
        self.flushes += 1
        if self.running and self._last_flush - self._last_freeze > FREEZE_EVERY:
            # a long stream allocates fast; full GC passes over it would stall the loop
            gc.freeze()
            self._last_freeze = self._last_flush
        changes: list[tuple[str, Any]] = []
        for event in events:
            if event.get("type") == ATTACH:
                self._attach_session(event)
                changes = []
                continue
            changes.extend(self.fold.apply(event))
            if event.get("type") in chat_modes.MODE_EVENTS and self.mode_fold is not None:
                chat_modes.fold_events(self, [event])
            self._phase_from_event(event)
            if event.get("type") == "session/title":
                self._show_title()
        with self.app.batch_update():
            if changes:
                plan = [c for c in changes if c[0] == PLAN]
                if plan:
                    self._show_plan(plan[-1][1])
                self.transcript.apply_changes([c for c in changes if c[0] != PLAN])
            for message in messages:
                self._harness_message(message)
            self.status.redraw()

    def _measure_flush(self, started: float) -> None:
        # time from the drain to the screen settled (fold + layout + paint), smoothed
        cost = min(0.5, time.monotonic() - started)
        self._flush_cost = 0.7 * self._flush_cost + 0.3 * cost

    def _attach_session(self, event: dict[str, Any]) -> None:
        """A (new) session: fold its last turns, mount only the tail, fold the head in the background."""
        header = event.get("header")
        events = event.get("events") or []
        partial, self.expect_head, self.tail_of = self.expect_head, False, None
        start = 0 if partial else tail_start(events, TAIL_EVENTS)
        fold = TranscriptFold(header, self.prices)
        for i in range(start, len(events)):
            fold.apply(events[i])
        if start:
            # fold the older part only after the tail is on screen: the worker holds the GIL
            self.loading_head = True
            self.call_after_refresh(lambda: self.set_timer(0.05, lambda: self._fold_head(header, events, start, fold)))
        self.fold = fold
        self.status.usage = fold.usage
        self.transcript.fold = fold
        for view in list(self.transcript.views.values()):
            view.remove()
        self.transcript.views.clear()
        self.transcript.load_tail(FIRST_PAINT_ITEMS)
        self.transcript.anchor()
        if len(fold.items) > FIRST_PAINT_ITEMS:
            self.call_after_refresh(self._fill_window)
        self._show_plan(fold.plan)
        self._show_title()
        chat_modes.fold_events(self, events, reset=True)
        self.attached = True
        if partial:
            self.loading_head = True
            self.tail_of = fold
        if self.on_attached is not None:
            callback, self.on_attached = self.on_attached, None
            callback()
        self.read_only = self.bridge.harness is not None and self.bridge.harness.read_only
        if not self.read_only and self.bridge.harness is not None and isinstance(header, dict):
            self._restore_pending(str(header.get("id") or ""))
        ends = [e for e in events[-2000:] if e.get("type") == "turn/end"][-1:]
        self._turn_end_seq = ends[0].get("seq") if ends else None
        self.last_failed = bool(ends) and ((ends[0].get("data") or {}).get("reason") or {}).get("kind") == "error"
        self._update_composer_hint()
        if self.send_on_attach and self.bridge.harness is not None:
            self.send_on_attach = False
            if self.read_only:  # typed while a stored session was loading: nothing is sent on its own
                self.say("This is a read-only view: Enter resumes the session here and sends your text.")
            else:
                self.say("")
                submitted, self._attach_text = self._attach_text, None
                self.call_after_refresh(self._submit_composer, False, submitted)
        # the log and its views live as long as the screen: keep them out of the cyclic GC, whose
        # full collections otherwise stall the loop for ~100 ms each while a stream allocates
        gc.freeze()
        if self._pending_seq is not None:
            seq, self._pending_seq = self._pending_seq, None
            self.call_after_refresh(self.scroll_to_seq, seq)

    def complete_history(self, header: Any, events: list[dict[str, Any]], first_seq: int,
                         tail_events: list[dict[str, Any]]) -> None:
        """The full load of a log shown tail first: when it holds the same tail, fold the older part in
        (in a thread) and apply what the full load adds after it (crash closers); otherwise (the log
        changed or was repaired differently) show the full load instead."""
        fold, self.tail_of = self.tail_of, None
        if fold is None or self.fold is not fold:
            return
        n = len(tail_events)
        if events[first_seq:first_seq + n] != tail_events:
            self.loading_head = False
            self._attach_session({"header": header, "events": events})
            return
        changes: list[tuple[str, Any]] = []
        for event in events[first_seq + n:]:
            changes.extend(fold.apply(event))
        if changes:
            with self.app.batch_update():
                plan = [c for c in changes if c[0] == PLAN]
                if plan:
                    self._show_plan(plan[-1][1])
                self.transcript.apply_changes([c for c in changes if c[0] != PLAN])
                self.status.redraw()
        if first_seq:
            self._fold_head(header, events, first_seq, fold)
        else:
            self.loading_head = False

    def _fill_window(self) -> None:
        """After the first paint: mount the rest of the item window above the visible tail."""
        transcript = self.transcript
        if not transcript.detached:
            transcript.load_earlier(MAX_MOUNTED - len(transcript.views), keep_following=transcript.following)

    @work(thread=True, group="chat-head", description="fold the older part of a long session")
    def _fold_head(self, header: Any, events: list[dict[str, Any]], start: int, tail: TranscriptFold) -> None:
        head = TranscriptFold(header, self.prices)
        for i in range(start):
            head.apply(events[i])
        self.app.call_from_thread(self._prepend_head, head, tail)

    def _prepend_head(self, head: TranscriptFold, tail: TranscriptFold) -> None:
        self.loading_head = False
        if self.fold is not tail:
            return  # another session was attached meanwhile
        tail.prepend(head)
        self._show_title()
        gc.freeze()
        self.transcript._update_earlier()
        self._show_plan(tail.plan)
        self.status.redraw()
        if self._pending_seq is not None:
            seq, self._pending_seq = self._pending_seq, None
            self.scroll_to_seq(seq)

    def _phase_from_event(self, event: dict[str, Any]) -> None:
        etype = event.get("type")
        status = self.status
        if etype == "turn/start":
            self._set_running(True)
            status.set_phase("waiting")
        elif etype == "assistant/chunk":
            ctype = ((event.get("data") or {}).get("chunk") or {}).get("type")
            if ctype == "reasoning-delta" and status.info.phase != "thinking":
                status.set_phase("thinking")
            elif ctype in ("text-delta", "tool-call-delta") and status.info.phase != "responding":
                status.set_phase("responding")
        elif etype == "tool/call":
            status.info.tools_running += 1
            status.set_phase("tools")
        elif etype == "tool/result":
            status.info.tools_running = max(0, status.info.tools_running - 1)
        elif etype == "step/start":
            status.info.tools_running = 0
            status.set_phase("waiting")
        elif etype == "llm/retry":
            status.set_phase("retrying")
        elif etype == "compaction/start":
            status.set_phase("compacting")
        elif etype == "approval/asked":
            status.set_phase("approval")
        elif etype == "approval/decided":
            self._leave_approval_phase()
        elif etype == "user/message":
            data = event.get("data") or {}
            if self._steers and (data.get("source") or {}).get("kind") == "user":
                text = "".join(p.get("text", "") for p in data.get("content") or [] if isinstance(p, dict))
                if text in self._steers:
                    self._steers.remove(text)
                    self._show_steers()
        elif etype == "turn/end":
            self._turn_end_seq = event.get("seq")
            self.last_failed = ((event.get("data") or {}).get("reason") or {}).get("kind") == "error"
            self._return_undelivered_steers()
            if self.running:  # a live turn ended: say so when the terminal is not focused
                self._desktop_notify("the turn finished")
            self._set_running(False)
            gc.freeze()  # the finished turn's events and views are long-lived now

    # -- watchdog (issue #26.11) -------------------------------------------------------------------
    def _logged_turn_end(self) -> dict[str, Any] | None:
        """The session log's last turn/end when no turn started after it (the harness is idle), else None."""
        harness = self.bridge.harness
        events = harness.events(-5000) if harness is not None else []
        if not events:
            return None
        for i in range(len(events) - 1, -1, -1):
            etype = events[i].get("type")
            if etype == "turn/end":
                return events[i]
            if etype == "turn/start":
                return None
        return None

    def _missed_turn_end(self) -> bool:
        """The log ended a turn this screen still shows as running."""
        if not self.running:
            return False
        end = self._logged_turn_end()
        return end is not None and end.get("seq") != self._turn_end_seq

    def _watchdog(self) -> None:
        """The UI always drains: events waiting with no flush for a while are flushed now (a lost timer
        left the chat on "responding" with the answer cut), and a turn the log has ended but this screen
        still shows as running is ended here after two checks in a row (the queue then goes on)."""
        if self.bridge.has_pending() and time.monotonic() - self._last_flush > 2 * WATCHDOG_S:
            self._flush_timer = None
            self._echo_deferred = True  # no waiting for an echo paint
            self.flush()
        if not self._missed_turn_end() or self.bridge.has_pending():
            self._stuck_ticks = 0
            return
        self._stuck_ticks += 1
        if self._stuck_ticks >= 2:
            self._recover_turn()

    def _recover_turn(self) -> None:
        end = self._logged_turn_end()
        self._stuck_ticks = 0
        if end is None:
            return
        self._turn_end_seq = end.get("seq")
        self.status.info.tools_running = 0
        self.status.set_phase("")
        self._return_undelivered_steers()
        self._set_running(False)

    def _harness_message(self, message: HarnessMessage) -> None:
        """One typed message from the harness (``dsh_tui.harness_messages``), dispatched on its type."""
        match message:
            case StatusChanged(status=status):
                self._set_running(status == "running")
            case PhaseChanged(phase=phase):
                self.status.set_phase(phase)
            case ApprovalAsked(request=request):
                self._desktop_notify(f"{request.tool} is waiting for your approval")
                self.pending_approvals.append(request)
                if self._built("approval") is None or self.approval.request is None:
                    self._show_next_approval()
            case ApprovalClosed(request=request):
                if request in self.pending_approvals:
                    self.pending_approvals.remove(request)
                if self._built("approval") is not None and self.approval.request is request:
                    self.approval.request = None
                    self._show_next_approval()
            case QuestionAsked() | QuestionClosed():
                chat_modes.on_message(self, message)
            case TurnFailed(text=text):  # the footer and the status bar show it: no toast repeating them
                self.status.info.notice = text
                self.status.redraw()
            case HarnessFailed(text=text) | PluginFailed(text=text):
                self.status.info.notice = text
                if isinstance(message, HarnessFailed) and self.bridge.harness is None:
                    self.say(text)  # the session could not start: nothing typed is sent
                self.app.notify(text, title="Error", severity="error", timeout=8, markup=False)
            case Notice(text=text):
                self.app.notify(text, timeout=5, markup=False)
            case SubagentSnapshot(snapshot=snap):
                self._subagent_changed(snap)
            case PresetChanged(preset=preset):
                self.status.preset = preset
                self.status.redraw()
            case SandboxChanged(label=label):
                self.status.sandbox = label
                self.status.redraw()
            case ModelChanged(provider=provider, model=model, effort=effort):
                self.status.route = (provider, model, effort)
                self.status.redraw()

    def _desktop_notify(self, body: str) -> None:
        """A desktop notification (or the bell) when the terminal is not focused (``dsh_tui.ui.notify``)."""
        notifier = getattr(self, "_notifier", None)
        if notifier is None:
            from dsh_tui.ui.notify import Notifier
            from dsh_tui.ui.textual_compat import terminal_write

            app = self.app
            settings = getattr(app, "settings", None)
            mode = settings.get("ui.notify", "auto") if settings is not None else "auto"
            notifier = self._notifier = Notifier(mode, lambda: app.app_focus, lambda seq: terminal_write(app, seq))
        notifier(body)

    def _restore_pending(self, session_id: str) -> None:
        """Prompts queued when the app last quit on this session come back in the composer (not sent on
        their own: the user decides), with a notice (``dsh_tui/ui/pending.py``)."""
        if not session_id:
            return
        from dsh_tui.ui.pending import take

        queued, draft = take(session_id)
        if not queued and not draft:
            return
        current = self.composer.text.strip()
        self.composer.value = "\n\n".join([*queued, *(t for t in (draft.strip(), current) if t)])
        n = len(queued)
        self.say(f"{n} prompt{'s' if n != 1 else ''} queued when you quit {'are' if n != 1 else 'is'} back in the "
                 "composer: Enter sends.")

    def _return_undelivered_steers(self) -> None:
        """A cancelled turn discards the input steered into it that no step took yet (dsh's inbox is
        cleared): give that text back in the composer instead of losing it."""
        if not self._steers:
            return
        lost, self._steers = self._steers, []
        self._show_steers()
        current = self.composer.text.strip()
        self.composer.value = "\n\n".join([*lost, *([current] if current else [])])
        self.say("The turn ended before your steer reached the model: it is back in the composer.")

    def _show_steers(self) -> None:
        """A pinned row per steer the running turn has not taken yet (shown at once: the user message
        comes only when the next step starts), and their count in the status bar."""
        steers = self._steers
        if steers or self.steer_row.is_attached:
            self._ensure_mounted(self.steer_row)
            shown = [f"⤷ steering: {' '.join(t.split())}" for t in steers[-2:]]
            if len(steers) > 2:
                shown.insert(0, f"⤷ +{len(steers) - 2} more steering")
            self.steer_row.update("\n".join(shown))
            self.steer_row.display = bool(steers)
        self.status.info.steering = len(steers)
        self.status.redraw()

    # -- subagents -------------------------------------------------------------------------------
    def _subagent_changed(self, snap: dict[str, Any]) -> None:
        """A subagent's live snapshot: its card (by the spawning call id) and the running count."""
        self.subagents[snap["id"]] = snap
        if snap.get("callId"):
            self.state.subagents[snap["callId"]] = snap
        self._refresh_subagent_cards()
        if any(s.get("status") == "running" for s in self.subagents.values()) and self._subagent_timer is None:
            self._subagent_timer = self.set_interval(1.0, self._tick_subagents)

    def _refresh_subagent_cards(self) -> None:
        from dsh_tui.ui.widgets.subagent import SubagentCard

        running = sum(1 for s in self.subagents.values() if s.get("status") == "running")
        if running != self.status.info.subagents:
            self.status.info.subagents = running
            self.status.redraw()
        for view in self.transcript.views.values():
            if isinstance(view, SubagentCard):
                view.refresh_item()

    def _tick_subagents(self) -> None:
        """Elapsed time on running cards (the runtime posts only on changes)."""
        now_running = False
        for snap in self.subagents.values():
            if snap.get("status") == "running":
                snap["elapsed"] = float(snap.get("elapsed") or 0) + 1.0
                now_running = True
        self._refresh_subagent_cards()
        if not now_running and self._subagent_timer is not None:
            self._subagent_timer.stop()
            self._subagent_timer = None

    def on_subagent_card_open(self, message: Any) -> None:
        self.open_subagent(message.child_id)

    def open_subagent(self, child_id: str) -> None:
        """Push the child's live transcript (read-only while this session owns it; Esc returns)."""
        from dsh_tui.ui.screens.subagent import open_child_screen

        open_child_screen(self, child_id, self.subagents.get(child_id) or {})

    def _set_running(self, running: bool) -> None:
        if running == self.running:
            return
        self.running = running
        self.status.set_status("running" if running else "idle")
        self._update_composer_hint()
        if not running and self.queue:
            self._send(self.queue.pop(0), "followup")
            self._show_queue()

    # -- approvals -------------------------------------------------------------------------------
    def _show_next_approval(self) -> None:
        if not self.pending_approvals:
            self.approval.display = False
            self.composer.display = True
            self.composer.focus()
            return
        request = self.pending_approvals.pop(0)
        # the panel never takes the focus from a composer being typed in: it shows, and Tab moves to it
        typing = self.composer.display and self.composer.has_focus and bool(self.composer.text.strip())
        self.composer.display = typing
        self.status.set_phase("approval")
        self._ensure_mounted(self.approval)
        self.approval.show_request(request, take_focus=not typing)
        self.transcript.back_to_bottom()  # the call it asks about is the latest item

    def on_approval_panel_yielded(self, message: ApprovalPanel.Yielded) -> None:
        """A key within the panel's grace period: it was typed for the composer. The composer comes back
        with the focus and the key; the panel waits for Tab."""
        self.yield_to_composer(message.key, message.character)

    def yield_to_composer(self, key: str, character: str | None) -> None:
        """A key a panel (approval, question) got within its grace period: the composer comes back with the
        focus and the key."""
        composer = self.composer
        composer.display = True
        self.set_focus(composer)
        if character:
            result = composer.replace(character, *composer.selection, maintain_selection_offset=False)
            composer.move_cursor(result.end_location)
        elif key in ("enter", "backspace", "ctrl+j"):
            composer.post_message(events.Key(key, None))

    @on(QuestionPanel.Yielded)
    def _question_yielded(self, message: QuestionPanel.Yielded) -> None:
        self.yield_to_composer(message.key, message.character)

    @on(QuestionPanel.Answered)
    def _question_answered(self, message: QuestionPanel.Answered) -> None:
        chat_modes.answered(self, message)

    def action_toggle_plan(self) -> None:
        chat_modes.toggle_plan(self)

    def on_resize(self, event: events.Resize) -> None:
        if self._built("approval") is not None and self.approval.is_attached:
            self.approval.fit(event.size.width, event.size.height)

    def _approval_waiting(self) -> bool:
        approval = self._built("approval")
        return approval is not None and approval.is_attached and approval.display and approval.request is not None

    def on_paste(self, event: events.Paste) -> None:
        """A paste while the approval panel holds the focus (the composer is hidden then) goes into the
        composer's draft, shown again once the approval is decided: a paste is never dropped."""
        if self.composer.display or not event.text or getattr(event, "via_composer", False):
            return  # the composer took it itself (the reason line, an Input, stops the paste it takes)
        event.stop()
        if chat_modes.waiting(self) and self.question.has_focus_within:
            self.question.paste(event.text)  # a question's typed answer
            return
        self.composer.insert(event.text)
        self.notify("The pasted text is in the composer: it shows again after the approval.",
                    title="Pasted", timeout=4, markup=False)

    def on_approval_panel_decided(self, message: ApprovalPanel.Decided) -> None:
        if not message.request.future.done():
            message.request.future.set_result(message.outcome)
        self._show_next_approval()
        self._leave_approval_phase()

    def _leave_approval_phase(self) -> None:
        """An approval was answered: the status goes back to the running tools unless another one waits."""
        status = self.status
        if status.info.phase != "approval" or not self.running or (
                self._built("approval") is not None and self.approval.request is not None):
            return
        status.set_phase("tools" if status.info.tools_running else "waiting")

    # -- composer --------------------------------------------------------------------------------
    def _send(self, text: str, mode: str) -> bool:
        """Hand ``text`` to the harness; False (and the reason above the composer) when it cannot be."""
        harness = self.bridge.harness
        if harness is None:
            # starting: the harness thread runs, or the app still resolves the model route (a thread after
            # the first paint) and will start it
            starting = self.bridge.loop is not None or getattr(self.app, "resolve", None) is not None
            if starting and self.bridge.start_error is None:
                self.send_on_attach = True  # the session is starting: sent as soon as it is attached
                self.say("Starting the session… your message is sent when it is ready.")
            else:
                self.say(self._model_hint or self.status.info.notice or "No session is open.")
            return False
        if self.read_only:
            if self.resume is None:
                self.say(harness.read_only_reason
                         or "This is a read-only view: resume the session from the browser (r) to continue.")
                return False
            problem = self.resume(text)
            if problem:
                self.say(problem)
            return False  # the text goes to the resumed chat; this view keeps it too
        attach = True
        problem = self._image_problem(harness, text)
        if problem:
            if self._image_refused != text:
                self._image_refused = text
                self.say(f"{problem} Enter again sends the text without it.")
                return False  # told before sending: the text stays in the composer
            attach = False  # the same text again: sent as text only
        self._image_refused = None
        self.say("")
        if self.command_output.is_attached:
            self.command_output.display = False
        self.status.info.notice = ""
        if attach:
            self.bridge.send(text, mode)
        else:
            self.bridge.send(text, mode, images=False)
        if mode == "steer" and self.running:
            self._steers.append(text)
            self._show_steers()
        self.transcript.back_to_bottom()  # follow what was just sent
        if mode == "followup" and not self.running:
            self._set_running(True)
            self.status.set_phase("waiting")
        return True

    @staticmethod
    def _image_problem(harness: Harness, text: str) -> str:
        """Why the image files ``text`` names cannot be sent to the current model, or ""."""
        if not harness.live() or ("." not in text) or not harness.images_enabled():
            return ""
        from dsh_tui.runtime.images.prompt import find_images

        images = find_images(text, harness.cwd() or ".")
        if not images:
            return ""
        from dsh_tui.store.attachments import MAX_IMAGE_BYTES, sniff

        for path in images:  # what a stat and 12 bytes tell; decoding happens off the UI thread
            try:
                big = path.stat().st_size > MAX_IMAGE_BYTES
                with open(path, "rb") as fh:
                    kind = sniff(fh.read(12))
            except OSError:
                big, kind = False, None
            if big:
                return f"Not sent: {path.name} is larger than 20 MiB, the limit for one image."
            if kind is None:
                return f"Not sent: {path.name} is not a PNG, JPEG, WebP or GIF image."
        model, ok = harness.image_route()
        if ok:
            return ""
        names = ", ".join(p.name for p in images)
        return (f'Not sent: model "{model}" does not declare image input ({names}). Switch to an image-capable '
                f"model (/model), or")

    def _submit_composer(self, alternate: bool = False, submitted: str | None = None) -> None:
        """Enter (``alternate``: the steer key): send, queue or steer the composer's text.

        ``submitted``: the text when Enter was pressed; keys typed after it (in the same burst, before this
        runs) stay in the composer for the next message. The text leaves the composer only when it was
        sent or queued."""
        whole = self.composer.text
        if submitted is None or not whole.startswith(submitted):
            submitted = whole
        rest = whole[len(submitted):]
        text = self.composer.expand(submitted).strip()  # collapsed pastes go whole
        if not text and not self.read_only:
            return
        self._hide_completion()
        if submitted.startswith("/") and self._run_command(submitted):
            return
        if submitted.startswith("!") and self._run_shell(text):
            return
        steer = self.enter_steers != alternate
        if self.running and not steer:
            self.composer.value = rest
            self.queue.append(text)
            self._show_queue()
            return
        if self._send(text, "steer" if self.running else "followup"):
            self.composer.value = rest
        elif self.send_on_attach:
            self._attach_text = submitted  # sent once the session is ready; what is typed meanwhile stays

    @on(CommandFinished)
    def _command_finished(self, message: CommandFinished) -> None:
        self._command_done(message.text, message.result)

    @on(ShellFinished)
    def _shell_finished(self, message: ShellFinished) -> None:
        self._shell_done(message.command, message.result)

    # -- completion ------------------------------------------------------------------------------
    @on(TextArea.Changed, "#composer")
    @on(TextArea.SelectionChanged, "#composer")
    def _composer_moved(self, _event: Any) -> None:
        # a keystroke posts both Changed and SelectionChanged: one refresh after both
        if not self._completion_pending:
            self._completion_pending = True
            self.call_later(self._refresh_completion_once)

    @on(Composer.Submitted, "#composer")
    def _submitted(self, event: Composer.Submitted) -> None:
        event.stop()
        self._submit_composer(submitted=event.value)

    def action_steer(self) -> None:
        if self.composer.has_focus:
            self._submit_composer(alternate=True)

    def _show_queue(self) -> None:
        self._ensure_mounted(self.queue_list)
        self.queue_list.show(self.queue)
        self.status.info.queued = len(self.queue)
        self.status.redraw()
        if not self.queue:
            self._restore_focus()

    def on_queue_list_action(self, message: QueueList.Action) -> None:
        if message.action == "leave":
            self.set_focus(self.composer)
            return
        if not 0 <= message.index < len(self.queue):
            return
        text = self.queue.pop(message.index)
        if message.action == "edit":
            draft = self.composer.text.strip()  # a draft typed meanwhile stays, after the queued text
            self.composer.value = "\n\n".join([text, *([draft] if draft else [])])
            self.composer.move_cursor(self.composer.document.end)
            self.composer.focus()
        elif message.action == "steer":
            self._send(text, "steer" if self.running else "followup")
            self.set_focus(self.composer)  # sent: what comes next is typed
        self._show_queue()

    # -- the agent's terminals (the terminals plugin; dsh_tui/ui/widgets/terminal.py) --------------------------
    def _poll_terminals(self) -> None:
        """Show the terminal card while the agent has a live terminal (its screen redrawn 4 times a second)."""
        harness = self.bridge.harness
        service = harness.terminals() if harness is not None else None
        card = self.terminal_card
        if card is None:
            if service is None or not service.sessions:
                return
            from dsh_tui.ui.widgets.terminal import TerminalCard

            self.terminal_card = card = TerminalCard(service, id="terminal-card")
        card.service = service
        shown = card.poll()
        if shown:
            self._ensure_mounted(card)
        if card.is_attached and card.display != shown:
            card.display = shown
            if not shown:
                self._restore_focus()

    def action_focus_terminal(self) -> None:
        """F6: the terminal card (Enter attaches to the terminal)."""
        self._poll_terminals()
        card = self.terminal_card
        if card is not None and card.is_attached and card.display:
            card.focus()

    def action_focus_queue(self) -> bool:
        """Focus the queue with its first (next to go) message highlighted; False when it is empty."""
        if not self.queue:
            return False
        self.queue_list.highlighted = 0
        self.queue_list.focus()
        return True

    # -- focus -----------------------------------------------------------------------------------
    def _shown(self, widget: Widget | None) -> bool:
        """``widget`` is mounted on this screen and neither it nor a container of it is hidden."""
        node: Any = widget
        while node is not None and node is not self:
            if not node.is_attached or not node.display:
                return False
            node = node.parent
        return node is self

    def _restore_focus(self) -> None:
        """Give the focus back to the composer when what had it is gone (queue emptied, panel closed)."""
        if not self._shown(self.focused) and self.composer.display:
            self.set_focus(self.composer)

    def on_key(self, event: events.Key) -> None:
        """A key that reached the screen from a hidden widget (or from none), or a character typed where
        nothing takes it (the transcript, the queue: all but its own keys), goes to the composer. (The
        bindings run after this, at the app: a key the focused widget binds is left to it.)

        The terminal delivers a typed burst at once, all of it to the widget focused then: the whole
        burst is inserted from here, in order, and the focus moves to the composer after it."""
        composer = self.composer
        if event.key == "tab" and self.focused is composer and self._approval_waiting():
            event.stop()
            event.prevent_default()
            self.approval.focus_buttons()  # deliberate: the panel's keys act at once
            return
        if event.key == "tab" and self.focused is composer and chat_modes.waiting(self):
            event.stop()
            event.prevent_default()
            self.question.focus_panel()
            return
        if getattr(event, "via_composer", False) or not composer.display:
            return
        focused = self.focused
        if focused is not None and self._approval_waiting() and focused in self.approval.query("*") \
                and key_is_bound(self.approval, event.key):
            return  # the panel's own key (a, s, r, e), the focus moved there deliberately
        printable = event.is_printable and bool(event.character)
        if not self._redirecting:
            if focused is composer or (self._shown(focused) and not (
                    printable and not key_is_bound(focused, event.key))):
                return
            self._redirecting = True
            self.call_after_refresh(self._end_redirect)
        if not printable:
            return
        event.stop()
        event.prevent_default()
        result = composer.replace(event.character or "", *composer.selection, maintain_selection_offset=False)
        composer.move_cursor(result.end_location)

    def _end_redirect(self) -> None:
        self._redirecting = False
        if self.composer.display:
            self.set_focus(self.composer)

    def on_descendant_blur(self, _event: events.DescendantBlur) -> None:
        self.call_after_refresh(self._restore_focus)
        self._update_composer_hint()

    def on_descendant_focus(self, _event: events.DescendantFocus) -> None:
        self._update_composer_hint()  # the queue's keys while it has the focus (Esc goes back, not cancel)

    def action_page_transcript(self, direction: int) -> None:
        """PageUp/PageDown on the transcript, wherever the focus is; the last page down follows again.

        Pages count from where the previous key put the view (``scroll_target_y``): a scroll lands on the
        next refresh, and keys pressed quickly would otherwise all count from the same place."""
        transcript = self.transcript
        page = transcript.scrollable_content_region.height
        at = transcript.scroll_target_y
        if direction < 0:
            transcript.scroll_to(y=max(0, at - page), animate=False, immediate=True)
            return
        # the last page follows the stream again; two rows of slack so that a layout change since the page
        # up (a row mounted or removed above the transcript) does not leave the view a row short of the end
        if transcript.max_scroll_y - at <= page + 2:
            transcript.back_to_bottom()
        else:
            transcript.scroll_to(y=at + page, animate=False, immediate=True)

    # -- actions ---------------------------------------------------------------------------------
    def action_cancel(self) -> None:
        if self._built("command_output") is not None and self.command_output.is_attached \
                and self.command_output.display and not self.running:
            self.command_output.display = False
            return
        if self._built("approval") is not None and self.approval.request is not None and not self.composer.has_focus:
            self.approval.action_reject()
            return
        if self.running:
            if self._missed_turn_end():  # the turn is over in the log: Esc resets what the screen shows
                self._recover_turn()
            else:
                self.bridge.cancel()
        else:
            from dsh_tui.ui.screens.rewind import escape_when_idle

            escape_when_idle(self)  # Esc Esc: rewind

    def action_interrupt(self) -> None:
        """Ctrl+C: cancel the running turn (as Esc); while idle clear the composer (Ctrl+Z brings the text
        back); an empty idle composer says how to quit. Text selected in the composer is copied instead."""
        composer = self.composer
        if composer.has_focus and composer.selected_text:
            composer.action_copy()
            return
        card = self.terminal_card
        if card is not None and card.has_focus and card.user_attached:  # the terminal's own Ctrl+C
            card.write(b"\x03")
            return
        if self.running:
            if self._missed_turn_end():
                self._recover_turn()
            else:
                self.bridge.cancel()
            return
        if composer.display and composer.text:
            composer.clear()  # an edit: Ctrl+Z undoes it
            composer.focus()
            self.notify("Composer cleared · Ctrl+Z brings it back", timeout=4, markup=False)
            return
        self.notify("Ctrl+Q quits (and prints how to resume)", timeout=4, markup=False)

    def action_rewind(self) -> None:
        from dsh_tui.ui.screens.rewind import open_rewind

        open_rewind(self)

    def action_retry(self) -> None:
        from dsh_tui.ui.screens.rewind import retry_failed

        retry_failed(self)

    def action_cycle_permission(self) -> None:
        from dsh_tui.ui.screens.rewind import cycle_permission

        cycle_permission(self)

    def action_cycle_cards(self) -> None:
        modes = ViewState.CARD_MODES
        self.state.card_mode = modes[(modes.index(self.state.card_mode) + 1) % len(modes)]
        self.state.toggled.clear()  # cards expanded or collapsed one by one (Enter) follow the new mode
        self.transcript.refresh_all()
        mode = self.state.card_mode
        self.status.set_mode("cards", "" if mode == modes[0] else f"cards {mode}")

    def action_toggle_reasoning(self) -> None:
        self.state.reasoning = not self.state.reasoning
        self.transcript.refresh_all()
        self.status.set_mode("reasoning", "thinking shown" if self.state.reasoning else "")

    def scroll_to_seq(self, seq: int) -> bool:
        """Show the item built from event ``seq`` (or the last item before it), e.g. a search hit.

        Called before the session is attached, the jump happens right after it attaches."""
        if not self.attached or (self.loading_head and (not self.fold.items or seq < self.fold.items[0].seq)):
            self._pending_seq = seq  # jump once the session (or its older part) is folded
            return True
        index = -1
        for i, item in enumerate(self.fold.items):
            if item.seq > seq:
                break
            index = i
        if index < 0:
            return False
        transcript = self.transcript
        view = transcript.views.get(self.fold.items[index].key)
        if view is None:
            view = transcript.show_around(index)
        if view is None:
            return False
        transcript.anchor(False)

        def scroll() -> None:
            # the re-windowed views are laid out one refresh after they mount
            transcript.call_after_refresh(lambda: transcript.scroll_to_widget(view, animate=False, top=True))

        self.call_after_refresh(scroll)
        return True

    def action_find(self) -> None:
        """Ctrl+F: the search bar over the whole session (widgets/searchbar.py, widgets/transcript.py)."""
        if self.search_bar.is_attached:
            self.search_bar.open()
            return
        self._ensure_mounted(self.search_bar)
        self.call_after_refresh(self.search_bar.open)

    def on_search_bar_closed(self, _message: SearchBar.Closed) -> None:
        if self.composer.display:
            self.set_focus(self.composer)
        elif self._approval_shown():  # back to the pending approval's buttons
            self.set_focus(next(iter(self.approval.query("Button")), None))

    def action_back_to_bottom(self) -> None:
        self.transcript.back_to_bottom()

    def action_load_earlier(self) -> None:
        self.transcript.load_earlier()

    def _update_bottom_hint(self) -> None:
        """"Back to bottom" on the composer's top border while the transcript does not follow (a line of
        its own would take a row from the transcript each time it comes and goes, moving the text)."""
        show = self.transcript.detached or (not self.transcript.following and not self.transcript.at_bottom())
        title = BOTTOM_HINT if show else ""
        if self.composer.border_title != title:
            self.composer.border_title = title
