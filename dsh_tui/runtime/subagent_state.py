"""The subagent state of one session tree: the object the root agent host owns (``AgentHost.subagents``).

The root ``AgentHost`` creates it; every child host of the tree gets the same object (``HostSpec.subagents``),
and each child (``dsh_tui.extensions.subagents.children.Child``) keeps a reference to it. The subagents
built-in reaches it as ``ctx.host.subagents``; the UI, the SDK and the hooks built-in as ``host.subagents``.
Two sessions opened in one process (two root hosts) share nothing here. The core only holds the state: what
a child is and how it settles is the subagents built-in's (``dsh_tui/extensions/subagents``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("dsh_tui.extensions.subagents")


@dataclass(eq=False)
class SubagentState:
    """The live agents, children, watchers and fan-out caps of one session tree."""

    #: Live agents of the tree by session id (every agent the subagents built-in was applied to): reports and
    #: notices go to them.
    agents: dict[str, Any] = field(default_factory=dict)
    #: Children opened in this tree by session id (live or closed; ``Child``).
    children: dict[str, Any] = field(default_factory=dict)
    #: A resumed parent's task that cold-resumes its children with queued input (``settle`` waits for it).
    resuming: dict[str, asyncio.Task] = field(default_factory=dict)
    #: Listeners ``fn(child)`` called when a child starts, changes phase or settles (the UI's card).
    watchers: list[Callable[[Any], Any]] = field(default_factory=list)
    #: Fan-out caps by agent id (``max_children``, ``max_tree_live``, ``max_tree_total``).
    caps: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Children being opened (``AgentHost.open`` in flight) by parent id: they count as live for the caps.
    opening: dict[str, int] = field(default_factory=dict)
    #: How a child is opened (the subagents built-in's ``open_child``, set when it is applied): other built-ins
    #: (ralph's rounds) open children through it, never by importing the subagents built-in.
    opener: Callable[..., Awaitable[Any]] | None = None

    def watch(self, fn: Callable[[Any], Any]) -> Callable[[], None]:
        """Call ``fn(child)`` whenever a child of this tree starts, changes phase or settles; returns the
        remover."""
        self.watchers.append(fn)

        def off() -> None:
            if fn in self.watchers:
                self.watchers.remove(fn)

        return off

    def notify(self, child: Any) -> None:
        """Tell every watcher about ``child`` (a failing watcher is logged, never raised)."""
        for fn in list(self.watchers):
            try:
                fn(child)
            except Exception:  # noqa: BLE001 - a UI watcher must not break the runtime
                log.exception("subagent watcher failed")
