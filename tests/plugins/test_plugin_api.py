"""The plugin API in-process: loading, ordering against the built-ins, disposal, failures, the llm/stream
boundary and the request invariant."""

from __future__ import annotations

import asyncio
import sys
import types

import pytest

from dsh_tui.llm import scripted
from dsh_tui.llm.protocol import RetryPolicy
from dsh_tui.llm.scripted import ScriptedProvider
from dsh_tui.runtime import Agent, AgentConfig
from dsh_tui.runtime.plugins import PluginError, Plugins, PluginSpec, builtin_specs, discover
from dsh_tui.session.log import Session
from tests.runtime.helpers import FakeSleep, make_session


def _plugin(name: str, apply, config_cls=None) -> types.SimpleNamespace:
    obj = types.SimpleNamespace(name=name, apply=apply)
    if config_cls is not None:
        obj.Config = config_cls
    return obj


def _agent(responses, *objs, strict=False, failures=None, session=None, **cfg) -> Agent:
    specs = builtin_specs() + [PluginSpec(o.name, "sdk", obj=o, config=getattr(o, "cfg", {})) for o in objs]
    plugins = Plugins(specs, strict=strict, on_failure=(failures.append if failures is not None else None))
    provider = ScriptedProvider(responses, name="mock",
                                retry_policy=RetryPolicy(initial_delay_ms=1, max_delay_ms=2, jitter_ratio=0.0))
    cfg.setdefault("model", "mock-model")
    cfg.setdefault("runtime_context", False)
    cfg.setdefault("check_requests", True)
    return Agent(session or make_session(), provider, [], config=AgentConfig(**cfg), sleep=FakeSleep(),
                 plugins=plugins)


async def _turn(agent: Agent, text: str = "hi") -> dict:
    agent.followup(text)
    await agent.wait_idle()
    return [e for e in agent.session.events if e["type"] == "turn/end"][-1]["data"]["reason"]


async def test_a_user_request_error_listener_sees_the_failure_before_the_builtin_retry():
    seen = []

    def apply(ctx):
        async def on_error(payload, next):
            seen.append(payload["failure"]["code"])
            return await next()  # then the built-in retry decides

        ctx.on("agent/request-error", on_error)

    agent = _agent([scripted.finish_error("RATE_LIMIT", "slow down", status=429), scripted.text("ok")],
                   _plugin("watcher", apply))
    reason = await _turn(agent)
    assert seen == ["RATE_LIMIT"]
    assert reason["kind"] == "completed"  # the built-in retry still ran after the user listener
    assert any(e["type"] == "llm/retry" for e in agent.session.events)


async def test_a_user_listener_can_take_over_from_the_builtin_retry():
    def apply(ctx):
        async def on_error(payload, next):
            return None  # never retry: the built-in retry is not consulted

        ctx.on("agent/request-error", on_error)

    agent = _agent([scripted.finish_error("RATE_LIMIT", "slow down", status=429), scripted.text("ok")],
                   _plugin("no-retry", apply))
    reason = await _turn(agent)
    assert reason["kind"] == "error"
    assert not any(e["type"] == "llm/retry" for e in agent.session.events)


async def test_builtins_can_be_disabled_by_id():
    specs = discover(None)
    assert [s.id for s in specs] == ["retry", "compaction", "runtime-context", "request-invariant",
                                    "agent-instructions", "session-title", "session-title-llm", "jobs", "subagents",
                                    "mcp", "skills", "skill-tool", "file-reference", "commands", "hooks-claude-code",
                                    "hooks-codex", "workspace-changes", "images", "web", "ask-user", "plan-mode", "goal",
                                    "ralph", "lsp", "deepseek-extensions", "working-directory", "repeat-tool-reminder",
                                    "str-replace-editor", "terminals"]
    assert [s.id for s in specs if not s.enabled] == ["ralph", "str-replace-editor", "terminals"]  # off unless enabled = true

    class S:
        def get(self, key):
            return {"retry": {"enabled": False}} if key == "plugins" else None

    plugins = Plugins(discover(S()))
    agent = Agent(make_session(), ScriptedProvider([scripted.finish_error("RATE_LIMIT", "x", status=429)],
                                                   name="mock"),
                  [], config=AgentConfig(model="m", runtime_context=False), sleep=FakeSleep(), plugins=plugins)
    reason = await _turn(agent)
    assert reason["kind"] == "error" and not any(e["type"] == "llm/retry" for e in agent.session.events)
    assert [(r.id, r.state) for r in plugins.records][:2] == [("retry", "disabled"), ("compaction", "loaded")]


async def test_created_and_session_start_reach_plugins_and_everything_is_undone_in_reverse_order():
    log = []

    def apply(ctx, config):
        ctx.on("agent/created", lambda p: log.append("created"))
        ctx.on("agent/session-start", lambda p: log.append(f"start:{p['source']}"))
        ctx.effect(lambda: lambda: log.append("effect-1"))
        off = ctx.on("agent/status", lambda p: log.append(f"status:{p['status']}"))
        ctx.effect(lambda: lambda: log.append("effect-2"))
        assert callable(off) and config == {"greeting": "hey"}

    plugin = _plugin("order", apply)
    plugin.cfg = {"greeting": "hey"}
    agent = _agent([scripted.text("ok")], plugin)
    assert log == ["created", "start:startup"]
    await _turn(agent)
    assert log[2:] == ["status:running", "status:idle"]
    await agent.dispose()
    assert log[4:] == ["effect-2", "effect-1"]
    assert not agent.bus.has("agent/status", agent.id)  # the listener went with the plugin


async def test_load_failures_are_reported_and_the_others_still_load():
    from pydantic import BaseModel

    class Cfg(BaseModel):
        count: int

    applied = []
    good = _plugin("good", lambda ctx: applied.append("good"))
    bad_cfg = _plugin("bad-config", lambda ctx, cfg: applied.append("never"), Cfg)
    bad_cfg.cfg = {"count": "many"}

    def boom(ctx):
        ctx.on("agent/status", lambda p: applied.append("half-registered"))
        raise RuntimeError("apply exploded")

    failures: list = []
    agent = _agent([scripted.text("ok")], bad_cfg, _plugin("boom", boom), good, failures=failures)
    records = {r.id: r for r in agent.plugins.records}
    assert records["good"].state == "loaded" and applied == ["good"]
    assert records["bad-config"].state == "failed" and "invalid config" in records["bad-config"].error
    assert "count" in records["bad-config"].error
    assert records["boom"].state == "failed" and records["boom"].error == "RuntimeError: apply exploded"
    assert [f.id for f in failures] == ["bad-config", "boom"]
    await _turn(agent)
    assert "half-registered" not in applied  # a failed plugin's registrations are undone
    mod_spec = PluginSpec("missing", "cli", target="no_such_module_xyz")
    plugins = Plugins(builtin_specs() + [mod_spec], on_failure=lambda r: None)
    Agent(make_session(), None, [], config=AgentConfig(model="m"), plugins=plugins)
    assert plugins.failures()[0].error.startswith("cannot import no_such_module_xyz: ModuleNotFoundError")


def test_strict_makes_a_failure_fatal():
    with pytest.raises(PluginError, match="plugin boom: RuntimeError: nope"):
        _agent([], _plugin("boom", lambda ctx: (_ for _ in ()).throw(RuntimeError("nope"))), strict=True)


async def test_a_listener_raising_inside_a_waterfall_ends_the_turn_and_the_log_stays_valid(tmp_path):
    from dsh_tui.runtime.host import AgentHost, HostSpec

    def apply(ctx):
        async def pre_step(payload, next):
            raise ValueError("listener bug")

        ctx.on("agent/pre-step", pre_step)

    spec = HostSpec(root=tmp_path / "root", cwd=tmp_path, provider=ScriptedProvider([scripted.text("ok")],
                                                                                    name="mock"),
                    model="m", plugin_objects=(_plugin("buggy", apply),))
    host = await AgentHost.open(spec)
    result = await host.run_turn("hi")
    await host.close()
    assert result.reason["kind"] == "error" and "listener bug" in result.reason["error"]["message"]
    again = await AgentHost.open(HostSpec(root=tmp_path / "root", cwd=None, provider=None, model="m",
                                          resume_id=result.session_id, plugin_objects=()))
    types_ = [e["type"] for e in again.session.events]
    await again.close()
    assert types_[-1] == "session/end-seed" and types_.count("turn/end") == 1


async def test_an_llm_stream_wrapper_runs_its_code_after_the_loop():
    done = []

    def apply(ctx):
        async def wrap(payload, next):
            inner = await next()

            async def gen():
                async for chunk in inner:
                    yield chunk
                done.append("after the loop")

            return gen()

        ctx.on("llm/stream", wrap)

    agent = _agent([scripted.text("ok")], _plugin("wrapper", apply))
    reason = await _turn(agent)
    assert reason["kind"] == "completed" and done == ["after the loop"]


async def test_the_invariant_catches_a_listener_that_adds_an_unrecorded_message():
    def apply(ctx):
        async def sneak(payload, next):
            request = payload["request"]
            payload["request"] = {**request, "messages": [*request["messages"],
                                                          {"role": "user", "content": "unrecorded"}]}
            return await next()

        ctx.on("llm/stream", sneak)

    provider_saw = []
    agent = _agent([scripted.text("ok")], _plugin("sneaky", apply))
    original = agent.provider.stream

    def stream(request):
        provider_saw.append(request)
        return original(request)

    agent.provider.stream = stream
    reason = await _turn(agent)
    assert provider_saw == []  # the model never saw it
    assert reason["kind"] == "error" and reason["error"]["code"] == "REQUEST_INVARIANT"
    assert "derive_messages" in reason["error"]["message"]


async def test_the_checked_request_is_frozen():
    errors = []

    def apply(ctx):
        async def late(payload, next):
            stream = await next()  # the innermost step checked and froze the request
            try:
                payload["request"]["messages"].append({"role": "user", "content": "late"})
            except (TypeError, AttributeError) as err:
                errors.append(type(err).__name__)
            try:
                payload["request"]["config"]["model"] = "other"
            except TypeError as err:
                errors.append(type(err).__name__)
            return stream

        ctx.on("llm/stream", late)

    agent = _agent([scripted.text("ok")], _plugin("late", apply))
    assert (await _turn(agent))["kind"] == "completed"
    assert len(errors) == 2


async def test_plugin_tools_and_events():
    from dsh_tui.tools import ToolDefinition

    async def execute(args, tctx):
        return {"echo": args["text"]}

    tool = ToolDefinition(name="echo", description="Echo text.",
                          parameters={"type": "object", "properties": {"text": {"type": "string"}},
                                      "required": ["text"]},
                          execute=execute, render=lambda args, value: [{"type": "text", "text": value["echo"]}])

    def apply(ctx):
        ctx.tools.register(tool)
        ctx.append("greeter/said", {"text": "hello"})
        ctx.append({"type": "greeter/waved", "data": {"hand": "left"}})  # the ctx.append(event) form
        ctx.append("session/title", {"title": "Greeting", "source": "user"})

    agent = _agent([scripted.call("c1", "echo", {"text": "ping"}), scripted.text("done")],
                   _plugin("greeter", apply))
    assert agent.plugins.records[-1].tools == ["echo"]
    reason = await _turn(agent)
    assert reason["kind"] == "completed"
    result = [e for e in agent.session.events if e["type"] == "tool/result"][0]
    from dsh_tui.session.content import tool_result_block

    assert tool_result_block(result["data"]["message"])["content"] == [{"type": "text", "text": "ping"}]
    own = [e for e in agent.session.events if e["type"] == "greeter/said"][0]
    assert own["ignorable"] is True  # a type dsh does not know: readers may skip it
    waved = [e for e in agent.session.events if e["type"] == "greeter/waved"][0]
    assert waved["data"] == {"hand": "left"} and waved["ignorable"] is True
    title = [e for e in agent.session.events if e["type"] == "session/title"][0]
    assert "ignorable" not in title
    await agent.dispose()
    assert "echo" not in agent.tools.tools
    reloaded = Session(agent.session.header)
    for e in agent.session.events:  # the events, ignorable one included, validate again from scratch
        reloaded.append(e["type"], e["data"], surface_op=e.get("surfaceOp"),
                        source_event_seqs=e.get("sourceEventSeqs"), ignorable=e.get("ignorable", False))
    assert len(reloaded.events) == len(agent.session.events)


def test_plugins_named_on_the_command_line_take_their_name_and_settings(tmp_path, monkeypatch):
    mod = tmp_path / "my_cli_plugin.py"
    mod.write_text("name = 'shouter'\nseen = []\n"
                   "def apply(ctx, config):\n    seen.append(dict(config))\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    class S:
        def get(self, key):
            return {"shouter": {"volume": 11}} if key == "plugins" else None

    plugins = Plugins(discover(S(), cli=["my_cli_plugin"]))
    Agent(make_session(), None, [], config=AgentConfig(model="m"), plugins=plugins)
    assert [(r.id, r.state, r.source) for r in plugins.records][-1] == ("shouter", "loaded", "cli")
    assert sys.modules["my_cli_plugin"].seen == [{"volume": 11}]


async def test_the_app_says_which_plugin_failed_and_the_chat_still_works(tmp_path):
    """A plugin whose apply raises is a notice in the app (with its id and reason); the others load and the
    chat answers."""
    from dsh_tui.ui.app import DshApp
    from dsh_tui.ui.harness import HarnessSpec, open_harness
    from dsh_tui.ui.settings import UiSettings
    from tests.ui.conftest import submit, wait_for

    seen = []
    good = _plugin("good", lambda ctx: ctx.on("agent/status", lambda p: seen.append(p["status"])))
    bad = _plugin("bad", lambda ctx: (_ for _ in ()).throw(RuntimeError("no config file")))
    (tmp_path / "ws").mkdir()
    spec = HarnessSpec(root=tmp_path / "sessions", cwd=tmp_path / "ws",
                       provider=ScriptedProvider([scripted.text("hello")], name="mock"), model="m",
                       plugin_objects=(bad, good))
    app = DshApp(lambda bridge: open_harness(bridge, spec), settings=UiSettings(values={"ui.theme": "dsh-dark"}))
    notes = []
    original = app.notify

    def notify(message, *args, **kw):
        notes.append(str(message))
        return original(message, *args, **kw)

    app.notify = notify
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None, 20)
        await wait_for(pilot, lambda: any("plugin bad" in n for n in notes), 10)
        await submit(pilot, "hi")
        await wait_for(pilot, lambda: seen[-1:] == ["idle"] and len(seen) >= 2, 20)
    assert any(n == "plugin bad: RuntimeError: no config file" for n in notes), notes


def test_the_entry_point_scan_is_reused_until_a_path_directory_changes(tmp_path, monkeypatch):
    """Each agent the host opens (every subagent child too) discovers plugins on the harness loop: the scan of
    every installed distribution is done once, and again only when sys.path or one of its directories changes
    (an install or uninstall)."""
    import importlib.metadata
    import os
    import sys

    from dsh_tui.runtime import plugins as plugins_mod

    scans = []
    real = importlib.metadata.entry_points

    def counting(**kw):
        scans.append(kw)
        return real(**kw)

    monkeypatch.setattr(importlib.metadata, "entry_points", counting)
    monkeypatch.setattr(plugins_mod, "_EP_CACHE", [])
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.setattr(sys, "path", [*sys.path, str(site)])
    for _ in range(3):
        discover(None)
    assert len(scans) == 1
    (site / "new_dist-1.0.dist-info").mkdir()  # an install: the directory's mtime moves
    os.utime(site, ns=(1, 1))
    discover(None)
    assert len(scans) == 2


async def test_user_plugins_run_in_settings_then_entry_point_then_flag_order(tmp_path, monkeypatch):
    """Among user plugins: the settings file's [plugins.*] tables in file order, then installed entry points
    by name (``module`` and ``module:object`` values), then --plugin flags, then the SDK's objects;
    ``enabled = false`` leaves a plugin unimported."""
    from dsh_tui.config import load_settings, settings_path

    calls: list[str] = []
    monkeypatch.setattr(sys, "_dsh_order_calls", calls, raising=False)
    body = ("import sys\nname = {name!r}\n"
            "def apply(ctx):\n"
            "    async def pre_step(payload, next):\n"
            "        sys._dsh_order_calls.append(name)\n"
            "        return await next()\n"
            "    ctx.on('agent/pre-step', pre_step)\n")
    site = tmp_path / "site"
    site.mkdir()
    for mod, name in (("ord_zz", "zz-first"), ("ord_aa", "aa-second"), ("ord_alpha", "alpha"), ("ord_cli", "cli"),
                      ("ord_off", "off")):
        (site / f"{mod}.py").write_text(body.format(name=name))
    (site / "ord_zeta.py").write_text("import types\n" + body.format(name="zeta").replace("name = ", "_n = ", 1)
                                      .replace("(name)", "(_n)") + "plugin = types.SimpleNamespace(name=_n, apply=apply)\n")
    dist = site / "ord_plugins-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ord-plugins\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[dsh_tui.plugins]\nzeta = ord_zeta:plugin\nalpha = ord_alpha\n")
    monkeypatch.syspath_prepend(str(site))
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('[plugins.zz-first]\nmodule = "ord_zz"\n\n[plugins.off]\nmodule = "ord_off"\nenabled = false\n\n'
                    '[plugins.aa-second]\nmodule = "ord_aa"\n')
    sdk = _plugin("sdk", lambda ctx: ctx.on("agent/pre-step", _recording("sdk", calls)))
    plugins = Plugins(discover(load_settings(), cli=["ord_cli"], objects=[sdk]))
    agent = Agent(make_session(), ScriptedProvider([scripted.text("ok")], name="mock"), [],
                  config=AgentConfig(model="m", runtime_context=False), sleep=FakeSleep(), plugins=plugins)
    user = [(r.id, r.source, r.state) for r in plugins.records if r.source != "builtin"]
    assert user == [("zz-first", "settings", "loaded"), ("off", "settings", "disabled"),
                    ("aa-second", "settings", "loaded"), ("alpha", "entry-point", "loaded"),
                    ("zeta", "entry-point", "loaded"), ("cli", "cli", "loaded"), ("sdk", "sdk", "loaded")]
    assert "ord_off" not in sys.modules
    assert (await _turn(agent))["kind"] == "completed"
    assert calls == ["zz-first", "aa-second", "alpha", "zeta", "cli", "sdk"]
    await agent.dispose()


def _recording(name: str, calls: list):
    async def pre_step(payload, next):
        calls.append(name)
        return await next()

    return pre_step


def test_the_plugins_listing_shows_the_tools_run_registers():
    """``dsh-tui plugins`` applies the plugins to a throw-away agent: the built-ins that need an agent host
    (subagents) register their tools there too, as in ``run``."""
    from dsh_tui.cli.plugins_cmd import inventory

    records = {r["id"]: r for r in inventory()}
    assert "subagent" in records["subagents"]["tools"] and records["subagents"]["state"] == "loaded"
    assert records["jobs"]["tools"] == ["job_output", "job_list", "job_kill"]


async def test_a_load_error_with_brackets_is_shown_as_text_in_the_app(tmp_path):
    """pydantic's errors read ``[type=missing, input_value={}, ...]``: the app shows the notice as plain text
    (it once parsed it as markup and crashed with a traceback)."""
    from pydantic import BaseModel

    from dsh_tui.ui.app import DshApp
    from dsh_tui.ui.harness import HarnessSpec, open_harness
    from dsh_tui.ui.settings import UiSettings
    from tests.ui.conftest import submit, wait_for

    class Cfg(BaseModel):
        count: int

    bad = _plugin("bad-config", lambda ctx, config: None, Cfg)
    seen = []
    good = _plugin("good", lambda ctx: ctx.on("agent/status", lambda p: seen.append(p["status"])))
    (tmp_path / "ws").mkdir()
    spec = HarnessSpec(root=tmp_path / "sessions", cwd=tmp_path / "ws",
                       provider=ScriptedProvider([scripted.text("hello")], name="mock"), model="m",
                       plugin_objects=(bad, good))
    app = DshApp(lambda bridge: open_harness(bridge, spec), settings=UiSettings(values={"ui.theme": "dsh-dark"}))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.bridge.harness is not None, 20)
        await wait_for(pilot, lambda: "plugin bad-config" in str(app.screen.status.info.notice), 10)
        notice = str(app.screen.status.info.notice)
        await pilot.pause()
        assert not (app.screen.note.is_attached and app.screen.note.display)  # the session opened: no "could not start" note over the composer
        await submit(pilot, "hi")  # the app is alive and the other plugin loaded
        await wait_for(pilot, lambda: seen[-1:] == ["idle"] and len(seen) >= 2, 20)
    assert notice == ("plugin bad-config: invalid config: 1 validation error for Cfg count Field required "
                      "[type=missing, input_value={}, input_type=dict]")  # one line, no pydantic help link


async def test_the_request_invariant_is_a_builtin_that_can_be_disabled_by_id():
    def apply(ctx):
        async def sneak(payload, next):
            request = payload["request"]
            payload["request"] = {**request, "messages": [*request["messages"],
                                                          {"role": "user", "content": "unrecorded"}]}
            return await next()

        ctx.on("llm/stream", sneak)

    class S:
        def get(self, key):
            return {"request-invariant": {"enabled": False}} if key == "plugins" else None

    plugins = Plugins(discover(S(), objects=[_plugin("sneaky", apply)]))
    agent = Agent(make_session(), ScriptedProvider([scripted.text("ok")], name="mock"), [],
                  config=AgentConfig(model="m", runtime_context=False, check_requests=True), sleep=FakeSleep(),
                  plugins=plugins)
    assert (await _turn(agent))["kind"] == "completed"  # off: nothing checked the request
    assert ("request-invariant", "disabled") in [(r.id, r.state) for r in plugins.records]


async def test_an_effect_runs_at_registration_and_what_it_returns_runs_at_unload():
    """dsh's ``ctx.effect(execute)`` (Cordis): ``execute`` runs when it is registered, and the callable it
    returns is the disposer, run on unload (newest first, async ones awaited). Old main ran the callback at
    unload instead, so setup code ported from dsh ran at the wrong time."""
    log = []

    async def close_async():
        log.append("close-async")

    def apply(ctx):
        def setup():
            log.append("setup")
            return lambda: log.append("teardown")

        ctx.effect(setup, "setup()")
        assert log == ["setup"]  # ran now, not at unload
        ctx.effect(lambda: close_async)
        ctx.effect(lambda: None)  # nothing to undo

        def composite():
            log.append("composite-setup")
            yield lambda: log.append("composite-1")
            yield lambda: log.append("composite-2")

        ctx.effect(composite)
        early = ctx.effect(lambda: lambda: log.append("early"))
        early()  # the returned dispose() runs the teardown now, once
        early()
        assert log == ["setup", "composite-setup", "early"]

    agent = _agent([scripted.text("ok")], _plugin("effects", apply))
    assert log == ["setup", "composite-setup", "early"]
    await agent.dispose()
    assert log == ["setup", "composite-setup", "early", "composite-2", "composite-1", "close-async", "teardown"]


async def test_an_async_effect_is_awaited_before_its_disposer_and_a_bad_one_fails_the_load():
    log = []

    def apply(ctx):
        async def connect():
            log.append("connected")
            return lambda: log.append("disconnected")

        ctx.effect(connect)

    agent = _agent([scripted.text("ok")], _plugin("async-effect", apply))
    await asyncio.sleep(0)
    assert log == ["connected"]
    await agent.dispose()
    assert log == ["connected", "disconnected"]

    plugins = Plugins([PluginSpec("bad-effect", "sdk", obj=_plugin("bad-effect", lambda ctx: ctx.effect(lambda: 42)))])
    agent = Agent(make_session(), ScriptedProvider([scripted.text("ok")]), [],
                  config=AgentConfig(model="m", runtime_context=False), sleep=FakeSleep(), plugins=plugins)
    record = [r for r in plugins.records if r.id == "bad-effect"][0]
    assert record.state == "failed" and "Invalid effect" in record.error
    await agent.dispose()
