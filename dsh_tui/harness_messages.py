"""What the harness tells a front end (the UI), as typed messages (Toad's ``acp/messages.py`` is the model).

The harness thread (``dsh_tui.ui.harness.AgentHarness``) announces these through the bridge
(``dsh_tui.ui.bridge.Bridge.announce``); the chat screen receives them, in order, with the session events
of the same drain, and dispatches on their type (``dsh_tui.ui.screens.chat_messages.MessageInbox``). They are live state,
never history: what a session remembers is in its log. Textual-free and stdlib-only, a layer below the
runtime (importing ``dsh_tui.runtime`` costs the whole agent); the UI imports it with the harness, after its
first frame (creating these dataclasses costs a few milliseconds).

How an approval reaches the UI: the runtime's ``approval/request`` waterfall
(``dsh_tui.runtime.approval``) reaches ``AgentHarness._on_approval``, which builds an ``ApprovalRequest``
and announces ``ApprovalAsked(request)``; the chat's approval flow shows it in the approval panel, whose
decision is an ``ApprovalOutcome`` set as the request's future's result; the harness awaits that future and
hands ``outcome.wire()`` back to the runtime. A request the turn no longer waits for (cancelled) is
announced as ``ApprovalClosed(request)``.
"""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass, field
from typing import Any, Literal

Decision = Literal["allowed-once", "rejected"]


@dataclass(frozen=True)
class ApprovalOutcome:
    """The user's answer to an approval: allowed once (``scope="session"``: allowed for the rest of the
    session) or rejected (``reason``: what the model reads)."""

    decision: Decision
    scope: Literal["session"] | None = None
    reason: str = ""

    @property
    def allowed(self) -> bool:
        return self.decision == "allowed-once"

    def wire(self) -> str | dict[str, Any]:
        """What the runtime's ``approval/request`` listeners answer (``dsh_tui.runtime.approval``): the bare
        outcome word, or ``{"outcome", "scope"}`` / ``{"outcome", "reason"}``."""
        if self.scope is not None:
            return {"outcome": self.decision, "scope": self.scope}
        if self.reason:
            return {"outcome": self.decision, "reason": self.reason}
        return self.decision


ALLOW_ONCE = ApprovalOutcome("allowed-once")
ALLOW_SESSION = ApprovalOutcome("allowed-once", scope="session")
REJECT = ApprovalOutcome("rejected")


def _future() -> concurrent.futures.Future[Any]:
    return concurrent.futures.Future()


@dataclass(eq=False)
class ApprovalRequest:
    """A tool call waiting for the user; the UI resolves ``future`` with an ``ApprovalOutcome``.

    ``kind`` "trust": trust this workspace? (``tool`` is its folder, ``arguments`` what in it needs trust),
    answered in the same panel with the same guards (allowed: trust it)."""

    tool: str
    arguments: str
    reason: str
    call_id: str | None = None
    future: concurrent.futures.Future[ApprovalOutcome] = field(default_factory=_future)
    kind: Literal["tool", "trust"] = "tool"


@dataclass(eq=False)
class QuestionRequest:
    """``ask_user_question`` (or a plan review) waiting for the user; the UI resolves ``future`` with the
    answer dict (``{"answers": [...]}``), or None when the user dismissed it."""

    questions: list[dict[str, Any]]
    call_id: str | None
    future: concurrent.futures.Future[dict[str, Any] | None] = field(default_factory=_future)


@dataclass(frozen=True)
class StatusChanged:
    """The agent is ``"running"`` a turn or ``"idle"``."""

    status: str


@dataclass(frozen=True)
class PhaseChanged:
    """What the status bar says the turn waits for (e.g. "connecting MCP docs")."""

    phase: str


@dataclass(frozen=True)
class ApprovalAsked:
    request: ApprovalRequest


@dataclass(frozen=True)
class ApprovalClosed:
    """The harness no longer waits for ``request`` (the turn was cancelled, the trust question ended)."""

    request: ApprovalRequest


@dataclass(frozen=True)
class QuestionAsked:
    request: QuestionRequest


@dataclass(frozen=True)
class QuestionClosed:
    request: QuestionRequest


@dataclass(frozen=True)
class BackendFailed:
    """The session backend (the UI's ``SessionBackend``) could not start, or a call into it failed: shown as
    an error (and above the composer when no session could start)."""

    text: str


@dataclass(frozen=True)
class TurnFailed:
    """A turn failed: its footer says so; the status bar shows ``text`` (no toast repeating it)."""

    text: str


@dataclass(frozen=True)
class PluginFailed:
    """A plugin failed to load (or logged an error): the session still opens."""

    text: str


@dataclass(frozen=True)
class Notice:
    """One line for the user (a toast)."""

    text: str


@dataclass(frozen=True)
class SubagentSnapshot:
    """A subagent below the open session changed: its live state for the cards and the status bar
    (``dsh_tui.extensions.subagents.children.snapshot``: id, callId, label, status, phase, tool, tokens,
    elapsed, ...)."""

    snapshot: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.snapshot.get("id") or "")


@dataclass(frozen=True)
class ModelChanged:
    """The route the next request takes (the status bar shows it before any turn)."""

    provider: str | None
    model: str | None
    effort: str | None


@dataclass(frozen=True)
class PresetChanged:
    """The permission mode (read-only, workspace-write, full-access)."""

    preset: str


@dataclass(frozen=True)
class SandboxChanged:
    """What the status bar says of the OS sandbox: "sandbox", "no sandbox" or "" (turned off)."""

    label: str


HarnessMessage = (StatusChanged | PhaseChanged | ApprovalAsked | ApprovalClosed | QuestionAsked | QuestionClosed
                  | BackendFailed | TurnFailed | PluginFailed | Notice | SubagentSnapshot | ModelChanged
                  | PresetChanged | SandboxChanged)
