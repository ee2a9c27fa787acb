"""Skills (extensions spec 3): discovery, front matter, the catalog and its replacement, the ``skill`` tool and
the user's ``/name`` invocation, through the real driver and the built-in plugins."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from dsh_tui.extensions import skills as sk
from dsh_tui.llm.scripted import call, text
from dsh_tui.runtime.plugins import Plugins, builtin_specs
from tests.runtime.helpers import make_agent, of_type

CATALOG = """<system-reminder>
A skill is a reusable set of task-specific instructions. The following skills are available in this session:

<available_skills>
- `deploy`: Ship it &amp; check &lt;prod&gt; "now"
- `lint-all`: Lint everything
</available_skills>

If the user names a skill, or the task clearly matches a skill's description, call the `skill` tool with the \
exact skill name before taking task actions. Load all applicable skills, then follow their full instructions. \
This catalog contains summaries only; do not infer or follow a skill's instructions until it has been loaded.
A user may also invoke a skill directly; its <skill_content> block then appears in this conversation. Follow it, \
and do not call the `skill` tool again for that skill.
</system-reminder>"""


@pytest.fixture(autouse=True)
def _homes(tmp_path, monkeypatch):
    """No skill of the machine's user reaches a test."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home" / ".dsh"))
    monkeypatch.setenv("DSH_AGENTS_HOME", str(tmp_path / "home" / ".agents"))
    monkeypatch.delenv("DSH_BUNDLED_SKILL_DIR", raising=False)


def write_skill(root: Path, name: str, description: str, body: str = "Do the thing.", extra: str = "",
                folder: str | None = None) -> Path:
    d = root / (folder or name)
    d.mkdir(parents=True, exist_ok=True)
    desc = json.dumps(description)
    (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {desc}\n{extra}---\n\n{body}\n\n", encoding="utf-8")
    return d


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    return ws


def test_catalog_text_is_byte_exact_with_an_escaped_description(tmp_path):
    ws = workspace(tmp_path)
    write_skill(ws / ".dsh" / "skills", "deploy", 'Ship it  &\n  check <prod> "now"')
    write_skill(ws / ".agents" / "skills", "lint-all", "Lint everything")
    entries = sk.catalog_entries(sk.discover(ws))
    assert entries == [{"name": "deploy", "description": 'Ship it & check <prod> "now"'},
                       {"name": "lint-all", "description": "Lint everything"}]
    assert sk.render_catalog(entries) == CATALOG


def test_a_long_description_is_cut_to_500_utf16_units():
    long = "é" * 600
    assert sk.catalog_description(long) == "é" * 497 + "..."
    assert sk.catalog_description("😀" * 300) == "😀" * 248 + "..."  # 2 units each: 496 kept, no half pair


def test_discovery_precedence_front_matter_rules_and_layouts(tmp_path):
    ws = workspace(tmp_path)
    sub = ws / "pkg"
    sub.mkdir()
    home = tmp_path / "home"
    write_skill(ws / ".agents" / "skills", "same", "from agents")
    write_skill(ws / ".dsh" / "skills", "same", "from dsh")
    write_skill(home / ".dsh" / "skills", "user-one", "from the user's dsh home")
    write_skill(home / ".dsh" / "skills", "hidden", "system skill", folder=".system")
    write_skill(home / ".agents" / "skills", "same", "from the user's agents home")
    (ws / ".dsh" / "skills" / "flat.md").write_text("---\nname: flat\ndescription: a flat file\n---\nbody\n")
    write_skill(ws / ".dsh" / "skills", "Bad-Name", "upper case")
    write_skill(ws / ".dsh" / "skills", "nodesc", "")
    write_skill(ws / ".dsh" / "skills", "legacy", "legacy key", extra="userInvocable: true\n")
    write_skill(ws / ".dsh" / "skills", "badbool", "bad bool", extra="user-invocable: maybe\n")
    write_skill(ws / ".dsh" / "skills", "quiet", "user only", extra="disable-model-invocation: 'Yes'\n")
    write_skill(ws / ".dsh" / "skills", "auto", "model only", extra='user-invocable: "0"\n')
    (ws / ".dsh" / "skills" / "nofront").mkdir()
    (ws / ".dsh" / "skills" / "nofront" / "SKILL.md").write_text("name: nofront\n")
    (ws / ".dsh" / "skills" / "crlf.md").write_text("---\r\nname: crlf\r\ndescription: windows\r\n---\r\nbody\r\n")
    found = {s.name: s for s in sk.discover(sub)}  # the project root is the ancestor with .git
    assert sorted(found) == ["auto", "crlf", "flat", "quiet", "same", "user-one"]
    assert found["same"].description == "from dsh" and found["same"].source == "project-dsh"
    assert found["flat"].base == ws / ".dsh" / "skills"
    assert found["quiet"].model_invocable is False and found["quiet"].user_invocable is True
    assert found["auto"].user_invocable is False and found["auto"].model_invocable is True
    assert found["crlf"].body() == "body"
    assert [e["name"] for e in sk.catalog_entries(found.values())] == ["auto", "crlf", "flat", "same", "user-one"]


def test_invocation_grammar():
    assert sk.invoked_names("/deploy then /lint-all and /deploy") == ["deploy", "lint-all"]
    assert sk.invoked_names("see /usr/bin and 5/8 or /Deploy, /deploy.") == []
    assert sk.invoked_names("a\n/x-1\tb") == ["x-1"]


async def _turn(agent, prompt):
    agent.followup(prompt)
    await asyncio.sleep(0)
    await asyncio.wait_for(agent.wait_idle(), 10)


def _entered(agent, turn_start: int = 0) -> list[dict]:
    return [e["data"] for e in agent.session.events[turn_start:] if e["type"] == "user/message"]


async def test_entering_batch_prompt_snapshot_catalog_then_invocation(tmp_path):
    ws = workspace(tmp_path)
    write_skill(ws / ".dsh" / "skills", "deploy", "Ship it", body="Step 1: ship.\nStep 2: check.")
    write_skill(ws / ".dsh" / "skills", "secret", "Not for the model", body="Quiet body.",
                extra="disable-model-invocation: true\n")
    agent = make_agent([text("ok"), text("again")], tmp_path=tmp_path, cwd=str(ws), runtime_context=True,
                       context_sections=[{"name": "environment:cwd", "text": "Working directory: x"}])
    await _turn(agent, "please /secret and /deploy, /nope")
    msgs = _entered(agent)
    kinds = [m["source"].get("kind") for m in msgs]
    assert kinds == ["user", "plugin", "skill-catalog", "skill-invocation"]
    catalog = msgs[2]
    assert catalog["source"] == {"kind": "skill-catalog", "form": "catalog",
                                 "entries": [{"name": "deploy", "description": "Ship it"}]}
    inv = msgs[3]
    assert inv["source"] == {"kind": "skill-invocation", "name": "secret", "form": "instructions"}
    assert inv["content"] == [{"type": "text", "text": (
        f'<skill_content name="secret">\n<skill_resources>\nBase directory for this skill: '
        f'{ws / ".dsh" / "skills" / "secret"}\nResolve relative paths mentioned by this skill against the base '
        "directory before using them. Load referenced resources only as needed.\n</skill_resources>\n\n"
        "<skill_instructions>\nQuiet body.\n</skill_instructions>\n</skill_content>")}]
    # "/deploy," is followed by a comma: prose, not an invocation; the prompt itself is unchanged
    assert msgs[0]["content"][0]["text"] == "please /secret and /deploy, /nope"
    # turn 2: the catalog is unchanged, so it is not published again
    n = len(agent.session.events)
    await _turn(agent, "next")
    assert [m["source"]["kind"] for m in _entered(agent, n)] == ["user"]


async def test_catalog_replacement_when_skills_change(tmp_path):
    ws = workspace(tmp_path)
    root = ws / ".dsh" / "skills"
    write_skill(root, "deploy", "Ship it")
    agent = make_agent([text("1"), text("2"), text("3")], tmp_path=tmp_path, cwd=str(ws))
    await _turn(agent, "one")
    write_skill(root, "audit", "Check <all> & more")
    n = len(agent.session.events)
    await _turn(agent, "two")
    update = _entered(agent, n)[1]
    assert update["source"] == {"kind": "skill-catalog", "form": "catalog", "entries": [
        {"name": "audit", "description": "Check <all> & more"}, {"name": "deploy", "description": "Ship it"}],
        "update": True}
    body = update["content"][0]["text"]
    assert body.startswith("<system-reminder>\n" + sk.UPDATE_INTRO + "\n\n<available_skills>\n"
                           "- `audit`: Check &lt;all&gt; &amp; more\n- `deploy`: Ship it\n</available_skills>\n\n"
                           + sk.UPDATE_USE + "\n" + sk.USER_MAY + "\n</system-reminder>")
    for d in root.iterdir():
        (d / "SKILL.md").unlink()
    n = len(agent.session.events)
    await _turn(agent, "three")
    empty = _entered(agent, n)[1]
    assert empty["source"]["entries"] == [] and empty["source"]["update"] is True
    assert empty["content"][0]["text"] == (
        "<system-reminder>\n" + sk.UPDATE_INTRO + "\n\n<available_skills>\n</available_skills>\n\n"
        + sk.UPDATE_EMPTY + "\n" + sk.UPDATE_EMPTY_USER + "\n</system-reminder>")


async def test_no_skills_no_catalog_and_the_skill_tool_is_in_the_request(tmp_path):
    ws = workspace(tmp_path)
    agent = make_agent([text("ok")], tmp_path=tmp_path, cwd=str(ws))
    await _turn(agent, "hi")
    assert [m["source"]["kind"] for m in _entered(agent)] == ["user"]
    header = of_type(agent, "request/header")[0]["data"]["header"]
    tool = next(t for t in header["tools"] if t["name"] == "skill")
    assert tool == {"name": "skill", "description": sk.TOOL_DESCRIPTION, "parameters": sk.TOOL_PARAMETERS}


async def test_the_skill_tool_loads_and_refuses(tmp_path):
    ws = workspace(tmp_path)
    d = write_skill(ws / ".dsh" / "skills", "deploy", "Ship it", body="Use <tools> & go.")
    write_skill(ws / ".dsh" / "skills", "secret", "quiet", extra="disable-model-invocation: on\n")
    agent = make_agent([call("c1", "skill", {"name": "deploy"}), call("c2", "skill", {"name": "nope"}),
                        call("c3", "skill", {"name": "Bad Name"}), call("c4", "skill", {"name": "secret"}),
                        text("done")], tmp_path=tmp_path, cwd=str(ws))
    (d / "SKILL.md").write_text("---\nname: deploy\ndescription: Ship it\n---\nUse <tools> & go.\n")
    await _turn(agent, "go")
    results = [e["data"]["message"]["content"][0] for e in of_type(agent, "tool/result")]
    assert results[0]["content"][0]["text"] == sk.render_content("deploy", d, "Use <tools> & go.")
    assert not results[0].get("isError")
    assert [r["content"][0]["text"] for r in results[1:]] == [
        'Error: skill "nope" is unknown or no longer available', 'Error: invalid skill name "Bad Name"',
        'Error: skill "secret" is not available for model invocation']
    assert all(r.get("isError") for r in results[1:])


async def test_without_the_skill_tool_the_catalog_is_empty_but_invocation_works(tmp_path):
    ws = workspace(tmp_path)
    write_skill(ws / ".dsh" / "skills", "deploy", "Ship it", body="B")
    specs = builtin_specs()
    for s in specs:
        if s.id == "skill-tool":
            s.enabled = False
    agent = make_agent([text("ok")], tmp_path=tmp_path, cwd=str(ws))
    from dsh_tui.runtime import Agent

    agent = Agent(agent.session, agent.provider, [], config=agent.config, plugins=Plugins(specs))
    await _turn(agent, "/deploy")
    assert [m["source"]["kind"] for m in _entered(agent)] == ["user", "skill-invocation"]
    assert "skill" not in agent.tools.tools


async def test_file_reference_section_while_read_is_visible(tmp_path):
    from dsh_tui.extensions.filerefs import SECTION_TEXT
    from dsh_tui.tools import builtin_tools

    agent = make_agent([text("ok")], builtin_tools(), tmp_path=tmp_path)
    await _turn(agent, "look at @README.md")
    system = of_type(agent, "request/header")[0]["data"]["header"]["system"]
    assert system.endswith("\n\n" + SECTION_TEXT) or ("\n\n" + SECTION_TEXT + "\n\n") in system
    bare = make_agent([text("ok")], tmp_path=tmp_path)
    await _turn(bare, "hi")
    assert SECTION_TEXT not in (of_type(bare, "request/header")[0]["data"]["header"].get("system") or "")


def test_the_catalog_state_looks_only_at_new_events():
    """Each step looked at the whole history for the newest catalog (a step's cost grew with the session:
    5,000 steps took minutes); now only the events appended since the last step are read."""
    import types

    from dsh_tui.extensions.skills import SkillService

    class Counting(list):
        reads = 0

        def __getitem__(self, i):
            Counting.reads += 1
            return list.__getitem__(self, i)

    def msg(kind, entries=None):
        src = {"kind": kind} if entries is None else {"kind": kind, "entries": entries}
        return {"type": "user/message", "data": {"source": src}, "surfaceOp": "append"}

    events = Counting([msg("user") for _ in range(1000)] + [msg("skill-catalog", [{"name": "a"}])])
    session = types.SimpleNamespace(events=events, messages_view=lambda: [])
    service = SkillService(types.SimpleNamespace(session=session, config=types.SimpleNamespace(cwd="/")))
    assert service._catalog_state() == ([{"name": "a"}], True)
    Counting.reads = 0
    events.extend([msg("user"), msg("user")])
    assert service._catalog_state() == ([{"name": "a"}], True)
    assert Counting.reads == 2
    # a surface rewrite (compaction) may hide the catalog: the visible messages decide again
    events.append({"type": "compaction/end", "data": {}, "surfaceOp": {"kind": "replace"}})
    assert service._catalog_state() == (None, True)
