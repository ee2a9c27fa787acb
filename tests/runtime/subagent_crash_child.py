"""The child process of the subagent SIGKILL test: a parent and its subagent mid-run, then killed.

``python subagent_crash_child.py ROOT CWD MODE``; MODE ``foreground``: the parent waits in a foreground
``subagent`` call whose child hangs in its model stream; ``background``: the parent started a continuable
child (hanging in its first turn) and queued a ``send_message`` turn for it, and is idle. When both logs are
durable the script prints ``ready PARENT_ID CHILD_ID`` and waits to be killed.
"""

from __future__ import annotations

import asyncio
import os
import sys

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from dsh_tui.llm import scripted  # noqa: E402
from dsh_tui.llm.scripted import ScriptedProvider  # noqa: E402
from dsh_tui.runtime.host import AgentHost, HostSpec  # noqa: E402
from dsh_tui.store.open import open_store  # noqa: E402


class Hang(ScriptedProvider):
    """The child's model: streams one chunk, then hangs until killed."""

    def __init__(self, started: asyncio.Event) -> None:
        super().__init__([], name="mock")
        self.started = started

    async def stream(self, request):
        yield {"type": "block-start", "index": 0, "blockType": "text"}
        self.started.set()
        await asyncio.Event().wait()


class Root(ScriptedProvider):
    def __init__(self, script, started) -> None:
        super().__init__(script, name="mock")
        self.started = started

    def child_provider(self, child_id):
        return Hang(self.started)


async def main(root: str, cwd: str, mode: str) -> None:
    started = asyncio.Event()
    if mode == "foreground":
        script = [scripted.call("c1", "subagent", {"description": "slow task", "prompt": "work",
                                                   "run_in_background": False})]
    else:
        script = [scripted.call("c1", "subagent", {"description": "slow task", "prompt": "work"}),
                  scripted.text("waiting")]
    host = await AgentHost.open(HostSpec(root=None, store=open_store(root), cwd=cwd, provider=Root(script, started),
                                         model="m", preset="full-access", persona=None, plugins=()))
    host.agent.followup("delegate")
    await started.wait()
    (child,) = host.subagents.children.values()
    if mode == "background":
        await host.agent.wait_idle()
        # the parent queues a second turn for the busy child (send_message's effect)
        child.agent.send({"role": "user", "content": [{"type": "text", "text": "second"}],
                          "source": {"kind": "coordinator", "form": "relay", "senderSessionId": host.agent.id}})
    await asyncio.to_thread(host.writer.flush)
    await asyncio.to_thread(child.host.writer.flush)
    print("ready", host.agent.id, child.id, flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
