"""The chat composer: a multi-line TextArea with the chat's keys (send, newline, history, steer)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.widgets import TextArea

from dsh_tui.ui.textual_compat import refresh_size, rewrap, wrapped_width


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
        return self.wrap_width == wrapped_width(self)

    def _watch_show_vertical_scrollbar(self) -> None:
        if self.wrap_width and not self._wrap_is_current():
            rewrap(self)
        self.scroll_cursor_visible()

    def _on_resize(self, event: events.Resize) -> None:
        if self._wrap_is_current():
            event.prevent_default()  # TextArea's ``_on_resize`` (next in the MRO) re-wraps everything
            refresh_size(self)

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
