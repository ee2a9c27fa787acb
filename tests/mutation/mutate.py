"""A small AST mutation tester for the security- and data-critical modules (not part of the test suite).

Usage (from the repository root; slow: one pytest run per mutant, so run it by hand, not in CI)::

    .venv/bin/python -m tests.mutation.mutate confinement redaction closers   # or: all
    .venv/bin/python -m tests.mutation.mutate --list                          # the modules and their tests
    .venv/bin/python -m tests.mutation.mutate closers --only 12               # re-run one mutant by number
    .venv/bin/python -m tests.mutation.mutate confinement --from 35           # resume at mutant 35 (--to N: stop)
    .venv/bin/python -m tests.mutation.mutate writer --show                    # list the mutants, run none
    .venv/bin/python -m tests.mutation.mutate derive_messages --lines 263-400  # only those lines' mutants
    .venv/bin/python -m tests.mutation.mutate writer --test-timeout 40         # a hung test fails after 40 s

It copies ``dsh_tui/``, ``tests/`` and ``pyproject.toml`` to a temporary directory, and for each mutant
writes one mutated module there and runs that module's test files (``-x``, no xdist). A mutant the tests
do not fail is a *survivor*: print it, then kill it with a test or explain it in ``docs/mutation.md``.
The working tree is never modified.

Mutations, one at a time: comparison operators negated and their boundaries moved (``<`` / ``<=``,
``in`` / ``not in``, ``is`` / ``is not``), ``and`` / ``or`` swapped, ``not`` dropped, a binary operation
replaced by either operand (``root + os.sep`` -> ``root``) or ``+`` / ``-`` swapped, integer constants
moved by one, booleans flipped, a string constant emptied (and a regex's ``(?i)`` flag dropped), a
``return x`` made ``return None``, and one statement of a function body replaced by ``pass`` (not a
``return`` / ``return None`` ending a function: that changes nothing).
"""

from __future__ import annotations

import argparse
import ast
import copy
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# name -> (module, test files). Every mutant runs them until one fails; the files after a "|" entry run only
# for a mutant the ones before it did not kill (same verdicts, less time: most mutants die in the first file).
MODULES: dict[str, tuple[str, list[str]]] = {
    "confinement": ("dsh_tui/tools/paths.py", [
        "tests/tools/test_confinement_siblings.py", "tests/tools/test_read.py", "tests/tools/test_write_edit.py"]),
    "redaction": ("dsh_tui/llm/redact.py", [
        "tests/llm/test_redaction_paths.py", "tests/llm/test_sse.py", "tests/llm/test_registry.py"]),
    "closers": ("dsh_tui/session/repair.py", [
        "tests/session/test_closers_answered.py", "tests/store/test_closers_answered.py",
        "tests/session/test_legacy_repair.py", "|", "tests/session/test_surface.py"]),
    # fork: the fork tests on one backend first (a node id list keeps this order), then every file whole
    "fork": ("dsh_tui/store/lifecycle.py", [
        *(f"tests/store/test_lifecycle.py::{t}[none]" for t in (
            "test_fork_refuses_bad_argument_combinations_with_a_clear_error", "test_fork_boundaries",
            "test_fork_at_turn_copies_the_prefix_and_leaves_the_parent_untouched",
            "test_fork_of_a_log_with_nothing_to_fork_after", "test_a_log_without_any_turn_forks_whole",
            "test_a_log_ending_with_a_turn_end_forks_whole_by_default",
            "test_the_legal_boundary_looks_back_to_the_first_event_and_no_further",
            "test_start_with_a_seed_persists_the_seed_then_end_seed_first",
            "test_fork_without_a_clock_stamps_now_in_epoch_milliseconds",
            "test_fork_of_a_crashed_parent_seeds_from_the_committed_log_never_from_in_memory_closers",
            "test_resume_repairs_then_persists_end_seed_first", "test_resume_close_resume_is_byte_identical_the_second_time",
            "test_resumed_session_continues_after_end_seed",
            "test_resume_refuses_a_log_whose_header_names_another_session",
            "test_start_refusing_its_seed_raises_and_releases_the_lock")),
        "tests/store/test_lifecycle.py::test_jsonl_resume_validates_the_log_once_and_uses_the_clock",
        "tests/store/test_lifecycle.py::test_resume_through_a_store_whose_load_has_no_readable_signature",
        "|", "tests/store/test_lifecycle.py", "tests/store/test_lifecycle_open.py", "tests/store/test_lifecycle_lock.py"]),
    "writer": ("dsh_tui/store/writer.py", ["tests/store/test_writer.py", "|", "tests/store/test_crash.py"]),
    "derive_messages": ("dsh_tui/session/surface.py", [
        "tests/session/test_surface.py", "tests/session/test_session.py"]),
}

_NEGATE = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE,
           ast.LtE: ast.Gt, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_BOUNDARY = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
_STATEMENTS = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Raise, ast.Return, ast.If, ast.Continue,
               ast.Break, ast.Delete, ast.For, ast.While, ast.With, ast.Try)


@dataclass
class Mutant:
    number: int
    line: int
    description: str
    source: str


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first))
                ids.add(id(first.value))
    return ids


def _annotations(tree: ast.AST) -> set[int]:
    """ids of nodes inside annotations (not evaluated under ``from __future__ import annotations``)."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        parts = []
        if isinstance(node, ast.arg) and node.annotation is not None:
            parts.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            parts.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            parts.append(node.annotation)
        for part in parts:
            ids.update(id(n) for n in ast.walk(part))
    return ids


def _inside_function(tree: ast.AST) -> set[int]:
    """ids of nodes inside a function body (module-level constants and imports are not mutated)."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for child in node.body:
                ids.update(id(n) for n in ast.walk(child))
    return ids


def _edits(node: ast.AST, docs: set[int], in_fn: set[int]) -> list[tuple[str, object]]:
    """(description, edit) pairs for one node; ``edit(node_copy, parent_field_setter)`` applies it."""
    out: list[tuple[str, object]] = []
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            for table, what in ((_NEGATE, "negated"), (_BOUNDARY, "boundary")):
                new = table.get(type(op))
                if new is not None:
                    out.append((f"{type(op).__name__} -> {new.__name__} ({what})",
                                ("op", i, new)))
    elif isinstance(node, ast.BoolOp):
        other = ast.Or if isinstance(node.op, ast.And) else ast.And
        out.append((f"{type(node.op).__name__} -> {other.__name__}", ("boolop", other)))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        out.append(("drop `not`", ("replace", "operand")))
    elif isinstance(node, ast.BinOp):
        out.append(("binary op -> left operand", ("replace", "left")))
        out.append(("binary op -> right operand", ("replace", "right")))
        if isinstance(node.op, (ast.Add, ast.Sub)):
            other = ast.Sub if isinstance(node.op, ast.Add) else ast.Add
            out.append((f"{type(node.op).__name__} -> {other.__name__}", ("binop", other)))
    elif isinstance(node, ast.Constant) and id(node) not in docs and id(node) in in_fn:
        v = node.value
        if isinstance(v, bool):
            out.append((f"{v} -> {not v}", ("const", not v)))
        elif isinstance(v, int):
            out.append((f"{v} -> {v + 1}", ("const", v + 1)))
            if v != 0:
                out.append((f"{v} -> {v - 1}", ("const", v - 1)))
        elif isinstance(v, str) and v:
            out.append((f"{v[:30]!r} -> ''", ("const", "")))
            if v.startswith("(?i)"):
                out.append((f"{v[:30]!r}: drop (?i)", ("const", v[4:])))
    if (isinstance(node, ast.Return) and node.value is not None and id(node) in in_fn
            and not (isinstance(node.value, ast.Constant) and node.value.value is None)):
        out.append(("return value -> None", ("return_none",)))
    return out


def _apply(node: ast.AST, edit: tuple) -> ast.AST | None:
    """Apply ``edit`` to ``node`` (a copy); returns a replacement node, or None to keep the edited node."""
    kind = edit[0]
    if kind == "op":
        node.ops[edit[1]] = edit[2]()
    elif kind in ("boolop", "binop"):
        node.op = edit[1]()
    elif kind == "replace":
        return getattr(node, edit[1])
    elif kind == "const":
        node.value = edit[1]
    elif kind == "return_none":
        node.value = ast.Constant(None)
    return None


def _replace_child(parent: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for field, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, field, new)
            return
        if isinstance(value, list):
            for i, item in enumerate(value):
                if item is old:
                    value[i] = new
                    return
    raise AssertionError("child not found")


def _final_none_returns(tree: ast.AST) -> set[int]:
    """ids of a ``return`` / ``return None`` ending a function body: making it ``pass`` changes nothing."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            last = node.body[-1]
            if isinstance(last, ast.Return) and (
                    last.value is None or (isinstance(last.value, ast.Constant) and last.value.value is None)):
                ids.add(id(last))
    return ids


def mutants(source: str) -> list[Mutant]:
    tree = ast.parse(source)
    nodes = list(ast.walk(tree))
    docs = _docstrings(tree)
    no_pass = docs | _final_none_returns(tree)
    in_fn = _inside_function(tree) - _annotations(tree)
    parents = {id(child): parent for parent in nodes for child in ast.iter_child_nodes(parent)}
    plans: list[tuple[int, str, object]] = []
    skip = _annotations(tree)
    for index, node in enumerate(nodes):
        if id(node) in skip:
            continue
        for desc, edit in _edits(node, docs, in_fn):
            plans.append((index, desc, edit))
        # one statement of a function body -> pass (a body keeps at least one statement)
        if isinstance(node, _STATEMENTS) and id(node) in in_fn and id(node) not in no_pass:
            plans.append((index, f"{type(node).__name__} statement -> pass", ("pass",)))
    out: list[Mutant] = []
    seen: set[str] = set()
    original = ast.unparse(tree)
    for index, desc, edit in plans:
        tree2 = copy.deepcopy(tree)
        nodes2 = list(ast.walk(tree2))
        target = nodes2[index]
        parents2 = {id(child): parent for parent in nodes2 for child in ast.iter_child_nodes(parent)}
        if edit[0] == "pass":
            _replace_child(parents2[id(target)], target, ast.copy_location(ast.Pass(), target))
        else:
            new = _apply(target, edit)
            if new is not None:
                _replace_child(parents2[id(target)], target, new)
        ast.fix_missing_locations(tree2)
        try:
            text = ast.unparse(tree2)
            compile(text, "<mutant>", "exec")
        except (SyntaxError, ValueError):
            continue
        if text == original or text in seen:
            continue
        seen.add(text)
        out.append(Mutant(len(out) + 1, getattr(nodes[index], "lineno", 0), desc, text))
    del parents
    return out


def _copy_tree(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis", "__snapshots__")
    shutil.copytree(REPO / "dsh_tui", dest / "dsh_tui", ignore=ignore)
    shutil.copytree(REPO / "tests", dest / "tests", ignore=ignore)
    shutil.copy2(REPO / "pyproject.toml", dest / "pyproject.toml")
    if (REPO / "themes").is_dir():
        shutil.copytree(REPO / "themes", dest / "themes", ignore=ignore)


TEST_TIMEOUT: float | None = None  # --test-timeout: pytest-timeout's per-test limit in the mutant runs


def _pytest(work: Path, tests: list[str], timeout: float) -> str:
    """"killed", "survived" or "timeout" (a hang counts as killed: the suite noticed)."""
    # Bytecode (and pytest's rewritten test modules, and the rewritten pytest plugins: hypothesis, syrupy...)
    # is cached under the copy, never next to the sources: compiling the plugins again in every run cost
    # 2-5 s per mutant. The mutated module's own cached bytecode is removed before each run (_forget).
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(work / ".pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # no snapshot plugins (textual and syrupy cost 0.5 s of CPU per run; the mutated modules' tests take no
    # snapshots: a file that did would fail the unmutated run, which is checked first)
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
           "-p", "no:xdist", "-p", "no:textual-snapshot", "-p", "no:syrupy", "--no-header", *tests]
    if TEST_TIMEOUT:  # a mutant that hangs one test (a future never settled) fails that test sooner
        cmd[4:4] = [f"--timeout={TEST_TIMEOUT:g}"]
    try:
        proc = subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=timeout, text=True)
    except subprocess.TimeoutExpired:
        return "timeout"
    if proc.returncode == 0:
        return "survived"
    if proc.returncode in (1,):
        return "killed"
    # 2..5: interrupted / internal error / usage / no tests: a broken import is a kill too, but say so
    return f"killed (pytest exit {proc.returncode})"


def _forget(work: Path, target: Path) -> None:
    """Drop the cached bytecode of ``target``: a mutant of the same size written within the same second
    as the previous source would otherwise run the previous bytecode (the cache checks mtime and size)."""
    cached = work / ".pycache" / target.parent.relative_to(target.anchor)
    for pyc in cached.glob(f"{target.stem}.*.pyc"):
        pyc.unlink()


def _tiers(tests: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for f in tests:
        if f == "|":
            out.append([])
        else:
            out[-1].append(f)
    return [tier for tier in out if tier]


def run(name: str, only: set[int] | None, timeout: float | None, start: int = 1,
        lines: tuple[int, int] | None = None, stop: int | None = None) -> tuple[int, int, list[Mutant]]:
    module, tests = MODULES[name]
    source = (REPO / module).read_text(encoding="utf-8")
    found = mutants(source)
    survivors: list[Mutant] = []
    killed = total = 0
    with tempfile.TemporaryDirectory(prefix="dsh-mutate-") as tmp:
        work = Path(tmp)
        _copy_tree(work)
        target = work / module
        t0 = time.monotonic()
        baseline = _pytest(work, [f for f in tests if f != "|"], 900)
        if baseline != "survived":
            raise SystemExit(f"{name}: the tests fail without any mutation ({baseline}); fix them first")
        if timeout is None:  # a mutant that makes the tests hang (an endless loop) counts as killed
            timeout = max(30.0, 4 * (time.monotonic() - t0))
        for m in found:
            if (only and m.number not in only) or m.number < start or (stop and m.number > stop):
                continue
            if lines and not lines[0] <= m.line <= lines[1]:
                continue
            total += 1
            target.write_text(m.source, encoding="utf-8")
            _forget(work, target)
            t0 = time.monotonic()
            verdict = "survived"
            for tier in _tiers(tests):
                verdict = _pytest(work, tier, timeout)
                if verdict != "survived":
                    break
            target.write_text(source, encoding="utf-8")
            _forget(work, target)
            mark = "SURVIVED" if verdict == "survived" else verdict
            print(f"  {name} #{m.number:3d} line {m.line:4d}: {m.description:45s} {mark} "
                  f"({time.monotonic() - t0:.0f}s)", flush=True)
            if verdict == "survived":
                survivors.append(m)
            else:
                killed += 1
    return killed, total, survivors


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="*", help=f"any of {', '.join(MODULES)}, or all")
    ap.add_argument("--list", action="store_true", help="list modules, their tests and mutant counts")
    ap.add_argument("--show", action="store_true", help="print each mutant's number, line and mutation; run none")
    ap.add_argument("--only", type=int, action="append", help="run only mutant number N (repeatable)")
    ap.add_argument("--test-timeout", type=float, default=None,
                    help="per-test limit (pytest-timeout) in mutant runs: a hung test fails, which is a kill")
    ap.add_argument("--lines", help="run only the mutants of source lines A-B (e.g. 200-367)")
    ap.add_argument("--from", dest="start", type=int, default=1, help="start at mutant number N")
    ap.add_argument("--to", dest="stop", type=int, default=None, help="stop after mutant number N")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds per mutant run (default: 4x the unmutated run, at least 30; a hang is a kill)")
    args = ap.parse_args(argv)
    names = list(MODULES) if args.modules == ["all"] else args.modules
    if args.list or not names:
        for name, (module, tests) in MODULES.items():
            n = len(mutants((REPO / module).read_text(encoding="utf-8")))
            print(f"{name:16s} {module:32s} {n:4d} mutants  tests: {' '.join(tests)}")  # "|": a second tier
        return 0
    unknown = [n for n in names if n not in MODULES]
    if unknown:
        ap.error(f"unknown module(s): {', '.join(unknown)}")
    if args.show:
        for name in names:
            for m in mutants((REPO / MODULES[name][0]).read_text(encoding="utf-8")):
                print(f"  {name} #{m.number:3d} line {m.line:4d}: {m.description}")
        return 0
    global TEST_TIMEOUT
    TEST_TIMEOUT = args.test_timeout
    summary = []
    for name in names:
        lines = tuple(int(x) for x in args.lines.split("-", 1)) if args.lines else None
        killed, total, survivors = run(name, set(args.only) if args.only else None, args.timeout, args.start, lines, args.stop)
        summary.append((name, killed, total, survivors))
    print()
    for name, killed, total, survivors in summary:
        print(f"{name}: {killed}/{total} killed, {len(survivors)} survived")
        for m in survivors:
            print(f"    #{m.number} line {m.line}: {m.description}")
    return 1 if any(s for *_, s in summary) else 0


if __name__ == "__main__":
    raise SystemExit(main())
