"""Issue #37 item 8: a hostile plugin never ends dsh-tui with a traceback nor hangs it. Real subprocesses
(``dsh-tui run --headless --plugin MOD``) against the local model server, a plugin module per variant:
``SystemExit``/``KeyboardInterrupt`` from ``apply()`` or a listener, and listeners that never return (bounded
by ``[plugins.<id>] listener_timeout_ms``; a waterfall listener's time inside ``next()`` does not count)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dsh_tui.config import settings_path
from tests.conftest import REPO
from tests.llm.sse_server import ScriptServer, chunk, sse_reply, tool_call

USAGE = {"prompt_tokens": 5, "completion_tokens": 2}


def _text(text: str):
    return sse_reply(chunk(text, role="assistant"), chunk(finish="stop", usage=USAGE))


def _bash(command: str):
    args = json.dumps({"command": command, "description": "d"})
    return sse_reply(chunk(tool_calls=[tool_call(0, id="b1", name="bash", args=args)]),
                     chunk(finish="tool_calls", usage=USAGE))


def _run(tmp_path, srv: ScriptServer, body: str, settings: str = "") -> subprocess.CompletedProcess:
    (tmp_path / "hostile_plugin.py").write_text("import asyncio, sys\nname = 'hostile'\n" + body)
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[default]\nprovider = "local"\nmodel = "m"\n[providers.local]\nbase_url = "{srv.base_url}/v1"\n'
                    + settings)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]))
    return subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "hi", "--plugin", "hostile_plugin",
                           "--preset", "full-access", "--root", str(tmp_path / "root"), "--cwd", str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)


def _clean(err: str) -> bool:
    return "Traceback" not in err and "never retrieved" not in err and "destroyed but it is pending" not in err


@pytest.mark.parametrize("body", [
    "def apply(ctx):\n    async def on(p):\n        raise SystemExit(4)\n    ctx.on('agent/status', on)\n",
    "def apply(ctx):\n    def on(p):\n        sys.exit(4)\n    ctx.on('agent/status', on)\n",
    "def apply(ctx):\n    def on(p):\n        raise KeyboardInterrupt\n    ctx.on('agent/step-end', on)\n",
    "def apply(ctx):\n    async def on(p):\n        await asyncio.Event().wait()\n    ctx.on('agent/status', on)\n",
    "def apply(ctx):\n    async def on(p):\n        await asyncio.Event().wait()\n    ctx.on('session/flush', on)\n",
], ids=["async-emit-systemexit", "sync-emit-systemexit", "emit-keyboardinterrupt", "emit-never-returns",
        "flush-never-returns"])
def test_an_emit_listener_raising_systemexit_is_contained(tmp_path, body):
    with ScriptServer() as srv:
        srv.push(_text("answer"), _text("answer"))
        p = _run(tmp_path, srv, body, "[plugins.hostile]\nlistener_timeout_ms = 300\n")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "answer\n"
    assert _clean(p.stderr), p.stderr


@pytest.mark.parametrize("body, shown", [
    ("def apply(ctx):\n    sys.exit(3)\n", "SystemExit: 3"),
    ("def apply(ctx):\n    raise KeyboardInterrupt\n", "KeyboardInterrupt"),
    ("sys.exit(5)\ndef apply(ctx):\n    pass\n", "SystemExit: 5"),
], ids=["apply-exit", "apply-keyboardinterrupt", "import-exit"])
def test_apply_raising_systemexit_is_a_failed_load_line(tmp_path, body, shown):
    with ScriptServer() as srv:
        srv.push(_text("answer"), _text("answer"))
        p = _run(tmp_path, srv, body)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "answer\n"
    assert "dsh-tui: plugin " in p.stderr and "failed to load" in p.stderr and shown in p.stderr, p.stderr
    assert _clean(p.stderr) and p.stderr.count("\n") == 1, p.stderr


@pytest.mark.parametrize("event, listener", [
    ("agent/pre-step", "async def on(p, nxt):\n        await asyncio.Event().wait()\n"),
    ("agent/request", "async def on(p, nxt):\n        r = await nxt()\n        await asyncio.Event().wait()\n"),
    ("agent/turn-stopping", "async def on(p):\n        await asyncio.Event().wait()\n"),
    ("system-prompt/assemble", "async def on(p, nxt):\n        await asyncio.sleep(3600)\n"),
], ids=["pre-step", "request-after-next", "turn-stopping", "assemble"])
def test_a_listener_that_never_returns_times_out_naming_the_plugin(tmp_path, event, listener):
    body = f"def apply(ctx):\n    {listener}    ctx.on({event!r}, on)\n"
    with ScriptServer() as srv:
        srv.push(*[_text("answer")] * 4)
        p = _run(tmp_path, srv, body, "[plugins.hostile]\nlistener_timeout_ms = 300\n")
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert (f"plugin hostile: listener for {event} did not return within 300 ms (listener_timeout_ms)"
            in p.stderr), p.stderr
    assert _clean(p.stderr), p.stderr


def test_time_inside_next_does_not_count_against_the_timeout(tmp_path):
    """A ``tools/execute`` listener that wraps a 1 s command is within a 300 ms budget: its own time is ~0."""
    body = "def apply(ctx):\n    async def on(p, nxt):\n        return await nxt()\n    ctx.on('tools/execute', on)\n"
    with ScriptServer() as srv:
        srv.push(_bash("sleep 1; echo slept"), _text("answer"), _text("answer"))
        p = _run(tmp_path, srv, body, "[plugins.hostile]\nlistener_timeout_ms = 300\n")
        results = [m for m in srv.requests[1]["body"]["messages"] if m["role"] == "tool"]
    assert p.returncode == 0, p.stderr
    assert results[0]["content"] == "slept\n"


@pytest.mark.parametrize("value", ["0", "-5", "true", '"1s"'])
def test_listener_timeout_must_be_a_positive_number(tmp_path, value):
    with ScriptServer() as srv:
        p = _run(tmp_path, srv, "def apply(ctx):\n    pass\n", f"[plugins.hostile]\nlistener_timeout_ms = {value}\n")
    assert p.returncode != 0 and "listener_timeout_ms must be a positive number" in p.stderr, p.stderr
    assert _clean(p.stderr) and p.stderr.count("\n") == 1, p.stderr
