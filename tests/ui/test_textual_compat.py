"""The Textual private-API guard: every private name dsh-tui touches exists on the installed Textual,
and another Textual version is refused with one clear line."""

from __future__ import annotations

import importlib

import pytest

from dsh_tui.ui import textual_compat
from dsh_tui.ui.textual_compat import PRIVATE_NAMES, TESTED_TEXTUAL, TextualVersionError, check_version


def _instance(cls):
    """An instance for names set in ``__init__`` (where the class can be built without arguments)."""
    from textual.app import App
    from textual.css.stylesheet import Stylesheet
    from textual.document._document import Document
    from textual.document._wrapped_document import WrappedDocument
    from textual.widget import Widget

    if cls is Stylesheet:
        return Stylesheet()
    if cls is App:
        return App()
    if cls is Widget:
        return Widget()
    if cls is WrappedDocument:
        return WrappedDocument(Document("x"), width=10)
    return None


@pytest.mark.parametrize(("path", "name"), PRIVATE_NAMES, ids=[f"{p.rsplit('.', 1)[1]}.{n}" for p, n in PRIVATE_NAMES])
def test_every_private_name_exists_on_the_installed_textual(path, name):
    module, _, cls_name = path.rpartition(".")
    cls = getattr(importlib.import_module(module), cls_name)
    if hasattr(cls, name):
        return
    instance = _instance(cls)
    assert instance is not None and hasattr(instance, name), f"{path}.{name} is gone from this Textual"


async def test_the_instance_only_names_exist_on_a_running_app():
    """``_notifications``, ``_bindings``, ``_anchored`` and ``_anchor_released`` are set in ``__init__``:
    check them on a real app and widget, through the functions that use them."""
    from textual.app import App
    from textual.containers import VerticalScroll

    class Tiny(App):
        def compose(self):
            yield VerticalScroll(id="v")

    app = Tiny()
    async with app.run_test() as pilot:
        view = app.query_one("#v")
        view.anchor()
        await pilot.pause()
        assert textual_compat.is_following(view) is True
        assert textual_compat.key_is_bound(view, "pageup") is True
        assert textual_compat.key_is_bound(view, "x") is False
        app.notify("hello")
        await pilot.pause()
        assert [n.message for n in textual_compat.notifications(app)] == ["hello"]
        textual_compat.unnotify(app, next(iter(textual_compat.notifications(app))))
        assert list(textual_compat.notifications(app)) == []


def test_another_textual_version_is_refused_with_one_line():
    with pytest.raises(TextualVersionError) as err:
        check_version("9.0.0")
    assert str(err.value) == (f"dsh-tui needs textual {TESTED_TEXTUAL} (found 9.0.0): reinstall it with "
                              f"pip install 'textual=={TESTED_TEXTUAL}'")
    check_version(TESTED_TEXTUAL)  # the tested one passes
    check_version()  # and so does the installed one


def test_the_tested_version_is_the_pinned_one():
    import tomllib
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert f"textual=={TESTED_TEXTUAL}" in pyproject["project"]["dependencies"]


def test_no_private_textual_use_outside_the_compat_module():
    """Only ``ui/textual_compat.py`` reaches into Textual's private attributes (the overridden handler
    and watcher methods are listed in ``PRIVATE_NAMES`` and checked above)."""
    import re
    from pathlib import Path

    ui = Path(textual_compat.__file__).parent
    accessed = {name for _, name in PRIVATE_NAMES}
    overrides = re.compile(r"def (_on_key|_on_paste|_on_resize|_on_notify|_watch_show_vertical_scrollbar)\(")
    offenders = []
    for path in ui.rglob("*.py"):
        if path.name == "textual_compat.py":
            continue
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if overrides.search(code) or "super()._on_" in code:
                continue  # an override of a listed handler (and its call to the one it extends)
            for name in accessed:
                # ``_width`` is also a common name of dsh-tui's own: the private one is the wrapped document's
                pattern = r"wrapped_document\._width\b" if name == "_width" else rf"\.{name}\b"
                if re.search(pattern, code):
                    offenders.append(f"{path.relative_to(ui)}:{lineno}: {line.strip()}")
            if "textual.widgets._" in code or "textual.document._" in code:
                offenders.append(f"{path.relative_to(ui)}:{lineno}: {line.strip()}")
    assert offenders == []
