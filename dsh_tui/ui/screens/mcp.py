"""The ``/mcp`` panel: the live session's MCP servers with their state, and reconnecting one.

Opened from the command palette ("MCP servers"). Rows are read on the harness loop through the bridge
(``AgentHarness.mcp_servers``) and refreshed twice a second while the panel is open: a server that is
connecting turns ready (with its tool count), failed (with the reason) or reconnecting in place.
Enter (or a click) on a row reconnects that server now; Esc closes the panel.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from dsh_tui.extensions.commands import mcp_notes

NONE_CONFIGURED = ("No MCP servers configured. Add [mcp.servers.<name>] to settings.toml "
                   "or start with --mcp NAME=COMMAND.")
NO_SESSION = "No live session: MCP servers connect with a running session."
STATE_STYLE = {"ready": "green", "failed": "red", "reconnecting": "yellow", "connecting": "yellow", "needs-login": "yellow",
               "disabled": "dim", "closed": "dim"}


def _middle(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters in the middle (a command line keeps its program and its end)."""
    if len(text) <= width:
        return text
    keep = max(1, width - 1)
    return text[: keep // 2] + "…" + text[len(text) - (keep - keep // 2):]


def row_text(row: Any, width: int = 90) -> Text:
    """One server: ``name  state · detail`` and, dim, its command line or URL (one line, cut to fit)."""
    text = Text()
    text.append(row.name, style="bold")
    text.append("  ")
    detail = row.text[len(row.name) + 2:]
    text.append(detail, style=STATE_STYLE.get(row.state, ""))
    where = f"{row.transport}: "
    text.append(f"\n  {where}{_middle(row.target, max(10, width - len(where) - 2))}", style="dim")
    tools = list(getattr(row, "tools", None) or [])
    if tools:  # the names, as many as fit on one line
        shown: list[str] = []
        room = width - len("  tools: ") - 12
        for name in tools:
            if shown and sum(len(n) + 2 for n in shown) + len(name) > room:
                break
            shown.append(name)
        more = f", … +{len(tools) - len(shown)} more" if len(shown) < len(tools) else ""
        text.append(f"\n  tools: {', '.join(shown)}{more}")
    prompts = list(getattr(row, "prompts", None) or [])
    if prompts:  # its prompts as the slash commands that send them
        text.append(f"\n  prompts: {_middle(', '.join('/' + p for p in prompts), max(10, width - 11))}")
    for note in mcp_notes(row):
        text.append(f"\n  note: {_middle(note, max(10, width - 8))}", style="dim")
    return text


class McpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    McpScreen { align: center middle; }
    McpScreen > Vertical { width: 100; max-width: 95%; height: auto; max-height: 85%;
        border: thick $primary; background: $panel; padding: 0 1; }
    McpScreen #title { text-style: bold; padding: 0 0 1 0; }
    McpScreen #hint { color: $text-muted; padding: 1 0 0 0; }
    McpScreen OptionList { height: auto; max-height: 24; }
    """
    BINDINGS = [Binding("escape", "close", "Close", id="mcp.close"),
                Binding("r", "reconnect", "Reconnect", id="mcp.reconnect")]

    def __init__(self, bridge: Any) -> None:
        super().__init__()
        self.bridge = bridge
        self.rows: list[Any] = []
        self._loaded = False

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("MCP servers", id="title")
            yield OptionList(id="servers")
            yield Static("", id="hint")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()
        self.refresh_rows()
        self.set_interval(0.5, self.refresh_rows)

    def refresh_rows(self) -> None:
        harness = self.bridge.harness
        if harness is None or not harness.live():
            self._show(None)
            return
        future = self.bridge.call(lambda h: h.mcp_servers())
        if future is None:
            self._show(None)
            return
        app = self.app

        def done(f: Any) -> None:
            try:
                rows = f.result()
            except BaseException:  # noqa: BLE001 - the session went away
                rows = None
            try:
                app.call_from_thread(self._show, rows)
            except RuntimeError:  # the app is closing
                pass

        future.add_done_callback(done)

    def _show(self, rows: list[Any] | None) -> None:
        if not self.is_attached:
            return
        options = self.query_one(OptionList)
        hint = self.query_one("#hint", Static)
        self._loaded = True
        if not rows:
            self.rows = []
            if options.option_count:
                options.clear_options()
            hint.update(NO_SESSION if rows is None else NONE_CONFIGURED)
            return
        same = [r.name for r in rows] == [r.name for r in self.rows]
        self.rows = list(rows)
        highlighted = options.highlighted
        width = max(20, (options.size.width or 90) - 4)
        if same and options.option_count == len(rows):
            for i, row in enumerate(rows):
                options.replace_option_prompt_at_index(i, row_text(row, width))
        else:
            options.clear_options()
            options.add_options([Option(row_text(row, width), id=row.name) for row in rows])
            options.highlighted = highlighted if highlighted is not None and highlighted < len(rows) else 0
        hint.update("enter/r reconnect the highlighted server · esc close")

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self._reconnect(event.option.id or "")

    def action_reconnect(self) -> None:
        options = self.query_one(OptionList)
        if options.highlighted is not None and options.highlighted < len(self.rows):
            self._reconnect(self.rows[options.highlighted].name)

    def _reconnect(self, name: str) -> None:
        if not name:
            return
        if self.bridge.call(lambda h: h.mcp_reconnect(name)) is None:
            self.app.notify("No live session.", severity="warning", timeout=3)
            return
        self.app.notify(f"Reconnecting MCP server {name}", timeout=3)
        self.refresh_rows()

    def action_close(self) -> None:
        self.dismiss(None)
