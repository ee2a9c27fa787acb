"""Every exception class dsh-tui defines is a ``DshError`` (session/errors.py): the CLI, the SDK and the
plugin listeners treat a ``DshError`` as an expected failure with a one-line message. The only exceptions
are control flow that never reaches a user (``CONTROL_FLOW``)."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import dsh_tui
from dsh_tui.session.errors import DshError

#: Raised and caught inside dsh-tui to unwind, never shown as a failure.
CONTROL_FLOW = {
    "dsh_tui.runtime.signal.AbortError",  # a cancel unwinding (its own result: "tool call aborted")
    "dsh_tui.store.catalog.reader._Unreadable",  # a listing row skipped
    "dsh_tui.tools.search.walk._Aborted",  # a walk's stop or deadline
}

ROOT = Path(dsh_tui.__file__).parent


def _modules() -> list[str]:
    return [m.name for m in pkgutil.walk_packages(dsh_tui.__path__, "dsh_tui.") if not m.name.endswith("__main__")]


def test_every_exception_class_is_a_dsh_error():
    outside = []
    found = set()
    for name in _modules():
        module = importlib.import_module(name)
        for obj in vars(module).values():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == name:
                qualname = f"{name}.{obj.__qualname__}"
                found.add(qualname)
                if not issubclass(obj, DshError) and qualname not in CONTROL_FLOW:
                    outside.append(qualname)
    assert not outside, f"exception classes not under DshError (or CONTROL_FLOW): {sorted(outside)}"
    assert not CONTROL_FLOW - found, f"CONTROL_FLOW names classes that are gone: {sorted(CONTROL_FLOW - found)}"


def test_no_exception_class_hides_inside_a_function():
    """A class defined in a function is out of the walk above: exception classes live at module level."""
    nested = []
    for path in ROOT.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.ClassDef) and any(
                            ast.unparse(b).endswith(("Error", "Exception")) for b in inner.bases):
                        nested.append(f"{path.relative_to(ROOT)}:{inner.lineno} {inner.name}")
    assert not nested, nested


def test_the_stdlib_bases_still_catch_them():
    """Callers that catch the stdlib base (``except ValueError``/``except OSError``) keep working."""
    from dsh_tui.extensions.hooks import HookConfigError
    from dsh_tui.extensions.skills import SkillFormatError
    from dsh_tui.llm.openai.sse import SseLineTooLong
    from dsh_tui.session.jsonutil import NestedTooDeeply, loads_bounded
    from dsh_tui.store.fsio import NotRegularFileError
    from dsh_tui.tools.bash import RunnerSpawnError
    from dsh_tui.tools.search.globs import GlobSyntaxError

    for cls in (SseLineTooLong, HookConfigError, SkillFormatError, NestedTooDeeply, GlobSyntaxError):
        assert issubclass(cls, ValueError) and issubclass(cls, DshError)
    for cls in (NotRegularFileError, RunnerSpawnError):
        assert issubclass(cls, OSError) and issubclass(cls, DshError)
    err = NotRegularFileError(22, "a FIFO (named pipe), not a regular file", "/x")
    assert (err.errno, err.strerror, err.filename) == (22, "a FIFO (named pipe), not a regular file", "/x")
    try:
        loads_bounded("[" * 300 + "]" * 300)
    except ValueError as caught:
        assert isinstance(caught, NestedTooDeeply) and str(caught) == "nested more than 256 levels deep"
