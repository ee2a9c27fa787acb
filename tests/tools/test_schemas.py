"""Tool schemas and host-side attributes."""

from __future__ import annotations

import json

from dsh_tui.tools import BUILTIN_TOOL_NAMES, builtin_tools
from tests.conftest import REPO

# dsh 0.2's first headless request (its tool list; dsh 0.2 runs with a sandbox and jobs, and promotes a timed-out
# command to a background job, which dsh-tui does not: there ``timeoutMs`` says the command is killed)
DSH02 = {t["name"]: {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]}
         for t in json.loads((REPO / "tests" / "fixtures" / "dsh02-request.headless.json").read_text())["body"]["tools"]}
KILLED = ("Timeout in milliseconds. The executor applies its configured default and cap, and kills the command on "
          "expiry.")


def test_dsh02_schemas_reproduced_byte_for_byte_with_a_sandbox():
    ours = {t.name: t.schema() for t in builtin_tools(escalation=True, background=True)}
    for name in ("bash", "read", "write", "edit", "todo_write", "glob", "grep"):
        expected = DSH02[name]
        if name == "bash":
            expected = json.loads(json.dumps(expected))
            expected["parameters"]["properties"]["timeoutMs"]["description"] = KILLED
        assert json.dumps(ours[name], ensure_ascii=False) == json.dumps(expected, ensure_ascii=False), name


def test_default_composition_advertises_no_sandbox_or_background():
    tools = {t.name: t for t in builtin_tools()}
    assert tuple(tools) == BUILTIN_TOOL_NAMES
    bash = tools["bash"].schema()
    assert "sandbox_permissions" not in bash["parameters"]["properties"]
    assert "run_in_background" not in bash["parameters"]["properties"]
    assert bash["description"] == DSH02["bash"]["description"]
    for name in ("write", "edit"):
        assert "sandbox_permissions" not in tools[name].parameters["properties"]
    assert tools["glob"].description == DSH02["glob"]["description"]
    assert tools["grep"].description == DSH02["grep"]["description"]
    assert tools["grep"].parameters["required"] == ["pattern"]
    with_jobs = {t.name: t for t in builtin_tools(background=True)}["bash"].parameters["properties"]
    assert list(with_jobs) == ["description", "command", "timeoutMs", "workdir", "run_in_background"]


def test_schemas_use_only_the_supported_keyword_subset():
    allowed = {
        "type",
        "oneOf",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "description",
        "title",
    }

    def walk(node):
        assert set(node) <= allowed, set(node) - allowed
        for child in node.get("properties", {}).values():
            walk(child)
        if "items" in node:
            walk(node["items"])

    for tool in builtin_tools(escalation=True, background=True):
        assert tool.parameters["type"] == "object"
        walk(tool.parameters)
        assert set(tool.schema()) == {"name", "description", "parameters"}


def test_access_concurrency_and_timeouts():
    tools = {t.name: t for t in builtin_tools()}
    assert {n: t.access for n, t in tools.items()} == {
        "bash": "exec", "edit": "write", "glob": "read", "grep": "read", "read": "read",
        "todo_write": "read", "write": "write",
    }  # fmt: skip
    # dsh: only read is parallel-safe among these (runtime spec 5.5); everything else is exclusive.
    safe = {
        n for n, t in tools.items() if t.is_concurrency_safe is not None and t.is_concurrency_safe({}) is True
    }
    assert safe == {"read"}
    assert tools["glob"].timeout_ms == 30_000 and tools["grep"].timeout_ms == 30_000
    assert tools["bash"].timeout_ms is None  # bash enforces its own 120 s default / 600 s cap
    assert tools["bash"].presentation_meta is None and tools["todo_write"].presentation_meta is None


def test_fresh_definitions_do_not_share_schema_objects():
    a = {t.name: t for t in builtin_tools()}
    b = {t.name: t for t in builtin_tools()}
    a["glob"].parameters["properties"]["pattern"]["description"] = "changed"
    assert b["glob"].parameters["properties"]["pattern"]["description"] != "changed"
    assert builtin_tools(names=["read", "grep"])[0].name == "grep"
