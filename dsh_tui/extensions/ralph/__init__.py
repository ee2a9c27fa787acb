"""The ``ralph`` built-in plugin, off by default (``[plugins.ralph] enabled = true``): dsh 0.1's ``tool-ralph``.

``ralph`` runs a foreground Ralph loop toward one immutable objective: each round opens a fresh ``spawn``
subagent child (no parent conversation, no earlier child session) with dsh's round prompt; the child ends by
calling ``structured_output`` with a round report (``status`` continue/complete/blocked, ``summary``,
``evidence``, ``nextSteps``, ``blocker``), and only that bounded report crosses to the next round. The call
returns when a worker reports completion or a blocker, or at the round limit, with dsh's texts. dsh runs the
rounds as a fixed workflow script; here they are a Python loop over the subagent host (same prompts, report
checks and results).

Config: ``max_rounds`` (256: the default and ceiling of one call's ``maxRounds``), ``max_handoff_chars``
(16384), ``max_result_chars`` (16384).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import TYPE_CHECKING, Any

from dsh_tui.runtime.options import plugin_options
from dsh_tui.tools.base import ToolDefinition, ToolError

if TYPE_CHECKING:
    from dsh_tui.runtime.plugin_context import BuiltinContext

name = "ralph"
__all__ = ["apply", "name", "DESCRIPTION", "SECTION", "round_prompt", "render_result"]

DEFAULTS = {"max_rounds": 256, "max_handoff_chars": 16_384, "max_result_chars": 16_384}
SECTION_ORDER = 115.5  # dsh's TOOL_RALPH: after the goal tools' guidance, before the subagent report's
DESCRIPTION = ("Run a foreground fresh-agent Ralph loop toward one immutable objective. Use only when the direct "
               "human explicitly asks for Ralph or fresh-agent iteration. Each round opens a new child with no "
               "parent conversation or prior child session; the shared workspace is long-term memory, and only a "
               "bounded structured report crosses rounds. The call returns when a worker reports completion or a "
               "concrete blocker, or at the round limit. Ordinary long-running same-session work belongs to goal "
               "tools.")
SECTION = ("Use the ralph tool ONLY when the direct human explicitly asks for a Ralph loop or fresh-agent iterative "
           "execution. Each Ralph round starts a fresh child with no conversation seed and uses the shared workspace "
           "as durable memory. Completion and blockers are worker reports, not independent evaluation. Use "
           "same-session goal tools for ordinary long-running objectives, and plain subagents or workflows for "
           "bounded delegation and fan-out.")
REPORT_SCHEMA: dict[str, Any] = {  # the report tool's parameters
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["continue", "complete", "blocked"]},
        "summary": {"type": "string"},
        "evidence": {"type": "array", "items": {"type": "string"}},
        "nextSteps": {"type": "array", "items": {"type": "string"}},
        "blocker": {"type": "string"},
    },
    "required": ["status", "summary", "evidence", "nextSteps", "blocker"],
    "additionalProperties": False,
}
STRUCTURED_OUTPUT_TOOL = "structured_output"
STRUCTURED_OUTPUT_DESCRIPTION = ("Report your final structured result. Call this exactly once, when your answer is "
                                 "complete; the arguments must match this tool's parameter schema exactly.")
STRUCTURED_OUTPUT_INSTRUCTION = (f"When you have your final answer, you MUST report it by calling the "
                                 f"`{STRUCTURED_OUTPUT_TOOL}` tool with arguments matching its parameter schema "
                                 "exactly. Do not finish with a plain text answer: only the tool call counts as your "
                                 "result.")
TRUNCATION_NOTICE = "\n… [truncated]"


def round_prompt(objective: str, round_no: int, max_rounds: int, previous: dict | None) -> str:
    """dsh's prompt of one Ralph round."""
    prior = "(none — this is the first round)" if previous is None else json.dumps(
        previous, ensure_ascii=False, separators=(",", ":"))
    return "\n\n".join([
        "You are one fresh worker in a foreground Ralph loop. You receive no parent conversation and no prior child "
        "session. Do not call the ralph tool: this round already is its worker.",
        "Immutable objective:\n" + objective,
        f"Ralph round: {round_no} of {max_rounds}.",
        "The shared workspace and its current working tree are the long-term memory and source of truth. Inspect "
        "them before acting, preserve existing work, perform concrete in-scope work, and verify what you change. "
        "Treat the previous report only as a bounded handoff; confirm it against the workspace.",
        "Previous structured handoff:\n" + prior,
        "Return one report with exact normalized strings. Use status continue with at least one nextSteps entry "
        "while useful work remains; complete only with concrete evidence and no nextSteps; blocked only when no "
        "meaningful progress is possible without human input or an external-state change. blocker must be empty "
        "unless blocked.",
    ])


def _text_ok(value: Any) -> bool:
    return isinstance(value, str) and len(value) > 0 and value == value.strip()


def validate_report(report: Any, max_chars: int) -> dict:
    """dsh's checks of a round report (the workflow script's ``validateReport``); raises ``ValueError``."""
    if not isinstance(report, dict):
        raise ValueError("Ralph child returned no structured round report")
    if not _text_ok(report.get("summary")):
        raise ValueError("Ralph round report summary must be non-empty and normalized")
    evidence, steps = report.get("evidence"), report.get("nextSteps")
    if not (isinstance(evidence, list) and all(map(_text_ok, evidence))
            and isinstance(steps, list) and all(map(_text_ok, steps))):
        raise ValueError("Ralph round report evidence and nextSteps must contain only non-empty normalized strings")
    blocker = report.get("blocker")
    if not isinstance(blocker, str) or blocker != blocker.strip():
        raise ValueError("Ralph round report blocker must be a normalized string")
    status = report.get("status")
    if status == "continue":
        if not steps or blocker != "":
            raise ValueError("a continuing Ralph report needs nextSteps and an empty blocker")
    elif status == "complete":
        if not evidence or steps or blocker != "":
            raise ValueError("a complete Ralph report needs evidence, no nextSteps, and an empty blocker")
    elif status == "blocked":
        if not _text_ok(blocker):
            raise ValueError("a blocked Ralph report needs a concrete blocker")
    else:
        raise ValueError("Ralph round report status is invalid")
    clean = {"status": status, "summary": report["summary"], "evidence": list(evidence), "nextSteps": list(steps),
             "blocker": blocker}
    size = len(json.dumps(report, ensure_ascii=False, separators=(",", ":")))
    if size > max_chars:
        raise ValueError(f"Ralph round report exceeds maxHandoffChars ({size} > {max_chars})")
    return clean


def _bound(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    if max_chars <= len(TRUNCATION_NOTICE):
        return TRUNCATION_NOTICE[:max_chars]
    return text[:max_chars - len(TRUNCATION_NOTICE)] + TRUNCATION_NOTICE


def _pretty(report: Any) -> str:
    return json.dumps(report, ensure_ascii=False, indent=2)


def render_result(result: dict, max_chars: int) -> str:
    n = result["roundsStarted"]
    rounds = f"{n} round{'' if n == 1 else 's'}"
    if result["status"] == "complete":
        text = f"Ralph worker reported completion after {rounds}.\nFinal report:\n{_pretty(result['report'])}"
    elif result["status"] == "blocked":
        text = f"Ralph worker reported a blocker after {rounds}.\nFinal report:\n{_pretty(result['report'])}"
    else:
        text = (f"Ralph reached its {rounds} limit; the worker reported work remaining.\nFinal report:\n"
                f"{_pretty(result['report'])}")
    return _bound(text, max_chars)


def render_round_failure(rounds: int, last: dict | None, max_chars: int) -> str:
    header = f"Ralph round {rounds} child failed before producing a structured report."
    text = (f"{header}\nNo previous handoff was available." if last is None
            else f"{header}\nLast successful handoff:\n{_pretty(last)}")
    return _bound(text, max_chars)


def _config(raw: Any) -> dict[str, int]:
    return plugin_options(raw, DEFAULTS, positive=DEFAULTS, says="a positive safe integer")


async def _run_round(parent: Any, tctx: Any, prompt: str, round_no: int, depth: int) -> dict | None:
    """One fresh ``spawn`` child: its structured report, or None when it ended without one."""
    from dsh_tui.runtime import prompt as prompt_mod

    open_child = parent.host.subagents.opener  # the subagents built-in's (checked when the tool runs)
    label = f"Ralph round {round_no}"
    child = await open_child(parent, parent.host, provider="spawn", mode="one-shot", label=label, tool_name="ralph",
                             call_id=tctx.call_id, depth=depth)
    agent = child.agent
    captured: list[dict] = []

    async def structured_output(args: dict, ctx: Any) -> dict:
        if captured:
            raise ToolError(f"structured output already recorded: the run is complete, so `{ctx.name}` is not "
                            "executed")
        captured.append(dict(args))
        ctx.conclude_turn()
        return {"recorded": True}

    agent.tools.register(ToolDefinition(STRUCTURED_OUTPUT_TOOL, STRUCTURED_OUTPUT_DESCRIPTION, dict(REPORT_SCHEMA),
                                        structured_output, lambda _a, _v: [{"type": "text",
                                                                            "text": "Structured output recorded."}]))

    async def assemble(payload: dict, nxt: Any) -> Any:
        assembly = await nxt()
        assembly.sections.append(prompt_mod.Section(f"tool:{STRUCTURED_OUTPUT_TOOL}", 990,
                                                    STRUCTURED_OUTPUT_INSTRUCTION))
        return assembly

    agent.on("system-prompt/assemble", assemble)
    child.epoch_start = len(agent.session.events)
    agent.followup({"role": "user", "content": [{"type": "text", "text": prompt}], "source": {"kind": "user"}})
    agent.session.append("subagent/descriptor", {"version": 2, "mode": "one-shot", "provider": "spawn",
                                                 "label": label})
    child.state.notify(child)  # the session tree's watchers (the app's card)
    idle = asyncio.ensure_future(agent.wait_idle())
    cancelled = asyncio.ensure_future(tctx.cancelled.wait())
    try:
        await asyncio.wait({idle, cancelled}, return_when=asyncio.FIRST_COMPLETED)
        if not idle.done():
            agent.cancel({"kind": "user"})
            await asyncio.shield(idle)
    finally:
        cancelled.cancel()
    child.outcome = child.activation_outcome()
    await child.close()
    if tctx.cancelled.is_set():
        raise ToolError("Ralph workflow was cancelled (parent step aborted)")
    return captured[0] if captured else None


def apply(ctx: BuiltinContext, config: Any = None) -> None:
    cfg = _config(config)
    agent = ctx.driver
    if getattr(agent, "host", None) is None:
        return  # rounds are subagent children, opened through the agent host

    async def ralph(args: dict, tctx: Any) -> dict:
        parent = tctx.agent or agent
        raw_objective = args.get("objective")
        objective = raw_objective if isinstance(raw_objective, str) else ""
        objective = objective.strip()
        if not objective:
            raise ToolError("Ralph objective must be a non-empty string")
        requested = args.get("maxRounds", cfg["max_rounds"])
        if isinstance(requested, bool) or not isinstance(requested, (int, float)) or requested != int(requested) \
                or requested < 1:
            raise ToolError("Ralph maxRounds must be a positive safe integer")
        max_rounds = int(requested)
        if max_rounds > cfg["max_rounds"]:
            raise ToolError(f"Ralph maxRounds {max_rounds} exceeds the deployment ceiling {cfg['max_rounds']}")
        subagents = getattr(getattr(parent, "host", None), "subagents", None)
        if subagents is None or subagents.opener is None:
            raise ToolError("Ralph needs the subagents plugin (its rounds are subagents), which is not loaded")
        depth = max(int(parent.session.header.get("delegationDepth") or 0), 0) + 1
        previous: dict | None = None
        result: dict | None = None
        for round_no in range(1, max_rounds + 1):
            raw = await _run_round(parent, tctx, round_prompt(objective, round_no, max_rounds, previous), round_no,
                                   depth)
            if raw is None:
                raise ToolError(render_round_failure(round_no, previous, cfg["max_result_chars"]))
            try:
                report = validate_report(raw, cfg["max_handoff_chars"])
            except ValueError as err:
                raise ToolError(f"Ralph workflow failed: {err}") from None
            if report["status"] in ("complete", "blocked"):
                result = {"status": report["status"], "roundsStarted": round_no, "report": report}
                break
            previous = report
        if result is None:
            result = {"status": "budget-limited", "roundsStarted": max_rounds, "report": previous}
        return {"runId": str(uuid.uuid4()), "agentsStarted": result["roundsStarted"], "result": result}

    def render(_args: Any, value: Any) -> list[dict]:
        return [{"type": "text", "text": render_result(value["result"], cfg["max_result_chars"])}]

    parameters = {"type": "object", "properties": {
        "objective": {"type": "string",
                      "description": "The immutable completion objective for every fresh Ralph round."},
        "maxRounds": {"type": "number",
                      "description": "Optional positive safe-integer round cap, bounded by the deployment ceiling."}},
        "required": ["objective"]}
    ctx.tools.register(ToolDefinition("ralph", DESCRIPTION, parameters, ralph, render, access="read"))

    async def assemble(payload: dict, nxt: Any) -> Any:
        from dsh_tui.runtime import prompt as prompt_mod

        assembly = await nxt()
        if "ralph" in agent.tools.tools:
            assembly.sections.append(prompt_mod.Section("tool:ralph", SECTION_ORDER, SECTION))
        return assembly

    ctx.on("system-prompt/assemble", assemble)
