"""``dsh-tui --profile sdk`` (dsh's JSON-RPC stdio protocol) refusing what it cannot do, in one line or one
JSON-RPC error each; the happy path with dsh's own SDK is tests/interop/test_dsh02_sdk.py."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.llm.test_provider_harness import _env


def _rpc(tmp_path, lines: list[str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dsh_tui", *(args or ("--profile", "sdk"))],
                          input="".join(line + "\n" for line in lines), env=_env(tmp_path), cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)


def test_protocol_errors_are_json_rpc_errors_and_the_server_keeps_going(tmp_path):
    out = _rpc(tmp_path, [
        '{"jsonrpc":"2.0","id":1,"method":"nope"}',
        "not json",
        '{"jsonrpc":"2.0","id":2,"method":"session/resume","params":{"sessionId":"s"}}',
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"cwd": str(tmp_path)}}),
        '{"jsonrpc":"2.0","id":4,"method":"session/resume","params":{"sessionId":"session-nope"}}',
        '{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s","contentBlocks":[]}}',
        '{"jsonrpc":"2.0","id":6,"method":"shutdown"}',
    ])
    assert out.returncode == 0 and "Traceback" not in out.stderr
    replies = {m.get("id"): m for m in map(json.loads, out.stdout.splitlines())}
    assert replies[1]["error"]["code"] == -32601
    assert replies[None]["error"]["code"] == -32700
    assert replies[2]["error"] == {"code": -32600, "message": "initialize first"}
    assert replies[3]["result"]["serverInfo"]["name"] == "dsh-tui"
    assert replies[4]["error"]["code"] == -32602 and "session-nope" in replies[4]["error"]["message"]
    assert replies[5]["error"]["code"] == -32602
    assert replies[6]["result"] == {}


def test_other_profiles_and_a_missing_dsh_home_are_one_line(tmp_path):
    out = _rpc(tmp_path, [], "--profile", "web")
    assert out.returncode == 2 and out.stderr.startswith("dsh-tui: --profile web: dsh-tui serves only")
    env = _env(tmp_path)
    env.pop("DSH_HOME")
    out = subprocess.run([sys.executable, "-m", "dsh_tui", "--profile", "sdk"], input="", env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and out.stderr.strip() == \
        "dsh-tui: --profile sdk needs an explicit DSH_HOME (dsh's SDK sets it from dsh_home)"
