"""dsh 0.2's ``working_directory`` tool (issue #32): the model changes its working directory, the change is
logged as ``working-directory/change {cwd}`` and announced with dsh's notice, later tools resolve relative
paths against it, and a resumed session continues there. Real ``dsh-tui run/resume --headless`` processes
against a scripted Messages server on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys

from dsh_tui.extensions.workdir import DESCRIPTION, PARAMETERS
from tests.conftest import REPO
from tests.llm.sse_server import ScriptServer
from tests.llm.test_messages import text_reply, title, tool_reply
from tests.llm.test_provider_harness import _env

KEY = "sk-workdir-0123456789abcdefghij"


def _headless(server, tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = _env(tmp_path, DEEPSEEK_API_KEY=KEY, DEEPSEEK_BASE_URL=server.base_url)
    env.pop("DSH_TUI_DEEPSEEK_API", None)  # the default route: Messages
    conf = tmp_path / "config" / "dsh-tui"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "settings.toml").write_text('[storage]\ncompression = "none"\n')
    return subprocess.run([sys.executable, "-m", "dsh_tui", *args], env=env, cwd=tmp_path / "ws",
                          capture_output=True, text=True, timeout=120)


def _results(request: dict) -> list[str]:
    return [c["text"] for m in request["body"]["messages"] if m["role"] == "user" for b in m["content"]
            if b["type"] == "tool_result" for c in b["content"]]


def _texts(request: dict) -> list[str]:
    return [b["text"] for m in request["body"]["messages"] if m["role"] == "user" for b in m["content"]
            if b["type"] == "text"]


def test_the_schema_is_dsh02s():
    expected = json.loads((REPO / "tests" / "fixtures" / "dsh02-request.headless.json").read_text())
    [tool] = [t for t in expected["body"]["tools"] if t["name"] == "working_directory"]
    assert (tool["description"], tool["input_schema"]) == (DESCRIPTION, PARAMETERS)


def test_cd_moves_later_tools_and_the_session_resumes_there(tmp_path):
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "notes.txt").write_text("top\n")
    (ws / "sub" / "notes.txt").write_text("inside sub\n")
    sub = str((ws / "sub").resolve())
    with ScriptServer() as server:
        server._server.title_reply = title
        server.push(
            tool_reply("toolu_1", "working_directory", '{"cd": "sub"}'),
            tool_reply("toolu_2", "read", '{"file_path": "notes.txt"}'),
            tool_reply("toolu_3", "bash", '{"description": "Show directory", "command": "pwd"}'),
            tool_reply("toolu_4", "working_directory", '{"cd": "does-not-exist"}'),
            text_reply("Done."),
        )
        out = _headless(server, tmp_path, "run", "--headless", "--preset", "full-access", "go into sub")
        assert out.returncode == 0, out.stderr
        requests = list(server.requests)
    assert _results(requests[1])[-1] == sub  # the tool's result is the new directory
    # dsh's notice reaches the model with the next request
    assert f'The working directory changed from "{ws.resolve()}" to "{sub}".' in _texts(requests[1])
    assert "inside sub" in _results(requests[2])[-1]  # read resolved notes.txt in the new directory
    assert _results(requests[3])[-1].startswith(sub)  # bash ran there (pwd)
    assert _results(requests[4])[-1] == 'Error: working-directory: directory does not exist: "does-not-exist"'
    assert requests[4]["body"]["tools"] == requests[0]["body"]["tools"]
    [log] = list((tmp_path / "dsh-home").rglob("*.jsonl"))
    events = [json.loads(line) for line in log.read_text().splitlines()]
    changes = [e for e in events if e.get("type") == "working-directory/change"]
    assert [c["data"] for c in changes] == [{"cwd": sub}]  # dsh 0.2's payload; the failed cd logged nothing
    # a v0 log marks it ignorable (dsh 0.1 may skip the type it does not know); in v4 it is a known type
    version = json.loads(log.read_text().splitlines()[0])["version"]
    assert changes[0].get("ignorable") is (True if version == 0 else None)
    notice = [e for e in events if e.get("type") == "user/message"
              and e["data"].get("source") == {"kind": "working-directory"}]
    assert len(notice) == 1
    session_id = json.loads(log.parent.joinpath(log.name).read_text().splitlines()[0])["id"]

    with ScriptServer() as server:
        server._server.title_reply = title
        server.push(tool_reply("toolu_5", "working_directory", "{}"), text_reply("Still in sub."))
        out = _headless(server, tmp_path, "resume", session_id, "--headless", "where are you?")
        assert out.returncode == 0, out.stderr
        assert _results(server.requests[1])[-1] == sub  # the resumed session continues in sub


async def test_a_child_starts_in_the_parents_directory_but_keeps_its_workspace(tmp_path):
    """A cd never widens what writes are confined to: not for the agent, not for a subagent it starts there."""
    from dsh_tui.llm import scripted
    from dsh_tui.runtime.host import AgentHost, HostSpec
    from dsh_tui.store.open import open_store
    from tests.runtime.test_subagents import _TreeProvider

    outside = tmp_path / "outside"
    outside.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    calls = [scripted.call("c1", "working_directory", {"cd": str(outside)}),
             scripted.call("c2", "subagent", {"description": "d", "prompt": "p", "run_in_background": False}),
             scripted.text("done")]
    child_script = [scripted.call("k1", "write", {"file_path": "x.txt", "content": "x"}), scripted.text("CHILD")]
    host = await AgentHost.open(HostSpec(root=None, store=open_store(tmp_path / "root"), cwd=ws,
                                         provider=_TreeProvider(calls, [child_script]), model="m",
                                         preset="workspace-write", persona=None, plugins=()))
    seen = {}

    def watch(child):
        if child.agent is not None:
            seen.setdefault(child.id, (child.agent.config.cwd, child.agent.config.workspace))

    off = host.subagents.watch(watch)
    try:
        host.agent.followup("go")
        await host.agent.wait_idle()
        assert str(host.agent.config.cwd) == str(outside.resolve())
        assert str(host.agent.config.workspace) == str(ws)
    finally:
        off()
        await host.close()
    [(cwd, workspace)] = seen.values()
    assert str(cwd) == str(outside.resolve()) and workspace == str(ws)
    assert not (outside / "x.txt").exists()  # the child's write outside the workspace was refused
