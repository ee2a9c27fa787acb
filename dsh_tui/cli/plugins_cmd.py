"""``dsh-tui plugins [--plugin MODULE]... [--json]``: every plugin found, where it comes from, whether it
loaded (or why not), the events it listens on and the tools it registers. The current directory's project
plugins (``.dsh-tui/plugins/``) are listed too: loaded if the workspace is trusted, else ``skipped`` (never
imported).

The plugins are applied to a throw-away agent on an in-memory session (no provider, nothing written), so
what is listed is exactly what ``run`` would load.
"""

from __future__ import annotations

import argparse

HELP = "list the plugins found, where from, loaded or failed (--json)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plugin", dest="plugins", action="append", default=[], metavar="MODULE",
                        help="also load the plugin MODULE (or MODULE:OBJECT), as run --plugin does")
    parser.add_argument("--json", action="store_true", help="one JSON object per plugin")


def inventory(modules: tuple[str, ...] = ()) -> list[dict]:
    """The plugin records (as dicts) of an agent opened with ``modules`` on top of the configuration."""
    import asyncio
    import os
    import types
    import uuid

    from dsh_tui.runtime.agent import Agent, AgentConfig
    from dsh_tui.runtime.host import HostSpec, plugin_specs
    from dsh_tui.runtime.plugins import Plugins
    from dsh_tui.runtime.subagent_state import SubagentState
    from dsh_tui.session.headers import make_header
    from dsh_tui.session.log import Session

    session = Session(make_header(str(uuid.uuid4()), cwd=os.getcwd()))
    plugins = Plugins(plugin_specs(tuple(modules), workspace=os.getcwd()), on_failure=lambda _r: None)
    # a stand-in host (no store, no provider): built-ins that only work under an agent host (subagents)
    # register their tools as they do in ``run``; nothing runs a turn here
    host = types.SimpleNamespace(spec=HostSpec(root=None, cwd=None), store=None, session=session,
                                 subagents=SubagentState())
    from dsh_tui.tools import builtin_tools

    # the built-in tools as run has them, so a plugin tool named like one of them fails here as it does there
    agent = Agent(session, None, builtin_tools(), config=AgentConfig(model="-", runtime_context=False),
                  plugins=plugins, host=host)
    records = [r.as_dict() for r in plugins.records]
    asyncio.run(agent.dispose())
    return records


def run(args: argparse.Namespace) -> int:
    import json

    records = inventory(tuple(args.plugins))
    if args.json:
        for r in records:
            print(json.dumps(r, ensure_ascii=False))
        return 0
    width = max((len(r["id"]) for r in records), default=2)
    for r in records:
        where = r["source"] + (f" {r['target']}" if r["target"] else "")
        line = f"{r['id']:<{width}}  {r['state']:<8}  {where}"
        if r["error"]:
            line += f"  ({r['error']})"
        print(line)
        if r["events"]:
            print(f"{'':<{width}}  listens: {', '.join(r['events'])}")
        if r["tools"]:
            print(f"{'':<{width}}  tools:   {', '.join(r['tools'])}")
        if r.get("commands"):
            print(f"{'':<{width}}  commands: {', '.join('/' + c for c in r['commands'])}")
    return 0
