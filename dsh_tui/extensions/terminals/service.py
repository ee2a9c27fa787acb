"""The terminal registry (dsh's ``TerminalSessionService``, for one agent): the backends by type (``ShellBackend``:
``local.spawn_local`` in the call's sandbox) and this agent's sessions (ids ``pty-1``, ``pty-2``, …; names
unique per agent), each ended with the agent (awaited, the whole process tree)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Any

from dsh_tui.session.errors import DshError
from dsh_tui.tools.base import ToolError


class _Record:
    def __init__(self, sid: str, name: str | None, type_: str, session: Any) -> None:
        self.id = sid
        self.name = name
        self.type = type_
        self.session = session
        self.active: Any = None
        self.closing: Any = None


class ShellBackend:
    """The ``shell`` type: ``local.spawn_local`` in the sandbox of the call's mode."""

    def __init__(self, config: dict[str, Any], sandbox: Any) -> None:
        self.type = config["backend_type"]
        self.config = config
        self.sandbox = sandbox

    async def spawn(self, spec: dict) -> Any:
        from dsh_tui.extensions.terminals import local
        from dsh_tui.tools.bash import bash_env
        from dsh_tui.tools.sandbox import CONFINED

        tctx = spec["tool_context"]
        cwd = spec.get("cwd") or str(tctx.workspace if tctx is not None else os.getcwd())
        if tctx is not None and spec.get("cwd"):
            cwd = str((tctx.cwd / spec["cwd"]).resolve()) if not os.path.isabs(spec["cwd"]) else spec["cwd"]
        if not os.path.isdir(cwd):
            raise ToolError(f'cwd "{cwd}" is not a directory')
        argv = [self.config["shell_path"], *self.config["shell_args"]]
        env = local.child_env(spec["owner"], spec["sessionId"], bash_env(None, tctx))
        confined = None
        mode = getattr(tctx, "sandbox_mode", None)
        if self.sandbox is not None and mode in CONFINED:
            confined = await asyncio.to_thread(self.sandbox.confine, argv, mode=mode,
                                               workspace=str(tctx.workspace), cwd=cwd)
            argv = confined.argv
            env.update(confined.env)
        try:
            session = await local.spawn_local(argv, cwd=cwd, env=env, config=self.config)
        except BaseException:
            if confined is not None:
                await asyncio.to_thread(confined.cleanup)
            raise
        session.confined = confined
        return session


class TerminalService:
    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.backends: dict[str, Any] = {}
        self.sessions: dict[str, _Record] = {}
        self.reserved: set[str] = set()
        self.next_id = 0
        self.disposing = False
        self.on_change: list[Any] = []  # called after a session opened or closed (the app)

    def register_backend(self, backend: Any) -> None:
        if not backend.type:
            raise DshError("pty backend type must be non-empty")
        if backend.type in self.backends:
            raise DshError(f'a PTY backend named "{backend.type}" is already registered')
        self.backends[backend.type] = backend

    def _changed(self) -> None:
        for cb in list(self.on_change):
            with contextlib.suppress(Exception):
                cb()

    def expect(self, sid: str) -> _Record:
        if not isinstance(sid, str) or not sid:
            raise ToolError("sessionId must be a non-empty string")
        record = self.sessions.get(sid)
        if record is None:
            raise ToolError(f"unknown PTY session {sid}")
        return record

    def session(self, sid: str) -> Any:
        record = self.sessions.get(sid)
        return None if record is None else record.session

    def snapshot(self, record: _Record, motd: str | None = None) -> dict:
        out: dict[str, Any] = {"sessionId": record.id}
        if record.name is not None:
            out["name"] = record.name
        out["type"] = record.type
        pid = getattr(record.session, "pid", None)
        if pid is not None:
            out["pid"] = pid
        out["status"] = record.session.status()
        if motd is not None:
            out["motd"] = motd
        return out

    async def spawn(self, type_: str, name: str | None, cwd: str | None, tctx: Any) -> dict:
        if self.disposing:
            raise ToolError("PTY service is disposing")
        backend = self.backends.get(type_)
        if backend is None:
            raise ToolError(f'no PTY backend registered for "{type_}"')
        if name is not None and not name:
            raise ToolError("PTY session name must be non-empty")
        if name is not None:
            if any(r.name == name for r in self.sessions.values()):
                raise ToolError(f'PTY session name "{name}" already exists for this owner')
            if name in self.reserved:
                raise ToolError(f'PTY session name "{name}" is already being created')
            self.reserved.add(name)
        self.next_id += 1
        sid = f"pty-{self.next_id}"
        try:
            session = await backend.spawn({"sessionId": sid, "owner": self.owner, "type": type_, "name": name,
                                           "cwd": cwd, "tool_context": tctx})
            if self.disposing:
                await session.close("PTY service is disposing")
                raise ToolError("PTY service is disposing")
            record = _Record(sid, name, type_, session)
            self.sessions[sid] = record
        finally:
            if name is not None:
                self.reserved.discard(name)
        self._changed()
        return self.snapshot(record, session.motd)

    async def start_send(self, sid: str, text: str, submit: bool, cancelled: asyncio.Event | None = None) -> Any:
        record = self.expect(sid)
        if record.closing is not None:
            raise ToolError(f"PTY session {sid} is closing")
        if record.active is not None and not record.active.settled:
            raise ToolError(f"PTY session {sid} already has an active send")
        try:
            op = await record.session.start_send(text, submit, cancelled)
        except (RuntimeError, OSError) as err:
            raise ToolError(str(err)) from None
        record.active = op
        return op

    async def kill(self, sid: str, reason: str = "model request") -> bool:
        record = self.expect(sid)
        if record.closing is not None:
            await record.closing
            return False
        record.closing = record.session.close(reason)
        try:
            await record.closing
        except BaseException:
            record.closing = None
            raise
        finally:
            await self._cleanup(record)
        self.sessions.pop(sid, None)
        self._changed()
        return True

    async def _cleanup(self, record: _Record) -> None:
        confined = getattr(record.session, "confined", None)
        if confined is not None and record.session.status().get("kind") == "exited":
            await asyncio.to_thread(confined.cleanup)

    def list(self) -> list[dict]:
        return [self.snapshot(r) for r in self.sessions.values()]

    async def dispose(self) -> None:
        self.disposing = True
        records = list(self.sessions.values())
        results = await asyncio.gather(*(self._close_quiet(r) for r in records), return_exceptions=True)
        self.sessions.clear()
        self.backends.clear()
        self._changed()
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            raise failures[0]

    async def _close_quiet(self, record: _Record) -> None:
        try:
            await (record.closing or record.session.close("PTY service disposed"))
        finally:
            await self._cleanup(record)
