"""dsh_tui.runtime - the harness driver (docs/runtime.md).

Public API (stable; the UI and CLI drive this)::

    from dsh_tui.runtime import Agent, AgentConfig

    agent = Agent(session, provider, tools, config=AgentConfig(model="deepseek-v4-flash", cwd=path),
                  checkpoint=None, clock=None)
    agent.followup("text" | message)   # next-turn, wakes the driver (own turn)
    agent.steer(...)                   # next-step, wakes (idle: starts a turn; running: next step boundary)
    agent.inject(...)                  # next-step, no wake (context that waits for the next wake)
    agent.send(message, target, wakeup)
    agent.cancel({"kind": "user"}, keep_inbox=False)
    await agent.wait_idle()
    agent.status                       # "idle" | "running"
    agent.phase                        # {"kind": idle|running|maintenance, "since": ms, ...}
    agent.on(name, listener)           # event bus (scoped to this agent); returns off()
    await agent.compact_now()          # manual /compact (maintenance from idle)
    await agent.dispose()              # cancel {"kind": "disposed"}, wait, emit agent/disposed

Session events come from ``session.subscribe``; live agent events come from ``agent.on``:

- ``agent/created``, ``agent/session-start {source: startup|resume}`` at construction,
- ``agent/status {status}`` and ``agent/phase {phase}`` on every change (status bar),
- ``agent/error {turn, step, error}``, ``agent/inbox/inserted|claimed|discarded {message}``,
- waterfalls ``agent/pre-step`` (``{"kind": "enter", "messages": [...]}`` / ``{"kind": "reject"}``),
  ``agent/request`` (call config), ``agent/request-error`` (``{"kind": "retry"}`` / None),
  ``system-prompt/assemble``, ``tools/pre-execute`` (allow / deny{reason} / ask{reason}),
  ``tools/execute``, ``tools/post-execute`` (accept / block{feedback}), ``llm/stream``,
- serial ``agent/turn-stopping {turn}``; emit ``tools/result``.

Approvals: a tool call that needs approval (preset ``read-only`` / ``workspace-write`` /
``full-access``, or a pre-execute ``ask``) dispatches the ``approval/request`` waterfall with
``{toolName, callId, reason, signal}``. A listener returns (or awaits) ``"allowed-once"``,
``"rejected"``, ``"cancelled"`` or ``"unavailable"``. With no listener the request fails closed
(``unavailable``); ``AgentConfig(approval_policy="never")`` rejects without asking.

``checkpoint(reason)`` (optional async callable, e.g. ``SessionWriter.checkpoint``) is awaited at each
pre-step (``"pre-step"``), before a model request (``"request"``) and before a top-level tool body
(``"tool"``); a failing checkpoint fails closed.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dsh_tui.runtime.agent import Agent, AgentConfig, user_message
    from dsh_tui.runtime.bus import EventBus
    from dsh_tui.runtime.signal import AbortError, AbortSignal
    from dsh_tui.runtime.tools import RunToolContext

__all__ = ["Agent", "AgentConfig", "AbortError", "AbortSignal", "EventBus", "RunToolContext", "user_message"]

# The names above are imported on first use (issue #29): importing a light submodule (``dsh_tui.extensions.goals``,
# which the chat's status bar folds with) must not load the agent, the tools and every plugin with it.
_WHERE = {"Agent": "agent", "AgentConfig": "agent", "user_message": "agent", "EventBus": "bus",
          "AbortError": "signal", "AbortSignal": "signal", "RunToolContext": "tools"}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value
