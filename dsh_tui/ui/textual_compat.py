"""Every use of Textual's private API, in one place, with the Textual version it was tested on.

Textual is pinned exactly (``pyproject.toml``). What dsh-tui needs that Textual has no public API for
goes through a function here, which names the private attribute it touches; ``PRIVATE_NAMES`` lists
them all (with the handler and watcher methods dsh-tui widgets override), and
``tests/ui/test_textual_compat.py`` checks every one still exists on the installed Textual. On any other
Textual version the guard below fails loudly at import, naming both versions, instead of a widget
misbehaving somewhere later: upgrading Textual means re-running that test, fixing what it names, and
changing ``TESTED_TEXTUAL``.

Why each trick is worth it (figures in ``docs/performance.md``):

- the stylesheet hook caches parsed CSS between runs: 25-40 ms of every start-up;
- ``scroll_update``, the wrap-width check and the resize/scrollbar overrides skip screen-wide reflows
  (a 10,000-line paste re-wrapped for ~0.5 s on every scrollbar change; a session list reflowed the
  screen on every refresh);
- notifications and toasts: a notice known before the first screen is on its first frame, and one
  toast per kind replaces the last instead of stacking;
- the key and paste handler overrides make keystrokes repaint only the input (a screen-wide reflow
  per keystroke took 118 ms p50 with a long transcript), and ``paint_now`` paints a keystroke without
  waiting for the next 60 Hz frame tick (the parent's key echo p95 while 8 subagents stream);
- ``run_own_binding``: an input's editing keys (Backspace, arrows, Ctrl+W…) act in the order they were
  typed, not after the printable keys of the same burst;
- ``fast_wrap``: a line that fits the width is not run through the word wrapper (a 10,000-line paste
  spent most of its ~0.4 s in it, for lines that needed no wrapping).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import textual
from textual.cache import LRUCache
from textual.css.stylesheet import Stylesheet
from textual.geometry import Size

from dsh_tui.session.errors import DshError

#: The Textual release every private use below was written and tested against.
TESTED_TEXTUAL = "8.2.8"

#: Every private Textual name dsh-tui touches or overrides: ``(class path, attribute)``. The compat test
#: checks each one exists on the installed Textual (attributes set in ``__init__`` are checked on an
#: instance).
PRIVATE_NAMES: tuple[tuple[str, str], ...] = (
    ("textual.app.App", "_driver"),
    ("textual.css.stylesheet.Stylesheet", "_parse_rules"),
    ("textual.css.stylesheet.Stylesheet", "_parse_cache"),
    ("textual.css.stylesheet.Stylesheet", "_variables"),
    ("textual.app.App", "_refresh_truecolor_filter"),
    ("textual.app.App", "_notifications"),
    ("textual.app.App", "_unnotify"),
    ("textual.app.App", "_on_notify"),
    ("textual.widgets._toast.ToastRack", "_toast_id"),
    ("textual.widget.Widget", "_bindings"),
    ("textual.widget.Widget", "_on_key"),
    ("textual.widget.Widget", "_anchored"),
    ("textual.widget.Widget", "_anchor_released"),
    ("textual.scroll_view.ScrollView", "_scroll_update"),
    ("textual.widgets.Input", "_on_key"),
    ("textual.widgets.Input", "_on_paste"),
    ("textual.widgets.TextArea", "_on_key"),
    ("textual.widgets.TextArea", "_on_paste"),
    ("textual.widgets.TextArea", "_on_resize"),
    ("textual.widgets.TextArea", "_watch_show_vertical_scrollbar"),
    ("textual.widgets.TextArea", "_rewrap_and_refresh_virtual_size"),
    ("textual.widgets.TextArea", "_refresh_size"),
    ("textual.document._wrapped_document.WrappedDocument", "_width"),
    ("textual.document._wrapped_document", "compute_wrap_offsets"),
    ("textual.document._wrapped_document", "get_tab_widths"),
    ("textual.document._wrapped_document.WrappedDocument", "_offset_to_line_info"),
    ("textual.screen.Screen", "_on_update"),
    ("textual.screen.Screen", "_on_timer_update"),
    ("textual.screen.Screen", "_modal_binding_chain"),
)


class TextualVersionError(DshError):
    """The installed Textual is not the one dsh-tui's private-API uses were tested on."""


def check_version(found: str | None = None) -> None:
    """Fail loudly (one line, naming both versions) on a Textual other than ``TESTED_TEXTUAL``.

    The installed release is told by its ``dist-info`` directory beside the package (one ``stat``):
    ``textual.__version__`` imports ``importlib.metadata``, ~20 ms of start-up, so it is asked only when
    that directory is not there (another version, or an unusual install)."""
    if found is None:
        site = Path(textual.__file__).resolve().parent.parent
        if (site / f"textual-{TESTED_TEXTUAL}.dist-info").is_dir():
            return
        found = textual.__version__
    if found != TESTED_TEXTUAL:
        raise TextualVersionError(
            f"dsh-tui needs textual {TESTED_TEXTUAL} (found {found}): reinstall it with "
            f"pip install 'textual=={TESTED_TEXTUAL}'")


check_version()


# -- CSS -------------------------------------------------------------------------------------------
class HookedStylesheet(Stylesheet):
    """A ``Stylesheet`` whose rule parsing goes through ``parse_rules``, which a subclass may override
    (``ui/themes.py`` caches the parsed rules between runs). ``memo`` is Textual's per-run parse cache."""

    def _parse_rules(self, css: str, read_from: Any, is_default_rules: bool = False, tie_breaker: int = 0,
                     scope: str = "") -> list[Any]:
        return self.parse_rules(css, read_from, is_default_rules, tie_breaker, scope)

    def parse_rules(self, css: str, read_from: Any, is_default_rules: bool, tie_breaker: int,
                    scope: str) -> list[Any]:
        return super()._parse_rules(css, read_from, is_default_rules, tie_breaker, scope)

    @property
    def variables(self) -> dict[str, str]:
        """The CSS variables the rules are parsed with (``Stylesheet._variables``: the theme's)."""
        return self._variables

    @property
    def memo(self) -> LRUCache[Any, list[Any]]:
        return self._parse_cache


# -- the app: colours and notifications --------------------------------------------------------------
def refresh_ansi_filter(app: Any, ansi_theme: Any) -> None:
    """Rebuild the app's true-colour filter for a new ANSI theme (``App._refresh_truecolor_filter``)."""
    app._refresh_truecolor_filter(ansi_theme)


def notifications(app: Any) -> Any:
    """The app's current notifications (``App._notifications``: iterable, ``add``, ``clear``)."""
    return app._notifications


def unnotify(app: Any, notification: Any) -> None:
    """Remove one notification and its toast without a refresh (``App._unnotify``)."""
    app._unnotify(notification, refresh=False)


async def mount_toasts(screen: Any, notes: Any) -> None:
    """Mount the toasts of ``notes`` on ``screen``'s toast rack now (Textual mounts them from a callback
    that runs after the screen's first frame)."""
    from textual.widgets._toast import Toast, ToastHolder, ToastRack

    for rack in screen.children:
        if isinstance(rack, ToastRack):
            rack.display = True
            await rack.mount_all(ToastHolder(Toast(note), id=rack._toast_id(note))
                                 for note in notes if not note.has_expired)
            break


# -- widgets ---------------------------------------------------------------------------------------
def paint_now(screen: Any, only: Any = None) -> None:
    """Lay out and paint ``screen``'s pending updates now (``Screen._on_timer_update``) instead of at its
    next frame tick: Textual paints at most 60 times a second on a timer, so while a stream keeps the
    screen busy a keystroke waited up to 16.7 ms for its frame. Its ``call_after_refresh`` callbacks run
    next, as after a timer paint.

    ``only``: a widget whose repaint this is for (the composer after a keystroke). When nothing needs a
    layout, only ``only`` and its descendants are painted now; the other widgets waiting for a repaint (a
    streaming answer's new lines, whose Markdown renders in that paint) keep it for the next frame tick,
    so the keystroke's frame costs the composer's lines alone."""
    if not screen.is_current:
        return
    dirty = screen._dirty_widgets
    if only is not None and dirty and not screen.app._batch_count and not (
            screen._layout_required or screen._scroll_required or screen._repaint_required
            or screen._recompose_required):
        later = {w for w in dirty if w is not only and only not in w.ancestors}
        if later and len(later) < len(dirty):
            dirty.difference_update(later)
            screen._update_timer.pause()
            screen._compositor.update_widgets(dirty)
            screen._compositor_refresh()  # (clears the set)
            dirty.update(later)
            screen._update_timer.resume()  # their paint: the next tick
            if screen._callbacks:
                screen.call_next(screen._invoke_and_clear_callbacks)
            return
    screen._on_timer_update()


def skip_first_resume_restyle(screen: Any, event: Any) -> None:
    """Call from a screen's ``on_screen_resume`` (dispatched before ``Screen``'s own handler): its first resume
    does not restyle every node again.

    Textual styles each widget as it mounts, then restyles the whole screen when the pushed screen resumes
    (``ScreenResume.refresh_styles``), the same rules over the same nodes: ~10 M instructions of the chat's
    first frame.
    Later resumes (back from another screen, after a theme change) restyle as Textual does."""
    if not getattr(screen, "_dsh_resumed", False):
        screen._dsh_resumed = True
        event.refresh_styles = False


async def run_own_binding(widget: Any, key: str) -> bool:
    """Run ``widget``'s own (non-priority) binding for ``key`` now, from its key handler; True when one
    ran (``Screen._modal_binding_chain``: the bindings Textual itself would check, keymap applied). Textual runs a widget's bindings only once the key has bubbled up to the
    app, after the keys that arrived in the same read were inserted: Backspace then ``d`` in one burst (a
    fast typist, a terminal over ssh) inserted the ``d`` and then deleted it."""
    for namespace, bindings in widget.screen._modal_binding_chain:  # the user's keymap applied
        if namespace is not widget:
            return False  # the key was not the focused widget's
        for binding in bindings.key_to_bindings.get(key, ()):
            if not binding.priority and await widget.app.run_action(binding.action, widget):
                return True
        return False
    return False


def key_is_bound(widget: Any, key: str) -> bool:
    """Whether ``widget`` has its own binding for ``key`` (``Widget._bindings``)."""
    return key in widget._bindings.key_to_bindings


def wrapped_width(text_area: Any) -> int:
    """The width a ``TextArea``'s document was last wrapped at (``WrappedDocument._width``)."""
    return text_area.wrapped_document._width


def rewrap(text_area: Any) -> None:
    """Re-wrap a ``TextArea``'s document at its current width (``TextArea._rewrap_and_refresh_virtual_size``)."""
    text_area._rewrap_and_refresh_virtual_size()


def refresh_size(text_area: Any) -> None:
    """Recompute a ``TextArea``'s virtual size without re-wrapping (``TextArea._refresh_size``)."""
    text_area._refresh_size()


def scroll_update(view: Any, virtual_size: Size) -> None:
    """Update a ``ScrollView``'s scrollbars for a new virtual size without the screen-wide reflow that
    setting ``virtual_size`` triggers (``ScrollView._scroll_update``)."""
    view._scroll_update(virtual_size)


def is_following(widget: Any) -> bool:
    """Anchored to the bottom and not released by a user scroll (``Widget._anchored``,
    ``Widget._anchor_released``)."""
    return widget._anchored and not widget._anchor_released


def fast_wrap() -> None:
    """Wrap a ``TextArea`` line only when it is wider than the wrap width: the ``compute_wrap_offsets``
    that ``WrappedDocument`` calls per line returns no offsets for a line that fits, so that answer is
    given without chunking the line into words (ASCII without tabs: by its length; other text: by its
    cell length); ``get_tab_widths`` of a line without a tab is the line itself, without a regex
    pass; and ``WrappedDocument.height`` (asked for every line rendered) is the length of its row index
    (``_offset_to_line_info``: one entry per wrapped row) instead of a sum over every line.
    Idempotent; the same results for every line."""
    import textual.document._wrapped_document as wrapped

    original = wrapped.compute_wrap_offsets
    if getattr(original, "fits_fast", False):
        return
    from textual._cells import cell_len

    tab_widths = wrapped.get_tab_widths

    def get_tab_widths(line: str, tab_size: int = 4) -> list[tuple[str, int]]:
        if "\t" not in line:
            return [(line, 0)] if line else []
        return tab_widths(line, tab_size)

    def compute_wrap_offsets(text: str, width: int, tab_size: int, fold: bool = True,
                             precomputed_tab_sections: list[tuple[str, int]] | None = None) -> list[int]:
        if width > 0 and "\t" not in text and (len(text) if text.isascii() else cell_len(text)) <= width:
            return []
        return original(text, width, tab_size, fold, precomputed_tab_sections)

    compute_wrap_offsets.fits_fast = True  # type: ignore[attr-defined]
    wrapped.compute_wrap_offsets = compute_wrap_offsets
    wrapped.get_tab_widths = get_tab_widths
    wrapped.WrappedDocument.height = property(  # type: ignore[assignment]
        lambda self: len(self._offset_to_line_info), doc="The height of the wrapped document.")


def terminal_write(app: Any, data: str) -> bool:
    """Write an escape sequence straight to the terminal (``App._driver``: Textual writes its own OSC 52 so;
    there is no public way); False when there is no terminal (a headless test app)."""
    driver = getattr(app, "_driver", None)
    if driver is None or getattr(app, "is_headless", False):
        return False
    driver.write(data)
    driver.flush()
    return True
