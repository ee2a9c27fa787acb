"""The chat screen: transcript, plan strip, queue, approval takeover, composer and status bar.

``ChatScreen`` owns its widgets (most built and mounted on first use, ``ensure_mounted``), the state they all
show (the transcript fold, running, read-only), its key bindings and the thin handlers Textual needs on the
screen class (``@on`` handlers register only there). The rest is small controllers, each in its own module:
``pump`` (``chat_stream``), ``inbox`` (``chat_messages``: the harness's typed messages), ``approvals``
(``chat_approvals``), ``questions`` and ``modes`` (``chat_modes``), ``sending`` (``chat_send``), ``steering``
(``chat_steer``), ``commands`` (``chat_commands``), ``completer`` (``chat_completion``), ``subagent_cards``
(``chat_subagents``), ``terminal`` (``chat_terminal``), ``keys`` (``chat_keys``), ``view`` (``chat_view``)
and ``turns`` (``rewind.TurnControl``). ``docs/ui.md`` maps them, the messages and the key routing.
"""

from __future__ import annotations

import time
from functools import cached_property
from typing import TYPE_CHECKING, Any

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static, TextArea

from dsh_tui.session.transcript import TranscriptFold
from dsh_tui.ui.bridge import Bridge
from dsh_tui.ui.history import ChatHistory
from dsh_tui.ui.screens import chat_help, chat_stream
from dsh_tui.ui.screens.chat_commands import CommandFinished, CommandOutput, CommandRunner, ShellFinished
from dsh_tui.ui.screens.chat_completion import Completer
from dsh_tui.ui.screens.chat_keys import KeyRouter
from dsh_tui.ui.screens.chat_modes import ModeStatus, QuestionFlow
from dsh_tui.ui.screens.chat_stream import StreamPump
from dsh_tui.ui.screens.chat_view import TranscriptNav
from dsh_tui.ui.textual_compat import paint_now, skip_first_resume_restyle
from dsh_tui.ui.widgets.composer import Composer
from dsh_tui.ui.widgets.item import ViewState
from dsh_tui.ui.widgets.status import StatusBar
from dsh_tui.ui.widgets.transcript import TranscriptView

if TYPE_CHECKING:  # built (and their modules imported) on first use: not on the way to the first frame
    from dsh_tui.ui.screens.chat_approvals import ApprovalFlow
    from dsh_tui.ui.screens.chat_messages import MessageInbox
    from dsh_tui.ui.screens.chat_send import SendFlow
    from dsh_tui.ui.screens.chat_steer import SteerQueue
    from dsh_tui.ui.screens.chat_subagents import SubagentCards
    from dsh_tui.ui.screens.chat_terminal import TerminalSlot
    from dsh_tui.ui.screens.rewind import TurnControl
    from dsh_tui.ui.widgets.approval import ApprovalPanel
    from dsh_tui.ui.widgets.completion import CompletionList
    from dsh_tui.ui.widgets.plan import PlanStrip
    from dsh_tui.ui.widgets.question import QuestionPanel
    from dsh_tui.ui.widgets.queue import QueueList
    from dsh_tui.ui.widgets.searchbar import SearchBar


class ChatScreen(Screen):
    """One live (or replayed) session, composed of the controllers named in the module docstring."""

    HELP = chat_help.HELP
    # the composer has the focus from the screen's first moment: keys typed while the app starts (type-ahead)
    # are read as soon as the screen is up, before ``on_mount``'s ``focus()`` has run, and would otherwise go
    # to the transcript (Textual's default: the first focusable widget) and be lost
    AUTO_FOCUS = "#composer"

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
        self.running = False
        self.model_hint = model_hint
        self.loading_head = False
        self.attached = False  # a session's events have been received
        self.ready = False  # mounted: the widgets a flush updates exist
        # set by the app before the attach when the events are only the tail of a stored log (read by
        # dsh_tui.store.tail): the older part arrives later through complete_history()
        self.expect_head = False
        self.tail_of: TranscriptFold | None = None  # the tail fold waiting for complete_history()
        self.on_attached: Any = None  # called once after the next attach (the app's first-paint hook)
        # set by the app on a read-only view of a stored session: ``resume(text)`` resumes it in a new
        # chat that sends ``text``; returns "" or why it could not (no model configured)
        self.resume: Any = None
        self.send_on_attach = False  # send the composer's text once the harness is attached
        self.initial_text = ""  # put in the composer when the screen mounts
        self.read_only = False
        self.title_bar: Static | None = None
        self.title_text = ""  # what the title header shows
        self.last_failed = False  # the last turn ended with an error: F5 retries it (ui/screens/rewind.py)
        # the controllers needed before the first frame; the others are built on first use (below)
        self.pump = StreamPump(self)
        self.keys = KeyRouter(self)
        self.modes = ModeStatus(self)
        self.questions = QuestionFlow(self)
        self.commands = CommandRunner(self)
        self.completer = Completer(self)
        self.view = TranscriptNav(self)

    # -- controllers built on first use ----------------------------------------------------------------
    @cached_property
    def approvals(self) -> ApprovalFlow:
        from dsh_tui.ui.screens.chat_approvals import ApprovalFlow

        return ApprovalFlow(self)

    @cached_property
    def sending(self) -> SendFlow:
        from dsh_tui.ui.screens.chat_send import SendFlow

        return SendFlow(self)

    @cached_property
    def steering(self) -> SteerQueue:
        from dsh_tui.ui.screens.chat_steer import SteerQueue

        return SteerQueue(self)

    @cached_property
    def subagent_cards(self) -> SubagentCards:
        from dsh_tui.ui.screens.chat_subagents import SubagentCards

        return SubagentCards(self)

    @cached_property
    def terminal(self) -> TerminalSlot:
        from dsh_tui.ui.screens.chat_terminal import TerminalSlot

        return TerminalSlot(self)

    @cached_property
    def inbox(self) -> MessageInbox:
        from dsh_tui.ui.screens.chat_messages import MessageInbox

        return MessageInbox(self)

    @cached_property
    def turns(self) -> TurnControl:
        from dsh_tui.ui.screens.rewind import TurnControl

        return TurnControl(self)

    @property
    def queue(self) -> list[str]:
        """Follow-ups queued while a turn runs (``steering``; the app keeps them at quit)."""
        return self.steering.queue

    @property
    def flushes(self) -> int:
        """Drains applied (tests and benches read it)."""
        return self.pump.flushes

    def compose(self) -> ComposeResult:
        self.transcript = TranscriptView(self.fold, self.state, id="transcript")
        yield self.transcript
        # the search bar, plan strip, steer row, queue, approval panel, note, command output and completion
        # list are built and mounted on first use, between the transcript and the composer in the order of
        # _LAZY_ORDER (ensure_mounted): most sessions never show them, and neither they nor their modules
        # are on the way to the first paint (the properties below)
        self.composer = Composer(placeholder=chat_help.PLACEHOLDER, id="composer")
        self.composer.border_subtitle = chat_help.HINT_IDLE
        self.composer.on_top_edge = self.action_focus_queue
        self.composer.on_completion_key = self.completer.key
        self.composer.prompt_history = ChatHistory(self)  # Up/Down and Ctrl+L: dsh_tui/ui/history.py
        yield self.composer
        self.status = StatusBar(clock=self.clock, id="status")
        self.status.model_hint = self.model_hint
        yield self.status

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        skip_first_resume_restyle(self, event)  # (dispatched before Screen's own handler, which restyles)

    def on_mount(self) -> None:
        self.composer.cursor_blink = self.app.settings.ui.cursor_blink if hasattr(self.app, "settings") else True
        self.status.usage = self.fold.usage
        self.status.redraw()
        self.composer.focus()
        if self.initial_text:
            self.composer.value = self.initial_text
        if self.model_hint and self.bridge.loop is None:
            self.say(self.model_hint)  # no harness is coming: say what to set, inline
            self.update_composer_hint()
        self.set_interval(0.25, self.view.update_bottom_hint)
        self.set_interval(0.25, self._poll_terminals)
        self.set_interval(chat_stream.WATCHDOG_S, self.pump.watchdog)
        self.ready = True
        self.events_ready()  # whatever the bridge delivered before the screen was composed

    # -- widgets built on first use --------------------------------------------------------------------
    _LAZY_ORDER = ("search_bar", "plan_strip", "steer_row", "queue_list", "approval", "question", "note",
                   "terminal_card", "command_output", "completion", "composer")

    @cached_property
    def search_bar(self) -> SearchBar:
        from dsh_tui.ui.widgets.searchbar import SearchBar

        return SearchBar(self.transcript, id="search")

    @cached_property
    def question(self) -> QuestionPanel:  # (chat_modes)
        from dsh_tui.ui.widgets.question import QuestionPanel

        return QuestionPanel(id="question")

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

    @property
    def terminal_card(self) -> Any:
        """The terminal card, once the agent had a terminal (``chat_terminal``), else None."""
        slot = self.__dict__.get("terminal")
        return slot.card if slot is not None else None

    def built(self, name: str) -> Any:
        """The lazily built widget ``name`` if it was built, else None (without building it)."""
        if name == "terminal_card":
            return self.terminal_card
        return self.__dict__.get(name)

    def offer_panel(self, panel: Any, request: Any, phase: str) -> None:
        """Show an approval or question ``panel`` for ``request``. It never takes the focus from a composer being
        typed in: the composer stays and Tab moves to the panel; otherwise the panel takes the composer's place."""
        typing = self.composer.display and self.composer.has_focus and bool(self.composer.text.strip())
        self.composer.display = typing
        self.status.set_phase(phase)
        self.ensure_mounted(panel)
        panel.show_request(request, take_focus=not typing)
        self.transcript.back_to_bottom()  # the call or question is the latest item

    def ensure_mounted(self, widget: Any) -> None:
        """Mount a lazily built widget (bottom hint, plan strip, queue, approval panel) in its place:
        before the first of the widgets that follow it in ``_LAZY_ORDER`` that is mounted."""
        if widget.is_attached:
            return
        order = self._LAZY_ORDER
        own = "composer" if widget is self.composer else next(n for n in order if self.built(n) is widget)
        for name in order[order.index(own) + 1:]:
            after = self.composer if name == "composer" else self.built(name)
            if after is not None and after.is_attached:
                self.mount(widget, before=after)
                return
        self.mount(widget)

    def show_plan(self, plan: Any) -> None:
        if plan.todos or self.plan_strip.is_attached:
            self.ensure_mounted(self.plan_strip)
            self.plan_strip.show_plan(plan)

    def set_model_hint(self, hint: str) -> None:
        """How to configure a model (shown in the status bar and above the composer while no model is
        configured)."""
        self.model_hint = hint
        self.status.model_hint = hint
        self.status.redraw()
        if hint and self.bridge.harness is None:
            self.say(hint)
        self.update_composer_hint()

    def say(self, text: str) -> None:
        """One line (wrapped) above the composer, in the warning colour: why a prompt was not sent."""
        if text:
            self.ensure_mounted(self.note)
        if self.note.is_attached:
            self.note.update(text)
            self.note.display = bool(text)
        self.composer.set_class(bool(text), "-notice")

    def update_composer_hint(self) -> None:
        """The composer says what Enter does now: send, queue (and how to steer), or resume."""
        self.composer.border_subtitle, self.composer.placeholder = chat_help.composer_hint(self)

    # -- harness -> UI ---------------------------------------------------------------------------------
    async def _on_update(self, message: Any) -> None:
        # the composer's repaint after a keystroke: paint it now, not at the next frame tick (Screen's own
        # handler, which marks the composer dirty, runs after this one)
        if message.widget is self.composer and self.composer.echo_pending:
            self.call_next(paint_now, self, self.composer)

    def events_ready(self) -> None:
        """Called (on the UI thread) when the bridge has something (``StreamPump``)."""
        self.pump.events_ready()

    def flush(self) -> None:
        self.pump.flush()

    def complete_history(self, header: Any, events: list[dict[str, Any]], first_seq: int,
                         tail_events: list[dict[str, Any]]) -> None:
        """The full load of a log shown tail first (``StreamPump.complete_history``)."""
        self.pump.complete_history(header, events, first_seq, tail_events)

    def set_running(self, running: bool) -> None:
        if running == self.running:
            return
        self.running = running
        self.status.set_status("running" if running else "idle")
        self.update_composer_hint()
        if not running:
            self.steering.next_turn()

    # -- the controllers' handlers (Textual registers them on the screen class) ------------------------
    def on_subagent_card_open(self, message: Any) -> None:
        self.open_subagent(message.child_id)

    def open_subagent(self, child_id: str) -> None:
        self.subagent_cards.open(child_id)

    def on_approval_panel_yielded(self, message: ApprovalPanel.Yielded) -> None:
        """A key within the panel's grace period: it was typed for the composer. The composer comes back
        with the focus and the key; the panel waits for Tab."""
        self.keys.yield_to_composer(message.key, message.character)

    def on_approval_panel_decided(self, message: ApprovalPanel.Decided) -> None:
        self.approvals.decided(message)

    def on_question_panel_yielded(self, message: QuestionPanel.Yielded) -> None:
        self.keys.yield_to_composer(message.key, message.character)

    def on_question_panel_answered(self, message: QuestionPanel.Answered) -> None:
        self.questions.answered(message)

    def on_resize(self, event: events.Resize) -> None:
        if self.built("approval") is not None:
            self.approvals.fit(event.size.width, event.size.height)

    def on_paste(self, event: events.Paste) -> None:
        self.keys.on_paste(event)

    def on_key(self, event: events.Key) -> None:
        self.keys.on_key(event)

    def on_descendant_blur(self, _event: events.DescendantBlur) -> None:
        self.call_after_refresh(self.keys.restore_focus)
        self.update_composer_hint()

    def on_descendant_focus(self, _event: events.DescendantFocus) -> None:
        self.update_composer_hint()  # the queue's keys while it has the focus (Esc goes back, not cancel)

    @on(CommandFinished)
    def _command_finished(self, message: CommandFinished) -> None:
        self.commands.command_done(message.text, message.result)

    @on(ShellFinished)
    def _shell_finished(self, message: ShellFinished) -> None:
        self.commands.shell_done(message.command, message.result)

    @on(TextArea.Changed, "#composer")
    @on(TextArea.SelectionChanged, "#composer")
    def _composer_moved(self, _event: Any) -> None:
        self.completer.refresh_soon()

    @on(Composer.Submitted, "#composer")
    def _submitted(self, event: Composer.Submitted) -> None:
        event.stop()
        self.sending.submit(submitted=event.value)

    def on_queue_list_action(self, message: QueueList.Action) -> None:
        self.steering.on_action(message)

    def on_search_bar_closed(self, _message: SearchBar.Closed) -> None:
        self.view.search_closed()

    def _poll_terminals(self) -> None:
        if "terminal" not in self.__dict__:  # no terminal yet: the slot (and its module) come with the first
            harness = self.bridge.harness
            service = harness.terminals() if harness is not None else None
            if service is None or not service.sessions:
                return
        self.terminal.poll()

    # -- actions ---------------------------------------------------------------------------------------
    def action_steer(self) -> None:
        if self.composer.has_focus:
            self.sending.submit(alternate=True)

    def action_focus_terminal(self) -> None:
        self.terminal.focus()

    def action_focus_queue(self) -> bool:
        return self.steering.focus_queue()

    def action_page_transcript(self, direction: int) -> None:
        self.view.page(direction)

    def action_cancel(self) -> None:
        self.turns.cancel()

    def action_interrupt(self) -> None:
        self.turns.interrupt()

    def action_rewind(self) -> None:
        self.turns.open_rewind()

    def action_retry(self) -> None:
        self.turns.retry_failed()

    def action_cycle_permission(self) -> None:
        self.turns.cycle_permission()

    def action_toggle_plan(self) -> None:
        self.modes.toggle_plan()

    def action_cycle_cards(self) -> None:
        self.view.cycle_cards()

    def action_toggle_reasoning(self) -> None:
        self.view.toggle_reasoning()

    def scroll_to_seq(self, seq: int) -> bool:
        """Show the item built from event ``seq`` (``TranscriptNav.scroll_to_seq``)."""
        return self.view.scroll_to_seq(seq)

    def action_find(self) -> None:
        self.view.find()

    def action_back_to_bottom(self) -> None:
        self.transcript.back_to_bottom()

    def action_load_earlier(self) -> None:
        self.transcript.load_earlier()
