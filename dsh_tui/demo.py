"""The offline demo: a small Python project with a real bug and a scripted model that fixes it.

``make_workspace(path)`` writes the project (``stats.py`` whose ``mean([])`` divides by zero, and a
unittest suite that fails on it). ``demo_provider(workspace, pace)`` is a ``ScriptedProvider`` whose
responses drive the REAL harness and REAL tools through two turns:

1. read the code, run the tests (they fail), edit the bug, run the tests again (they pass), answer;
2. add a regression test, run the suite, answer.

Any later prompt gets a short canned answer saying how to configure a real model, so the app stays
usable after the tour. No key, no network.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from dsh_tui.llm import scripted

DEMO_PROMPTS = (
    "The tests in this project fail. Find the bug and fix it.",
    "Add a regression test for the empty case.",
)

STATS_PY = '''"""Tiny statistics helpers."""


def mean(values):
    """Arithmetic mean of a list of numbers."""
    return sum(values) / len(values)


def spread(values):
    """Largest minus smallest value (0 for an empty list)."""
    if not values:
        return 0
    return max(values) - min(values)
'''

TEST_STATS_PY = '''import unittest

from stats import mean, spread


class StatsTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)

    def test_report_of_an_empty_day(self):
        # the nightly report calls mean() on days without samples
        self.assertEqual(mean([]), 0.0)

    def test_spread(self):
        self.assertEqual(spread([3, 9, 4]), 6)


if __name__ == "__main__":
    unittest.main()
'''

README_MD = """# stats

Tiny statistics helpers. Run the tests with `python3 -m unittest -v`.
"""

OLD_LINE = "    return sum(values) / len(values)\n"
NEW_LINES = "    if not values:\n        return 0.0\n    return sum(values) / len(values)\n"

NEW_TEST = '''
    def test_mean_of_nothing_is_zero_not_an_error(self):
        self.assertEqual(mean([]), 0.0)
        self.assertEqual(mean(()), 0.0)
'''

DEMO_MODEL = "demo-scripted"
DEMO_PROVIDER = "demo"
TEST_COMMAND = "python3 -m unittest -v"


def make_workspace(path: Path) -> Path:
    """Write the demo project into ``path``, which must not exist yet (created), and return it. Nothing that
    exists is ever written over: an existing directory or file raises ``FileExistsError``."""
    path.mkdir(parents=True, exist_ok=False)
    for name, text in (("stats.py", STATS_PY), ("test_stats.py", TEST_STATS_PY), ("README.md", README_MD)):
        with open(path / name, "x", encoding="utf-8") as fh:
            fh.write(text)
    return path


def new_workspace(base: Path, name: str = "workspace", tries: int = 1000) -> Path:
    """A fresh demo project under ``base``: ``workspace``, or ``workspace-2``, ``workspace-3``… when the name is
    taken (``demo --root ~`` with a ``~/workspace`` project leaves that project alone)."""
    base.mkdir(parents=True, exist_ok=True)
    for n in range(1, tries + 1):
        path = base / (name if n == 1 else f"{name}-{n}")
        if os.path.lexists(path):
            continue
        try:
            return make_workspace(path)
        except FileExistsError:
            continue  # taken meanwhile: the next name
    raise FileExistsError(f"no free name for the demo workspace in {base} ({name} … {name}-{tries} exist)")


def _usage(inp: int, out: int, cached: int = 0) -> dict[str, int]:
    usage = {"inputTokens": inp, "outputTokens": out}
    if cached:
        usage["cacheReadTokens"] = cached
    return usage


def _thinking_then_calls(reasoning: str, items: list[tuple[str, str, Any]], pace: float,
                         usage: dict[str, int]) -> list:
    """A response that streams reasoning, then requests tool calls."""
    steps: list = [{"type": "block-start", "index": 0, "blockType": "reasoning"}]
    for part in _pieces(reasoning):
        if pace:
            steps.append(scripted.Delay(pace))
        steps.append({"type": "reasoning-delta", "index": 0, "text": part})
    steps.append({"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": reasoning}})
    for offset, (call_id, name, args) in enumerate(items, start=1):
        raw = json.dumps(args, separators=(",", ":"), ensure_ascii=False)
        if pace:
            steps.append(scripted.Delay(pace * 4))
        steps.append({"type": "block-start", "index": offset, "blockType": "tool-call"})
        steps.append({"type": "tool-call-delta", "index": offset, "id": call_id, "name": name, "argumentsDelta": raw})
        steps.append({"type": "block-end", "index": offset,
                      "block": {"type": "tool-call", "id": call_id, "name": name, "arguments": raw}})
    steps.append({"type": "usage", "usage": usage})
    steps.append({"type": "finish", "reason": {"kind": "tool-calls"}})
    return steps


def _pieces(text: str, size: int = 4) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def _answer(text: str, pace: float, usage: dict[str, int], reasoning: str | None = None) -> list:
    return scripted.text(text, reasoning=reasoning, chunk_size=4, delay=pace, usage=usage)


def demo_responses(workspace: Path, pace: float = 0.0) -> list:
    """The scripted model's responses, in request order (see the module docstring)."""
    ws = str(workspace)
    stats, tests = f"{ws}/stats.py", f"{ws}/test_stats.py"
    run_tests = {"command": TEST_COMMAND, "description": "Run the unit tests"}
    return [
        # turn 1, step 1: plan + look at the code
        _thinking_then_calls(
            "The user says the tests fail. I should read the module and its tests before running anything.",
            [("call_demo_plan", "todo_write", {"todos": [
                {"content": "Reproduce the failing test", "status": "in_progress"},
                {"content": "Fix the bug", "status": "pending"},
                {"content": "Verify the suite passes", "status": "pending"}]}),
             ("call_demo_read", "read", {"file_path": stats}),
             ("call_demo_read_tests", "read", {"file_path": tests})],
            pace, _usage(1850, 120)),
        # step 2: run the tests
        _thinking_then_calls(
            "mean() divides by len(values) without checking for an empty list. Let me confirm with the tests.",
            [("call_demo_test1", "bash", run_tests)], pace, _usage(2400, 60, cached=1800)),
        # step 3: fix
        _thinking_then_calls(
            "ZeroDivisionError in mean([]): the report of an empty day expects 0.0. Guard the empty case.",
            [("call_demo_plan2", "todo_write", {"todos": [
                {"content": "Reproduce the failing test", "status": "completed"},
                {"content": "Fix the bug", "status": "in_progress"},
                {"content": "Verify the suite passes", "status": "pending"}]}),
             ("call_demo_edit", "edit", {"file_path": stats, "old_string": OLD_LINE, "new_string": NEW_LINES})],
            pace, _usage(2900, 140, cached=2300)),
        # step 4: verify
        _thinking_then_calls(
            "Now run the suite again to verify the fix.",
            [("call_demo_test2", "bash", run_tests)], pace, _usage(3300, 50, cached=2800)),
        # step 5: close the plan
        _thinking_then_calls(
            "All tests pass. Mark the plan done.",
            [("call_demo_plan3", "todo_write", {"todos": [
                {"content": "Reproduce the failing test", "status": "completed"},
                {"content": "Fix the bug", "status": "completed"},
                {"content": "Verify the suite passes", "status": "completed"}]})],
            pace, _usage(3500, 70, cached=3000)),
        # step 6: answer
        _answer(
            "Fixed. **`mean([])` raised `ZeroDivisionError`** because it divided by `len(values)` "
            "without checking for an empty list.\n\n"
            "```python\ndef mean(values):\n    if not values:\n        return 0.0\n"
            "    return sum(values) / len(values)\n```\n\n"
            "All three tests pass now. `spread()` already handled the empty case the same way.",
            pace, _usage(3700, 160, cached=3200),
            reasoning="The suite passes. Summarise the cause and the fix."),
        # turn 2, step 1: add the regression test
        _thinking_then_calls(
            "Add a focused regression test next to the existing ones.",
            [("call_demo_edit2", "edit", {"file_path": tests,
                                          "old_string": "\n\nif __name__ == \"__main__\":",
                                          "new_string": NEW_TEST.rstrip("\n") + "\n\n\nif __name__ == \"__main__\":"})],
            pace, _usage(4100, 90, cached=3600)),
        # step 2: run it
        _thinking_then_calls("Run the suite with the new test.", [("call_demo_test3", "bash", run_tests)],
                             pace, _usage(4400, 40, cached=4000)),
        # step 3: answer
        _answer("Added `test_mean_of_nothing_is_zero_not_an_error` (lists and tuples); the suite passes "
                "with **4 tests**.\n\nThis was the offline demo. Type anything to keep exploring, or press "
                "**Ctrl+Q** to quit.", pace, _usage(4700, 70, cached=4300)),
    ]


def after_script(_request: dict[str, Any]) -> list:
    """What the demo model answers once the tour is over."""
    return scripted.text(
        "I am the offline demo model and only know the scripted tour. To talk to a real model, set "
        "`DEEPSEEK_API_KEY` (or configure a provider in the settings) and start `dsh-tui run`.",
        chunk_size=8, usage=_usage(500, 40))


def demo_provider(workspace: Path, pace: float = 0.0) -> scripted.ScriptedProvider:
    """The bundled scripted model for ``workspace`` (``pace`` = seconds between streamed pieces)."""
    return scripted.ScriptedProvider(demo_responses(workspace, pace), name=DEMO_PROVIDER,
                                     context_window=128_000, fallback=after_script,
                                     titles=[scripted.text("Offline tour of dsh-tui", usage=_usage(120, 6))])
