"""Tool schemas and host-side attributes."""

from __future__ import annotations

import json

from dsh_tui.tools import BUILTIN_TOOL_NAMES, builtin_tools
from tests.conftest import FIXTURES

SNAP = FIXTURES / "examples" / "acp-agent" / "tests" / "snapshots"


def test_recorded_schemas_reproduced_byte_for_byte_with_sandbox_and_jobs():
    # fs-glob-sampling's own composition has no background jobs (its recorder's fs-search overlay)
    files = sorted(p for p in SNAP.glob("*/tool-schemas*.json") if p.parent.name != "fs-glob-sampling")
    checked = 0
    ours = {t.name: t.schema() for t in builtin_tools(escalation=True, background=True)}
    for path in files:
        for recorded in json.loads(path.read_text())["initial"]:
            if recorded["name"] in ours:
                mine = ours[recorded["name"]]
                assert json.dumps(mine, ensure_ascii=False) == json.dumps(recorded, ensure_ascii=False), path
                checked += 1
    assert checked >= 5 * 12  # bash, read, write, edit, todo_write in a dozen scenarios


def test_default_composition_advertises_no_sandbox_or_background():
    tools = {t.name: t for t in builtin_tools()}
    assert tuple(tools) == BUILTIN_TOOL_NAMES
    bash = tools["bash"].schema()
    assert "sandbox_permissions" not in bash["parameters"]["properties"]
    assert "run_in_background" not in bash["parameters"]["properties"]
    assert bash["description"].endswith(
        "Background execution is not available; long-running commands must finish within the timeout."
    )
    for name in ("write", "edit"):
        assert "sandbox_permissions" not in tools[name].parameters["properties"]
    assert tools["glob"].description.startswith("Find files whose paths match a glob pattern.")
    assert "first 100 paths in modification-time order" in tools["glob"].description
    assert "Returns the first 250 matches inline" in tools["grep"].description
    assert tools["grep"].parameters["required"] == ["pattern"]


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
