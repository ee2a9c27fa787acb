"""``dsh_tui.config.binding_ids`` (what the settings check accepts in ``[keymap]``) is exactly the set of binding
ids the app's screens and widgets declare."""

from __future__ import annotations

import importlib
import pkgutil

import dsh_tui.ui
from dsh_tui.config.binding_ids import BINDING_IDS


def _declared() -> set[str]:
    from textual.binding import Binding
    from textual.dom import DOMNode

    for mod in pkgutil.walk_packages(dsh_tui.ui.__path__, "dsh_tui.ui."):
        importlib.import_module(mod.name)
    ids: set[str] = set()
    todo = [DOMNode]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if not cls.__module__.startswith("dsh_tui.ui"):
            continue
        for b in cls.__dict__.get("BINDINGS", []):
            if isinstance(b, Binding) and b.id:
                ids.add(b.id)
    return ids


def test_the_settings_know_every_binding_id_of_the_app():
    assert _declared() == set(BINDING_IDS)
