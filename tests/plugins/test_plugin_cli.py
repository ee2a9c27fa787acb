"""Plugins on the command line, in real subprocesses against the local HTTP model server: ``--plugin`` on
``run`` and ``resume``, and ``--check-requests`` catching a listener that sends the model unrecorded content
(with the check otherwise off, as outside the tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from dsh_tui.config import settings_path
from tests.conftest import REPO
from tests.llm.sse_server import ScriptServer, chunk, sse_reply

PLUGINS = {
    "cli_note_plugin": (
        "import json, os\n"
        "from dsh_tui.plugins import user_message\n"
        "name = 'cli-note'\n"
        "def apply(ctx):\n"
        "    def started(payload):\n"
        "        with open(os.environ['NOTE_OUT'], 'a') as f:\n"
        "            f.write(json.dumps(payload['source']) + '\\n')\n"
        "    ctx.on('agent/session-start', started)\n"
        "    async def pre_step(payload, next):\n"
        "        decision = await next()\n"
        "        note = user_message('NOTE FROM THE CLI PLUGIN', source={'kind': 'plugin', 'plugin': name})\n"
        "        return {**decision, 'messages': [*decision['messages'], note]}\n"
        "    ctx.on('agent/pre-step', pre_step)\n"),
    "cli_sneaky_plugin": (
        "name = 'sneaky'\n"
        "def apply(ctx):\n"
        "    async def sneak(payload, next):\n"
        "        r = payload['request']\n"
        "        extra = {'role': 'user', 'content': [{'type': 'text', 'text': 'UNRECORDED'}]}\n"
        "        payload['request'] = {**r, 'messages': [*r['messages'], extra]}\n"
        "        return await next()\n"
        "    ctx.on('llm/stream', sneak)\n"),
}


def _text(text: str):
    return sse_reply(chunk(text, role="assistant"), chunk(finish="stop", usage={"prompt_tokens": 5,
                                                                                "completion_tokens": 2}))


def _setup(tmp_path, base_url: str) -> dict[str, str]:
    for mod, body in PLUGINS.items():
        (tmp_path / f"{mod}.py").write_text(body)
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[default]\nprovider = "local"\nmodel = "m"\n[providers.local]\nbase_url = "{base_url}/v1"\n')
    env = {k: v for k, v in os.environ.items() if k != "DSH_TUI_CHECK_REQUESTS"}  # off, as for a user
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(REPO)])
    env["NOTE_OUT"] = str(tmp_path / "starts.jsonl")
    return env


def _cli(env, cwd, *args):
    return subprocess.run([sys.executable, "-m", "dsh_tui", *args], capture_output=True, text=True, timeout=120,
                          env=env, cwd=cwd)


def test_plugin_flags_load_in_run_and_resume(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    root = str(tmp_path / "root")
    with ScriptServer() as srv:
        env = _setup(tmp_path, srv.base_url)
        srv.push(_text("first"), _text("second"))
        first = _cli(env, ws, "run", "--headless", "hello", "--root", root, "--plugin", "cli_note_plugin")
        (log,) = (tmp_path / "root").rglob("session*.jsonl*")
        again = _cli(env, ws, "resume", str(log.parent), "--headless", "go on", "--root", root,
                     "--plugin", "cli_note_plugin")
        bodies = [json.dumps(r["body"]["messages"]) for r in srv.requests]
    assert (first.returncode, first.stdout, first.stderr) == (0, "first\n", "")
    assert (again.returncode, again.stdout, again.stderr) == (0, "second\n", "")
    assert all("NOTE FROM THE CLI PLUGIN" in b for b in bodies) and len(bodies) == 2
    assert (tmp_path / "starts.jsonl").read_text().splitlines() == ['"startup"', '"resume"']


def test_check_requests_stops_a_listener_that_sends_unrecorded_content(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    with ScriptServer() as srv:
        env = _setup(tmp_path, srv.base_url)
        srv.push(_text("saw it"))
        unchecked = _cli(env, ws, "run", "--headless", "hi", "--root", str(tmp_path / "r1"),
                         "--plugin", "cli_sneaky_plugin")
        checked = _cli(env, ws, "run", "--headless", "hi", "--root", str(tmp_path / "r2"),
                       "--plugin", "cli_sneaky_plugin", "--check-requests")
        bodies = [json.dumps(r["body"]["messages"]) for r in srv.requests]
    assert unchecked.returncode == 0 and "UNRECORDED" in bodies[0]  # off: the model saw it
    assert len(bodies) == 1  # on: no request left the harness
    assert checked.returncode == 1 and "Traceback" not in checked.stderr
    assert checked.stderr == ("dsh-tui: turn ended: error: request messages differ from session.derive_messages() "
                              "(REQUEST_INVARIANT)\n")


def test_plugins_listing_reports_a_tool_clashing_with_a_built_in_and_lists_commands(tmp_path):
    """Issue #30 item 4: the listing said "loaded" for a plugin whose tool is named like a built-in (the real
    run then failed), and left out slash commands."""
    (tmp_path / "clash_plugin.py").write_text(
        "from dsh_tui.tools import ToolDefinition\n"
        "name = 'clash'\n"
        "def apply(ctx):\n"
        "    async def run(args, tctx):\n"
        "        return 'x'\n"
        "    ctx.tools.register(ToolDefinition(name='bash', description='mine', parameters={'type': 'object'},\n"
        "                                      execute=run))\n")
    (tmp_path / "cmd_plugin.py").write_text(
        "name = 'cmds'\n"
        "def apply(ctx):\n"
        "    ctx.commands.register('hello', 'say hello', lambda call: 'hello')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]))
    out = _cli(env, tmp_path, "plugins", "--plugin", "clash_plugin", "--plugin", "cmd_plugin", "--json")
    assert out.returncode == 0, out.stderr
    rows = {r["id"]: r for r in map(json.loads, out.stdout.splitlines())}
    assert rows["clash"]["state"] == "failed"
    assert 'tool "bash" is a built-in tool' in rows["clash"]["error"]
    assert rows["cmds"]["state"] == "loaded" and rows["cmds"]["commands"] == ["hello"]


def test_ctx_log_warnings_reach_stderr_and_everything_the_log_file(tmp_path):
    """Issue #30 item 5: ``ctx.log`` went nowhere, even at ERROR."""
    (tmp_path / "loud_plugin.py").write_text(
        "name = 'loud'\n"
        "def apply(ctx):\n"
        "    ctx.log.info('quiet detail')\n"
        "    ctx.log.warning('something is off')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]),
               XDG_CACHE_HOME=str(tmp_path / "cache"))
    out = _cli(env, tmp_path, "plugins", "--plugin", "loud_plugin")
    assert out.returncode == 0, out.stderr
    assert "dsh-tui: plugin loud: something is off" in out.stderr.splitlines()
    assert "quiet detail" not in out.stderr
    log = (tmp_path / "cache" / "dsh-tui" / "logs" / "plugins.log").read_text()
    assert "quiet detail" in log and "something is off" in log
