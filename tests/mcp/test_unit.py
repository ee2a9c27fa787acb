"""The MCP plugin's pure parts: dsh's public names, result conversion texts, config and the env scrub."""

from __future__ import annotations

import hashlib

import pytest

from dsh_tui.extensions.mcp.client import ServerStatus, scrubbed_environment
from dsh_tui.extensions.mcp.config import McpConfigError, parse_cli, parse_servers
from dsh_tui.extensions.mcp.convert import McpToolError, canonical, extract_text, model_content
from dsh_tui.extensions.mcp.naming import public_tool_name, split_public_name

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


# ---- naming ---------------------------------------------------------------------------------------
def test_a_valid_name_is_kept_verbatim():
    assert public_tool_name("files", "read_file") == "mcp__files__read_file"
    assert public_tool_name("a-b", "x-Y_9") == "mcp__a-b__x-Y_9"
    assert split_public_name("mcp__files__read_file") == ("files", "read_file")
    assert split_public_name("bash") is None


def test_invalid_characters_are_replaced_and_the_identity_hash_appended():
    name = public_tool_name("everything", "get.tiny image")
    digest = hashlib.sha256(b"everything\0get.tiny image").hexdigest()[:12]
    assert name == f"mcp__everything__get_tiny_image_{digest}"
    assert len(name) <= 64
    # two raw names that normalize alike stay distinct
    assert public_tool_name("s", "a.b") != public_tool_name("s", "a_b") == "mcp__s__a_b"


def test_a_long_name_is_cut_to_51_characters_plus_the_hash():
    raw = "x" * 80
    name = public_tool_name("srv", raw)
    digest = hashlib.sha256(("srv\0" + raw).encode()).hexdigest()[:12]
    assert name == ("mcp__srv__" + raw)[:51] + "_" + digest
    assert len(name) == 64
    exactly = "y" * (64 - len("mcp__srv__"))
    assert public_tool_name("srv", exactly) == "mcp__srv__" + exactly  # 64 characters: kept


# ---- conversion -----------------------------------------------------------------------------------
def test_blocks_become_dsh_texts_in_order():
    content = [
        {"type": "text", "text": "one"},
        {"type": "resource_link", "name": "notes", "uri": "file:///n"},
        {"type": "resource_link", "uri": "file:///n"},
        {"type": "audio", "mimeType": "audio/wav", "data": "AAAA"},
        {"type": "audio", "data": "AAAA"},
        {"type": "resource", "resource": {"uri": "x", "text": "y"}},
        {"type": "video"},
        "not an object",
        {"type": "text"},  # no text: nothing
    ]
    assert extract_text(content, "t").split("\n") == [
        "one",
        "Resource link: notes (file:///n)",
        "[resource link unavailable: the MCP block is missing its name or URI]",
        "[audio result unsupported: audio/wav; raw audio data remains available to programmatic callers]",
        "[audio result unsupported: unknown media type; raw audio data remains available to programmatic callers]",
        "[embedded resource unsupported; raw resource data remains available to programmatic callers]",
        "[unsupported MCP content type: video]",
        "[unsupported MCP content block: expected an object]",
    ]


def test_no_content_names_the_raw_tool():
    assert model_content({"content": []}, "get.it") == [
        {"type": "text", "text": "(get.it returned no model-visible content)"}]


def test_images_are_text_at_their_position_with_the_reason():
    value = {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"},
                         {"type": "image", "mimeType": "image/png", "data": PNG}, {"type": "text", "text": "c"}]}
    tail = "raw image data remains available to programmatic callers]"
    assert model_content(value, "t") == [
        {"type": "text", "text": "a\nb"},
        {"type": "text", "text": f"[image unavailable: image/png; no attachment store is mounted; {tail}"},
        {"type": "text", "text": "c"},
    ]
    bad = {"content": [{"type": "image", "mimeType": "image/bmp", "data": PNG},
                       {"type": "image", "mimeType": "image/png", "data": PNG},
                       {"type": "image", "mimeType": "image/png", "data": "AAB="},  # padding bits set
                       {"type": "image", "data": "AAAA"}]}
    assert [b["text"] for b in model_content(bad, "t")] == [
        f"[image unavailable: image/bmp; the declared media type is not PNG, JPEG, WebP, or GIF; {tail}",
        f"[image unavailable: image/png; another image in the same result was invalid; {tail}",
        f"[image unavailable: image/png; the image data is not canonical base64; {tail}",
        f"[image unavailable: unknown media type; the declared media type is not PNG, JPEG, WebP, or GIF; {tail}",
    ]


def test_is_error_structured_content_and_legacy_results():
    with pytest.raises(McpToolError) as err:
        canonical({"content": [{"type": "text", "text": "boom"}, {"type": "text", "text": "again"}],
                   "isError": True}, "t")
    assert str(err.value) == "boom\nagain"
    value = canonical({"content": [{"type": "text", "text": "{}"}], "structuredContent": {"n": 1}}, "t")
    assert value == {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"n": 1}}
    assert model_content(value, "t") == [{"type": "text", "text": "{}"}]  # never the structured content
    legacy = canonical({"toolResult": {"ok": True, "n": [1, 2]}}, "t")
    assert model_content(legacy, "t") == [{"type": "text", "text": '{"ok":true,"n":[1,2]}'}]
    assert model_content(canonical({}, "t"), "t") == [{"type": "text", "text": "(no output)"}]


# ---- config ---------------------------------------------------------------------------------------
def test_settings_servers_with_defaults_and_the_transport_inferred():
    servers = parse_servers({"servers": {
        "files": {"command": "npx", "args": ["-y", "pkg"], "env": {"A": "1"}},
        "remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-A": "b"}, "tool_call_timeout_ms": 5,
                   "reconnect": {"max_attempts": 2}},
    }}, ["cli1=python -m srv 'a b'", "web=https://example.test/mcp"])
    files, remote, cli1, web = servers
    assert (files.transport, files.command, files.args, files.tool_call_timeout_ms) == ("stdio", "npx", ["-y", "pkg"],
                                                                                       60000)
    assert files.reconnect.model_dump() == {"enabled": True, "initial_delay_ms": 500, "max_delay_ms": 30000,
                                            "max_attempts": 10}
    assert (remote.transport, remote.reconnect.max_attempts, remote.tool_call_timeout_ms) == ("streamable-http", 2, 5)
    assert (cli1.command, cli1.args, cli1.source) == ("python", ["-m", "srv", "a b"], "cli")
    assert (web.transport, web.url) == ("streamable-http", "https://example.test/mcp")
    assert parse_servers(None) == []


@pytest.mark.parametrize("table, message", [
    ({"servers": {"x": {"command": 3}}}, "settings: mcp.servers.x.command: Input should be a valid string"),
    ({"servers": {"x": {"command": "a", "argz": []}}}, "settings: mcp.servers.x.argz: Extra inputs are not permitted"),
    ({"servers": {"x": {}}}, "settings: mcp.servers.x: needs command (a stdio server) or url (a streamable HTTP server)"),
    ({"servers": {"x": {"command": "a", "reconnect": {"initial_delay_ms": 0}}}},
     "settings: mcp.servers.x.reconnect.initial_delay_ms: Input should be greater than 0"),
    ({"servers": {"bad name": {"command": "a"}}},
     "settings: mcp.servers.bad name: a server name is 1-32 characters of A-Z a-z 0-9 _ -"),
    ({"servers": {"x": {"url": "ftp://h"}}}, "settings: mcp.servers.x: url must be an http:// or https:// URL, not 'ftp://h'"),
    ({"server": {}}, "settings: mcp.server: unknown key (servers go in [mcp.servers.<name>])"),
    ({"servers": []}, "settings: mcp.servers must be a table of [mcp.servers.<name>] tables"),
])
def test_config_errors_name_the_field(table, message):
    with pytest.raises(McpConfigError) as err:
        parse_servers(table)
    assert str(err.value) == message


def test_cli_values():
    with pytest.raises(McpConfigError, match="expected NAME=COMMAND"):
        parse_cli("just-a-command")
    with pytest.raises(McpConfigError, match="a server name is 1-32 characters"):
        parse_cli("a.b=cmd")
    with pytest.raises(McpConfigError, match="No closing quotation"):
        parse_cli("a=cmd 'open")


def test_the_environment_loses_secret_looking_names_and_dsh_names():
    parent = {"PATH": "/bin", "HOME": "/h", "DEEPSEEK_API_KEY": "k", "github_token": "t", "DB_PASSWORD": "p",
              "MY_SECRET_X": "s", "DSH_HOME": "/d", "XDSH_OK": "1", "KEYBOARD": "us"}
    env = scrubbed_environment({"EXTRA": "1", "MY_TOKEN": "given"}, parent)
    assert env == {"PATH": "/bin", "HOME": "/h", "XDSH_OK": "1", "EXTRA": "1", "MY_TOKEN": "given"}


def test_status_lines():
    row = ServerStatus("files", "stdio", "npx", "ready", ["a"], "")
    assert row.text == "files  ready · 1 tool"
    assert ServerStatus("f", "stdio", "x", "failed", [], "boom").text == "f  failed: boom"
    assert ServerStatus("f", "stdio", "x", "reconnecting", [], "closed", 2, 10).text == \
        "f  reconnecting (attempt 2/10) · closed"


def test_without_servers_neither_the_plugin_nor_the_sdk_is_imported(tmp_path):
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    code = ("import asyncio, sys\n"
            "from dsh_tui.llm import scripted\n"
            "from dsh_tui.llm.scripted import ScriptedProvider\n"
            "from dsh_tui.runtime.host import AgentHost, HostSpec\n"
            "async def main():\n"
            f"    h = await AgentHost.open(HostSpec(root={str(tmp_path / 'root')!r}, cwd={str(tmp_path)!r},\n"
            "        provider=ScriptedProvider([scripted.text('x')], name='m'), model='m'))\n"
            "    await h.run_turn('hi')\n"
            "    await h.close()\n"
            "    print([m for m in ('dsh_tui.extensions.mcp', 'mcp') if m in sys.modules])\n"
            "asyncio.run(main())\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


def test_mcp_tools_ask_unless_allowed_whatever_their_arguments(tmp_path):
    from dsh_tui.runtime.approval import decide_preset

    outside = {"path": "/etc/passwd", "file_path": "/etc/passwd"}  # an MCP tool's own arguments, not ours
    inside = {"path": "a.txt"}
    for preset in ("read-only", "workspace-write"):
        for args in (outside, inside, {}):
            got = decide_preset(preset, "mcp", args, tmp_path, tmp_path, "mcp__fs__read")
            assert got == {"kind": "ask", "reason": f"mcp__fs__read is an MCP server's tool (under the {preset} preset)"}
            assert decide_preset(preset, "mcp-allowed", args, tmp_path, tmp_path, "mcp__fs__read") == {"kind": "allow"}
    assert decide_preset("full-access", "mcp", outside, tmp_path, tmp_path, "mcp__fs__read") == {"kind": "allow"}
    assert decide_preset("workspace-write", "read", outside, tmp_path, tmp_path, "read")["kind"] == "ask"
