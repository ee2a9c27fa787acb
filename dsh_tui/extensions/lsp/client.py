"""A small JSON-RPC-over-stdio Language Server Protocol client (our own; no LSP library).

One ``LspClient`` owns one server process for one workspace root: ``Content-Length`` framing on the
server's stdin/stdout, the ``initialize``/``initialized`` handshake, ``didOpen``/``didChange``/``didClose``,
requests with a timeout, the server's own requests answered (``workspace/configuration`` with the configured
value, lifecycle bookkeeping with ``null``, anything else refused), ``textDocument/publishDiagnostics``
kept per document, and ``shutdown``/``exit`` then SIGTERM/SIGKILL on ``close()``.

A server that cannot start or dies is an ``LspUnavailable`` with one line naming the server and the cause
(the last line of its stderr when it wrote one).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from dsh_tui.session.errors import DshError

CLIENT_CAPABILITIES = {
    "general": {"positionEncodings": ["utf-16"]},
    "workspace": {"workspaceFolders": True, "configuration": True},
    "textDocument": {
        "synchronization": {"dynamicRegistration": False},
        "hover": {"contentFormat": ["markdown", "plaintext"]},
        "definition": {"linkSupport": True},
        "implementation": {"linkSupport": True},
        "references": {},
        "publishDiagnostics": {"relatedInformation": False, "versionSupport": True},
    },
}
LIFECYCLE_NOOP = {"window/workDoneProgress/create", "client/registerCapability", "client/unregisterCapability"}
MAX_MESSAGE_BYTES = 16_000_000
STDERR_TAIL = 4_000


class LspError(DshError):
    """An LSP failure with dsh's stable code (``LSP_UNAVAILABLE``, ``LSP_UNSUPPORTED_OPERATION``, …)."""

    def __init__(self, message: str, code: str = "LSP_ERROR") -> None:
        super().__init__(message)
        self.code = code


class LspUnavailable(LspError):
    """The server could not start, or died: one line saying which and why."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "LSP_UNAVAILABLE")


def frame(message: Mapping[str, Any]) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", **message}, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def read_message(reader: asyncio.StreamReader) -> dict | None:
    """One framed message, or None at end of stream."""
    length: int | None = None
    while True:
        line = await reader.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            if length is None:
                continue
            break
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    if length < 0 or length > MAX_MESSAGE_BYTES:
        raise LspError(f"server message of {length} bytes exceeds the {MAX_MESSAGE_BYTES}-byte limit")
    body = await reader.readexactly(length)
    return json.loads(body.decode("utf-8"))


class LspClient:
    def __init__(self, name: str, command: str, args: Sequence[str], root: str, *, env: Mapping[str, str] | None = None,
                 initialization_options: Any = None, configuration: Any = None, request_timeout: float = 30.0,
                 shutdown_timeout: float = 5.0) -> None:
        self.name = name
        self.command = command
        self.args = list(args)
        self.root = root
        self.env = dict(env or {})
        self.initialization_options = initialization_options
        self.configuration = configuration
        self.request_timeout = request_timeout
        self.shutdown_timeout = shutdown_timeout
        self.capabilities: dict[str, Any] = {}
        self.proc: asyncio.subprocess.Process | None = None
        self._next_id = 1
        self._pending: dict[int, asyncio.Future] = {}
        self._reader: asyncio.Task | None = None
        self._stderr_task: asyncio.Task | None = None
        self._stderr = bytearray()
        self._dead: str | None = None
        self._start: asyncio.Task | None = None
        self._write_lock = asyncio.Lock()
        # publishDiagnostics: uri -> (sequence number of the publish, diagnostics, version)
        self.diagnostics: dict[str, tuple[int, list, int | None]] = {}
        self._publishes = 0
        self._published = asyncio.Condition()
        self.open_docs: dict[str, int] = {}  # uri -> version

    @property
    def root_uri(self) -> str:
        from pathlib import Path

        return Path(self.root).as_uri()

    # -- lifecycle ---------------------------------------------------------------------------------

    async def ensure_started(self) -> None:
        if self._dead is not None:
            raise LspUnavailable(self._dead)
        if self._start is None:
            self._start = asyncio.ensure_future(self._launch())
        await asyncio.shield(self._start)

    async def _launch(self) -> None:
        env = {**os.environ, **self.env}
        try:
            self.proc = await asyncio.create_subprocess_exec(
                self.command, *self.args, cwd=self.root, env=env, stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
                limit=MAX_MESSAGE_BYTES)
        except FileNotFoundError:
            self._dead = f'language server "{self.name}" is not installed: {self.command} not found'
            raise LspUnavailable(self._dead) from None
        except OSError as err:
            self._dead = f'language server "{self.name}" could not start: {err.strerror or err}'
            raise LspUnavailable(self._dead) from None
        self._reader = asyncio.ensure_future(self._read_loop())
        self._stderr_task = asyncio.ensure_future(self._drain_stderr())
        try:
            await self._handshake()
        except BaseException as err:  # a server that fails its handshake is not kept: the next use starts anew
            if self._dead is None:
                self._dead = str(err) if isinstance(err, LspError) else f'language server "{self.name}" did not start'
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, 9)
            raise

    async def _handshake(self) -> None:
        result = await self.request("initialize", {
            "processId": None, "rootUri": self.root_uri, "rootPath": self.root,
            "workspaceFolders": [{"uri": self.root_uri, "name": "workspace"}],
            "capabilities": CLIENT_CAPABILITIES, "initializationOptions": self.initialization_options})
        caps = (result or {}).get("capabilities") if isinstance(result, dict) else None
        if not isinstance(caps, dict):
            raise self._fail("answered initialize without capabilities")
        encoding = caps.get("positionEncoding")
        if encoding not in (None, "utf-16"):
            raise self._fail(f'negotiated unsupported position encoding "{encoding}"; this host requires utf-16')
        self.capabilities = caps
        await self.notify("initialized", {})

    def _fail(self, why: str) -> LspUnavailable:
        self._dead = f'language server "{self.name}" {why}'
        return LspUnavailable(self._dead)

    def _death_line(self) -> str:
        code = self.proc.returncode if self.proc is not None else None
        tail = [ln for ln in bytes(self._stderr).decode("utf-8", "replace").splitlines() if ln.strip()]
        why = f'language server "{self.name}" exited' + (f" (exit code {code})" if code is not None else "")
        return why + (f": {tail[-1].strip()[:300]}" if tail else "")

    async def _drain_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(4096):
            self._stderr += chunk
            del self._stderr[:-STDERR_TAIL]

    async def _read_loop(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            while True:
                msg = await read_message(self.proc.stdout)
                if msg is None:
                    break
                await self._dispatch(msg)
        except (LspError, ValueError, asyncio.IncompleteReadError) as err:
            self._dead = f'language server "{self.name}" broke the protocol: {err}'
        except asyncio.CancelledError:
            raise
        if self._dead is None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.proc.wait(), 1.0)
            if self._stderr_task is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(self._stderr_task), 0.5)
            self._dead = self._death_line()
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(LspUnavailable(self._dead))
        self._pending.clear()
        async with self._published:
            self._published.notify_all()

    async def _dispatch(self, msg: dict) -> None:
        if "id" in msg and ("result" in msg or "error" in msg) and "method" not in msg:
            fut = self._pending.pop(msg["id"], None) if isinstance(msg["id"], int) else None
            if fut is not None and not fut.done():
                if msg.get("error") is not None:
                    err = msg["error"] or {}
                    fut.set_exception(LspError(f'language server "{self.name}": {err.get("message", err)}',
                                               "LSP_REQUEST_FAILED"))
                else:
                    fut.set_result(msg.get("result"))
            return
        method = msg.get("method")
        if "id" in msg:  # a request from the server
            await self._answer(msg["id"], method, msg.get("params"))
            return
        if method == "textDocument/publishDiagnostics":
            params = msg.get("params") or {}
            uri = params.get("uri")
            if isinstance(uri, str):
                self._publishes += 1
                diags = params.get("diagnostics")
                self.diagnostics[uri] = (self._publishes, diags if isinstance(diags, list) else [],
                                         params.get("version"))
                async with self._published:
                    self._published.notify_all()

    async def _answer(self, rid: Any, method: Any, params: Any) -> None:
        if method == "workspace/configuration":
            items = params.get("items") if isinstance(params, dict) else None
            reply: dict[str, Any] = {"id": rid, "result": [self.configuration for _ in (items or [])]}
        elif method in LIFECYCLE_NOOP:
            reply = {"id": rid, "result": None}
        elif method == "workspace/applyEdit":
            reply = {"id": rid, "error": {"code": -32601, "message": "workspace/applyEdit is not permitted by this host"}}
        else:
            reply = {"id": rid, "error": {"code": -32601, "message": f"unsupported server request: {method}"}}
        with contextlib.suppress(Exception):
            await self._write(reply)

    async def _write(self, message: Mapping[str, Any]) -> None:
        if self.proc is None or self.proc.stdin is None:
            raise LspUnavailable(self._dead or f'language server "{self.name}" is not running')
        async with self._write_lock:
            try:
                self.proc.stdin.write(frame(message))
                await self.proc.stdin.drain()
            except (BrokenPipeError, ConnectionResetError) as err:
                if self._reader is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(asyncio.shield(self._reader), 1.0)
                raise LspUnavailable(self._dead or self._death_line()) from err

    async def request(self, method: str, params: Any, timeout: float | None = None) -> Any:
        if self._dead is not None:
            raise LspUnavailable(self._dead)
        rid = self._next_id
        self._next_id += 1
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        await self._write({"id": rid, "method": method, "params": params})
        try:
            return await asyncio.wait_for(fut, timeout or self.request_timeout)
        except TimeoutError:
            self._pending.pop(rid, None)
            with contextlib.suppress(Exception):
                await self.notify("$/cancelRequest", {"id": rid})
            raise LspError(f'language server "{self.name}" did not answer {method} within '
                           f'{timeout or self.request_timeout:g} s', "LSP_TIMEOUT") from None
        finally:
            self._pending.pop(rid, None)

    async def notify(self, method: str, params: Any) -> None:
        await self._write({"method": method, "params": params})

    # -- documents ---------------------------------------------------------------------------------

    async def sync(self, uri: str, language_id: str, text: str) -> tuple[int, bool]:
        """Open ``uri`` with ``text`` (or send its full new text when already open). Returns the publish
        sequence number before the notification, and whether this call opened it."""
        mark = self._publishes
        if uri in self.open_docs:
            version = self.open_docs[uri] + 1
            self.open_docs[uri] = version
            await self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                         "contentChanges": [{"text": text}]})
            return mark, False
        self.open_docs[uri] = 1
        await self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language_id,
                                                                    "version": 1, "text": text}})
        return mark, True

    async def close_doc(self, uri: str) -> None:
        if self.open_docs.pop(uri, None) is not None and self._dead is None:
            await self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    async def wait_diagnostics(self, uri: str, after: int, timeout: float) -> list | None:
        """The diagnostics of the first publish for ``uri`` after publish number ``after`` (None: none came
        within ``timeout`` seconds, or the server died)."""
        version = self.open_docs.get(uri)

        def fresh() -> bool:
            entry = self.diagnostics.get(uri)
            if entry is None or entry[0] <= after:
                return False
            return entry[2] is None or version is None or entry[2] >= version

        async with self._published:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._published.wait_for(lambda: fresh() or self._dead is not None), timeout)
        return self.diagnostics[uri][1] if fresh() else None

    @property
    def dead(self) -> str | None:
        return self._dead

    async def close(self) -> None:
        """``shutdown``/``exit`` within the budget, then SIGTERM, then SIGKILL; waits for the process."""
        proc = self.proc
        if self._start is not None and not self._start.done():
            self._start.cancel()
            with contextlib.suppress(BaseException):
                await self._start
        if proc is None:
            return
        if proc.returncode is None and self._dead is None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.request("shutdown", None), self.shutdown_timeout)
                await self.notify("exit", None)
                await asyncio.wait_for(proc.wait(), self.shutdown_timeout)
        self._dead = self._dead or f'language server "{self.name}" was shut down'
        if proc.returncode is None:
            for sig, grace in ((15, 2.0), (9, 5.0)):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, sig)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(proc.wait(), grace)
                if proc.returncode is not None:
                    break
        else:  # the leader is gone: take down any helper it left in its group
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, 9)
        for task in (self._reader, self._stderr_task):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if proc.stdin is not None:
            with contextlib.suppress(Exception):
                proc.stdin.close()
