"""Slash commands (extensions spec 7): parsing, the ``command/run`` / ``command/done`` pair, the built-ins, and
registration by a plugin (``ctx.commands.register``)."""

from __future__ import annotations

import asyncio
import re

from dsh_tui.llm.scripted import text
from dsh_tui.runtime.commands import CommandError, parse
from dsh_tui.runtime.plugins import Plugins, PluginSpec, builtin_specs
from tests.runtime.helpers import make_agent, of_type


def test_parse_grammar():
    assert parse("/compact") == ("compact", "")
    assert parse("/title  My title") == ("title", "  My title")
    assert parse("/fork\t3") == ("fork", "\t3")
    assert parse("/x_y-1\nmore") == ("x_y-1", "\nmore")
    assert parse(" /compact") is None and parse("/Compact") is None and parse("/usr/bin") is None
    assert parse("/1x") is None and parse("hello /compact") is None and parse("/compact,") is None


async def test_commands_are_logged_as_a_log_only_pair_and_never_reach_the_model(tmp_path):
    agent = make_agent([text("ok")], tmp_path=tmp_path)
    result = await agent.commands.run(agent, "/title  Fix the   parser\x1b[31m ")
    assert result.kind == "success" and result.text == "Title: Fix the parser"
    run, title, done = agent.session.events[-3:]
    assert run["type"] == "command/run" and "surfaceOp" not in run
    assert re.fullmatch(r"cmd-[0-9a-f]{8}-1", run["data"]["commandId"])
    assert run["data"] == {"commandId": run["data"]["commandId"], "name": "title",
                           "args": "  Fix the   parser\x1b[31m ", "source": {"kind": "user"}}
    assert title["type"] == "session/title"
    assert title["data"] == {"title": "Fix the parser", "messageSeqs": [], "source": {"kind": "user"}}
    assert done["type"] == "command/done" and done["data"] == {
        "commandId": run["data"]["commandId"], "kind": "success", "text": "Title: Fix the parser",
        "sourceEventSeq": title["seq"]}
    bad = await agent.commands.run(agent, "/title   ")
    assert bad.kind == "error"
    assert agent.session.events[-1]["data"]["text"] == "Usage: /title <text>"
    await agent.commands.run(agent, "/title \u200b\x07\u2060")
    assert agent.session.events[-1]["data"]["text"] == "session title must contain visible characters"
    assert agent.session.events[-1]["data"]["commandId"].endswith("-3")
    await agent.commands.run(agent, "/title " + "\u00e9" * 50 + " x")  # cut on a code point at 80 bytes
    assert agent.session.title_data()["title"] == "\u00e9" * 40
    assert await agent.commands.run(agent, "/nosuch thing") is None  # not a command: a prompt
    assert agent.session.messages_view() == []


async def test_compact_usage_nothing_yet_and_success(tmp_path):
    agent = make_agent([text("a" * 4000), text("b" * 4000), text("summary")], tmp_path=tmp_path,
                       context_window=100_000)
    res = await agent.commands.run(agent, "/compact now")
    assert (res.kind, res.text) == ("error", "Usage: /compact (no arguments)")
    res = await agent.commands.run(agent, "/compact")
    assert (res.kind, res.text) == ("success", "No compactable history yet.")
    for prompt in ("first " * 300, "second " * 300):
        agent.followup(prompt)
        await asyncio.sleep(0)
        await asyncio.wait_for(agent.wait_idle(), 10)
    res = await agent.commands.run(agent, "/compact")
    summary = of_type(agent, "compaction/summary")[-1]
    d = summary["data"]
    assert res.text == f"Compacted {len(d['shadowedSeqs'])} history items (~{d['shadowedTokenCount']} tokens)."
    assert agent.session.events[-1]["data"]["sourceEventSeq"] == summary["seq"]


async def test_compact_says_so_when_the_compaction_plugin_is_off_and_works_with_automatic_compaction_off(tmp_path):
    """``/compact`` is the compaction built-in's compactor: with the built-in turned off there is none to use (the
    core no longer builds one of its own); with only automatic compaction off (``AgentConfig.compaction``) it
    compacts as before."""
    from dsh_tui.runtime import Agent

    base = make_agent([text("a" * 4000)], tmp_path=tmp_path)
    specs = [s for s in builtin_specs() if s.id != "compaction"]  # as [plugins.compaction] enabled = false
    off = Agent(base.session, base.provider, [], config=base.config, plugins=Plugins(specs))
    off.followup("first " * 300)
    await asyncio.sleep(0)
    await asyncio.wait_for(off.wait_idle(), 10)
    res = await off.commands.run(off, "/compact")
    assert (res.kind, res.text) == ("error", "/compact needs the compaction plugin, which is turned off "
                                             "([plugins.compaction] enabled = false).")
    assert not of_type(off, "compaction/start")
    manual = make_agent([text("a" * 4000), text("b" * 4000), text("summary")], tmp_path=tmp_path / "m",
                        context_window=100_000, compaction=False)
    for prompt in ("first " * 300, "second " * 300):
        manual.followup(prompt)
        await asyncio.sleep(0)
        await asyncio.wait_for(manual.wait_idle(), 10)
    res = await manual.commands.run(manual, "/compact")
    assert res.kind == "success" and res.text.startswith("Compacted "), res.text


async def test_permission_model_and_ui_actions(tmp_path):
    agent = make_agent([], tmp_path=tmp_path, preset="workspace-write")
    res = await agent.commands.run(agent, "/permission read-only")
    assert res.text == "Permission preset: read-only." and agent.config.preset == "read-only"
    res = await agent.commands.run(agent, "/permission danger-full-access")
    assert agent.config.preset == "full-access"
    res = await agent.commands.run(agent, "/permission yolo")
    assert res.kind == "error" and agent.config.preset == "full-access"
    res = await agent.commands.run(agent, "/model other-model")
    assert agent.config.model == "other-model" and res.action == {"kind": "model", "model": "other-model",
                                                                      "effort": None}
    assert (await agent.commands.run(agent, "/fork 9")).kind == "error"  # no such turn yet
    assert (await agent.commands.run(agent, "/export pdf")).kind == "error"
    assert (await agent.commands.run(agent, "/export html")).action == {"kind": "export", "format": "html"}
    assert (await agent.commands.run(agent, "/new")).action == {"kind": "new"}
    help_text = (await agent.commands.run(agent, "/help")).text
    for usage in ("/compact", "/model [name] [effort]", "/permission [mode]", "/title <text>", "/new", "/fork [turn]",
                  "/export [md|html]", "/skills", "/plugins", "/mcp [reconnect NAME]", "/help"):
        assert f"\n{usage} — " in help_text
    no_servers = await agent.commands.run(agent, "/mcp")
    assert no_servers.text == ("No MCP servers configured. Add [mcp.servers.<name>] to settings.toml or start "
                               "with --mcp NAME=COMMAND.") and no_servers.action == {"kind": "mcp"}
    assert (await agent.commands.run(agent, "/mcp reconnect")).text == "Usage: /mcp [reconnect NAME]"
    assert (await agent.commands.run(agent, "/mcp reconnect x")).text == "No MCP server named x (none configured)."
    plugins = (await agent.commands.run(agent, "/plugins")).text
    assert "commands (builtin) loaded" in plugins and "skills (builtin) loaded" in plugins


class _Greeter:
    name = "greeter"

    @staticmethod
    def apply(ctx):
        async def hello(call):
            if call.args == "boom":
                raise CommandError("no boom here")
            return f"hello {call.args or 'world'} from {call.agent.session.id}"

        ctx.commands.register("hello", "Say hello", hello, usage="/hello [who]", record_input=False)


async def test_a_plugin_registers_a_command_and_it_goes_away_with_the_plugin(tmp_path):
    specs = [*builtin_specs(), PluginSpec("greeter", "sdk", obj=_Greeter)]
    agent = make_agent([], tmp_path=tmp_path)
    from dsh_tui.runtime import Agent

    agent = Agent(agent.session, agent.provider, [], config=agent.config, plugins=Plugins(specs))
    res = await agent.commands.run(agent, "/hello you")
    assert res.text == "hello you from sess-test"
    assert "args" not in of_type(agent, "command/run")[-1]["data"]  # record_input=False
    res = await agent.commands.run(agent, "/hello boom")
    assert (res.kind, res.text) == ("error", "no boom here")
    assert "/hello [who] — Say hello" in (await agent.commands.run(agent, "/help")).text
    await agent.dispose()
    assert agent.commands.get("hello") is None and agent.commands.get("compact") is None


async def test_compact_right_after_model_uses_the_new_model(tmp_path):
    """Issue #26 item 18: ``/compact`` took the model of the last ``request/header`` (the old one) although
    ``/model`` had switched the session; the compaction request and ``compaction/summary`` use the new one."""
    agent = make_agent([text("a" * 4000), text("b" * 4000), text("summary")], tmp_path=tmp_path,
                       context_window=100_000)
    for prompt in ("first " * 300, "second " * 300):
        agent.followup(prompt)
        await asyncio.sleep(0)
        await asyncio.wait_for(agent.wait_idle(), 10)
    assert agent.provider.requests[-1]["config"]["model"] == "mock-model"
    res = await agent.commands.run(agent, "/model other-model")
    assert res.kind == "success"
    res = await agent.commands.run(agent, "/compact")
    assert res.text.startswith("Compacted"), res.text
    request = agent.provider.requests[-1]
    assert request["purpose"] == "compaction" and request["config"]["model"] == "other-model"
