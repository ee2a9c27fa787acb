"""No dead code (issue #28): every function and class dsh_tui defines at module level, and every method of its
non-UI classes, is named somewhere besides its own definition and the re-exports of a package's
``__init__`` — by the code, a test, the docs or an example (a plugin entry point such as
``"dsh_tui.runtime.commands:apply_commands"`` names its function too). A name only re-exported is dead.

Methods the framework or a library calls by name (Textual's ``on_*``/``action_*``/``watch_*``/``compose``, the
UI's ``@on`` handlers, pydantic validators, the SDK's ``rpc_*`` dispatch, MCP's token storage protocol, ACP's
agent protocol) carry a decorator, live in ``dsh_tui/ui`` (not walked for methods), are the SDK's ``rpc_*``
(dispatched by the method's name) or are named by the protocol they implement: ``PROTOCOL`` lists them. A
``TypedDict`` or ``Protocol`` describes a shape (``session/shapes.py``): it is not held to being named."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "dsh_tui"
CORPUS = ("dsh_tui", "tests", "docs", "examples")
SUFFIXES = (".py", ".md", ".toml", ".json", ".txt", ".cfg")
#: Methods a library calls by name (its protocol), not named anywhere in this repository.
PROTOCOL = {
    "on_connect", "authenticate", "load_session", "set_session_mode", "set_config_option", "list_sessions",  # acp
    "get_tokens", "set_tokens", "get_client_info", "set_client_info",  # mcp's TokenStorage
}
#: Classes that describe a shape for readers and the type checker (session/shapes.py), used or not.
DESCRIPTIONS = {"TypedDict", "Protocol", "typing.TypedDict", "typing.Protocol"}
_WORD = re.compile(r"\w+")


def _corpus_counts() -> Counter[str]:
    counts: Counter[str] = Counter()
    paths = [REPO / "README.md", REPO / "pyproject.toml"]
    for root in CORPUS:
        paths += [p for p in (REPO / root).rglob("*") if p.is_file() and p.suffix in SUFFIXES]
    for path in paths:
        try:
            counts.update(_WORD.findall(path.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, OSError):
            continue
    return counts


def _definitions() -> tuple[list[tuple[str, str]], Counter[str]]:
    """(where, name) of every candidate, and how often each name is only defined or re-exported."""
    found: list[tuple[str, str]] = []
    not_uses: Counter[str] = Counter()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(REPO)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                not_uses[node.name] += 1
        if path.name == "__init__.py":
            for node in tree.body:
                if isinstance(node, ast.ImportFrom) and node.level + len(node.module or "") > 0:
                    for alias in node.names:
                        not_uses[alias.name] += 1
                if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                        for t in node.targets):
                    for elt in getattr(node.value, "elts", []):
                        if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                            not_uses[elt.value] += 1
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and {ast.unparse(b) for b in node.bases} & DESCRIPTIONS:
                continue
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                    and not node.name.startswith("__"):
                found.append((f"{rel}:{node.lineno}", node.name))
            if isinstance(node, ast.ClassDef) and not str(rel).startswith("dsh_tui/ui/"):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not item.decorator_list \
                            and not item.name.startswith(("__", "rpc_")) and item.name not in PROTOCOL:
                        found.append((f"{rel}:{item.lineno}", f"{node.name}.{item.name}"))
    return found, not_uses


def test_every_function_and_class_is_used_somewhere():
    counts = _corpus_counts()
    found, not_uses = _definitions()
    dead = [f"{where} {name}" for where, name in found
            if counts[name.rsplit(".", 1)[-1]] - not_uses[name.rsplit(".", 1)[-1]] <= 0]
    assert not dead, "defined but never used (remove it, or name a library protocol in PROTOCOL):\n" + "\n".join(dead)
