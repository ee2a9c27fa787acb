"""Permission modes (dsh ``permission-presets``), session allowances and rejection reasons.

**Modes.** dsh-tui's presets are ``read-only``, ``workspace-write`` and ``full-access`` (dsh spells the last
one ``danger-full-access``). Switching a live session's mode appends what dsh's ``/permission <preset>``
appends, in its order (tests/fixtures/dsh/.../headless-profile/session.expected.jsonl,
.../turn-tail-actions/session.jsonl): ``permission/preset {preset}``, ``sandbox/mode {mode}``,
``approval/policy {policy}`` (``never`` for full access, else ``ask``), with dsh's names. The tools read
``agent.config.preset`` at every call, so a switch holds from the next call on. A resumed session gets its
mode back from the log (``restore``: the last ``sandbox/mode`` / ``approval/policy``, as dsh folds them).

**Session allowances.** "Allow for this session" in the approval panel: dsh logs each decision only as
``approval/decided {outcome: allowed-once}``; dsh-tui adds ``scope: "session"`` to that event (an extra
field, which dsh ignores), so a resumed session gets its allowances back (``logged_allowances``: the
asked call's tool and arguments). They live with the open session's harness (``SessionAllowances``). A
call an allowance covers still logs ``approval/asked`` / ``approval/decided allowed-once``.

**Reasons.** "Reject with a reason": dsh has no such outcome; the decision is logged as ``rejected`` and
the model reads dsh's text followed by the reason (``rejection_text``).
"""

from __future__ import annotations

import json
from typing import Any

from dsh_tui.runtime.approval import PRESETS
from dsh_tui.session.jsonutil import loads_bounded
from dsh_tui.session.rows import events_of

# dsh-tui preset -> dsh's name (permission/preset, sandbox/mode)
DSH_NAMES = {"read-only": "read-only", "workspace-write": "workspace-write", "full-access": "danger-full-access"}
FROM_DSH = {v: k for k, v in DSH_NAMES.items()}
POLICIES = {"read-only": "ask", "workspace-write": "ask", "full-access": "never"}
ALIASES = {"danger-full-access": "full-access", "ro": "read-only", "write": "workspace-write", "full": "full-access"}
# the labels the status bar and the toggle show
LABELS = {"read-only": "read-only", "workspace-write": "workspace-write", "full-access": "full-access"}


def normalize(name: str) -> str | None:
    """A preset name (dsh's or an alias) as dsh-tui spells it, or None when it names none."""
    name = ALIASES.get(name.strip(), name.strip())
    return name if name in PRESETS else None


def next_preset(preset: str) -> str:
    """The toggle's order: read-only -> workspace-write -> full-access -> read-only."""
    i = PRESETS.index(preset) if preset in PRESETS else -1
    return PRESETS[(i + 1) % len(PRESETS)]


def preset_events(preset: str) -> list[tuple[str, dict[str, Any]]]:
    """The events dsh appends for ``/permission <preset>``, in its order."""
    dsh = DSH_NAMES[preset]
    return [("permission/preset", {"preset": dsh}), ("sandbox/mode", {"mode": dsh}),
            ("approval/policy", {"policy": POLICIES[preset]})]


def set_preset(agent: Any, preset: str) -> str:
    """Switch ``agent``'s mode to ``preset`` (any accepted spelling): log it as dsh does and apply it.
    Returns the preset; raises ValueError for an unknown name."""
    name = normalize(preset)
    if name is None:
        raise ValueError(f"unknown permission mode {preset!r} (expected one of {', '.join(PRESETS)})")
    for etype, data in preset_events(name):
        agent.session.append(etype, data)
    agent.config.preset = name
    if agent.config.approval_policy != "never" or not _delegated(agent.session.events):
        agent.config.approval_policy = POLICIES[name]
    return name


_MODE_TYPES = frozenset({"sandbox/mode", "approval/policy"})
_ALLOWANCE_TYPES = frozenset({"tool/call", "approval/asked", "approval/decided"})


def _delegated(events: Any) -> bool:
    return any(e.get("type") == "approval/policy" and (e.get("data") or {}).get("source") == "delegation"
               for e in events)


def logged_mode(events: Any) -> tuple[str | None, str | None]:
    """(preset, approval policy) as the log last set them (dsh's fold: the last ``sandbox/mode`` /
    ``approval/policy``, the delegated ones left out); None where the log sets none."""
    preset: str | None = None
    policy: str | None = None
    for e in events_of(events, _MODE_TYPES):  # a loaded v4 log decodes only these
        etype = e.get("type")
        if (e.get("data") or {}).get("source") == "delegation":
            continue  # a subagent's delegated scope: its host sets it
        if etype == "sandbox/mode":
            mode = (e.get("data") or {}).get("mode")
            if isinstance(mode, str):  # anything else names no preset
                preset = FROM_DSH.get(mode, preset)
        elif etype == "approval/policy":
            value = (e.get("data") or {}).get("policy")
            if value in ("ask", "never"):
                policy = value
    return preset, policy


def restore(agent: Any) -> None:
    """A resumed session keeps the mode its log records (over the default the host was opened with)."""
    preset, policy = logged_mode(agent.session.events)
    if preset is not None:
        agent.config.preset = preset
    if policy is not None:
        agent.config.approval_policy = policy


# -------------------------------------------------------------------------------------------------
# Session allowances


def allowance_key(tool: str, arguments: str) -> str:
    """What "allow for this session" covers: for bash the exact command, for any other tool the tool
    with exactly these arguments (compared as canonical JSON)."""
    try:
        args = loads_bounded(arguments) if arguments else {}
    except ValueError:
        args = arguments
    if tool == "bash" and isinstance(args, dict) and isinstance(args.get("command"), str):
        return json.dumps(["bash", args["command"]])
    return json.dumps([tool, args], sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def allowance_label(tool: str, arguments: str) -> str:
    """How the panel names what an allowance covers."""
    try:
        args = loads_bounded(arguments) if arguments else {}
    except ValueError:
        args = None
    if tool == "bash" and isinstance(args, dict) and isinstance(args.get("command"), str):
        return "this command"
    return f"{tool} with these arguments"


def logged_allowances(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(tool, arguments) of every call allowed "for this session" in ``events`` (``approval/decided`` with
    ``scope: "session"``, its ``approval/asked``'s call)."""
    asked: dict[str, str] = {}
    calls: dict[str, tuple[str, str]] = {}
    out: list[tuple[str, str]] = []
    for event in events_of(events, _ALLOWANCE_TYPES):  # a loaded v4 log decodes only these
        etype, data = event.get("type"), event.get("data") or {}
        if etype == "tool/call":
            calls[str(data.get("callId"))] = (str(data.get("name") or ""), str(data.get("arguments") or ""))
        elif etype == "approval/asked":
            asked[str(data.get("id"))] = str(data.get("callId"))
        elif etype == "approval/decided" and data.get("scope") == "session" and data.get("outcome") == "allowed-once":
            call = calls.get(asked.get(str(data.get("id")), ""))
            if call is not None and call[0]:
                out.append(call)
    return out


class SessionAllowances:
    """The calls the user allowed for the rest of this session (see the module docstring)."""

    def __init__(self) -> None:
        self.keys: set[str] = set()

    def add(self, tool: str, arguments: str) -> None:
        self.keys.add(allowance_key(tool, arguments))

    def covers(self, tool: str, arguments: str) -> bool:
        return allowance_key(tool, arguments) in self.keys

    def __len__(self) -> int:
        return len(self.keys)


def rejection_text(tool_name: str, reason: str | None) -> str:
    """The model-visible refusal (without ``Error: ``): dsh's text, then the user's reason if one was given."""
    text = f'the user rejected tool "{tool_name}"'
    reason = " ".join((reason or "").split())
    return f"{text}. The user's reason: {reason}" if reason else text
