"""dsh's loop guard (``repeat-tool-reminder``, issue #32): the recorded dsh scenario ``repeat-tool-reminder``
replayed through the real driver must inject the same reminders, at the same calls, in the same shape (an
``agent/inbox/spliced`` into the next step after the call's result, then a ``user/message`` of source
``{kind: plugin, plugin: repeat-tool-reminder, form: notice, summary}``) with dsh's texts byte for byte."""

from __future__ import annotations

import pytest

from dsh_tui.extensions.repeat import (
    GENTLE_REMINDER,
    RepeatGuard,
    canonicalize,
    detailed_reminder,
    preview_arguments,
)
from dsh_tui.session.errors import DshError
from tests.runtime.conformance import run_scenario, scenario_dirs

SCENARIO = next(d for d in scenario_dirs() if d.name == "repeat-tool-reminder")


def _reminders(events: list[dict]) -> list[tuple]:
    """(index of the tool call it follows, text, source) of every reminder, and where it entered."""
    out = []
    calls = 0
    for e in events:
        if e["type"] == "tool/call":
            calls += 1
        elif e["type"] == "user/message" and (e["data"].get("source") or {}).get("plugin") == "repeat-tool-reminder":
            out.append((calls, e["data"]["content"], e["data"]["source"]))
    return out


def _splices(events: list[dict]) -> list[tuple]:
    out = []
    for prev, e in zip(events, events[1:], strict=False):
        if e["type"] == "agent/inbox/spliced" and e["data"].get("inserted"):
            first = e["data"]["inserted"][0]
            if (first.get("source") or {}).get("plugin") == "repeat-tool-reminder":
                out.append((prev["type"], e["data"]["target"], first["content"]))
    return out


async def test_the_recorded_scenario_gets_dshs_reminders(tmp_path):
    outcome = await run_scenario(SCENARIO, tmp_path)
    assert outcome.mismatches == []
    recorded = _reminders(outcome.recorded)
    assert [r[1][0]["text"] for r in recorded] == [GENTLE_REMINDER, detailed_reminder(
        "todo_write", 5, '{"todos":[{"content":"watch the kettle boil","status":"in_progress"}]}')]
    assert _reminders(outcome.ours) == recorded  # at the 3rd and 5th call, same text and source
    assert _splices(outcome.ours) == _splices(outcome.recorded)  # spliced into the next step after the result
    assert [s[:2] for s in _splices(outcome.ours)] == [("tool/result", "next-step")] * 2


def test_the_chain_counts_identical_calls_and_resets_on_a_change():
    guard = RepeatGuard()
    args = {"b": 1, "a": [2, {"d": 1, "c": 2}]}
    same = {"a": [2, {"c": 2, "d": 1}], "b": 1}  # the same arguments in another key order
    assert [guard.observe("read", a) for a in (args, same)] == [None, None]
    third = guard.observe("read", args)
    assert third["content"][0]["text"] == GENTLE_REMINDER
    assert third["source"] == {"kind": "plugin", "plugin": "repeat-tool-reminder", "form": "notice",
                               "summary": "read × 3"}
    assert guard.observe("read", args) is None
    fifth = guard.observe("read", args)["content"][0]["text"]
    assert fifth == detailed_reminder("read", 5, canonicalize(args))
    assert canonicalize(args) == '{"a":[2,{"c":2,"d":1}],"b":1}'
    assert guard.observe("read", {"other": 1}) is None and guard.chain[1] == 1  # a different call restarts
    assert preview_arguments("x" * 7, 5) == "xxxxx… (+2 more chars)"
    custom = RepeatGuard({"thresholds": [2], "exclude": ["todo_*"]})
    assert custom.observe("todo_write", {}) is None and custom.observe("todo_write", {}) is None
    custom.observe("bash", {})
    assert custom.observe("bash", {})["content"][0]["text"] == GENTLE_REMINDER


@pytest.mark.parametrize("config", [{"thresholds": []}, {"thresholds": [1]}, {"thresholds": [3, 3]},
                                    {"argumentsPreviewChars": 0}, {"bogus": 1}])
def test_a_bad_config_fails_loud(config):
    with pytest.raises(DshError):
        RepeatGuard(config)
