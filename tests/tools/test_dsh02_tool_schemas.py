"""The first request of ``dsh-tui run --headless`` offers dsh 0.2's tools with dsh 0.2's descriptions and schemas
(issue #32). ``tests/fixtures/dsh02-request.headless.json`` is the first request of the real dsh 0.2.1rc2
(``dsh --profile headless "say hi"``). Every difference is listed here with its reason, and in docs/tools.md
("dsh 0.2's tool set")."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

from tests.conftest import REPO
from tests.llm.sse_server import ScriptServer
from tests.llm.test_messages import text_reply, title
from tests.llm.test_provider_harness import _env

DSH02 = {t["name"]: t for t in json.loads((REPO / "tests" / "fixtures" / "dsh02-request.headless.json")
                                          .read_text())["body"]["tools"]}

# ``ask_user_question`` is not in dsh 0.2's headless request (dsh refuses it headless); dsh-tui's is in the app.
HEADLESS_ABSENT = {"ask_user_question"}
# dsh 0.2's JavaScript orchestration (its PTC runtime): not in dsh-tui.
NOT_OFFERED = {"workflow"}
# dsh 0.2 changed its subagent model: children always start in the background and report back with
# send_message (addressed by ``agent_id``), take a ``cwd``, and list as running / inactive. dsh-tui keeps dsh
# 0.1's model (and texts) for these four until it is ported.
SUBAGENT_MODEL_01 = {"subagent", "subagent_fork", "send_message", "list_agents"}
# The sandbox's escalation fields: dsh 0.2 runs under its file sandbox and advertises them; dsh-tui advertises
# them only where its OS sandbox runs (then they must be dsh 0.2's exactly; bubblewrap may be missing here).
SANDBOX_FIELDS = ("sandbox_permissions", "justification")
# dsh 0.2 moves a bash command that outlives ``timeoutMs`` to the background (promoteOnTimeout); dsh-tui
# kills it, and says so with dsh's own text for that case.
KILLED = ("Timeout in milliseconds. The executor applies its configured default and cap, and kills the command on "
          "expiry.")


def _first_request_tools(tmp_path) -> dict[str, dict]:
    (tmp_path / "ws").mkdir()
    env = _env(tmp_path, DEEPSEEK_API_KEY="sk-tools-0123456789abcdef")
    env.pop("DSH_TUI_DEEPSEEK_API", None)  # the default route: Messages, as dsh 0.2
    with ScriptServer() as server:
        server._server.title_reply = title
        server.push(text_reply("hi"))
        env["DEEPSEEK_BASE_URL"] = server.base_url
        out = subprocess.run([sys.executable, "-m", "dsh_tui", "run", "--headless", "say hi"], env=env,
                             cwd=tmp_path / "ws", capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return {t["name"]: t for t in server.requests[0]["body"]["tools"]}


def _expected(name: str, ours: dict) -> dict:
    """dsh 0.2's definition of ``name`` with the listed intended differences applied."""
    expected = copy.deepcopy(DSH02[name])
    props = expected["input_schema"]["properties"]
    if name == "bash":
        props["timeoutMs"]["description"] = KILLED
    if not any(f in ours["input_schema"]["properties"] for f in SANDBOX_FIELDS):
        for field in SANDBOX_FIELDS:
            props.pop(field, None)
    return expected


def test_the_first_headless_request_offers_dsh02s_tools(tmp_path):
    ours = _first_request_tools(tmp_path)
    assert list(ours) == sorted(ours)  # dsh's order: by name
    missing = set(DSH02) - set(ours) - NOT_OFFERED
    assert not missing, f"dsh 0.2 offers {sorted(missing)}"
    extra = set(ours) - set(DSH02)
    assert not extra, f"dsh 0.2 does not offer {sorted(extra)}"
    assert not HEADLESS_ABSENT & set(ours)
    assert not NOT_OFFERED & set(ours)
    same = sorted(set(ours) & set(DSH02) - SUBAGENT_MODEL_01)
    for name in same:
        assert ours[name] == _expected(name, ours[name]), name
    # every other tool of dsh 0.2 exactly (bash with its timeoutMs text; without a sandbox bash, edit and
    # write without the escalation fields): 20 of its 25
    assert len(same) == len(DSH02) - len(NOT_OFFERED) - len(SUBAGENT_MODEL_01) == 20
    for name in SUBAGENT_MODEL_01:  # offered, with dsh 0.1's texts (a listed difference)
        assert name in ours


def test_str_replace_editor_is_off_as_in_dsh02(tmp_path):
    assert "str_replace_editor" not in _first_request_tools(tmp_path)
