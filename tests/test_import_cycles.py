"""No import cycle between dsh_tui's modules (issue #28), imports inside functions included: a module that imports
another only when a function runs still depends on it. Not counted: a package's ``__init__`` importing its own
submodules (re-exports), and imports under ``if TYPE_CHECKING:`` (annotations only).

``KNOWN`` lists the cycles still being taken apart: the test fails on a new one, and on a listed one that is
gone (take it off the list), so the list only shrinks."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import dsh_tui

PKG = Path(dsh_tui.__file__).parent

#: strongly connected groups of modules not yet taken apart (each a sorted tuple of module names)
KNOWN: set[tuple[str, ...]] = set()


def _modules() -> dict[str, tuple[Path, bool]]:
    mods = {}
    for path in PKG.rglob("*.py"):
        parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        mods[".".join(parts)] = (path, is_pkg)
    return mods


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:``."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                out.update(id(sub) for sub in ast.walk(stmt))
    return out


def import_graph() -> dict[str, set[str]]:
    mods = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for module, (path, is_pkg) in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_only(tree)
        package = module if is_pkg else module.rpartition(".")[0]
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package
                    for _ in range(node.level - 1):
                        base = base.rpartition(".")[0]
                    name = base + ("." + node.module if node.module else "")
                else:
                    name = node.module or ""
                targets = [name, *(f"{name}.{a.name}" for a in node.names)]
            else:
                continue
            for target in targets:
                found = resolve(target) if target.startswith("dsh_tui") else None
                if found is None or found == module or (is_pkg and found.startswith(module + ".")):
                    continue
                graph[module].add(found)
    return graph


def cycles(graph: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: set[tuple[str, ...]] = set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.add(tuple(sorted(group)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def test_no_new_import_cycle_and_the_known_ones_only_shrink():
    found = cycles(import_graph())
    new = found - KNOWN
    assert not new, f"new import cycle(s): {sorted(new)}"
    gone = KNOWN - found
    assert not gone, f"taken apart (remove from KNOWN): {sorted(gone)}"


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {("a", "b", "c")}
