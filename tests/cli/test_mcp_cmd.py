"""``dsh-tui mcp add|remove|get|list``: settings.toml edited in place (comments kept, secrets made private)
and ``list`` connecting to a real MCP server (tests/mcp/server.py over stdio) and naming its tools."""

from __future__ import annotations

import json
import stat
import subprocess
import sys

from tests.conftest import REPO
from tests.llm.test_provider_harness import _env


def _mcp(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = _env(tmp_path)
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run([sys.executable, "-m", "dsh_tui", "mcp", *args], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=120)


def test_add_list_get_remove_round_trip_keeps_comments_and_hides_secrets(tmp_path):
    settings = tmp_path / "config" / "dsh-tui" / "settings.toml"
    settings.parent.mkdir(parents=True)
    settings.write_text("# my settings\n[ui]\ntheme = \"textual-dark\"  # keep me\n")
    out = _mcp(tmp_path, "add", "tests", "--env", "MCP_TOKEN=s3cret-value", "--", sys.executable, "-m",
               "tests.mcp.server", "stdio")
    assert out.returncode == 0, out.stderr
    text = settings.read_text()
    assert "# my settings" in text and "# keep me" in text and "[mcp.servers.tests]" in text
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600  # it now holds an env value
    out = _mcp(tmp_path, "add", "tests", "--", "x")
    assert out.returncode == 2 and "already in" in out.stderr and "Traceback" not in out.stderr
    got = _mcp(tmp_path, "get", "tests", "--json")
    assert json.loads(got.stdout)["env"] == {"MCP_TOKEN": "***"} and "s3cret" not in got.stdout
    listed = _mcp(tmp_path, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert row["name"] == "tests" and row["state"] == "ready"
    assert "mcp__tests__echo" in row["tools"] and "mcp__tests__fail" in row["tools"]
    out = _mcp(tmp_path, "remove", "tests")
    assert out.returncode == 0 and "[mcp.servers.tests]" not in settings.read_text()
    assert "# keep me" in settings.read_text()
    out = _mcp(tmp_path, "remove", "tests")
    assert out.returncode == 2 and out.stderr.strip().endswith("(none configured)")


def test_a_url_server_and_bad_input_are_checked_before_anything_is_written(tmp_path):
    settings = tmp_path / "config" / "dsh-tui" / "settings.toml"
    out = _mcp(tmp_path, "add", "remote", "https://example.invalid/mcp", "--header", "Authorization: Bearer x")
    assert out.returncode == 0, out.stderr
    assert 'url = "https://example.invalid/mcp"' in settings.read_text()
    for args, words in (
        (("add", "bad name", "--", "x"), "a server name is 1-32 characters"),
        (("add", "x"), "give -- COMMAND"),
        (("add", "y", "--header", "nocolon", "https://h/mcp"), "expected KEY:VALUE"),
        (("add", "z", "--env", "A=1", "https://h/mcp"), "--env is for a stdio server"),
    ):
        out = _mcp(tmp_path, *args)
        assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr, (args, out.stderr)
    assert "bad name" not in settings.read_text() and "[mcp.servers.y]" not in settings.read_text()
    listed = _mcp(tmp_path, "list", "--no-connect")
    assert listed.stdout.startswith("remote  https://example.invalid/mcp  not connected")
