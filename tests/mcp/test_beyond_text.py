"""MCP beyond text tools, against the test server (tests/mcp/server.py, the official ``mcp`` SDK) over stdio:
structured-only results reach the model, prompts are slash commands ``/mcp__<server>__<prompt>``, resources
are read from ``@server:uri`` mentions."""

from __future__ import annotations

import json

from dsh_tui.llm import scripted
from tests.mcp.helpers import blocks, mcp_agent, results, server, stdio, until


def _texts(request: dict) -> str:
    return json.dumps(request["messages"], ensure_ascii=False)


async def test_a_structured_only_result_reaches_the_model(tmp_path):
    agent = mcp_agent([scripted.call("c1", "mcp__t__structured", {"only": True}), scripted.text("done")],
                      {"t": stdio()}, tmp_path)
    agent.followup("go")
    await agent.wait_idle()
    assert results(agent)["c1"] == ('{"temperature":21,"unit":"C"}', False)  # not "returned no ... content"
    await agent.dispose()


async def test_prompts_are_slash_commands_that_send_the_prompt(tmp_path):
    agent = mcp_agent([scripted.text("reviewed"), scripted.text("hello")], {"t": stdio()}, tmp_path)
    agent.followup("hi")  # starts the servers (and waits for them)
    await agent.wait_idle()
    await until(lambda: server(agent, "t").state == "ready")
    await until(lambda: agent.commands.get("mcp__t__review") is not None)
    review = agent.commands.get("mcp__t__review")
    assert review.usage == "/mcp__t__review <file> [focus]" and review.help == "Review a file"
    out = await agent.commands.run(agent, "/mcp__t__review")
    assert out.kind == "error" and out.text == "Missing file. Usage: /mcp__t__review <file> [focus]"
    out = await agent.commands.run(agent, "/mcp__t__review src/app.py error handling")
    assert (out.kind, out.text) == ("success", "Sent the prompt review of MCP server t.")
    await agent.wait_idle()
    last = agent.provider.requests[-1]["messages"][-1]
    assert last["role"] == "user"
    assert "Please review src/app.py focusing on error handling." in json.dumps(last)
    out = await agent.commands.run(agent, "/mcp__t__greet")
    await agent.wait_idle()
    assert "Hello there.\\n\\n[assistant] Hi! How can I help?" in json.dumps(agent.provider.requests[-1]["messages"][-1])
    await agent.dispose()
    assert agent.commands.get("mcp__t__review") is None  # gone with the plugin


async def test_resource_mentions_are_read_into_the_turn(tmp_path):
    agent = mcp_agent([scripted.text("ok")], {"t": stdio()}, tmp_path)
    agent.followup("check @t:memo://notes and @t:memo://logo and @t:memo://missing and @nosuch:memo://x")
    await agent.wait_idle()
    sent = _texts(agent.provider.requests[0])
    assert "Contents of the MCP resource @t:memo://notes:\\nThe staging database is read-only." in sent
    assert "Contents of the MCP resource @t:memo://logo:\\n[binary contents: image/png, 70 bytes, not shown]" in sent
    assert "[MCP resource @t:memo://missing could not be read: no such resource: memo://missing]" in sent
    assert "@nosuch:memo://x" in sent and "MCP resource @nosuch" not in sent  # not a server: plain text
    # recorded: the added messages are in the log, so a resumed session sends the same
    logged = [e for e in agent.session.events if e["type"] == "user/message"
              and (e["data"].get("message", e["data"]).get("source") or {}).get("plugin") == "mcp"]
    assert len(logged) == 3, [e["type"] for e in agent.session.events]
    await agent.dispose()


async def test_an_image_result_is_an_image_block_for_a_model_that_takes_images(tmp_path):
    """As dsh: with the attachment store (issue #32) and a model that declares image input, an MCP image is
    saved there and reaches the model as an image block (the providers send it as ``image_url`` / an image
    block); a text-only model gets dsh's diagnostic with the reason."""
    import dataclasses

    import pytest

    pytest.importorskip("dsh_tui.store.attachments")
    agent = mcp_agent([scripted.call("c1", "mcp__t__image"), scripted.text("done")], {"t": stdio()}, tmp_path)
    info = agent.provider.resolve_model("mock-model")
    agent.provider.resolve_model = lambda _m: dataclasses.replace(info, input_modalities=("text", "image"))
    agent.followup("go")
    await agent.wait_idle()
    got = blocks(agent, "c1")
    assert [b["type"] for b in got] == ["text", "image", "text"]
    assert got[1]["attachment"]["mediaType"] == "image/png" and got[1]["attachment"]["width"] == 1
    assert got[1]["attachment"]["attachmentId"].startswith("sha256:")
    await agent.dispose()

    agent = mcp_agent([scripted.call("c1", "mcp__t__image"), scripted.text("done")], {"t": stdio()}, tmp_path)
    agent.followup("go")
    await agent.wait_idle()
    assert blocks(agent, "c1")[1] == {"type": "text", "text": (
        '[image unavailable: image/png; model "mock-model" does not declare image input; raw image data remains '
        "available to programmatic callers]")}
    await agent.dispose()
