"""A small MCP server for the tests, written with the official ``mcp`` SDK (its low-level ``Server``).

    python -m tests.mcp.server stdio [--name NAME]       # over stdin/stdout
    python -m tests.mcp.server http  [--name NAME]       # streamable HTTP on 127.0.0.1:<free port>;
                                                         # prints "PORT <n>" on stdout when listening

Tools: ``echo`` (text), ``image`` (text + a PNG), ``blocks`` (resource link, embedded resource, audio),
``fail`` (``isError``), ``slow`` (sleeps ``seconds``), ``crash`` (the process exits mid-call),
``change`` (adds the tool ``added`` and sends ``notifications/tools/list_changed``), ``structured``
(text + ``structuredContent``), ``empty`` (no content), ``env`` (the names of its environment), ``pid`` and
``task`` (``execution.taskSupport: "required"``); ``structured`` with ``only: true`` returns no content,
only ``structuredContent``. Prompts: ``review`` (arguments ``file``, ``focus``: a user message) and
``greet`` (no arguments: a user and an assistant message). Resources: ``memo://notes`` (text) and
``memo://logo`` (a PNG blob). ``MCP_TEST_HANG=1`` makes it never answer anything
(a server that never becomes ready); ``MCP_TEST_EXIT=1`` makes it exit before answering.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time

import anyio
import mcp.types as types
from mcp.server.lowlevel import NotificationOptions, Server

# a 1x1 PNG (canonical base64)
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

_added = {"on": False}


def _tool(name: str, description: str, properties: dict | None = None, required: list | None = None,
          **extra) -> types.Tool:
    schema: dict = {"type": "object", "properties": properties or {}}
    if required:
        schema["required"] = required
    return types.Tool(name=name, description=description, input_schema=schema, **extra)


def tools() -> list[types.Tool]:
    out = [
        _tool("echo", "Echo the text back", {"text": {"type": "string"}}, ["text"]),
        _tool("image", "Text and a PNG"),
        _tool("blocks", "A resource link, an embedded resource and audio"),
        _tool("fail", "Always fails", {"why": {"type": "string"}}),
        _tool("slow", "Sleeps", {"seconds": {"type": "number"}}, ["seconds"]),
        _tool("crash", "Exits mid-call"),
        _tool("change", "Adds a tool and says so"),
        _tool("structured", "Text and structured content"),
        _tool("empty", "No content at all"),
        _tool("env", "The names of its environment variables"),
        _tool("pid", "Its process id"),
        _tool("task", "Needs task execution", execution=types.ToolExecution(task_support="required")),
    ]
    if _added["on"]:
        out.append(_tool("added", "Appeared after a list change"))
    return out


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=tools())


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    name = params.name
    if name == "echo":
        return types.CallToolResult(content=[_text(f"echo: {args.get('text')}")])
    if name == "image":
        return types.CallToolResult(content=[_text("before"), types.ImageContent(type="image", data=PNG,
                                                                                   mime_type="image/png"),
                                             _text("after")])
    if name == "blocks":
        return types.CallToolResult(content=[
            types.ResourceLink(type="resource_link", name="notes", uri="file:///tmp/notes.txt"),
            types.EmbeddedResource(type="resource", resource=types.TextResourceContents(
                uri="file:///tmp/a.txt", text="inside", mime_type="text/plain")),
            types.AudioContent(type="audio", data="AAAA", mime_type="audio/wav"),
            _text("done"),
        ])
    if name == "fail":
        return types.CallToolResult(content=[_text(f"it failed: {args.get('why', 'no reason')}")], is_error=True)
    if name == "slow":
        await anyio.sleep(float(args.get("seconds", 1)))
        return types.CallToolResult(content=[_text("slept")])
    if name == "crash":
        sys.stderr.write("crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)
    if name == "change":
        _added["on"] = True
        await ctx.session.send_tool_list_changed()
        return types.CallToolResult(content=[_text("changed")])
    if name == "added":
        return types.CallToolResult(content=[_text("I was added")])
    if name == "structured" and args.get("only"):
        return types.CallToolResult(content=[], structured_content={"temperature": 21, "unit": "C"})
    if name == "structured":
        return types.CallToolResult(content=[_text('{"n":1}')], structured_content={"n": 1})
    if name == "empty":
        return types.CallToolResult(content=[])
    if name == "pid":
        return types.CallToolResult(content=[_text(str(os.getpid()))])
    if name == "env":
        return types.CallToolResult(content=[_text(" ".join(sorted(os.environ)))])
    return types.CallToolResult(content=[_text(f"unknown tool {name}")], is_error=True)


async def list_prompts(ctx, params) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[
        types.Prompt(name="review", description="Review a file", arguments=[
            types.PromptArgument(name="file", description="the file", required=True),
            types.PromptArgument(name="focus", description="what to look at")]),
        types.Prompt(name="greet", description="Say hello"),
    ])


async def get_prompt(ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    args = params.arguments or {}
    if params.name == "review":
        text = f"Please review {args.get('file')} focusing on {args.get('focus') or 'everything'}."
        return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=_text(text))])
    return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=_text("Hello there.")),
                                           types.PromptMessage(role="assistant", content=_text("Hi! How can I help?"))])


async def list_resources(ctx, params) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[
        types.Resource(name="notes", uri="memo://notes", mime_type="text/plain"),
        types.Resource(name="logo", uri="memo://logo", mime_type="image/png")])


async def read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    uri = str(params.uri)
    if uri == "memo://notes":
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=uri, text="The staging database is read-only.", mime_type="text/plain")])
    if uri == "memo://logo":
        return types.ReadResourceResult(contents=[types.BlobResourceContents(uri=uri, blob=PNG,
                                                                             mime_type="image/png")])
    raise ValueError(f"no such resource: {uri}")


def make_server(name: str) -> Server:
    return Server(name, version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_prompts=list_prompts, on_get_prompt=get_prompt, on_list_resources=list_resources,
                  on_read_resource=read_resource)


def options(server: Server):
    return server.create_initialization_options(NotificationOptions(tools_changed=True))


async def run_stdio(name: str) -> None:
    from mcp.server.stdio import stdio_server

    server = make_server(name)
    async with stdio_server() as (read, write):
        await server.run(read, write, options(server))


def run_http(name: str) -> None:
    import uvicorn

    server = make_server(name)
    app = server.streamable_http_app(host="127.0.0.1")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("--name", default="test-server")
    args = parser.parse_args()
    if os.environ.get("MCP_TEST_EXIT") == "1":
        sys.stderr.write("refusing to start\n")
        sys.exit(2)
    if os.environ.get("MCP_TEST_HANG") == "1":
        while True:
            time.sleep(3600)
    if args.transport == "stdio":
        anyio.run(run_stdio, args.name)
    else:
        run_http(args.name)


if __name__ == "__main__":
    main()
