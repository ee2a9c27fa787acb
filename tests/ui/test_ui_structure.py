"""The UI's screens are compositions, not mixins (issue #28 item 3): no ``*Mixin`` class in ``dsh_tui/ui``, the
chat screen composed of small controllers, and no module there over 600 lines."""

from __future__ import annotations

import ast
from pathlib import Path

UI = Path(__file__).resolve().parents[2] / "dsh_tui" / "ui"


def _modules() -> list[Path]:
    return sorted(UI.rglob("*.py"))


def test_no_mixin_classes_in_the_ui():
    found = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and (node.name.endswith("Mixin") or any(
                    isinstance(b, ast.Name) and b.id.endswith("Mixin") for b in node.bases)):
                found.append(f"{path.relative_to(UI)}: {node.name}")
    assert found == []


def test_the_chat_screen_is_composed_of_controllers():
    from dsh_tui.ui.screens.chat import ChatScreen

    bases = [b.__name__ for b in ChatScreen.__mro__[1:] if b.__module__.startswith("dsh_tui")]
    assert bases == []  # only Textual's Screen above it
    for name in ("pump", "keys", "view", "modes", "questions", "commands", "completer", "approvals", "sending",
                 "steering", "subagent_cards", "terminal", "turns"):
        assert hasattr(ChatScreen, name) or name in ChatScreen.__init__.__code__.co_names, name
