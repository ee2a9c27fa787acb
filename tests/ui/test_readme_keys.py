"""The README's keys table says what the app binds: every Ctrl/Shift/F/Page key it names is bound in the
chat (or by the app, the composer, a selected item, the search bar), and the chat's main bindings
(scrolling, browser, timeline, help, quit, ...) each have their key in the table."""

from __future__ import annotations

import re
from pathlib import Path

from textual.binding import Binding
from textual.screen import Screen

from dsh_tui.ui.app import DshApp
from dsh_tui.ui.screens.chat import ChatScreen
from dsh_tui.ui.widgets.composer import Composer
from dsh_tui.ui.widgets.searchbar import SearchInput
from dsh_tui.ui.widgets.selectable import ITEM_BINDINGS

README = Path(__file__).resolve().parents[2] / "README.md"
KEY = re.compile(r"\b(?:Ctrl|Shift)\+\w+|\bF\d+\b|\bPageUp\b|\bPageDown\b|\bEsc\b")
# the chat's bindings a user needs to find without F1: each one's key must be in the README's table
MAIN = ("composer.newline", "composer.history_search", "composer.editor", "composer.steer", "chat.cancel",
        "chat.retry", "chat.permission", "chat.pageup", "chat.pagedown", "chat.bottom", "chat.cards",
        "chat.reasoning", "chat.find", "app.browser", "app.timeline", "app.help", "app.quit")


def key_column() -> list[str]:
    text = README.read_text(encoding="utf-8")
    table = text.split("| key | action |", 1)[1].split("\n\n", 1)[0]
    return [row.split("|")[1].strip() for row in table.splitlines()[2:] if row.startswith("|")]


def bindings() -> list[Binding]:
    found = [*DshApp.BINDINGS, *ChatScreen.BINDINGS, *Composer.BINDINGS, *ITEM_BINDINGS, *SearchInput.BINDINGS,
             *Screen.BINDINGS, Binding(DshApp.COMMAND_PALETTE_BINDING, "command_palette")]
    return [b for b in found if isinstance(b, Binding)]


def keys_of(binding: Binding) -> set[str]:
    return {k.strip() for k in binding.key.split(",")}


def textual_name(readme_key: str) -> str:
    return "escape" if readme_key == "Esc" else readme_key.lower()


def test_every_key_the_readme_names_is_bound():
    bound = set().union(*(keys_of(b) for b in bindings()))
    named = [k for cell in key_column() for k in KEY.findall(cell)]
    assert len(named) >= 15, named
    unbound = [k for k in named if textual_name(k) not in bound]
    assert not unbound, f"README names keys nothing binds: {unbound}"


def test_the_chats_main_bindings_are_in_the_readme():
    named = {textual_name(k) for cell in key_column() for k in KEY.findall(cell)}
    by_id = {b.id: b for b in bindings() if b.id}
    missing = [i for i in MAIN if not keys_of(by_id[i]) & named]
    assert not missing, f"bindings the README's keys table does not list: {missing}"
