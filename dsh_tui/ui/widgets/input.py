"""The light one-line input: keystrokes repaint only the input, never the screen."""

from __future__ import annotations

from textual import events
from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import Input

from dsh_tui.ui.textual_compat import run_own_binding


class LightInput(Input):
    """Input whose keystrokes repaint only itself.

    The stock Input sets ``virtual_size`` (a layout reactive) on every keystroke, which reflows the
    whole screen (118 ms p50 per keystroke with a long transcript, when this was measured). Repaint only.
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
        if not event.is_printable and await run_own_binding(self, event.key):
            # now, in typing order: as a binding it ran after the rest of the burst was inserted
            event.stop()
            event.prevent_default()
            return
        await super()._on_key(event)

    def _on_paste(self, event: events.Paste) -> None:
        # Textual dispatches a message to the handler of every class in the MRO: Input's own
        # ``_on_paste`` runs after this one (calling it here too inserted every paste twice)
        self._typed()
