"""Conformance against dsh recordings: every scenario under fixtures/dsh/examples with an input.json.

Each applicable scenario runs the real driver and the built-in tools with the replay provider in a copy
of its workspace and must match dsh's log (see ``conformance.py``). ``test_inventory`` lists every
scenario as pass / not applicable (with the reason) and requires at least 20 applicable scenarios.
"""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES, INVENTORY
from tests.runtime import ledger
from tests.runtime.conformance import (
    SETTLEMENT_DIR,
    _instructions,
    _title_requests,
    _titles,
    applicability,
    headless_applicability,
    headless_dirs,
    run_headless,
    run_scenario,
    run_seeded,
    run_settlement,
    run_tree_scenario,
    scenario_dirs,
    scenario_id,
    seeded_applicability,
    seeded_dirs,
)

ALL = scenario_dirs()
APPLICABLE = [d for d in ALL if applicability(d) is None]
TREES = [d for d in APPLICABLE if any(d.glob("session.[0-9]*.jsonl"))]
APPLICABLE = [d for d in APPLICABLE if d not in TREES]
HEADLESS = headless_dirs()
HEADLESS_APPLICABLE = [d for d in HEADLESS if headless_applicability(d) is None]
SEEDED = [d for d in seeded_dirs() if seeded_applicability(d) is None]
# The feature scenarios of issue #18 (titles, instructions, skills) the inventory names but whose recordings
# this copy of the corpus does not hold: nothing to replay (docs/extensions.md, "Recorded scenarios").
ABSENT_FEATURE_SCENARIOS = {"examples/headless-agent/tests/workspace-context-resume-snapshots/precedence-change"}


def _absent_from_corpus() -> list[str]:
    """Scenarios of the corpus inventory (tests/fixtures/dsh-inventory.tsv) with no directory here."""
    rows = [line.split("\t", 1)[0] for line in INVENTORY.read_text().splitlines() if line and line[0] != "#"]
    return [r for r in rows if not (FIXTURES / r).is_dir()]


def test_inventory(capsys):
    """Prints how many of dsh's 126 recorded scenarios replay (in any harness) and, for each other one, the
    feature it needs (``tests/runtime/ledger.py``; docs/conformance.md records it)."""
    rows = [(scenario_id(d), applicability(d)) for d in ALL]
    states = ledger.states()
    with capsys.disabled():
        print(f"\n{ledger.report(states)}")
        print(f"loop harness: {len(APPLICABLE) + len(TREES)} of {len(ALL)} scenarios with a prompt script "
              f"({len(TREES)} with subagent children), {len(HEADLESS_APPLICABLE)} of {len(HEADLESS)} headless snapshots")
    assert len(states) == ledger.TOTAL
    assert sum(s.replays for s in states) >= 75
    assert all(s.needs for s in states if not s.replays)
    assert ledger.documented() == ledger.markdown(states), "docs/conformance.md: run python -m tests.runtime.ledger"
    assert len(HEADLESS_APPLICABLE) >= 3
    assert len(ALL) >= 60
    assert len(APPLICABLE) >= 20
    assert len(TREES) >= 9
    assert all(why for sid, why in rows if sid not in {scenario_id(d) for d in APPLICABLE + TREES})
    # once a recording is added it must be replayed (or given its reason) like the others
    assert set(_absent_from_corpus()) >= ABSENT_FEATURE_SCENARIOS


@pytest.mark.parametrize("scenario", APPLICABLE, ids=scenario_id)
async def test_scenario_matches_dsh(scenario, tmp_path):
    outcome = await run_scenario(scenario, tmp_path)
    assert outcome.mismatches == []
    assert any(e["type"] == "turn/start" for e in outcome.ours)


@pytest.mark.parametrize("name", ["tool-call-turn", "fs-read", "parallel-tool-calls", "fs-write-overwrite", "read-image",
                                  "read-image-dimension",
                                  "read-image-text-route"])
async def test_deterministic_tool_results_are_compared(name, tmp_path):
    scenario = next(d for d in APPLICABLE if d.name == name)
    outcome = await run_scenario(scenario, tmp_path)
    assert outcome.mismatches == [] and outcome.compared_results >= 1


@pytest.mark.parametrize("where", ["acp-agent", "headless-agent"])
async def test_dshs_pty_tools_scenarios_replay_with_every_terminal_result_compared(where, tmp_path):
    """The terminals plugin's six tools (dsh_tui/extensions/terminals/) over dsh's snapshot PTY backend."""
    scenario = next(d for d in APPLICABLE if d.name == "pty-tools" and scenario_id(d).startswith(where))
    outcome = await run_scenario(scenario, tmp_path)
    assert outcome.mismatches == [] and outcome.compared_results == 6


@pytest.mark.parametrize("scenario", TREES, ids=scenario_id)
async def test_subagent_scenario_matches_dsh(scenario, tmp_path, session_format_v0):
    """The root and every child replay their own recordings through the real driver, the subagents plugin
    and the agent host on a real store; each log matches dsh's (children: header fields, descriptor,
    delegated policy rows, turns, calls, results). The recordings are dsh 0.1's: the root is a v0 session."""
    outcome = await run_tree_scenario(scenario, tmp_path)
    assert outcome.mismatches == []
    assert outcome.children and all(h.get("origin") == "subagent" for h in outcome.headers)
    assert outcome.root.compared_results >= 1  # the subagent tools' own result texts were compared


@pytest.mark.parametrize("scenario", HEADLESS_APPLICABLE, ids=scenario_id)
async def test_headless_snapshot_matches_dsh(scenario, tmp_path):
    outcome = await run_headless(scenario, tmp_path)
    assert outcome.mismatches == []
    assert _titles(outcome.recorded), "every headless snapshot has a fallback title"


@pytest.mark.parametrize("scenario", SEEDED, ids=scenario_id)
async def test_seeded_store_snapshot_matches_dsh(scenario, tmp_path, session_format_v0):
    """dsh's headless snapshots that seed a store first (a parent's turn, a cold child) and resume the parent:
    the same seed in a real store, the parent resumed through the agent host, its log compared."""
    outcome = await run_seeded(scenario, tmp_path)
    assert outcome.mismatches == [] and outcome.root.compared_results >= 1


async def test_headless_settlement_snapshot_matches_dsh(tmp_path, session_format_v0):
    """dsh's headless subagent-settlement: the parent's scripted turn through the agent host with dsh's
    settlement fence; the parent's log (every event its stream-json printed), the child's log
    (child.expected.jsonl: rows, descriptor, no delegated approval policy under a headless host) and the final
    answer match dsh's."""
    outcome, result = await run_settlement(SETTLEMENT_DIR, tmp_path)
    assert outcome.mismatches == []
    assert result["ours"] == result["dsh"] == "PARENT_RECEIVED_CHILD_RESULT"
    assert len(outcome.children) == 1 and outcome.root.compared_results >= 1


def _by_name(dirs, name):
    return next(d for d in dirs if d.name == name)


async def test_titles_replay_as_dsh_logged_them(tmp_path):
    """session-title-after-turn: the fallback before the first request/header, the title request byte for
    byte (dsh's system prompt, user text, route, maxTokens), the provider's title after the turn."""
    outcome = await run_scenario(_by_name(APPLICABLE, "session-title-after-turn"), tmp_path)
    assert outcome.mismatches == []
    titles = _titles(outcome.ours)
    assert [(t, src) for t, src, _ in titles] == [
        ("Reply with exactly TITLE_DONE. Do", '{"kind": "fallback"}'),
        ("Late durable session title", '{"kind": "provider", "model": {"model": "title-model", "provider": '
                                       '"title-replay"}, "provider": "session-title-first-prompt-llm"}')]
    assert _title_requests(outcome.ours) == _title_requests(outcome.recorded) and len(_title_requests(outcome.ours)) == 1


async def test_a_failed_title_request_keeps_the_fallback(tmp_path):
    """headless-profile: dsh's title request failed; the request row stays, no provider title follows."""
    outcome = await run_headless(_by_name(HEADLESS_APPLICABLE, "headless-profile"), tmp_path)
    assert outcome.mismatches == []
    assert len(_title_requests(outcome.ours)) == 1
    assert [src for _, src, _ in _titles(outcome.ours)] == ['{"kind": "fallback"}']


async def test_an_offline_edit_of_agents_md_enters_as_a_replace_on_resume(tmp_path):
    outcome = await run_headless(_by_name(HEADLESS_APPLICABLE, "offline-edit"), tmp_path)
    assert outcome.mismatches == []
    (text, source), = _instructions([e for e in outcome.ours if e["seq"] > 5])
    assert text.startswith("<system-reminder>\nUpdated instructions from: AGENTS.md\n\n")
    assert '"action": "replace"' in source
