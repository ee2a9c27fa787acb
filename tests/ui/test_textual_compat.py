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


def _textual_private_names() -> set[str]:
    """Every ``_name`` Textual or Rich defines (a method, or an attribute it assigns)."""
    import ast
    from pathlib import Path

    import rich
    import textual

    names = set()
    for package in (textual, rich):
        for path in Path(package.__file__).parent.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    name = node.name
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                    name = node.attr
                else:
                    continue
                if name.startswith("_") and not name.startswith("__"):
                    names.add(name)
    return names


def test_no_unlisted_private_textual_name_is_read_outside_the_compat_module():
    """A private Textual or Rich attribute read anywhere in ``dsh_tui/ui`` but the compat module — one
    dsh-tui does not define itself — is a straggler (``ui/serve.py``'s textual-serve names are guarded
    there; ``os._exit`` is the standard library's)."""
    import ast
    from pathlib import Path

    ui = Path(textual_compat.__file__).parent
    theirs = _textual_private_names()
    ours: set[str] = set()
    reads = []
    for path in ui.rglob("*.py"):
        if path.name == "textual_compat.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                ours.add(node.name)
            elif isinstance(node, ast.Attribute):
                if isinstance(node.ctx, ast.Store):
                    ours.add(node.attr)
                elif path.name != "serve.py" and not (isinstance(node.value, ast.Name) and node.value.id == "os"):
                    reads.append((node.attr, f"{path.relative_to(ui)}:{node.lineno}"))
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("textual", "rich"):
                private = [a.name for a in node.names if a.name.startswith("_")]
                if private or any(part.startswith("_") for part in node.module.split(".")):
                    reads.append((node.module, f"{path.relative_to(ui)}:{node.lineno}"))
    offenders = sorted(f"{where}: {name}" for name, where in reads
                       if name in theirs and name not in ours or "." in name)
    assert offenders == []


def test_every_override_of_a_private_textual_method_is_listed():
    """A dsh-tui class that overrides a private method of a Textual class it extends (``_on_key``,
    ``_on_resize``…) names it in ``PRIVATE_NAMES``, so the check above covers it on an upgrade."""
    import inspect
    import pkgutil

    import dsh_tui.ui as ui

    def resolve(path: str):
        module, _, name = path.rpartition(".")
        owner = importlib.import_module(module)
        return getattr(owner, name) if hasattr(owner, name) else importlib.import_module(path)

    listed = {(resolve(path), name) for path, name in PRIVATE_NAMES}
    unlisted = []
    for info in pkgutil.walk_packages(ui.__path__, "dsh_tui.ui."):
        module = importlib.import_module(info.name)
        for cls in vars(module).values():
            if not inspect.isclass(cls) or cls.__module__ != module.__name__:
                continue
            theirs = [b for b in cls.__mro__[1:] if b.__module__.split(".")[0] in ("textual", "rich")]
            if not theirs:
                continue
            plain = set(vars(type("Plain", (theirs[0],), {})))  # what Textual's metaclass puts on every class
            plain |= {f"_default_{name}" for name in getattr(cls, "_reactives", {})}
            for name, value in vars(cls).items():
                if (name.startswith("_") and not name.startswith("__") and name not in plain and callable(value)
                        and any(name in vars(b) for b in theirs)
                        and not any((b, name) in listed for b in cls.__mro__[1:])):
                    unlisted.append(f"{cls.__module__}.{cls.__qualname__}.{name}")
    assert unlisted == []
