"""The plugin API (public): see docs/plugins.md for a tutorial.

    from dsh_tui.plugins import Context
    from dsh_tui.tools import ToolDefinition

    name = "greeter"

    def apply(ctx: Context, config) -> None:
        async def pre_step(payload, next):
            decision = await next()
            ...
            return decision
        ctx.on("agent/pre-step", pre_step)
        ctx.tools.register(ToolDefinition(...))
        ctx.effect(lambda: lambda: print("unloaded"))   # dsh: setup now, the returned teardown at unload

``typed_tool(name, description, Model, execute)`` is a tool whose parameters are a pydantic model.
``user_message(text, source)`` builds a user message (e.g. context a pre-step listener adds).
``EVENTS`` maps every event a plugin can listen on to its dispatch mode; ``dsh_tui.plugins.events`` has a
TypedDict per payload.
"""

from dsh_tui.runtime.agent import user_message
from dsh_tui.runtime.bus import EVENT_MODES as EVENTS
from dsh_tui.runtime.plugins import (
    BUILTIN_IDS,
    ENTRY_POINT_GROUP,
    AgentView,
    Context,
    PluginError,
    PluginRecord,
    PluginSpec,
    SessionView,
)
from dsh_tui.tools.typed import typed_tool

__all__ = ["AgentView", "BUILTIN_IDS", "Context", "ENTRY_POINT_GROUP", "EVENTS", "PluginError", "PluginRecord",
           "PluginSpec", "SessionView", "typed_tool", "user_message"]
