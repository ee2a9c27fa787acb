"""The app's entries in the command palette: models (this session / the default for new sessions), reasoning
effort, permission mode, themes and the screens. ``PaletteCommands`` is the app's ``palette``
(``DshApp.get_system_commands`` adds its entries to Textual's).
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from typing import TYPE_CHECKING, Any

from textual.app import SystemCommand
from textual.screen import Screen

if TYPE_CHECKING:
    from dsh_tui.ui.app import DshApp


class PaletteCommands:
    """The app's own palette entries (see the module docstring)."""

    def __init__(self, app: DshApp, screens: Container[str]) -> None:
        self.app = app
        self.screens = screens  # the names of the screens the app can open (``app.SCREEN_FACTORIES``)

    def system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The entries after Textual's own (``App.get_system_commands``)."""
        chat = self.app.chat
        if chat is not None and screen is chat:
            yield SystemCommand("Cycle tool cards", "Collapsed → expanded → hidden", chat.action_cycle_cards)
            yield SystemCommand("Toggle reasoning", "Show or hide thinking rows", chat.action_toggle_reasoning)
            yield SystemCommand("Cancel turn", "Stop the running turn", chat.action_cancel)
            yield SystemCommand("Back to bottom", "Follow the transcript again", chat.action_back_to_bottom)
            yield SystemCommand("Load earlier items", "Mount older transcript items", chat.action_load_earlier)
        live = self._live_provider() if chat is not None and screen is chat else None
        for provider, name in self._model_routes():
            where = f" ({provider})" if provider else ""
            if live is not None and (not provider or provider == live):
                yield SystemCommand(f"Model: {name}{where} · this session", "Use this model for this session",
                                    lambda name=name: self.use_model_now(name))
            yield SystemCommand(f"Model: {name}{where} · new sessions",
                                "Use this model for new sessions (default): saved to settings.toml",
                                lambda provider=provider, name=name: self.choose_model(name, provider))
        if live is not None:
            yield from self._turn_commands(chat)
        if "browser" in self.screens:
            yield SystemCommand("Sessions", "Open the session browser", self.app.action_browser)
        if chat is not None and screen is chat and "timeline" in self.screens:
            yield SystemCommand("Timeline", "Lanes, event ledger and request inspector", self.app.action_timeline)
        if chat is not None and screen is chat:
            yield SystemCommand("MCP servers", "The session's MCP servers: state, tools, reconnect (/mcp)",
                                self.app.action_mcp)

    def _turn_commands(self, chat: Any) -> Iterable[SystemCommand]:
        """Rewind, retry, the permission mode and this session's reasoning effort (ui/screens/rewind.py)."""
        from dsh_tui.runtime.approval import PRESETS

        yield SystemCommand("Rewind", "Fork before an earlier prompt and edit it (Esc Esc)",
                            lambda: self.app.call_later(chat.action_rewind))
        yield SystemCommand("Retry failed turn", "Send the failed last turn's prompt again (F5, /retry)",
                            chat.action_retry)
        for preset in PRESETS:
            yield SystemCommand(f"Permission mode: {preset}", "This session, from the next tool call (F4 cycles)",
                                lambda preset=preset: chat.bridge.call(lambda h: h.set_preset(preset)))
        harness = chat.bridge.harness
        model, efforts = harness.model_efforts() if harness is not None else (None, ())
        for effort in efforts if model is not None else ():  # (a model the provider describes has efforts)
            yield SystemCommand(f"Reasoning effort: {effort} · this session", f"{model} with effort {effort}",
                                lambda effort=effort, model=model: self.app.bridge.call(
                                    lambda h: h.set_model(model, effort)))

    def _model_routes(self) -> list[tuple[str | None, str]]:
        """(provider or None, model) for every model the settings list (``models`` has no provider)."""
        routes: list[tuple[str | None, str]] = []
        try:
            from dsh_tui.config import load_settings
            from dsh_tui.llm.registry import available_models

            routes += [(provider, model) for provider, model in available_models(load_settings())]
        except Exception:  # noqa: BLE001 - a broken settings file: offer what we have
            pass
        known = {model for _provider, model in routes}
        routes += [(None, name) for name in self.app.settings.models() if name not in known]
        return list(dict.fromkeys(routes))

    def _live_provider(self) -> str | None:
        """The provider of the chat's live session (None: no session can switch models now)."""
        harness = self.app.bridge.harness
        if harness is None or not harness.live() or harness.read_only:
            return None
        return harness.provider_name()

    def use_model_now(self, name: str) -> None:
        """Switch the live session to ``name`` from its next request; the settings are not touched."""
        harness = self.app.bridge.harness
        if harness is None or not harness.live():
            self.app.notify("No session is running.", severity="warning", timeout=4)
            return
        self.app.bridge.call(lambda h: h.set_model(name))
        self.app.notify(f"This session now uses {name}", timeout=3)

    def choose_model(self, name: str, provider: str | None = None) -> None:
        """Save (provider, model) as the default route of new sessions; the live session is not touched."""
        self.app.settings.set("default.model", name)
        if provider:
            self.app.settings.set("default.provider", provider)
        where = f" ({provider})" if provider else ""
        self.app.notify(f"New sessions will use {name}{where} (saved as the default in settings.toml)", timeout=4)
