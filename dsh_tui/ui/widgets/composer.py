"""The chat composer: a multi-line TextArea with the chat's keys (send, newline, history, editor, steer)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from textual import events
from textual.app import SuspendNotSupported
from textual.binding import Binding
from textual.message import Message
from textual.widget import Widget
from textual.widgets import TextArea
from textual.widgets.text_area import Document, Selection

from dsh_tui.ui.textual_compat import fast_wrap, refresh_size, rewrap, run_own_binding, wrapped_width

fast_wrap()  # a 10,000-line paste of short lines is not word-wrapped line by line


COLLAPSE_PASTE_LINES = 20  # a paste of this many lines or more shows collapsed: "[Pasted text #1 +401 lines]"


class Composer(TextArea, inherit_bindings=False):
    """The chat's prompt box: grows to a few lines, then scrolls.

    Enter submits (``Composer.Submitted``); Ctrl+J (or Shift+Enter where the terminal sends it) inserts
    a newline; a paste arrives whole, newlines kept. ``value`` is the text (as on an ``Input``).

    With a ``prompt_history`` (``dsh_tui/ui/history.py``): Up on the first row recalls the previous prompt and
    Down on the last row the next one (the draft comes back past the newest); while a recalled prompt is
    shown unchanged, Up and Down keep browsing from any row. Ctrl+L searches the history (the search has
    the keys until Enter or Esc). Ctrl+G edits the draft in ``$VISUAL`` / ``$EDITOR`` (``dsh_tui/ui/editor.py``).
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
                Binding("ctrl+j,shift+enter", "newline", "Newline", id="composer.newline", show=False),
                # Ctrl+R stays the chat's reasoning toggle: Ctrl+L is free everywhere and every terminal
                # sends it (inside a search Ctrl+R steps to an older match too, as in a shell)
                Binding("ctrl+l", "history_search", "History search", id="composer.history_search", show=False),
                Binding("ctrl+g", "edit_in_editor", "Edit in $EDITOR", id="composer.editor", show=False),
                Binding("f2", "expand_pastes", "Expand pasted text", id="composer.expand_pastes", show=False)]

    class Submitted(Message):
        def __init__(self, composer: Composer, value: str) -> None:  # (not a dataclass: cheaper to import)
            super().__init__()
            self.composer = composer
            self.value = value

        @property
        def control(self) -> Composer:
            return self.composer

    #: As ``LightInput.echo_pending``: a keystroke or paste waits for the refresh that paints it.
    echo_pending = False

    #: The prompt history (``dsh_tui.ui.history.PromptHistory``); None: Up and Down only move the cursor.
    prompt_history: Any = None
    #: The history search running (``dsh_tui.ui.history.HistorySearch``), which gets the keys.
    search: Any = None
    #: The text is a recalled history entry, unchanged since (the chat shows no completion for it).
    recalled = False
    #: How the app is suspended while the editor runs (a test without a terminal replaces it).
    suspend_app: Callable[[], AbstractContextManager[Any]] | None = None

    def __init__(self, *, placeholder: str = "", **kwargs) -> None:
        super().__init__(soft_wrap=True, tab_behavior="focus", show_line_numbers=False, highlight_cursor_line=False,
                         placeholder=placeholder, **kwargs)
        self._pending_older: str | None = None  # Up pressed while the past prompts load: the text then
        self.pastes: dict[str, str] = {}  # "[Pasted text #N +M lines]" -> the text (see _on_paste)
        self._pastes_made = 0
        self._search_bar: Any = None

    # TextArea re-wraps the whole document when its scrollbar comes or goes and on every resize (about
    # 0.5 s each for a 10,000-line paste, which makes the composer grow and its scrollbar appear). The
    # scrollbar's gutter is reserved (scrollbar-gutter: stable) and growing changes only the height:
    # re-wrap only when the wrap width changed.
    def _wrap_is_current(self) -> bool:
        return self.wrap_width == wrapped_width(self)

    def _watch_show_vertical_scrollbar(self) -> None:
        if self.wrap_width and not self._wrap_is_current():
            rewrap(self)
        self.scroll_cursor_visible()

    def _on_resize(self, event: events.Resize | None = None) -> None:
        # (Textual hands the event to a handler that takes one; TextArea's own takes none)
        if self._wrap_is_current() and event is not None:
            event.prevent_default()  # TextArea's ``_on_resize`` (next in the MRO) re-wraps everything
            refresh_size(self)

    @property
    def value(self) -> str:
        return self.text

    @value.setter
    def value(self, text: str) -> None:
        self.load_text(text)
        self.move_cursor(self.document.end)
        self.recalled = False
        self._pending_older = None
        if self.prompt_history is not None:
            self.prompt_history.reset()  # set from outside (sent, an edited queue entry): a browse ends

    def show_text(self, text: str, *, select: tuple[int, int] | None = None, recalled: bool = False) -> None:
        """Show a history entry (or the draft again): the cursor at the end, or ``select`` (offsets in
        ``text``) selected; the history's browse goes on."""
        self.load_text(text)
        if select is not None:
            document = self.document  # a Document (DocumentBase has no index -> location)
            if isinstance(document, Document):
                self.selection = Selection(document.get_location_from_index(select[0]),
                                           document.get_location_from_index(select[1]))
            self.scroll_cursor_visible()
        else:
            self.move_cursor(self.document.end)
        self.recalled = recalled

    def edit(self, edit: Any) -> Any:
        self.recalled = False  # typed, pasted, deleted: the user's text now
        self._pending_older = None
        return super().edit(edit)

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
        if self.search is not None and self._search_key(event):
            event.stop()
            event.prevent_default()
            return
        if not event.is_printable and event.key in self._keys_for("newline"):
            # here, not only through the binding: a binding runs once the key has bubbled up to the app,
            # after the keys that came in the same burst (tmux send-keys, a paste without bracketed
            # paste) were inserted, so "a Ctrl+J b" became "ab\n"
            event.stop()
            event.prevent_default()
            self.action_newline()
            return
        if event.key in ("up", "down", "tab", "enter", "escape") and self.on_completion_key is not None \
                and self.on_completion_key(event.key):
            event.stop()
            event.prevent_default()
            return
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            if self.prompt_history is not None:
                self.prompt_history.record(self.full_text)
            self.recalled = False
            self.post_message(self.Submitted(self, self.text))
            return
        if not event.is_printable and await run_own_binding(self, event.key):
            # now, in typing order (a binding would run after the rest of the burst was inserted)
            event.stop()
            event.prevent_default()

    async def _on_paste(self, event: events.Paste) -> None:
        self._typed()  # TextArea's ``_on_paste`` inserts the whole text after this one
        event.via_composer = True  # type: ignore[attr-defined]  # it bubbles on: the chat screen knows it is in
        if self.search is not None:
            event.stop()
            event.prevent_default()
            self.search.type(event.text.replace("\r", "\n").split("\n", 1)[0])
            return
        text = event.text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.count("\n") + (0 if text.endswith("\n") else 1)
        if lines >= COLLAPSE_PASTE_LINES:
            # a long paste shows as one line (F2 expands it); what is sent, queued or kept is the whole text
            event.prevent_default()
            self._pastes_made += 1
            label = f"[Pasted text #{self._pastes_made} +{lines} lines]"
            self.pastes[label] = text
            self.insert(label)

    def expand_pastes(self, text: str) -> str:
        """``text`` with every collapsed paste's label replaced by the pasted text."""
        for label, pasted in self.pastes.items():
            if label in text:
                text = text.replace(label, pasted)
        return text

    @property
    def full_text(self) -> str:
        """The composer's text with collapsed pastes expanded (what is sent)."""
        return self.expand_pastes(self.text)

    def action_expand_pastes(self) -> None:
        """F2: show the collapsed pastes' text in place."""
        if any(label in self.text for label in self.pastes):
            self.value = self.full_text

    # -- history ---------------------------------------------------------------------------------
    def _search_key(self, event: events.Key) -> bool:
        """A key while the history search runs: True when the search took it. Any other key accepts the
        match and then does what it does (a cursor key moves in it, Ctrl+S steers it)."""
        search, key = self.search, event.key
        if key in self._keys_for("history_search"):
            return False  # the binding steps to an older match
        if key in ("up", "ctrl+r"):
            search.older()
        elif key == "down":
            search.newer()
        elif key == "enter":
            search.accept()
        elif key == "escape":
            search.cancel()
        elif key == "backspace":
            search.backspace()
        elif event.is_printable and event.character:
            search.type(event.character)
        else:
            search.accept()
            return False
        return True

    def _keys_for(self, action: str) -> list[str]:
        """The keys that run this composer's ``action`` now (the app's keymap applied)."""
        return [key for key, active in self.screen.active_bindings.items()
                if active.node is self and active.binding.action == action]

    def _at_row(self, last: bool) -> bool:
        wrapped = self.wrapped_document
        row = wrapped.location_to_offset(self.cursor_location).y
        return row == (wrapped.height - 1 if last else 0)

    def history_older(self) -> bool:
        """Show the previous history entry; False when there is none (yet: the past sessions' prompts
        may still be loading, and then it is shown when they arrive)."""
        history = self.prompt_history
        if history is None:
            return False
        if hasattr(history, "load"):
            history.on_loaded = self._history_loaded
            history.load()
        text = self.text
        entry = history.older(text)
        if entry is None:
            if getattr(history, "loading", False):
                self._pending_older = text
            return False
        self.show_text(entry, recalled=True)
        return True

    def _history_loaded(self) -> None:
        if self.search is not None:
            self.search.refresh()
        elif self._pending_older is not None and self._pending_older == self.text:
            self._pending_older = None
            self.history_older()

    def history_newer(self) -> bool:
        history = self.prompt_history
        if history is None or not history.browsing:
            return False
        entry = history.newer(self.text)
        if entry is None:
            return False
        self.show_text(entry, recalled=history.browsing)
        return True

    def action_history_search(self) -> None:
        """Start the history search (or, while it runs, step to an older match)."""
        if self.search is not None:
            self.search.older()
            return
        if self.prompt_history is None or self.read_only:
            return
        from dsh_tui.ui.history import HistorySearch
        from dsh_tui.ui.widgets.history_search import HistorySearchBar

        if hasattr(self.prompt_history, "load"):
            self.prompt_history.on_loaded = self._history_loaded
            self.prompt_history.load()
        bar = self._search_bar
        if bar is None or not bar.is_attached:
            bar = self._search_bar = HistorySearchBar(id="history-search")
            if isinstance(self.parent, Widget):  # (the composer's parent: the chat screen)
                self.parent.mount(bar, before=self)
        keys = self._keys_for("history_search")
        name = "+".join(p.capitalize() if len(p) > 1 else p.upper() for p in keys[0].split("+")) if keys else ""
        self.search = HistorySearch(self, self.prompt_history, bar, name)

    # -- the editor ------------------------------------------------------------------------------
    def action_edit_in_editor(self) -> None:
        """The draft in ``$VISUAL`` / ``$EDITOR`` (the app suspended meanwhile); the saved text replaces it."""
        from dsh_tui.ui.editor import edit_text

        if self.search is not None:
            self.search.accept()
        draft = self.text
        try:
            with (self.suspend_app or self.app.suspend)():
                result = edit_text(draft)
        except SuspendNotSupported:
            self.app.notify("Ctrl+G needs a terminal to run the editor in: the draft is unchanged.",
                            severity="warning", timeout=6)
            return
        if result.text is None:
            self.app.notify(result.problem, severity="warning", timeout=6)
            return
        if result.text != draft:
            self.value = result.text

    #: Called by Up on the composer's top row; True when it took the key (the chat focuses its queue).
    on_top_edge: Callable[[], bool] | None = None

    def action_cursor_up(self, select: bool = False) -> None:
        if not select:
            if self.recalled and self.history_older():
                return  # browsing: a recalled entry unchanged, from any row
            if self._at_row(last=False) and not self.recalled:
                if self.on_top_edge is not None and self.on_top_edge():
                    return
                if self.history_older():
                    return
        super().action_cursor_up(select)

    def action_cursor_down(self, select: bool = False) -> None:
        if not select and (self.recalled or self._at_row(last=True)) and self.history_newer():
            return
        super().action_cursor_down(select)

    def action_newline(self) -> None:
        if not self.read_only:
            result = self.replace("\n", *self.selection, maintain_selection_offset=False)
            self.move_cursor(result.end_location)
