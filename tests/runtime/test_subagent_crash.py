"""SIGKILL while a subagent runs: both logs reopen with dsh's closers, the child resumes, and a continuable
child's queued turn runs on the parent's resume and its settlement reaches the parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from dsh_tui.extensions.subagents import children as ch
from dsh_tui.llm import scripted
from dsh_tui.llm.scripted import ScriptedProvider
from dsh_tui.runtime.host import AgentHost, HostSpec
from dsh_tui.store.open import open_store

SCRIPT = Path(__file__).with_name("subagent_crash_child.py")


def crash(tmp_path, mode: str) -> tuple[str, str]:
    proc = subprocess.Popen([sys.executable, str(SCRIPT), str(tmp_path / "root"), str(tmp_path), mode],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        line = proc.stdout.readline().split()
        assert line[:1] == ["ready"], proc.stderr.read() if proc.poll() is not None else line
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    return line[1], line[2]


def turn_ends(events):
    return [e["data"]["reason"] for e in events if e["type"] == "turn/end"]


class Mock(ScriptedProvider):
    def __init__(self, script, children=()):
        super().__init__(script, name="mock")
        self.children = list(children)

    def child_provider(self, child_id):
        return Mock(self.children.pop(0) if self.children else [])


async def test_foreground_child_killed_mid_stream_both_logs_close_and_the_child_resumes(tmp_path):
    parent_id, child_id = crash(tmp_path, "foreground")
    store = open_store(tmp_path / "root")
    parent, child = store.inspect(parent_id), store.inspect(child_id)
    # dsh's closers for the open turns: the parent's tool call and the child's stream were cut
    assert parent.closers and child.closers
    assert child.header["parentSession"] == parent_id and child.header["origin"] == "subagent"
    assert [e["type"] for e in child.closers][-1] == "turn/end"
    assert [e["type"] for e in parent.closers] == ["tool/result", "step/end", "turn/end"]
    assert [e["type"] for e in child.closers] == ["step/end", "turn/end"]
    # the child resumes as a session of its own (the parent's tool call is over: it was cut)
    host = await AgentHost.open(HostSpec(root=None, store=store, cwd=None, provider=Mock([scripted.text("again")]),
                                         model="m", preset="full-access", persona=None, plugins=(),
                                         resume_id=child_id))
    try:
        result = await host.run_turn("continue")
        assert result.answer == "again" and result.reason == {"kind": "completed"}
    finally:
        await host.close()
    events = store.inspect(child_id).events
    assert [e["type"] for e in events].count("session/end-seed") >= 1
    assert turn_ends(events)[-1] == {"kind": "completed"}


async def test_continuable_child_queued_turn_runs_on_parent_resume_and_settles_to_the_parent(tmp_path):
    parent_id, child_id = crash(tmp_path, "background")
    store = open_store(tmp_path / "root")
    child = store.inspect(child_id)
    assert child.closers and child.closers[-1]["type"] == "turn/end"
    provider = Mock([scripted.text("NOTED")], children=[[scripted.text("SECOND_DONE")]])
    host = await AgentHost.open(HostSpec(root=None, store=store, cwd=None, provider=provider, model="m",
                                         preset="full-access", persona=None, plugins=(), resume_id=parent_id))
    try:
        await ch.settle(host.agent)
    finally:
        await host.close()
    child_events = store.inspect(child_id).events
    assert [e["data"]["message"]["content"] for e in child_events if e["type"] == "assistant/message"][-1] == [
        {"type": "text", "text": "SECOND_DONE"}]
    parent_events = store.inspect(parent_id).events
    notices = [e["data"] for e in parent_events if e["type"] == "user/message"
               and e["data"]["source"]["kind"] == "subagent-settled"]
    assert len(notices) == 1
    assert notices[0]["content"] == [
        {"type": "text", "text": f"Background subagent {child_id} finished and will do no further work unless "
                                 f"you send it more."},
        {"type": "text", "text": "Its closing message:"}, {"type": "text", "text": "SECOND_DONE"}]
    assert turn_ends(parent_events)[-1] == {"kind": "completed"}  # the notice started a parent turn
