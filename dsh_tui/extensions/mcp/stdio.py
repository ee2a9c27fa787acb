"""dsh-tui's own stdio transport for MCP servers (instead of the SDK's ``stdio_client``).

It hands the SDK's ``ClientSession`` the same pair of streams, but reads the server's stdout defensively:

- one JSON-RPC message per line, read as bytes; invalid UTF-8 is replaced, a line that is not a JSON-RPC
  message (garbage, a log line, broken JSON) is skipped and counted (``TransportStats``), and logged to
  the MCP log file — never a traceback, never a stuck read;
- a line longer than ``MAX_LINE`` (64 MiB) is not kept: its bytes are counted and dropped as they
  arrive, and the request it answers (its ``id``, found in the line's first or last bytes) fails with
  one line saying so; a reply nested deeper than ``MAX_DEPTH`` levels fails its request the same way;
- stderr is drained as it comes and only its last ``STDERR_TAIL`` bytes are kept (quoted when the server
  fails), so a server writing hundreds of megabytes of stderr costs neither memory nor disk.

The server runs in a process group of its own, tracked by ``dsh_tui.tools.procs`` (so every exit path
of the command line ends it); closing the transport closes its stdin, waits
``EXIT_GRACE_S``, then SIGTERMs and SIGKILLs the group (bounded waits, shielded from cancellation).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import signal
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc

from dsh_tui.tools import procs

log = logging.getLogger("dsh_tui.plugins.mcp")

MAX_LINE = 64 * 1024 * 1024
MAX_DEPTH = 256
STDERR_TAIL = 4096
EXIT_GRACE_S = 2.0
READ_CHUNK = 1024 * 1024
_LOGGED_BAD_LINES = 5  # per connection; the rest are only counted
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")')


@dataclass
class TransportStats:
    """What one connection's transport saw that was not a message."""

    bad_lines: int = 0
    last_bad: str = ""
    dropped: int = 0  # replies over MAX_LINE or MAX_DEPTH
    stderr_bytes: int = 0
    stderr_tail: bytearray = field(default_factory=bytearray)

    def stderr_last_line(self) -> str:
        lines = [ln.strip() for ln in self.stderr_tail.decode("utf-8", "replace").splitlines() if ln.strip()]
        return lines[-1][:200] if lines else ""


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` nests deeper than ``limit`` (iterative: no recursion on hostile input)."""
    stack = [(value, 1)]
    children: Iterable[Any]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def _request_id(head: bytes, tail: bytes) -> Any:
    """The ``id`` of a reply we will not parse, from its first or last bytes (None when not found)."""
    matches = [m for m in (_ID.search(head),) if m is not None] or list(_ID.finditer(tail))[-1:]
    for match in matches:
        with contextlib.suppress(ValueError):
            return json.loads(match.group(1))
    return None


def _error(req_id: Any, message: str) -> Any:
    import mcp.types as types
    from mcp.shared.message import SessionMessage

    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=req_id,
                                             error=types.ErrorData(code=-32603, message=message)))


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB" if n >= 1024 * 1024 else f"{n} bytes"


class _LineReader:
    """Splits stdout into lines and turns each into a message (or a skipped, counted line)."""

    def __init__(self, server: str, stats: TransportStats, max_line: int, max_depth: int) -> None:
        self.server = server
        self.stats = stats
        self.max_line = max_line
        self.max_depth = max_depth
        self.buf = bytearray()
        self.dropping = False
        self.dropped_size = 0
        self.head = b""
        self.tail = b""

    def feed(self, data: bytes) -> list[Any]:
        out: list[Any] = []
        start = 0
        while True:
            nl = data.find(b"\n", start)
            piece = data[start:] if nl < 0 else data[start:nl]
            self._add(piece)
            if nl < 0:
                return out
            msg = self._finish()
            if msg is not None:
                out.append(msg)
            start = nl + 1

    def _add(self, piece: bytes) -> None:
        if not piece:
            return
        if self.dropping:
            self.dropped_size += len(piece)
            self.tail = (self.tail + piece)[-512:]
            return
        self.buf += piece
        if len(self.buf) > self.max_line:
            self.dropping = True
            self.dropped_size = len(self.buf)
            self.head = bytes(self.buf[:512])
            self.tail = bytes(self.buf[-512:])
            self.buf = bytearray()

    def _bad(self, reason: str) -> None:
        self.stats.bad_lines += 1
        self.stats.last_bad = reason
        if self.stats.bad_lines <= _LOGGED_BAD_LINES:
            log.warning("mcp server %s: skipped a stdout line: %s", self.server, reason)

    def _finish(self) -> Any:
        if self.dropping:
            self.dropping, size = False, self.dropped_size
            req_id = _request_id(self.head, self.tail)
            self.head = self.tail = b""
            self.stats.dropped += 1
            message = f"the MCP server's reply was {_size(size)}, over the {_size(self.max_line)} limit: discarded"
            log.warning("mcp server %s: %s", self.server, message)
            return _error(req_id, message) if req_id is not None else None
        line, self.buf = bytes(self.buf), bytearray()
        if not line.strip():
            return None
        text = line.decode("utf-8", "replace")
        try:
            obj = json.loads(text)
        except RecursionError:
            obj = None
            deep = True
        except ValueError:
            self._bad(f"not JSON: {text[:80]!r}")
            return None
        else:
            deep = _depth_exceeds(obj, self.max_depth)
        if deep:
            req_id = obj.get("id") if isinstance(obj, dict) else _request_id(line[:512], line[-512:])
            self.stats.dropped += 1
            message = f"the MCP server's reply is nested more than {self.max_depth} levels deep: discarded"
            log.warning("mcp server %s: %s", self.server, message)
            return _error(req_id, message) if req_id is not None else None
        import mcp.types as types
        from mcp.shared.message import SessionMessage
        from pydantic import ValidationError

        try:
            return SessionMessage(types.jsonrpc_message_adapter.validate_python(obj, by_name=False))
        except ValidationError:
            self._bad(f"not a JSON-RPC message: {text[:80]!r}")
            return None
        except (RecursionError, ValueError, TypeError) as err:
            self._bad(f"unreadable message ({type(err).__name__})")
            return None


def _killpg(pid: int, sig: int) -> None:
    procs.killpg(pid, sig)


async def _exited(process: Any, timeout: float) -> bool:
    with anyio.move_on_after(timeout):
        while process.returncode is None:
            await anyio.sleep(0.02)
    return process.returncode is not None


@contextlib.asynccontextmanager
async def stdio_transport(command: str, args: list[str], *, env: dict[str, str], cwd: str | None, server: str,
                          stats: TransportStats, max_line: int = MAX_LINE,
                          max_depth: int = MAX_DEPTH) -> AsyncIterator[tuple[Any, Any]]:
    """Start the server and yield ``(read_stream, write_stream)`` for ``mcp.ClientSession``."""
    from mcp.shared.message import SessionMessage

    process = await anyio.open_process([command, *args], env=env, cwd=cwd or None, start_new_session=True)
    procs.track(process.pid)  # every exit path ends its group (tools/procs.py)
    read_writer, read_stream = anyio.create_memory_object_stream[Any](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    lines = _LineReader(server, stats, max_line, max_depth)

    async def stdout_reader() -> None:
        assert process.stdout is not None
        async with read_writer:
            with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError,
                                     OSError):
                while True:
                    data = await process.stdout.receive(READ_CHUNK)
                    for message in lines.feed(data):
                        await read_writer.send(message)

    async def stderr_reader() -> None:
        assert process.stderr is not None
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            while True:
                data = await process.stderr.receive(READ_CHUNK)
                stats.stderr_bytes += len(data)
                stats.stderr_tail += data
                del stats.stderr_tail[:-STDERR_TAIL]

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for session_message in write_reader:
                    data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode("utf-8", "replace") + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()  # the server stopped reading: the session sees the connection end

    async def stop() -> None:
        assert process.stdin is not None
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
        if not await _exited(process, EXIT_GRACE_S):
            _killpg(process.pid, signal.SIGTERM)
            if not await _exited(process, EXIT_GRACE_S):
                _killpg(process.pid, signal.SIGKILL)
                await _exited(process, EXIT_GRACE_S)
        _killpg(process.pid, signal.SIGKILL)  # what it started and left behind in its group
        procs.release(process.pid)
        for stream in (process.stdout, process.stderr):
            if stream is None:
                continue
            with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stream.aclose()
        transport = getattr(getattr(process, "_process", None), "_transport", None)
        close = getattr(transport, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):
                close()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(stdout_reader)
            tg.start_soon(stderr_reader)
            tg.start_soon(stdin_writer)
            try:
                yield read_stream, write_stream
            finally:
                with anyio.CancelScope(shield=True):
                    read_stream.close()
                    write_stream.close()
                    await stop()
                tg.cancel_scope.cancel()
    finally:
        if process.returncode is None:  # the task group itself failed before the shutdown ran
            _killpg(process.pid, signal.SIGKILL)
