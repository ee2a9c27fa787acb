"""The dsh-tui Textual app: screens, themes, keymap, command palette, harness bridge.

Other screens register through ``SCREEN_FACTORIES`` (name -> ``factory(app) -> Screen``), imported
lazily so start-up only pays for the first screen. The session browser is ``"browser"``
(``dsh_tui.ui.screens.browser.BrowserScreen``); ``push_browser()`` opens it when it exists. Opening a stored
session is ``opening.py`` (``app.opener``) and the palette's entries ``palette.py`` (``app.palette``).
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.filter import LineFilter
from textual.message import Message
from textual.notifications import Notify
from textual.screen import Screen

from dsh_tui.ui import served
from dsh_tui.ui.bridge import Bridge, SessionBackend
from dsh_tui.ui.opening import SessionOpener
from dsh_tui.ui.palette import PaletteCommands
from dsh_tui.ui.safe_output import CONTENT_FILTER
from dsh_tui.ui.settings import UiSettings
from dsh_tui.ui.textual_compat import notifications, refresh_ansi_filter, unnotify
from dsh_tui.ui.themes import DEFAULT_THEME, CachedStylesheet, css_cache_path, load_themes, save_theme_cache

if TYPE_CHECKING:
    from dsh_tui.ui.screens.chat import ChatScreen  # imported when a chat opens: not on the browser's path

BackendFactory = Callable[[Bridge], Awaitable[SessionBackend]]
# Run in a thread after the first paint: (harness factory or None, model hint). Building a provider
# imports httpx and reads the settings (~0.15 s), which is not on the way to the first frame.
# It may add a third item: a notice to show once (the first run that creates the anonymous id).
RouteResolver = Callable[[], tuple[BackendFactory | None, str] | tuple[BackendFactory | None, str, str]]

# name -> "module:attribute" of a ``factory(app) -> Screen``; other engineers add theirs here.
SCREEN_FACTORIES: dict[str, str] = {
    "browser": "dsh_tui.ui.screens.browser:BrowserScreen",
    "timeline": "dsh_tui.ui.screens.timeline:TimelineScreen",
}


def _prewarm_markdown() -> None:
    from rich.console import Console
    from rich.markdown import Markdown

    from dsh_tui.session import jsonutil  # noqa: F401 - (and orjson, json): a tool card's arguments, not on the first frame

    console = Console(file=None, width=80, color_system=None, record=False, force_terminal=False)
    with console.capture():
        console.print(Markdown("# warm\n\n**up** `code`\n\n```python\ndef f(x):\n    return x\n```\n"))


NO_MODEL = "No model configured"


def _untitled(hint: str) -> str:
    """A "No model configured: ..." hint as the body of a notice whose title already says so."""
    prefix = NO_MODEL + ":"
    return hint[len(prefix):].strip() if hint.startswith(prefix) else hint


class EventsReady(Message):
    """The bridge has queued session events or harness messages (posted from the harness thread)."""


class DshApp(App):
    """See the module docstring."""

    TITLE = "dsh-tui"
    CSS = """
    Screen { background: $background; }
    /* the chat's toasts: top right. The transcript's latest lines are at the bottom of its area (its
       items sit on the composer), so toasts there cover neither them, the composer nor the approval panel */
    ChatScreen ToastRack { dock: top; align: right top; margin: 1 0 0 0; max-height: 50%; }
    ChatScreen Toast { margin: 0 0 1 0; }
    /* F1: the screen's help text is never cut. Textual's pane gives it at most half the height with no
       scrollbar; here it is wider on narrow terminals and its text scrolls (it has the room it needs up
       to two thirds of the height; the key list below takes the rest) */
    HelpPanel { width: 45%; min-width: 34; max-width: 72; }
    HelpPanel #widget-help { max-height: 67%; overflow-y: auto; scrollbar-size-vertical: 1; }
    """
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", id="app.quit", priority=True),
        Binding("f1", "help", "Help", id="app.help"),
        Binding("ctrl+b", "browser", "Sessions", id="app.browser", show=False),
        # [browser/timeline engineer] the timeline of the chat's session
        Binding("ctrl+t", "timeline", "Timeline", id="app.timeline", show=False),
        # F1's pane open: its text scrolls from the keyboard (the keys pass through when it is closed)
        Binding("shift+pageup", "scroll_help(-1)", "Scroll help up", id="app.help_up", show=False),
        Binding("shift+pagedown", "scroll_help(1)", "Scroll help down", id="app.help_down", show=False),
    ]

    def __init__(
        self,
        harness_factory: BackendFactory | None = None,
        *,
        start: str = "chat",
        settings: UiSettings | None = None,
        model_hint: str = "",
        clock: Callable[[], float] = time.monotonic,
        session_roots: list[Any] | None = None,
        resolve: RouteResolver | None = None,
    ) -> None:
        self._css_variables_unused = True
        super().__init__()
        self._css_variables_unused = False
        self.resolve = resolve
        self.opener = SessionOpener(self)  # opening stored sessions (``opening.py``)
        self.palette = PaletteCommands(self, SCREEN_FACTORIES)  # the app's command-palette entries (``palette.py``)
        self.session_roots = list(session_roots or [])  # extra roots for the browser (``--root``)
        self.settings = settings or UiSettings.load()
        self.harness_factory = harness_factory
        self.start_screen = start
        self.model_hint = model_hint
        self.clock = clock
        self.bridge = Bridge(self._wake_from_harness)
        self.chat: ChatScreen | None = None
        css_cache = css_cache_path()
        for theme in load_themes(None if css_cache is None else css_cache.with_name("themes.pickle")):
            self.register_theme(theme)
        for name in (self.settings.ui.theme, DEFAULT_THEME, "textual-dark"):
            if name is not None and self._has_theme(name):
                self._start_theme(name)
                break
        # nothing is parsed yet: the stylesheet that keeps its parsed rules between runs, with the
        # start theme's variables
        self.stylesheet = CachedStylesheet(variables=self.get_css_variables(), path=css_cache)

    _css_variables_unused = False

    def get_css_variables(self) -> dict[str, str]:
        """Textual's, but none while ``App.__init__`` runs: the stylesheet it makes with them is replaced in
        ``__init__`` (by the start theme's, below), so the default theme's ~150 colours are not worked out
        for nothing before the first frame (#29)."""
        if self._css_variables_unused:
            return {}
        return super().get_css_variables()

    # (session id, root) of the live session the app had open when it quit (``resume_hint``)
    resumable: tuple[str, Any] | None = None

    def _note_resumable(self) -> None:
        harness = self.bridge.harness
        if harness is None or harness.read_only:
            return
        point = harness.resume_point()  # None: nothing was written, there is no session to resume
        if point is not None:
            self.resumable = point

    kept_pending = 0  # queued prompts kept for the next resume when the app quit (``ui/pending.py``)

    def _keep_pending(self) -> None:
        """The chat's queued prompts (and a draft typed beside them) are kept for the resumed session."""
        chat = self.chat
        if self.resumable is None or chat is None or self.kept_pending or not chat.queue:
            return
        from dsh_tui.ui.pending import save

        if save(self.resumable[0], list(chat.queue), chat.composer.full_text) is not None:
            self.kept_pending = len(chat.queue)

    def resume_hint(self) -> str:
        """The line printed after the app quits: how to continue the session it had open ("" if none)."""
        if self.resumable is None:
            return ""
        import shlex
        from pathlib import Path

        session_id, root = self.resumable
        command = f"dsh-tui resume {shlex.quote(session_id)}"
        if root is not None:
            from dsh_tui.paths import default_sessions_root

            try:
                default = default_sessions_root().resolve()
                if Path(root).resolve() != default:
                    command += f" --root {shlex.quote(str(root))}"
            except OSError:
                command += f" --root {shlex.quote(str(root))}"
        kept = self.kept_pending
        if kept:
            return (f"Session saved; {kept} queued prompt{'s' if kept != 1 else ''} kept (back in the composer "
                    f"on resume). Continue it with: {command}")
        return f"Session saved. Continue it with: {command}"

    # set by ``run_app`` when the cyclic GC was paused for the start-up (resumed after the first frame)
    gc_paused = False

    def run_app(self) -> None:
        """``run()`` for the command line (``dsh_tui.cli.gc_paused``): a cyclic GC paused by the caller
        stays paused until the first frame is on screen; everything allocated by then is frozen (never
        scanned again) and the GC resumes."""
        self.gc_paused = not gc.isenabled()
        self.run()

    def run(self, **kwargs: Any) -> Any:
        """Textual's ``run()`` with the cyclic GC paused until the first frame, whoever runs the app (the
        command line also pauses it around its imports: ``dsh_tui.cli.gc_paused``). Building the first
        screen allocates long-lived objects (styles, widgets) that trigger young-generation passes
        which free next to nothing. The GC is on again when ``run()`` returns in any case."""
        paused_here = gc.isenabled()
        if paused_here:
            gc.disable()
        self.gc_paused = True
        try:
            return super().run(**kwargs)
        finally:
            self.gc_paused = False
            if paused_here:
                gc.enable()

    def get_line_filters(self) -> Sequence[LineFilter]:
        """Textual's filters, then the one that keeps content's control sequences off the terminal."""
        return [*super().get_line_filters(), CONTENT_FILTER]

    def _first_frame(self) -> None:
        self.call_later(self._save_css)
        # Markdown + Pygments cost ~0.2 s on first use (imports, lexer regexes): pay it in the background
        # a second after the first paint, not in the middle of the first streamed code block. Counted
        # from the first frame, not from the mount: a start-up slower than a second (a loaded machine,
        # callgrind) must not import them before its first frame.
        self.set_timer(1.0, lambda: self.run_worker(_prewarm_markdown, thread=True, group="prewarm",
                                                    description="prewarm markdown"))
        if self.gc_paused:
            self.gc_paused = False
            gc.freeze()  # modules, classes, styles: they live as long as the process (~1-2.5k
            # unreachable start-up objects are frozen with them; collecting first would cost a full pass)
            gc.enable()

    def _save_css(self) -> None:
        save_theme_cache()
        save = getattr(self.stylesheet, "save", None)
        if save is not None:
            save()

    def _has_theme(self, name: Any) -> bool:
        return isinstance(name, str) and name in self.available_themes

    def _start_theme(self, name: str) -> None:
        """Select the theme the app starts with, before it runs.

        Assigning ``self.theme`` here runs Textual's watcher, which queues a full stylesheet re-parse
        and a restyle and re-layout of the screen in the middle of the first frame's work. Nothing is
        parsed yet, so the watcher's effects are applied directly instead: the theme's CSS variables
        (every stylesheet is then parsed once, with them: ``__init__`` makes the stylesheet after this),
        its classes and the ANSI colour filter."""
        if name == self.theme:
            return
        self.set_reactive(App.theme, name)
        theme = self.current_theme
        classes = {c: False for c in self.classes if c.startswith("-theme-")}
        classes.update({f"-theme-{theme.name}": True, "-dark-mode": theme.dark, "-light-mode": not theme.dark})
        self.update_classes(classes, update=False)
        refresh_ansi_filter(self, self.ansi_theme)

    # -- start / stop --------------------------------------------------------------------------
    def on_mount(self) -> None:
        self.call_after_refresh(self._first_frame)
        self._handle_exit_signals()
        keymap = served.keymap(self.settings.keymap())  # + the browser-safe keys under ``dsh-tui serve``
        if keymap:
            self.set_keymap(keymap)
        if self.resolve is not None:
            self.call_after_refresh(lambda: self.run_worker(self._resolve_route, thread=True, group="route",
                                                            description="model route"))
        if self.start_screen == "browser":
            if self.model_hint:  # the chat's status bar is not on screen yet: say it once here
                self._notify_before_screen(_untitled(self.model_hint), title=NO_MODEL, severity="warning",
                                           timeout=15)
            if self.push_browser():
                return
            notifications(self).clear()  # no browser: the chat's status bar says it
        self.open_chat(self.harness_factory)

    def _notify_before_screen(self, message: str, *, title: str, severity: Any, timeout: float) -> None:
        """``notify()`` for a notice known before the first screen is pushed: the notification is in
        place when that screen resumes, so its toast is mounted with the screen and is on the first
        frame (``notify()`` posts a message whose toast is mounted ~2 frames later)."""
        from textual.notifications import Notification

        notifications(self).add(Notification(message, title, severity, timeout, markup=False))
    def _resolve_route(self) -> None:
        assert self.resolve is not None
        notice = ""
        try:
            resolved = self.resolve()
            factory, hint = resolved[0], resolved[1]
            if len(resolved) > 2:  # a first-run notice (the anonymous id was just created)
                notice = resolved[2]  # type: ignore[misc]
        except Exception as err:  # noqa: BLE001 - shown like a missing model; the app stays open
            factory, hint = None, " ".join(f"No model configured: {err}".split())
        problems = self.settings.problems()  # the typed settings tree (pydantic): after the first frame
        self.call_from_thread(self._route_ready, factory, hint, notice, problems)

    def _route_ready(self, factory: BackendFactory | None, hint: str, notice: str = "",
                     problems: list[str] | None = None) -> None:
        """The model route is known: start the chat's harness (if the chat waits for one) or say why not."""
        if notice:
            self.notify(notice, title="Anonymous id", timeout=20, markup=False)  # "[privacy]" is text
        if problems:  # unknown keys, values of the wrong type: said once, nothing stops
            self.notify("\n".join(problems), title="Settings", severity="warning", timeout=20, markup=False)
        self.resolve = None
        self.harness_factory = factory
        self.model_hint = hint
        chat = self.chat
        if chat is not None:
            if factory is None:  # no session is coming: what waited for one is back in the composer
                chat.steering.back_to_composer()
                chat.send_on_attach = False
            chat.set_model_hint(hint)
            if factory is not None and self.bridge.harness is None and self.bridge.loop is None:
                self.bridge.start(factory)
        elif hint:  # the browser is showing: say it once here
            self.notify(_untitled(hint), title=NO_MODEL, severity="warning", timeout=15, markup=False)

    def push_screen(self, screen: Any, *args: Any, **kwargs: Any) -> Any:
        if served.is_served() and getattr(screen, "HELP", None):
            screen.HELP = served.help_text(screen.HELP)  # names the alternatives of the keys a browser keeps
        return super().push_screen(screen, *args, **kwargs)

    def open_chat(self, factory: BackendFactory | None, **kwargs: Any) -> ChatScreen:
        """Show the chat screen and start ``factory`` on the harness thread (None: no harness)."""
        if self.chat is not None or self.bridge.harness is not None or self.bridge.loop is not None:
            self.bridge.stop()  # one live harness at a time: flush and close the previous session
            # a bridge per chat: a chat pushed before this one and mounted after it (a stored session's tail
            # read is that fast) drained this one's session from a shared bridge, and this chat never showed it
            self.bridge = Bridge(self._wake_from_harness)
        from dsh_tui.ui.screens.chat import ChatScreen

        chat = ChatScreen(self.bridge, enter_steers=self.settings.chat.enter_steers,
                          model_hint=self.model_hint, clock=self.clock,
                          show_time=self.settings.ui.show_time,
                          prices=self.settings.prices(), **kwargs)
        self.chat = chat
        self.push_screen(chat)
        if factory is not None:
            self.bridge.start(factory)
        return chat

    def open_session(self, row: Any, *, at_seq: int | None = None, resume: bool = False) -> None:
        """Open a browser row read-only (tail first) or resumed (``SessionOpener.open_session``)."""
        self.opener.open_session(row, at_seq=at_seq, resume=resume)

    def open_from_command(self, harness: Any, action: dict[str, Any]) -> str:
        """``/new`` or ``/fork``'s session (``SessionOpener.open_from_command``): "" or why it could not."""
        return self.opener.open_from_command(harness, action)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield from self.palette.system_commands(screen)

    def _on_notify(self, event: Notify) -> None:
        """A new toast replaces a shown one of the same kind (severity and title): one ``Error`` toast at
        a time, however often errors come. Textual's handler (next in the MRO) adds it after this."""
        new = event.notification
        for shown in list(notifications(self)):
            if shown.severity == new.severity and shown.title == new.title:
                unnotify(self, shown)

    def push_browser(self) -> bool:
        screen = self.make_screen("browser")
        if screen is None:
            return False
        self.push_screen(screen)
        return True

    def make_screen(self, name: str) -> Screen | None:
        """Build a registered screen, or None when its module is not installed."""
        target = SCREEN_FACTORIES.get(name)
        if target is None:
            return None
        module_name, _, attr = target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            return None
        factory = getattr(module, attr)
        try:
            return factory(self)
        except TypeError:
            return factory()

    def _wake_from_harness(self, _kind: str) -> None:
        self.post_message(EventsReady())

    def on_events_ready(self, _message: EventsReady) -> None:
        if self.chat is not None:
            self.chat.events_ready()
        live = getattr(self.screen, "live_events_ready", None)  # [timeline] follows the running turn
        if live is not None:
            live()

    async def action_quit(self) -> None:
        """Flush every session (the harness closes its writers), then leave."""
        self._note_resumable()
        self._keep_pending()
        await asyncio.to_thread(self.bridge.stop)
        self.exit()

    def _handle_exit_signals(self) -> None:
        """SIGTERM and SIGHUP quit as Ctrl+Q does (``dsh_tui.ui.exit_signals``). Not under a test's headless
        driver (the handlers are the process's)."""
        if not self.is_headless:
            from dsh_tui.ui.exit_signals import handle_exit_signals

            handle_exit_signals(self)

    def on_unmount(self) -> None:
        self._note_resumable()
        self._keep_pending()
        self.bridge.stop()
        self._save_css()  # rules parsed since the first frame (other screens, modals)

    # -- everywhere ----------------------------------------------------------------------------
    def action_help(self) -> None:
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "scroll_help":
            return bool(self.screen.query("HelpPanel"))
        return super().check_action(action, parameters)

    def action_scroll_help(self, direction: int) -> None:
        for text in self.screen.query("HelpPanel #widget-help"):
            text.scroll_relative(y=direction * max(1, text.size.height - 1), animate=False)

    def action_browser(self) -> None:
        back = getattr(self.screen, "action_back", None)
        if type(self.screen).__name__ == "BrowserScreen" and back is not None:
            back()  # on the browser already: back to the chat (never a browser over a browser)
            return
        if not self.push_browser():
            self.notify("The session browser is not available in this build.", timeout=3)

    # [browser/timeline engineer] open the timeline inspector on the chat's session
    def action_timeline(self) -> None:
        if self.chat is None or self.screen is not self.chat:
            return
        screen = self.make_screen("timeline")
        if screen is not None:
            self.push_screen(screen)

    def open_subagent(self, chat: Any, child_id: str, snap: dict[str, Any]) -> None:
        """A subagent's live transcript above its parent's chat (``dsh_tui.ui.screens.subagent``): the app opens
        screens, so the chat's subagent cards need not import the screen that extends the chat."""
        from dsh_tui.ui.screens.subagent import open_child_screen

        open_child_screen(chat, child_id, snap)

    def action_mcp(self) -> None:
        """The ``/mcp`` panel: the live session's MCP servers (``dsh_tui.ui.screens.mcp``)."""
        from dsh_tui.ui.screens.mcp import McpScreen

        self.push_screen(McpScreen(self.bridge))

    def watch_theme(self, theme: str) -> None:
        if getattr(self, "settings", None) is not None and theme != self.settings.ui.theme:
            self.settings.set("ui.theme", theme)

