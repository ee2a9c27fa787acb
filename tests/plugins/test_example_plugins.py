"""The example plugins (examples/plugins/*) installed as real distributions (pip, entry points in the group
``dsh_tui.plugins``) and run by ``dsh-tui run --headless`` in a subprocess against the local HTTP model
server: their effects are in the requests the server received, in the log and in the audit file. The SDK
runs the same scenario and returns what the CLI printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsh_tui.config import settings_path
from dsh_tui.store import fixture
from tests.conftest import REPO
from tests.llm.sse_server import ScriptServer, chunk, sse_reply, tool_call

EXAMPLES = REPO / "examples" / "plugins"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The three example plugins pip-installed (offline, no build isolation) into their own directory."""
    target = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                           "--no-index", "--target", str(target), *(str(p) for p in sorted(EXAMPLES.iterdir()))],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return target


def _env(site: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO)])
    return env


def _settings(base_url: str, audit: Path) -> None:
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'[default]\nprovider = "local"\nmodel = "m"\n[providers.local]\nbase_url = "{base_url}/v1"\n\n'
        '[plugins.context-inject]\ntext = "House rule: answer in one line."\n\n'
        f'[plugins.tool-audit]\npath = "{audit}"\n\n'
        "[plugins.bash-guard]\npatterns = ['\\brm\\s+-rf\\b']\nreason = \"blocked by house rules\"\n")


def _push_scenario(srv: ScriptServer) -> None:
    args = json.dumps({"command": "rm -rf build", "description": "clean"})
    srv.push(sse_reply(chunk(role="assistant", tool_calls=[tool_call(0, id="call_1", name="bash", args=args)]),
                       chunk(finish="tool_calls", usage={"prompt_tokens": 5, "completion_tokens": 2})),
             sse_reply(chunk("I did not delete anything."),
                       chunk(finish="stop", usage={"prompt_tokens": 9, "completion_tokens": 3})))


def _texts(body: dict) -> str:
    return json.dumps(body["messages"], ensure_ascii=False)


def test_installed_plugins_shape_a_headless_run(tmp_path, site):
    ws = tmp_path / "ws"
    ws.mkdir()
    audit = tmp_path / "audit.jsonl"
    with ScriptServer() as srv:
        _push_scenario(srv)
        _settings(srv.base_url, audit)
        listed = subprocess.run([sys.executable, "-m", "dsh_tui", "plugins", "--json"], capture_output=True,
                                text=True, timeout=120, env=_env(site), cwd=ws)
        proc = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "clean the build",
                               "--root", str(tmp_path / "root"), "--cwd", str(ws), "--preset", "full-access"],
                              capture_output=True, text=True, timeout=120, env=_env(site), cwd=ws)
        first, second = (r["body"] for r in srv.requests)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "I did not delete anything.\n"
    records = {r["id"]: r for r in map(json.loads, listed.stdout.splitlines())}
    for pid, event in (("context-inject", "agent/pre-step"), ("tool-audit", "tools/result"),
                       ("bash-guard", "tools/pre-execute")):
        assert records[pid]["state"] == "loaded" and records[pid]["source"] == "entry-point"
        assert records[pid]["events"] == [event]
    # context-inject: in the first request; bash-guard: the refusal is the tool result the model sees
    assert "House rule: answer in one line." in _texts(first)
    assert "blocked by house rules" in _texts(second)
    assert not (ws / "build").exists()
    # tool-audit: one line for the refused call
    (line,) = audit.read_text().splitlines()
    entry = json.loads(line)
    assert entry["tool"] == "bash" and entry["callId"] == "call_1" and entry["ok"] is False
    # the log (zstd or plain, read as dsh-tui reads it) holds the injected context message and the refusal:
    # what the model saw was recorded
    (log,) = (tmp_path / "root").rglob("session*.jsonl*")
    events = fixture.imported_events(fixture.open_log_file(str(log)))
    notes = [e for e in events if e["type"] == "user/message"
             # a plugin's source: {kind: "plugin", plugin} in a v0 log, {kind: "plugin:<name>"} in a v4 one
             and e["data"].get("source") in ({"kind": "plugin", "plugin": "context-inject"},
                                             {"kind": "plugin:context-inject"})]
    assert len(notes) == 1 and "House rule: answer in one line." in json.dumps(notes[0]["data"]["content"])
    (refused,) = [e for e in events if e["type"] == "tool/result"]
    assert "blocked by house rules" in json.dumps(refused["data"])
    assert [e["data"]["reason"]["kind"] for e in events if e["type"] == "turn/end"] == ["completed"]


def test_the_sdk_runs_the_same_scenario_and_returns_what_the_cli_printed(tmp_path, site):
    ws = tmp_path / "ws"
    ws.mkdir()
    audit = tmp_path / "audit.jsonl"
    script = (
        "import sys\n"
        "from dsh_tui import Harness\n"
        "with Harness(provider='local', model='m', cwd=sys.argv[1], session_root=sys.argv[2],\n"
        "             preset='full-access') as h:\n"
        "    r = h.run('clean the build')\n"
        "print(repr((r.final_response, r.finish_reason, len(r.events) > 0, r.session_root == sys.argv[2])))\n"
    )
    with ScriptServer() as srv:
        _push_scenario(srv)
        _settings(srv.base_url, audit)
        proc = subprocess.run([sys.executable, "-c", script, str(ws), str(tmp_path / "root")],
                              capture_output=True, text=True, timeout=120, env=_env(site), cwd=ws)
        second = srv.requests[1]["body"]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == repr(("I did not delete anything.", "completed", True, True))
    assert "blocked by house rules" in _texts(second)  # the entry-point plugins loaded in the SDK too
    assert len(audit.read_text().splitlines()) == 1


def test_a_broken_plugin_is_reported_and_the_run_goes_on_unless_strict(tmp_path, site):
    (tmp_path / "broken_plugin.py").write_text("name = 'broken'\ndef apply(ctx):\n    raise RuntimeError('kaput')\n")
    env = _env(site)
    env["PYTHONPATH"] += os.pathsep + str(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    with ScriptServer() as srv:
        _push_scenario(srv)
        _settings(srv.base_url, tmp_path / "audit.jsonl")
        proc = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "clean the build", "--root",
                               str(tmp_path / "root"), "--plugin", "broken_plugin", "--preset", "full-access"],
                              capture_output=True, text=True, timeout=120, env=env, cwd=ws)
        strict = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "again", "--root",
                                 str(tmp_path / "root2"), "--plugin", "broken_plugin", "--strict-plugins"],
                                capture_output=True, text=True, timeout=120, env=env, cwd=ws)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "dsh-tui: plugin broken (cli) failed to load: RuntimeError: kaput\n"
    assert strict.returncode == 1 and "Traceback" not in strict.stderr
    assert strict.stderr == "dsh-tui: plugin broken: RuntimeError: kaput\n"
    assert not list((tmp_path / "root2").rglob("session*.jsonl*"))  # stopped before anything was written
