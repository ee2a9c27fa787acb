"""Titles, project instructions, skills, @file and slash commands are each a built-in plugin (issue #18): one
id switches a feature off and leaves the others working, and a user's plugin can take its place."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from dsh_tui.extensions.filerefs import SECTION_TEXT
from dsh_tui.llm.scripted import ScriptedProvider, text
from dsh_tui.runtime import Agent, AgentConfig
from dsh_tui.runtime.plugins import Plugins, PluginSpec, builtin_specs
from dsh_tui.tools import builtin_tools
from tests.runtime.helpers import FakeSleep, make_session

FEATURES = ("session-title", "session-title-llm", "agent-instructions", "skills", "skill-tool", "file-reference",
            "commands")


@pytest.fixture(autouse=True)
def _homes(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home" / ".dsh"))
    monkeypatch.setenv("DSH_AGENTS_HOME", str(tmp_path / "home" / ".agents"))
    monkeypatch.delenv("DSH_BUNDLED_SKILL_DIR", raising=False)


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "AGENTS.md").write_text("Run the tests.\n")
    skill = ws / ".dsh" / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: deploy\ndescription: Ship it\n---\nShip carefully.\n")
    return ws


async def _run(tmp_path: Path, off: str | None = None, extra: tuple = ()) -> Agent:
    ws = _workspace(tmp_path)
    specs = builtin_specs(features=True)
    for spec in specs:
        if spec.id == off:
            spec.enabled = False
    provider = ScriptedProvider([text("ok")], name="mock", titles=[text("An LLM title")])
    agent = Agent(make_session(str(ws)), provider, builtin_tools(), sleep=FakeSleep(),
                  config=AgentConfig(model="mock-model", cwd=str(ws), preset="full-access", runtime_context=False,
                                     check_requests=True, spill_dir=str(tmp_path / "spill")),
                  plugins=Plugins([*specs, *extra], strict=True))
    agent.followup("please /deploy now")
    await asyncio.wait_for(agent.wait_idle(), 10)
    await agent.bus.parallel("session/flush", {"agent": agent}, scope=agent.id)  # the LLM title
    return agent


def _features(agent: Agent) -> dict[str, bool]:
    events = agent.session.events
    kinds = [(e["data"].get("source") or {}).get("kind") for e in events if e["type"] == "user/message"]
    titles = [e["data"]["source"]["kind"] for e in events if e["type"] == "session/title"]
    request = next(e["data"]["header"] for e in events if e["type"] == "request/header")
    return {"session-title": "fallback" in titles,
            "session-title-llm": "provider" in titles,
            "agent-instructions": "agent-instructions" in kinds,
            "skills": "skill-invocation" in kinds,  # the catalog too, while the skill tool is on
            "skill-tool": any(t["name"] == "skill" for t in request["tools"]),
            "file-reference": SECTION_TEXT in request["system"],
            "commands": agent.commands.get("title") is not None}


async def test_all_on(tmp_path):
    agent = await _run(tmp_path)
    assert _features(agent) == dict.fromkeys(FEATURES, True)
    await agent.dispose()


@pytest.mark.parametrize("off", FEATURES)
async def test_one_id_switches_one_feature_off(tmp_path, off):
    agent = await _run(tmp_path, off)
    assert {r.id: r.state for r in agent.plugins.records}[off] == "disabled"
    got = _features(agent)
    assert got.pop(off) is False
    assert got == dict.fromkeys(got, True)
    kinds = [(e["data"].get("source") or {}).get("kind") for e in agent.session.events if e["type"] == "user/message"]
    # the catalog lists what the skill tool can load: none without the tool (a user's /deploy still works)
    assert ("skill-catalog" in kinds) == (off not in ("skills", "skill-tool"))
    await agent.dispose()


class _MyTitle:
    """A user's /title in place of the built-in commands: it keeps the title in upper case."""

    name = "my-title"

    @staticmethod
    def apply(ctx):
        from dsh_tui.extensions.commands import write_user_title

        async def title(call):
            event = write_user_title(call.agent.session, call.args.upper())
            return f"TITLE {event['data']['title']}"

        ctx.commands.register("title", "Set the title, loudly", title, usage="/title <text>")


async def test_a_users_plugin_replaces_a_disabled_builtin(tmp_path):
    agent = await _run(tmp_path, "commands", extra=(PluginSpec("my-title", "sdk", obj=_MyTitle),))
    assert agent.commands.get("compact") is None  # the built-in commands are off
    result = await agent.commands.run(agent, "/title quiet please")
    assert result.text == "TITLE QUIET PLEASE"
    assert agent.session.title_data() == {"title": "QUIET PLEASE", "messageSeqs": [], "source": {"kind": "user"}}
    await agent.dispose()
