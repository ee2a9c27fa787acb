"""Module size (issue #28, "Done when"): no module of dsh_tui over 600 lines, and at most 3 over 500, each
saying why in its docstring ("Over 500 lines for a reason: ...").

``KNOWN`` lists the modules still being split (path -> lines when listed): a listed module may only shrink,
and the test fails on one that is back within the rule (take it off the list), so the list only shrinks.
Lines are counted as ``wc -l`` counts them."""

from __future__ import annotations

import ast
from pathlib import Path

import dsh_tui

PKG = Path(dsh_tui.__file__).parent
LIMIT = 600  # no module over this
SOFT = 500  # at most SOFT_MAX modules over this, each with its reason
SOFT_MAX = 3
REASON = "500 lines"  # what the docstring of a module over SOFT says ("Over 500 lines for a reason: ...")

#: modules over the rule that are not yet split (path under dsh_tui/ -> lines when listed)
KNOWN: dict[str, int] = {}


def module_sizes() -> dict[str, int]:
    return {p.relative_to(PKG).as_posix(): p.read_bytes().count(b"\n") for p in sorted(PKG.rglob("*.py"))}


def check(sizes: dict[str, int], known: dict[str, int]) -> list[str]:
    """What breaks the rule (empty when nothing does)."""
    problems = []
    for path, lines in sorted(known.items()):
        now = sizes.get(path, 0)
        if now > lines:
            problems.append(f"{path}: {now} lines, listed at {lines}: a module still to be split may only shrink")
        elif now <= SOFT:
            problems.append(f"{path}: {now} lines, within the rule: take it off KNOWN")
    over = {path: n for path, n in sizes.items() if n > SOFT and path not in known}
    for path, n in sorted(over.items()):
        if n > LIMIT:
            problems.append(f"{path}: {n} lines, over {LIMIT}: split it by concept")
        elif REASON not in (ast.get_docstring(ast.parse((PKG / path).read_text(encoding="utf-8"))) or ""):
            problems.append(f"{path}: {n} lines, over {SOFT} without its reason in its docstring")
    if len(over) > SOFT_MAX:
        problems.append(f"{len(over)} modules over {SOFT} lines (at most {SOFT_MAX}): {', '.join(sorted(over))}")
    return problems


def test_no_module_over_600_lines_and_at_most_3_over_500_with_their_reasons():
    problems = check(module_sizes(), KNOWN)
    assert not problems, "\n".join(problems)


def test_the_rule_catches_a_module_that_grows_past_it():
    sizes = {**module_sizes(), "session/log.py": 601}
    assert any(p.startswith("session/log.py: 601 lines, over 600") for p in check(sizes, KNOWN))
    known = {"runtime/agent.py": 700}  # a listed module that grew past its size
    grown = {**module_sizes(), "runtime/agent.py": 701}
    assert any(p.startswith("runtime/agent.py: 701 lines, listed at 700") for p in check(grown, known))
    shrunk = {**module_sizes(), "runtime/agent.py": 480}
    assert any("take it off KNOWN" in p for p in check(shrunk, known))


def test_the_lower_layers_tools_cli_and_llm_keep_every_module_under_500_lines():
    big = {path: n for path, n in module_sizes().items() if path.startswith(("tools/", "cli/", "llm/")) and n >= SOFT}
    assert not big, f"modules of tools, cli or llm at {SOFT} lines or more (split them by concept): {big}"
