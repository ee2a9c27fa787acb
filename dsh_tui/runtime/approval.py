"""Approvals (docs/runtime.md, "Approvals and presets") and the permission presets.

``decide_preset(...)`` is the innermost default of ``tools/pre-execute``: it returns ``allow`` or
``ask``. An ``ask`` goes through ``ApprovalService.request``, which appends ``approval/asked``, runs the
``approval/request`` waterfall (innermost ``unavailable``: fail closed when nobody answers) and appends
``approval/decided``. A listener answers by returning (or awaiting) one of ``allowed-once``,
``rejected``, ``cancelled``, ``unavailable``, or ``{"outcome": "rejected", "reason": text}``: the reason is
not logged in ``approval/decided`` (dsh's shape) but reaches the model in the tool result
(``dsh_tui.runtime.permissions.rejection_text``).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from dsh_tui.runtime.signal import AbortError, AbortSignal

PRESETS = ("read-only", "workspace-write", "full-access")
OUTCOMES = ("allowed-once", "rejected", "cancelled", "unavailable")


def outcome_text(outcome: str, tool_name: str) -> str:
    """The model-visible refusal for a non-allowed outcome (without the ``Error: `` prefix)."""
    if outcome == "rejected":
        return f'the user rejected tool "{tool_name}"'
    if outcome == "cancelled":
        return f'approval for tool "{tool_name}" was cancelled'
    return f'tool "{tool_name}" requires approval, but no approval channel is available'


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def target_path(args: Any, cwd: Path) -> Path | None:
    if not isinstance(args, dict):
        return None
    raw = args.get("file_path", args.get("path"))
    if not isinstance(raw, str) or not raw:
        return None
    p = Path(raw).expanduser()
    if not p.is_absolute():
        p = cwd / p
    try:
        return p.resolve()
    except OSError:
        return p


DSH_MODES = {"read-only": "read-only", "workspace-write": "workspace-write", "full-access": "danger-full-access"}


def decide_sandboxed(preset: str, args: Any) -> dict:
    """A command the OS sandbox confines runs without asking; an escalation (``sandbox_permissions``) asks
    first (``escalation``: the mode it asks for), or is refused when it is not wider (dsh's
    ``approveEscalation``). Malformed escalation arguments are the tool's to refuse."""
    from dsh_tui.tools.sandbox import WIDER_MODES, escalation_args_problem, escalation_reason, not_wider_text

    mode = args.get("sandbox_permissions") if isinstance(args, dict) else None
    justification = args.get("justification") if isinstance(args, dict) else None
    if mode is None or escalation_args_problem(mode, justification) is not None or not isinstance(justification, str):
        return {"kind": "allow"}  # no escalation, or malformed arguments (the tool refuses those)
    effective = DSH_MODES[preset]
    if mode not in WIDER_MODES.get(effective, ()):
        return {"kind": "deny", "reason": not_wider_text(str(mode), effective)}
    return {"kind": "ask", "reason": escalation_reason(mode, justification), "escalation": mode}


def decide_preset(preset: str, access: str, args: Any, cwd: Path, workspace: Path, tool_name: str,
                  sandboxed: bool = False) -> dict:
    """``{"kind": "allow"}`` or ``{"kind": "ask", "reason": ...}`` for one call under a preset (``sandboxed``:
    an exec tool whose commands the OS sandbox confines)."""
    if preset == "full-access" or access == "mcp-allowed":  # an MCP tool the settings allow (or trust)
        return {"kind": "allow"}
    if access == "exec" and sandboxed:
        return decide_sandboxed(preset, args)
    if access == "mcp":  # MCP tools run code elsewhere: they ask unless allowed
        return {"kind": "ask", "reason": f"{tool_name} is an MCP server's tool (under the {preset} preset)"}
    path = target_path(args, cwd)
    outside = path is not None and not _inside(path, workspace.resolve())
    if access == "exec":
        return {"kind": "ask", "reason": f"{tool_name} runs a shell command under the {preset} preset"}
    if access == "write" and isinstance(args, dict) and args.get("sandbox_permissions") is not None:
        escalation = decide_sandboxed(preset, args)  # dsh: a file tool's escalation asks like a command's
        if escalation["kind"] != "allow":
            return escalation
    if access == "write":
        if preset == "read-only":
            return {"kind": "ask", "reason": f"{tool_name} modifies files under the read-only preset"}
        if outside:
            return {"kind": "ask", "reason": f"{tool_name} writes outside the workspace: {path}"}
        if path is not None and protected(path, workspace):
            return {"kind": "ask", "reason": f"{tool_name} writes a git hook or configuration, which commands "
                                             f"cannot change in the sandbox: {path}"}
        return {"kind": "allow"}
    if outside:
        return {"kind": "ask", "reason": f"{tool_name} reads outside the workspace: {path}"}
    return {"kind": "allow"}


def protected(path: Path, workspace: Path) -> bool:
    """A path inside the workspace that the sandbox keeps read-only (a git dir's ``hooks`` and ``config``, what
    runs outside the sandbox later): the file tools ask before writing it, as a command cannot."""
    parts = path.parts
    if ".git" not in parts:
        return False
    i = parts.index(".git")
    return len(parts) > i + 1 and parts[i + 1] in ("hooks", "config")


class ApprovalService:
    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.reasons: dict[str, str] = {}  # call id -> the user's reason for a rejection (taken by the tool)
        # call id -> why the answer failed (an answerer that raised or answered nothing valid): the model is told
        # that rather than "no approval channel is available" (taken by the tool)
        self.problems: dict[str, str] = {}

    @property
    def policy(self) -> str:
        """``agent.config.approval_policy``, read at each request like the preset: "ask" consults
        answerers; "never" rejects every request without asking."""
        return self.agent.config.approval_policy

    async def request(self, *, tool_name: str, call_id: str, reason: str | None, signal: AbortSignal,
                      answer: str | None = None) -> str:
        """``answer``: decided without asking anyone (``--allow-escalation`` headless), logged the same way."""
        agent = self.agent
        req_id = str(uuid.uuid4())
        asked: dict[str, Any] = {"id": req_id, "toolName": tool_name, "callId": call_id}
        if reason:
            asked["reason"] = reason
        agent.session.append("approval/asked", asked)
        if answer is not None:
            outcome = answer
        elif self.policy == "never":
            outcome = "rejected"
        else:
            payload = {"agent": agent, "id": req_id, "toolName": tool_name, "callId": call_id,
                       "reason": reason, "signal": signal}
            try:
                outcome = await signal.race(
                    agent.bus.waterfall("approval/request", payload, lambda: "unavailable", scope=agent.id)
                )
            except AbortError:
                agent.session.append("approval/decided", {"id": req_id, "outcome": "cancelled"})
                raise
            except Exception as err:  # noqa: BLE001 - a failing answerer fails closed
                outcome = "unavailable"
                self.problems[call_id] = "the approval answer failed: " + " ".join(
                    (str(err) or type(err).__name__).split())
            scope = None
            if isinstance(outcome, dict):
                if isinstance(outcome.get("reason"), str) and outcome["reason"].strip():
                    self.reasons[call_id] = outcome["reason"]
                scope = outcome.get("scope") if outcome.get("outcome") == "allowed-once" else None
                outcome = outcome.get("outcome", outcome.get("kind"))
            if outcome not in OUTCOMES:
                self.problems[call_id] = (f"an approval/request listener answered {outcome!r} (expected one of "
                                          f"{', '.join(OUTCOMES)})")
                outcome = "unavailable"
            if scope == "session":
                # "allow for this session": dsh's shape plus the scope, so a resumed session has it again
                # (dsh_tui.runtime.permissions.logged_allowances)
                agent.session.append("approval/decided", {"id": req_id, "outcome": outcome, "scope": "session"})
                return outcome
        agent.session.append("approval/decided", {"id": req_id, "outcome": outcome})
        return outcome
