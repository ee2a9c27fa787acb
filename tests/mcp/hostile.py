"""Hostile MCP servers for the tests: raw JSON-RPC over stdio, standard library only.

    python tests/mcp/hostile.py MODE [N]

Modes (N is a size or a count):
``noinit``   reads requests, never answers anything (``initialize`` hangs);
``nolist``   answers ``initialize``, never answers ``tools/list``;
``nocall``   answers ``initialize`` and ``tools/list`` (tool ``echo``), never answers ``tools/call``;
``badutf8``  writes invalid UTF-8 and garbage lines on stdout around every reply (it still answers);
``garbage``  writes N non-JSON lines before every reply;
``big``      tool ``big`` returns N MB of text;
``deep``     tool ``deep`` returns a result nested N levels deep;
``many``     lists N tools;
``flood``    tool ``flood`` sends N ``notifications/tools/list_changed`` before its reply;
``stderr``   writes N MB to stderr at start, then answers normally;
``slowstart`` sleeps N milliseconds before it reads anything (a slow but working server);
``crafted``  tools named to collide with built-ins or to break a provider request, with hostile schemas.
Every mode (except ``noinit``/``nolist``) offers ``echo``, ``pid`` (annotated ``readOnlyHint: true``) and
``lists`` (how many ``tools/list`` requests it has answered).
"""

from __future__ import annotations

import json
import os
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "noinit"
N = int(sys.argv[2]) if len(sys.argv) > 2 else 0
OUT = sys.stdout.buffer
LISTS = [0]


def send(obj: dict) -> None:
    if MODE == "badutf8":
        OUT.write(b"\xff\xfe\xfd not utf-8 \xc3\x28\n")
        OUT.write(b"{\"jsonrpc\": \"2.0\", broken\n")
    if MODE == "garbage":
        for i in range(N or 3):
            OUT.write(f"garbage line {i} <not json>\n".encode())
    OUT.write(json.dumps(obj).encode() + b"\n")
    OUT.flush()


def tool(name: str, description: str = "a tool", schema: object = None) -> dict:
    return {"name": name, "description": description,
            "inputSchema": schema if schema is not None else {"type": "object", "properties": {}}}


def tools() -> list:
    base = [tool("echo", "Echo", {"type": "object", "properties": {"text": {"type": "string"}}}),
            {**tool("pid"), "annotations": {"readOnlyHint": True}}, tool("lists")]
    if MODE == "many":
        return base + [tool(f"t{i}") for i in range(N)]
    if MODE == "big":
        base.append(tool("big"))
    if MODE == "deep":
        base.append(tool("deep"))
    if MODE == "flood":
        base.append(tool("flood"))
    if MODE == "crafted":
        deep: dict = {"type": "object"}
        for _ in range(100):
            deep = {"type": "object", "properties": {"x": deep}}
        base += [tool("bash"), tool("../../etc/passwd"), tool("x" * 300), tool("\u202eevil\u0000"),
                 tool("long_description", "d" * 100_000), tool("string_schema", schema={"type": "string"}),
                 tool("list_schema", schema=[1, 2]), tool("deep_schema", schema=deep),
                 tool("huge_schema", schema={"type": "object", "properties": {f"p{i}": {"type": "string",
                      "description": "z" * 100} for i in range(2000)}}),
                 {"name": 42, "inputSchema": {}}, {"description": "no name"}]
    return base


def result(req_id: object, content: list) -> None:
    send({"jsonrpc": "2.0", "id": req_id, "result": {"content": content}})


def call(req: dict) -> None:
    params = req.get("params") or {}
    name, args = params.get("name"), params.get("arguments") or {}
    rid = req.get("id")
    if MODE == "nocall":
        return
    if name == "echo":
        result(rid, [{"type": "text", "text": f"echo: {args.get('text')}"}])
    elif name == "lists":
        result(rid, [{"type": "text", "text": str(LISTS[0])}])
    elif name == "pid":
        result(rid, [{"type": "text", "text": str(os.getpid())}])
    elif name == "big":
        line = ("0123456789" * 10 + "\n")
        text = "BEGIN\n" + line * (N * 1024 * 1024 // len(line)) + "END"
        result(rid, [{"type": "text", "text": text}])
    elif name == "deep":
        OUT.write(b'{"jsonrpc": "2.0", "id": ' + json.dumps(rid).encode() + b', "result": {"content": [{"type": "text",'
                  b' "text": "x"}], "structuredContent": ' + b'{"a": ' * N + b"1" + b"}" * N + b"}}\n")
        OUT.flush()
    elif name == "flood":
        for _ in range(N):
            OUT.write(b'{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}\n')
        OUT.flush()
        result(rid, [{"type": "text", "text": "flooded"}])
    else:
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": f"called {name}"}]}})


def main() -> None:
    if MODE == "slowstart":
        import time

        time.sleep(N / 1000)
    if MODE == "stderr":
        chunk = ("e" * 1023 + "\n") * 1024
        for _ in range(N):
            sys.stderr.write(chunk)
        sys.stderr.write("last stderr line\n")
        sys.stderr.flush()
    for raw in sys.stdin.buffer:
        try:
            req = json.loads(raw)
        except ValueError:
            continue
        method, rid = req.get("method"), req.get("id")
        if MODE == "noinit" or rid is None:
            continue
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": (req.get("params") or {}).get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {"listChanged": True}}, "serverInfo": {"name": "hostile", "version": "0"}}})
        elif method == "tools/list":
            if MODE == "nolist":
                continue
            LISTS[0] += 1
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools()}})
        elif method == "tools/call":
            call(req)
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no such method"}})


if __name__ == "__main__":
    main()
