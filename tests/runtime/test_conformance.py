"""Conformance against dsh recordings: every scenario under fixtures/dsh/examples with an input.json.

Each applicable scenario runs the real driver and the built-in tools with the replay provider in a copy
of its workspace and must match dsh's log (see ``conformance.py``). ``test_inventory`` lists every
scenario as pass / not applicable (with the reason) and requires at least 20 applicable scenarios.
"""

from __future__ import annotations

import pytest

from tests.runtime.conformance import (
    applicability,
    run_scenario,
    run_tree_scenario,
    scenario_dirs,
    scenario_id,
)

ALL = scenario_dirs()
APPLICABLE = [d for d in ALL if applicability(d) is None]
TREES = [d for d in APPLICABLE if any(d.glob("session.[0-9]*.jsonl"))]
APPLICABLE = [d for d in APPLICABLE if d not in TREES]


def test_inventory(capsys):
    rows = [(scenario_id(d), applicability(d)) for d in ALL]
    with capsys.disabled():
        print(f"\nconformance: {len(APPLICABLE) + len(TREES)} applicable of {len(ALL)} scenarios "
              f"({len(TREES)} with subagent children)")
        for sid, why in rows:
            print(f"  {'run ' if why is None else 'n/a '} {sid}{'' if why is None else ' - ' + why}")
    assert len(ALL) >= 60
    assert len(APPLICABLE) >= 20
    assert len(TREES) >= 8
    assert all(why for sid, why in rows if sid not in {scenario_id(d) for d in APPLICABLE + TREES})


@pytest.mark.parametrize("scenario", APPLICABLE, ids=scenario_id)
async def test_scenario_matches_dsh(scenario, tmp_path):
    outcome = await run_scenario(scenario, tmp_path)
    assert outcome.mismatches == []
    assert any(e["type"] == "turn/start" for e in outcome.ours)


@pytest.mark.parametrize("name", ["tool-call-turn", "fs-read", "parallel-tool-calls", "fs-write-overwrite"])
async def test_deterministic_tool_results_are_compared(name, tmp_path):
    scenario = next(d for d in APPLICABLE if d.name == name)
    outcome = await run_scenario(scenario, tmp_path)
    assert outcome.mismatches == [] and outcome.compared_results >= 1


@pytest.mark.parametrize("scenario", TREES, ids=scenario_id)
async def test_subagent_scenario_matches_dsh(scenario, tmp_path):
    """The root and every child replay their own recordings through the real driver, the subagents plugin
    and the agent host on a real store; each log matches dsh's (children: header fields, descriptor,
    delegated policy rows, turns, calls, results)."""
    outcome = await run_tree_scenario(scenario, tmp_path)
    assert outcome.mismatches == []
    assert outcome.children and all(h.get("origin") == "subagent" for h in outcome.headers)
    assert outcome.root.compared_results >= 1  # the subagent tools' own result texts were compared
