"""dsh's own Python SDK (``deepseek-harness-sdk`` 0.2.1rc2, unchanged) drives dsh-tui through
``dsh-tui --profile sdk``: two turns on one session, then ``resume_session`` in a fresh runtime and a third;
the session is an ordinary dsh-tui session."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.interop.dsh02 import Dsh02Unavailable, python
from tests.llm.sse_server import ScriptServer, chunk, sse_reply, tool_call
from tests.llm.test_provider_harness import _env

pytestmark = pytest.mark.interop
KEY = "sk-sdk-0123456789abcdefghij"
USAGE = {"prompt_tokens": 50, "completion_tokens": 5}
SCRIPT = """
import json, sys
from deepseek_harness import DeepSeekHarness
dsh_bin, home, cwd, session_id = sys.argv[1:5]
with DeepSeekHarness(dsh_bin=dsh_bin, dsh_home=home, cwd=cwd, request_timeout_seconds=120) as harness:
    if session_id == "-":
        session = harness.start_session()
        runs = [session.run("say hi"), session.run("what is in notes.txt?")]
    else:
        session = harness.resume_session(session_id)
        runs = [session.run("and now?")]
    print(json.dumps({"id": session.id, "runs": [
        {"answer": r.final_response, "finish": r.finish_reason, "types": [e["type"] for e in r.events]}
        for r in runs]}))
"""


@pytest.fixture(scope="module")
def sdk_python() -> str:
    try:
        return python()
    except Dsh02Unavailable as err:
        pytest.fail(f"dsh 0.2 peer unavailable: {err}", pytrace=False)


def _sdk(sdk_python: str, tmp_path: Path, server: ScriptServer, session_id: str) -> dict:
    work = tmp_path / "ws"
    work.mkdir(exist_ok=True)
    (work / "notes.txt").write_text("alpha\n")
    env = _env(tmp_path, DEEPSEEK_API_KEY=KEY, DEEPSEEK_BASE_URL=server.base_url)
    env.pop("DSH_HOME")  # the SDK sets it from dsh_home
    dsh_tui = Path(sys.executable).parent / "dsh-tui"
    out = subprocess.run([sdk_python, "-c", SCRIPT, str(dsh_tui), str(tmp_path / "home"), str(work), session_id],
                         env=env, cwd=work, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_dshs_own_sdk_runs_two_turns_then_resumes_the_session_in_a_new_runtime(sdk_python, tmp_path):
    with ScriptServer() as server:
        server.push(
            sse_reply(chunk("Hello."), chunk("", finish="stop", usage=USAGE)),
            sse_reply(chunk(None, tool_calls=[tool_call(0, id="c1", name="read", args='{"file_path": "notes.txt"}')]),
                      chunk(None, finish="tool_calls", usage=USAGE)),
            sse_reply(chunk("It says alpha."), chunk("", finish="stop", usage=USAGE)),
            sse_reply(chunk("Still alpha."), chunk("", finish="stop", usage=USAGE)),
        )
        first = _sdk(sdk_python, tmp_path, server, "-")
        assert first["id"].startswith("session-")
        assert [(r["answer"], r["finish"]) for r in first["runs"]] == [("Hello.", "completed"),
                                                                        ("It says alpha.", "completed")]
        assert "tool/result" in first["runs"][1]["types"] and first["runs"][1]["types"][-1] == "turn/end"
        second = _sdk(sdk_python, tmp_path, server, first["id"])
        assert second["runs"][0]["answer"] == "Still alpha." and second["id"] == first["id"]
    # an ordinary dsh-tui session: listed, three turns, the log checks out
    env = _env(tmp_path)
    listing = subprocess.run([sys.executable, "-m", "dsh_tui", "sessions", "--all", "--json", "--root",
                              str(tmp_path / "home" / "sessions")], env=env, capture_output=True, text=True,
                             timeout=60)
    assert listing.returncode == 0, listing.stderr
    (row,) = json.loads(listing.stdout)
    assert row["id"] == first["id"] and row["turns"] == 3
