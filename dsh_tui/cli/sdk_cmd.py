"""``dsh-tui --profile sdk``: dsh's JSON-RPC stdio agent protocol, so dsh's own Python SDK
(``deepseek-harness-sdk``: ``DeepSeekHarness(dsh_bin=shutil.which("dsh-tui"))``) drives dsh-tui unchanged.

One JSON-RPC 2.0 message per line on stdin/stdout (diagnostics on stderr). Requests, as dsh 0.2's runtime
answers them:

* ``initialize {cwd, provider, model, reasoningEffort?, maxTokens?}`` → ``{serverInfo: {name, version}}``
* ``session/prompt {sessionId, contentBlocks}`` → ``{messageId}``: the session is opened on first use
  (resumed from ``$DSH_HOME/sessions`` when it exists there, else created with that id) and the prompt
  queued as a follow-up; ``messageId`` is the id of the user message in its ``agent/inbox/spliced`` event.
* ``session/resume {sessionId}`` → ``{}``: opens a stored session without sending anything (an unknown id
  is an error).
* ``session/working-directory/get|set {sessionId, path?}`` → ``{cwd}``
* ``shutdown`` → ``{}``, then the process exits once stdin closes.

Notifications: ``session.event {sessionId, event}`` for every event appended to an open session, and
``session.status {sessionId, status}`` (``running`` when a prompt starts a turn, ``idle`` once the agent and
the subagents it started have settled). A subagent child of an open session is announced as dsh announces it:
``subagent.started {parentSessionId, childSessionId}``, the child's own ``session.status`` and
``session.event`` notifications, then ``subagent.finished {provider, agentId, parentSessionId,
childSessionId, status, stopReason, lastAssistantMessage}`` when its run settles. Nobody can answer an approval here: as in ``run --headless``, a
call the preset does not allow is refused and the model sees the refusal.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

from dsh_tui import __version__
from dsh_tui.session.errors import DshError

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, SERVER_ERROR = -32700, -32600, -32601, -32602, -32000


class RpcError(DshError):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class SdkServer:
    def __init__(self, out: Any = None, *, replay: str | None = None) -> None:
        self.out = out if out is not None else sys.stdout
        self.replay = replay
        self._children: set[str] = set()
        self._finished: set[str] = set()
        self._unwatch: list[Any] = []  # removers of the watchers on each session tree's subagent state
        self._running: set[str] = set()
        self._write = threading.Lock()
        self.config: dict[str, Any] | None = None
        self.hosts: dict[str, Any] = {}
        self._opening: dict[str, asyncio.Lock] = {}
        self._turns: dict[str, asyncio.Task] = {}
        self._provider: Any = None
        self._store: Any = None
        self.shutting_down = False

    # -- transport ---------------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        from dsh_tui.session import jsonutil

        line = jsonutil.dumps({"jsonrpc": "2.0", **message}) + "\n"
        with self._write:
            self.out.write(line)
            self.out.flush()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"method": method, "params": params})

    async def handle_line(self, line: str) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            self.send({"id": None, "error": {"code": PARSE_ERROR, "message": "not a JSON message"}})
            return
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            if isinstance(message, dict) and "id" in message and ("result" in message or "error" in message):
                return  # a response to nothing we asked: ignored
            self.send({"id": message.get("id") if isinstance(message, dict) else None,
                       "error": {"code": INVALID_REQUEST, "message": "not a JSON-RPC request"}})
            return
        rid = message.get("id")
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        handler = getattr(self, "rpc_" + message["method"].replace("/", "_").replace("-", "_"), None)
        try:
            if handler is None:
                raise RpcError(METHOD_NOT_FOUND, f"unknown method {message['method']!r}")
            result = await handler(params)
        except RpcError as err:
            if rid is not None:
                self.send({"id": rid, "error": {"code": err.code, "message": err.message}})
            return
        except Exception as err:  # noqa: BLE001 - reported to the client as one line, never a traceback
            from dsh_tui.cli import one_line

            if rid is not None:
                self.send({"id": rid, "error": {"code": SERVER_ERROR, "message": one_line(str(err) or type(err).__name__)}})
            return
        if rid is not None:
            self.send({"id": rid, "result": result})

    # -- methods -----------------------------------------------------------------------------------

    async def rpc_initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        cwd = params.get("cwd") or os.getcwd()
        if not isinstance(cwd, str) or not Path(cwd).is_dir():
            raise RpcError(INVALID_PARAMS, f"initialize: cwd is not a directory: {cwd!r}")
        for key in ("provider", "model"):
            if params.get(key) is not None and not isinstance(params[key], str):
                raise RpcError(INVALID_PARAMS, f"initialize: {key} must be a string")
        self.config = {"cwd": str(Path(cwd).resolve()), "provider": params.get("provider"),
                       "model": params.get("model"), "reasoningEffort": params.get("reasoningEffort")}
        return {"serverInfo": {"name": "dsh-tui", "version": __version__}}

    async def rpc_shutdown(self, _params: dict[str, Any]) -> dict[str, Any]:
        self.shutting_down = True
        await self.close()
        return {}

    async def rpc_session_resume(self, params: dict[str, Any]) -> dict[str, Any]:
        await self._host(self._session_id(params), must_exist=True)
        return {}

    async def rpc_session_prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        sid = self._session_id(params)
        blocks = params.get("contentBlocks")
        if not isinstance(blocks, list) or not blocks or not all(isinstance(b, dict) for b in blocks):
            raise RpcError(INVALID_PARAMS, "session/prompt: contentBlocks must be a non-empty list of blocks")
        host = await self._host(sid)
        message = host.agent.followup(blocks)
        if sid not in self._turns or self._turns[sid].done():
            self._turns[sid] = asyncio.ensure_future(self._settle(sid, host))
        return {"messageId": message["id"]}

    async def rpc_session_working_directory_get(self, params: dict[str, Any]) -> dict[str, Any]:
        host = await self._host(self._session_id(params), must_exist=True)
        return {"cwd": str(host.agent.config.cwd)}

    async def rpc_session_working_directory_set(self, params: dict[str, Any]) -> dict[str, Any]:
        host = await self._host(self._session_id(params), must_exist=True)
        path = params.get("path")
        if not isinstance(path, str) or not path:
            raise RpcError(INVALID_PARAMS, "session/working-directory/set: path must be a non-empty string")
        target = (Path(str(host.agent.config.cwd)) / path).resolve()
        if not target.is_dir():
            raise RpcError(INVALID_PARAMS, f"not a directory: {target}")
        host.agent.config.cwd = str(target)
        return {"cwd": str(target)}

    # -- sessions ----------------------------------------------------------------------------------

    @staticmethod
    def _session_id(params: dict[str, Any]) -> str:
        sid = params.get("sessionId")
        if not isinstance(sid, str) or not sid.strip() or len(sid) > 200 or "/" in sid or sid in (".", ".."):
            raise RpcError(INVALID_PARAMS, "sessionId must be a non-empty id")
        return sid

    async def _host(self, sid: str, *, must_exist: bool = False) -> Any:
        if self.config is None:
            raise RpcError(INVALID_REQUEST, "initialize first")
        host = self.hosts.get(sid)
        if host is not None:
            return host
        lock = self._opening.setdefault(sid, asyncio.Lock())
        async with lock:
            if sid in self.hosts:
                return self.hosts[sid]
            from dsh_tui.runtime.host import AgentHost, HostSpec, open_session_store

            if self._store is None:
                self._store = open_session_store(None)
            exists = any(h.get("id") == sid for h in await asyncio.to_thread(self._store.list))
            if must_exist and not exists:
                raise RpcError(INVALID_PARAMS, f"no session {sid!r} in {getattr(self._store, 'root', 'the root')}")
            provider, model = self._route()
            cfg = self.config
            if exists:
                spec = HostSpec(root=None, store=self._store, cwd=None, provider=provider, model=model,
                                resume_id=sid, close_provider=False)
            else:
                spec = HostSpec(root=None, store=self._store, cwd=Path(cfg["cwd"]), provider=provider, model=model,
                                reasoning_effort=cfg.get("reasoningEffort"), header_fields={"id": sid},
                                close_provider=False)
            host = await AgentHost.open(spec)

            host.session.subscribe(lambda _s, event: self._forward(sid, event))
            self.hosts[sid] = host
            self._unwatch.append(host.subagents.watch(self._on_child))  # its session tree's children
            return host

    def _forward(self, sid: str, event: dict[str, Any]) -> None:
        """One appended event as ``session.event``; a turn's start is told first as ``running`` (dsh sends the
        status after the prompt's splice, before ``turn/start``)."""
        if event["type"] == "turn/start" and sid not in self._running:
            self._running.add(sid)
            self.notify("session.status", {"sessionId": sid, "status": "running"})
        self.notify("session.event", {"sessionId": sid, "event": event})

    def _on_child(self, child: Any) -> None:
        """A subagent child started, changed phase or settled: dsh's ``subagent.*`` notifications for the
        children of this server's sessions (and of their children)."""
        if child.parent_id not in self.hosts and child.parent_id not in self._children:
            return
        if child.id not in self._children and child.session is not None:
            self._children.add(child.id)
            self.notify("subagent.started", {"parentSessionId": child.parent_id, "childSessionId": child.id})
            child.session.subscribe(lambda _s, event, cid=child.id: self._forward(cid, event))
        if child.outcome is not None and child.id in self._children and child.id not in self._finished:
            self._finished.add(child.id)
            last: list[Any] = []
            for event in reversed(list(child.session.events) if child.session is not None else []):
                if event["type"] == "assistant/message" and event["data"]["message"].get("content"):
                    last = event["data"]["message"]["content"]
                    break
            kind = child.outcome.get("kind", "completed")
            self._running.discard(child.id)
            self.notify("session.status", {"sessionId": child.id, "status": "idle"})
            self.notify("subagent.finished", {
                "provider": child.provider, "agentId": child.id, "parentSessionId": child.parent_id,
                "childSessionId": child.id, "status": "ok" if kind == "completed" else "error", "stopReason": kind,
                "lastAssistantMessage": last})

    def _route(self) -> tuple[Any, str]:
        if self.replay is not None and self._provider is None:
            from dsh_tui.cli.run_cmd import replay_provider

            self._provider, self._replay_model = replay_provider(self.replay, (self.config or {}).get("cwd"), None)
        if self.replay is not None:
            return self._provider, (self.config or {}).get("model") or self._replay_model
        if self._provider is None:
            from dsh_tui.config import load_settings
            from dsh_tui.llm import registry

            settings = load_settings()
            name = (self.config or {}).get("provider") or None
            problem = registry.credential_problem(settings, name)
            if problem:
                raise RpcError(SERVER_ERROR, problem.splitlines()[0])
            self._provider = registry.build_provider(settings, name)
        model = (self.config or {}).get("model")
        if not model:
            from dsh_tui.config import load_settings
            from dsh_tui.llm import registry

            model = registry.default_route(load_settings())[1]
        return self._provider, model

    async def _settle(self, sid: str, host: Any) -> None:
        from dsh_tui.extensions.subagents.children import settle

        try:
            await asyncio.sleep(0)
            await host.agent.wait_idle()
            await settle(host.agent)
            await host.flush()
        finally:
            if sid not in self._running:  # a prompt that started no turn still reports its start
                self.notify("session.status", {"sessionId": sid, "status": "running"})
            self._running.discard(sid)
            self.notify("session.status", {"sessionId": sid, "status": "idle"})

    async def close(self) -> None:
        for off in self._unwatch:
            off()
        self._unwatch.clear()
        for task in list(self._turns.values()):
            if not task.done():
                task.cancel()
        for host in list(self.hosts.values()):
            await host.close()
        self.hosts.clear()
        if self._provider is not None:
            from dsh_tui.runtime.host import close_provider

            await close_provider(self._provider)
            self._provider = None


async def serve(stdin: Any = None, out: Any = None, *, replay: str | None = None) -> int:
    server = SdkServer(out, replay=replay)
    stream = stdin if stdin is not None else sys.stdin
    try:
        while True:
            line = await asyncio.to_thread(stream.readline)
            if not line:
                break
            if line.strip():
                await server.handle_line(line)
    finally:
        await server.close()
    return 0


def run_profile(argv: list[str]) -> int:
    """``dsh-tui --profile NAME [--patch PATH ...]`` (dsh's launcher flags): only ``sdk`` is served."""
    from dsh_tui.session.errors import UsageError

    name = argv[1] if len(argv) > 1 and argv[0] == "--profile" else argv[0].partition("=")[2]
    rest = argv[2:] if argv[0] == "--profile" else argv[1:]
    if name != "sdk":
        raise UsageError(f"--profile {name}: dsh-tui serves only dsh's sdk profile (the JSON-RPC protocol of "
                         "dsh's Python SDK); use dsh-tui's own commands otherwise (dsh-tui --help)")
    replay = None
    while rest and rest[0] in ("--patch", "--replay") and len(rest) > 1:
        if rest[0] == "--replay":  # dsh-tui's own: the model side of a recorded dsh log (offline)
            replay = rest[1]
            if not Path(replay).exists():
                raise UsageError(f"replay log not found: {replay}")
        else:
            print(f"dsh-tui: --patch {rest[1]} ignored (dsh profile patches do not apply to dsh-tui)",
                  file=sys.stderr)
        rest = rest[2:]
    if rest:
        raise UsageError(f"--profile sdk takes no other arguments but --patch and --replay: {' '.join(rest)}")
    if not os.environ.get("DSH_HOME", "").strip():
        raise UsageError("--profile sdk needs an explicit DSH_HOME (dsh's SDK sets it from dsh_home)")
    return asyncio.run(serve(replay=replay))
