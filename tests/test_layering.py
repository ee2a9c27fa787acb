"""The layering rule: nothing outside dsh_tui/ui imports textual or rich, and session/ is pure."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import dsh_tui

PKG = Path(dsh_tui.__file__).parent


def _modules(exclude_ui: bool = True) -> list[str]:
    names = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__main__":
            continue
        if exclude_ui and len(parts) > 1 and parts[1] == "ui":
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join(parts))
    return names


def test_no_textual_or_rich_outside_ui():
    modules = _modules()
    code = (
        "import importlib, json, sys\n"
        f"for m in {modules!r}:\n"
        "    importlib.import_module(m)\n"
        "bad = sorted(k for k in sys.modules if k.split('.')[0] in ('textual', 'rich'))\n"
        "print(json.dumps(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
    assert len(modules) > 5


def test_session_layer_imports_nothing_of_the_project_above_it():
    offenders = []
    for path in (PKG / "session").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            mod = node.module if isinstance(node, ast.ImportFrom) else None
            if mod and mod.startswith("dsh_tui.") and not mod.startswith("dsh_tui.session"):
                offenders.append(f"{path.name}: {mod}")
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    if top in {"textual", "rich", "httpx", "sqlite3", "sqlite_utils", "asyncio"}:
                        offenders.append(f"{path.name}: {alias.name}")
    assert offenders == []


def test_import_linter_contracts_hold():
    """`lint-imports` with the contracts in pyproject.toml: the layers (cli > ui > runtime > llm | tools >
    store > session, each importing only downward) and textual/rich imported directly only in dsh_tui/ui."""
    exe = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run([str(exe), "--no-cache"], cwd=PKG.parent, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "3 kept, 0 broken" in out.stdout


def test_every_top_level_module_and_package_is_in_the_layers_contract():
    import tomllib

    config = tomllib.loads((PKG.parent / "pyproject.toml").read_text())
    (layers,) = [c["layers"] for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    named = {m.strip() for layer in layers for m in layer.split("|")}
    top = {f"dsh_tui.{p.stem}" for p in PKG.glob("*.py") if p.stem != "__init__"}
    top |= {f"dsh_tui.{p.parent.name}" for p in PKG.glob("*/__init__.py")}
    assert top - named == set(), "top-level modules outside the import-linter layers (pyproject.toml)"


def test_no_built_in_reaches_the_private_agent():
    """Issue #28: built-ins take what they need from the core through ``BuiltinContext`` (named, typed), never
    through the plugin context's private agent: no ``<something>._agent`` outside the object that owns it
    (``self._agent``), and none at all in dsh_tui/extensions."""
    offenders = []
    for path in sorted(PKG.rglob("*.py")):
        in_extensions = path.relative_to(PKG).parts[0] == "extensions"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "_agent":
                owner = node.value.id if isinstance(node.value, ast.Name) else ""
                if in_extensions or owner != "self":
                    offenders.append(f"{path.relative_to(PKG.parent)}:{node.lineno}")
    assert offenders == [], offenders
