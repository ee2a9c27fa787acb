"""No test carries a wall-clock limit: Hypothesis' 200 ms default deadline is off everywhere."""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import settings

TESTS = Path(__file__).resolve().parent


def test_the_default_profile_has_no_deadline():
    assert settings.default.deadline is None


def test_no_property_test_sets_a_deadline():
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in (
                    "settings", "register_profile"):
                for kw in node.keywords:
                    if kw.arg == "deadline" and not (isinstance(kw.value, ast.Constant) and kw.value.value is None):
                        offenders.append(f"{path.relative_to(TESTS)}:{node.lineno}")
    assert offenders == []
