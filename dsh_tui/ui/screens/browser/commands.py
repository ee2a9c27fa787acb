"""The session browser's own entries in the command palette (with the app's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from textual.command import DiscoveryHit, Hit, Hits, Provider


@runtime_checkable
class BrowserActions(Protocol):
    """What the entries run: the actions of ``screen.BrowserScreen`` (which imports this module)."""

    def chat_below(self) -> Any: ...
    def action_back(self) -> None: ...
    def action_new_session(self) -> None: ...
    def action_trash(self) -> None: ...
    def action_archived(self) -> None: ...
    def action_toggle_scope(self) -> None: ...
    def action_toggle_search(self) -> None: ...


class BrowserCommands(Provider):
    """The browser's own entries in the command palette (with the app's)."""

    def _commands(self) -> list[tuple[str, str, Callable[[], Any]]]:
        screen = self.screen
        if not isinstance(screen, BrowserActions):
            return []
        out = []
        if screen.chat_below() is not None:
            out.append(("Back to chat", "Return to the session open in the chat", screen.action_back))
        out += [("New session", "Start a new session in this workspace", screen.action_new_session),
                ("Trash", "Show the trashed sessions (Enter restores)", screen.action_trash),
                ("Archive", "Show the archived sessions (Enter unarchives)", screen.action_archived),
                ("Toggle scope", "This workspace / all workspaces", screen.action_toggle_scope),
                ("Search content", "Full-text search of messages and tool output", screen.action_toggle_search)]
        return out

    async def discover(self) -> Hits:
        for name, help_text, callback in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
