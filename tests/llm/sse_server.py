"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 for provider tests.

``ScriptServer`` is a real HTTP/1.1 server (``ThreadingHTTPServer`` in its own thread, port 0). Each
POST takes the next ``Reply`` from its queue and plays it: status, headers, then either a plain body
or an SSE body sent with chunked transfer encoding, step by step (bytes to send, or a float = sleep
that many seconds), and finally ``end``:

* ``"close"`` — the terminating zero-length chunk (a clean end of body, connection kept alive);
* ``"drop"``  — the socket is shut down mid-body with no terminator (an abrupt connection loss);
* ``"stall"`` — nothing more is sent; the server waits until the client closes the connection
  (recorded in ``Reply.client_closed``) or the server stops.

Every request is recorded (``server.requests``: method, path, headers, parsed JSON body) so tests can
assert what the adapter sent. Run as a script (``python tests/llm/sse_server.py --body-file F``) it
serves the same pre-rendered SSE body to every POST as fast as the socket takes it and prints
``PORT <n>`` — the benchmark's server in a separate process.
"""

from __future__ import annotations

import json
import queue
import select
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DONE = b"data: [DONE]\n\n"


def sse(obj: Any) -> bytes:
    """One SSE event carrying ``obj`` as compact JSON."""
    text = obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    return b"data: " + text.encode() + b"\n\n"


def chunk(
    content: str | None = None,
    *,
    reasoning: str | None = None,
    tool_calls: list[dict] | None = None,
    finish: str | None = None,
    usage: dict | None = None,
    role: str | None = None,
    no_choices: bool = False,
) -> dict:
    """A ``chat.completion.chunk`` object the way DeepSeek streams it."""
    delta: dict[str, Any] = {}
    if role is not None:
        delta["role"] = role
    if content is not None:
        delta["content"] = content
    if reasoning is not None:
        delta["reasoning_content"] = reasoning
    if tool_calls is not None:
        delta["tool_calls"] = tool_calls
    out: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1_780_000_000,
        "model": "deepseek-v4-flash",
        "system_fingerprint": "fp_test",
        "choices": []
        if no_choices
        else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    if usage is not None:
        out["usage"] = usage
    return out


def tool_call(index: int, *, id: str | None = None, name: str | None = None, args: str | None = None) -> dict:
    call: dict[str, Any] = {"index": index}
    if id is not None:
        call["id"] = id
        call["type"] = "function"
    fn: dict[str, Any] = {}
    if name is not None:
        fn["name"] = name
    if args is not None:
        fn["arguments"] = args
    call["function"] = fn
    return call


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    steps: list[bytes | float] = field(default_factory=list)
    body: bytes | None = None  # a plain (non-SSE) body sent with Content-Length
    end: str = "close"  # close | drop | stall
    client_closed: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)


def sse_reply(*objs: Any, done: bool = True, **kw: Any) -> Reply:
    steps: list[bytes | float] = [sse(o) if not isinstance(o, (bytes, float, int)) else o for o in objs]
    if done:
        steps.append(DONE)
    return Reply(steps=steps, **kw)


def json_reply(status: int, obj: Any, headers: dict[str, str] | None = None) -> Reply:
    h = {"content-type": "application/json"}
    h.update(headers or {})
    return Reply(status=status, headers=h, body=json.dumps(obj).encode())


TITLE_SYSTEM_PREFIX = "Create a concise title for an AI coding-assistant session"
SCRIPTED_TITLE = "Scripted session title"


def is_title_request(body: Any) -> bool:
    """The session-title-llm request (its system prompt), as opposed to a turn's."""
    try:
        if isinstance(body.get("system"), str):  # the Messages wire: a top-level system prompt
            return body["system"].startswith(TITLE_SYSTEM_PREFIX)
        first = body["messages"][0]
        return first["role"] == "system" and str(first["content"]).startswith(TITLE_SYSTEM_PREFIX)
    except (KeyError, IndexError, TypeError):
        return False


def title_reply(text: str = SCRIPTED_TITLE, delay: float = 0.0) -> Reply:
    return sse_reply(*([delay] if delay else []), chunk(text),
                     chunk(finish="stop", usage={"prompt_tokens": 5, "completion_tokens": 3}))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        # Like real API front ends: no Nagle delay on the small writes of a stream (on a reused
        # keep-alive connection Nagle + delayed ACK would add ~40 ms to the first event).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        record = {
            "method": "POST",
            "path": self.path,
            "headers": dict(self.headers.items()),
            "header_list": list(self.headers.items()),  # every header line as sent (repeated names kept)
            "body": parsed,
            "raw": raw,
            "client": self.client_address,  # (host, port): the same port means a reused connection
        }
        if self.server.title_reply is not None and is_title_request(parsed):
            # the session-title-llm request beside the first turn: answered from its own queue (by default
            # SCRIPTED_TITLE), never from the turn script, whichever of the two requests arrives first
            self.server.title_requests.append(record)
            try:
                reply = self.server.title_replies.get_nowait()
            except queue.Empty:
                reply = self.server.title_reply()
            self._play(reply)
            return
        self.server.requests.append(record)
        if self.server.fixed_body is not None:
            self._send_chunked_blob(self.server.fixed_body)
            return
        try:
            reply = self.server.replies.get_nowait()
        except queue.Empty:
            reply = json_reply(500, {"error": {"message": "sse_server: no scripted reply left"}})
        self._play(reply)

    def _play(self, reply: Reply) -> None:
        try:
            self.send_response(reply.status)
            for k, v in reply.headers.items():
                self.send_header(k, v)
            if reply.body is not None:
                self.send_header("content-length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
                self.wfile.flush()
                return
            if not any(k.lower() == "content-type" for k in reply.headers):
                self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.send_header("cache-control", "no-cache")
            self.end_headers()
            self.wfile.flush()
            last = len(reply.steps) - 1
            for i, step in enumerate(reply.steps):
                if isinstance(step, (int, float)):
                    if self._sleep_or_closed(float(step), reply):
                        return
                    continue
                frame = b"%x\r\n%s\r\n" % (len(step), step)
                if i == last and reply.end == "close":
                    frame += b"0\r\n\r\n"  # the end of the body travels with the last event
                self.wfile.write(frame)
                self.wfile.flush()
            if reply.end == "close" and (last < 0 or isinstance(reply.steps[last], (int, float))):
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            elif reply.end == "drop":
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            elif reply.end == "stall":
                self.close_connection = True
                self._sleep_or_closed(None, reply)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            reply.client_closed.set()
        finally:
            reply.finished.set()

    def _sleep_or_closed(self, seconds: float | None, reply: Reply) -> bool:
        """Sleep (``None``: until stop); return True if the client closed the connection meanwhile."""
        deadline = None if seconds is None else time.monotonic() + seconds
        sock = self.connection
        while not self.server.stopping.is_set():
            wait = 0.02 if deadline is None else min(0.02, deadline - time.monotonic())
            if deadline is not None and wait <= 0:
                return False
            r, _, _ = select.select([sock], [], [], max(wait, 0))
            if r:
                try:
                    data = sock.recv(1, socket.MSG_PEEK)
                except OSError:
                    data = b""
                if not data:
                    self.close_connection = True
                    reply.client_closed.set()
                    return True
                time.sleep(0.01)
        return True

    def _send_chunked_blob(self, blob: bytes) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        step = 1 << 16
        view = memoryview(blob)
        for i in range(0, len(blob), step):
            part = view[i : i + step]
            self.wfile.write(b"%x\r\n" % len(part))
            self.wfile.write(part)
            self.wfile.write(b"\r\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    requests: list[dict[str, Any]]
    replies: queue.Queue[Reply]
    stopping: threading.Event
    fixed_body: bytes | None
    title_requests: list[dict[str, Any]]
    title_reply: Any
    title_replies: queue.Queue[Reply]

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, OSError)):
            return  # a client that went away (the tests do that on purpose)
        super().handle_error(request, client_address)


class ScriptServer:
    """``with ScriptServer() as srv: srv.push(reply); url = srv.base_url``."""

    def __init__(self, fixed_body: bytes | None = None) -> None:
        """Title requests (``is_title_request``) are recorded in ``title_requests``, not ``requests``, and
        answered with the replies given to ``push_title``, then with ``SCRIPTED_TITLE``."""
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.requests = []
        self._server.title_requests = []
        self._server.title_replies = queue.Queue()
        self._server.title_reply = None if fixed_body is not None else title_reply
        self._server.replies = queue.Queue()
        self._server.stopping = threading.Event()
        self._server.fixed_body = fixed_body
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self._server.requests

    @property
    def title_requests(self) -> list[dict[str, Any]]:
        return self._server.title_requests

    def push_title(self, *replies: Reply) -> None:
        for r in replies:
            self._server.title_replies.put(r)

    def push(self, *replies: Reply) -> None:
        for r in replies:
            self._server.replies.put(r)

    def start(self) -> ScriptServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ScriptServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _reply_to_json(r: Reply) -> dict[str, Any]:
    steps = [s if isinstance(s, (int, float)) else s.decode("latin-1") for s in r.steps]
    return {"status": r.status, "headers": r.headers, "steps": steps, "end": r.end,
            "body": None if r.body is None else r.body.decode("latin-1")}


def _reply_from_json(d: dict[str, Any]) -> Reply:
    steps = [s if isinstance(s, (int, float)) else s.encode("latin-1") for s in d["steps"]]
    body = None if d["body"] is None else d["body"].encode("latin-1")
    return Reply(status=d["status"], headers=d["headers"], steps=steps, end=d["end"], body=body)


class ScriptServerProcess:
    """The same server in a child process, so that a benchmark's own threads do not share the GIL with
    the server's (a real model server is never in the app's process): ``replies`` played in order
    (``--replies``), or one pre-rendered SSE ``body`` sent to every POST (``--body-file``).
    ``with ScriptServerProcess(replies) as srv: srv.base_url``. Requests are not recorded."""

    def __init__(self, replies: list[Reply] | None = None, *, body: bytes | None = None) -> None:
        import os
        import subprocess
        import tempfile

        if replies is not None:
            data, flag = json.dumps([_reply_to_json(r) for r in replies]).encode(), "--replies"
        else:
            assert body is not None
            data, flag = body, "--body-file"
        fd, self._path = tempfile.mkstemp(suffix=".replies")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        self.proc = subprocess.Popen([sys.executable, __file__, flag, self._path],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            self.close()
            raise RuntimeError(f"the script server did not start: {line!r}")
        self.port = int(line.split()[1])
        self.base_url = self.url = f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        import os
        import subprocess

        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()  # the server stops when its stdin closes
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        os.unlink(self._path)

    def __enter__(self) -> ScriptServerProcess:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("--body-file", "--replies"):
        print("usage: sse_server.py --body-file FILE | --replies FILE", file=sys.stderr)
        return 2
    if argv[0] == "--replies":
        with open(argv[1]) as f:
            replies = [_reply_from_json(d) for d in json.load(f)]
        srv = ScriptServer().start()
        srv.push(*replies)
    else:
        with open(argv[1], "rb") as f:
            blob = f.read()
        srv = ScriptServer(fixed_body=blob).start()
    print(f"PORT {srv.port}", flush=True)
    try:
        sys.stdin.read()  # until the parent closes our stdin
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
