"""``dsh-tui acp``: an Agent Client Protocol agent over stdio (editors such as Zed, ACP front ends such as
Toad), built on the official Python SDK (``agent-client-protocol``).

Sessions are ordinary dsh-tui sessions in ``$DSH_HOME/sessions`` (browsable and resumable in the app).
Served: ``initialize`` (load session, embedded context, MCP servers over stdio), ``session/new``,
``session/load`` (the history replayed as ``session/update`` notifications), ``session/set_config_option``
(``model``: the models the settings list for the session's provider), ``session/prompt`` (text,
embedded resources and resource links), ``session/cancel`` and ``session/set_mode`` (the permission presets
as modes). A turn streams ``agent_message_chunk`` / ``agent_thought_chunk``, ``tool_call`` and
``tool_call_update`` (kind, location, diff for write and edit, the result text) and ``plan`` from todos;
an approval is ``session/request_permission`` with allow once / allow always / reject.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acp.schema import PlanEntryStatus, StopReason, ToolKind

HELP = "serve an Agent Client Protocol agent on stdin/stdout (for editors and ACP front ends)"
MODES = (("read-only", "Read only", "Writes and shell commands ask first"),
         ("workspace-write", "Workspace write", "File changes inside the workspace run; commands ask"),
         ("full-access", "Full access", "Nothing asks"))
KINDS: dict[str, ToolKind] = {"read": "read", "write": "edit", "edit": "edit", "bash": "execute", "grep": "search",
                              "glob": "search", "todo_write": "think", "web_fetch": "fetch"}
# A turn's end reason as a prompt's stopReason. dsh's agent answers ``end_turn`` for a turn that ended at the
# output limit (its recorded max-tokens-continue scenario); dsh-tui does the same.
STOP: dict[str, StopReason] = {"completed": "end_turn", "max-tokens": "end_turn", "aborted": "cancelled"}
PLAN_STATUSES: dict[str, PlanEntryStatus] = {"pending": "pending", "in_progress": "in_progress",
                                             "completed": "completed"}


def _plan_status(value: Any) -> PlanEntryStatus:
    """A todo's status as an ACP plan entry's (anything else: pending)."""
    return PLAN_STATUSES.get(value, "pending") if isinstance(value, str) else "pending"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # not the runtime's: the parser is built before anything is imported
    from dsh_tui.cli.run_cmd import PRESETS

    parser.add_argument("--root", help="session root (default $DSH_HOME/sessions)")
    parser.add_argument("--preset", choices=PRESETS, default="workspace-write",
                        help="the permission mode new sessions start in (session/set_mode changes it)")
    parser.add_argument("--replay", metavar="FILE|DIR",
                        help="replay the model side of a recorded dsh log or scenario directory instead of calling "
                             "a model (offline; each new session replays it from the start in its own cwd)")


def _args(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


_DIFF_MAX_BYTES = 1 << 20  # an older file than this is not put in a diff


def _file_text(path: str) -> str | None:
    """A regular UTF-8 file's text (the old side of a write's diff), or None (absent, too big, not text)."""
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > _DIFF_MAX_BYTES:
            return None
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def _text(blocks: Any) -> str:
    return "".join(b.get("text", "") for b in blocks or [] if isinstance(b, dict) and b.get("type") == "text")


class AcpAgent:
    """The ``acp.Agent`` implementation: one ``AgentHost`` per ACP session."""

    def __init__(self, root: str | None = None, *, preset: str = "workspace-write", replay: str | None = None) -> None:
        self.root = root
        self.preset = preset
        self.replay = replay
        self.conn: Any = None
        self.hosts: dict[str, Any] = {}
        self.pumps: dict[str, asyncio.Queue] = {}
        self.allowed: dict[str, Any] = {}
        self._provider: Any = None
        self._store: Any = None
        self._tools: dict[str, dict[str, Any]] = {}  # call id -> {name, args}
        self._streamed: dict[tuple, bool] = {}  # (session, turn, step, block index) -> deltas were sent
        self._cwds: dict[str, str] = {}  # session -> its working directory as its events went (absolute paths)
        self._images = False  # inline image prompts advertised at initialize

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    # -- protocol ----------------------------------------------------------------------------------

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **_kw: Any) -> Any:
        from acp import PROTOCOL_VERSION
        from acp.schema import AgentCapabilities, Implementation, InitializeResponse, PromptCapabilities

        from dsh_tui import __version__

        self._images = self._route_takes_images()  # advertised only when the configured model takes images (dsh)
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True, prompt_capabilities=PromptCapabilities(image=self._images, embedded_context=True)),
            agent_info=Implementation(name="dsh-tui", title="dsh-tui", version=__version__),
        )

    async def authenticate(self, method_id: str, **_kw: Any) -> Any:
        return None

    async def new_session(self, cwd: str, mcp_servers: Any = None, additional_directories: Any = None,
                          **_kw: Any) -> Any:
        from acp import RequestError
        from acp.schema import NewSessionResponse

        if additional_directories:  # dsh's answer: a session has one workspace
            raise RequestError.invalid_params({"message": "additionalDirectories is not supported"})
        host = await self._open(cwd=cwd, mcp_servers=mcp_servers)
        sid = host.session.header["id"]
        return NewSessionResponse(session_id=sid, modes=self._modes(host), config_options=self._options(host))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None, **_kw: Any) -> Any:
        from acp.schema import LoadSessionResponse

        host = self.hosts.get(session_id) or await self._open(cwd=cwd, mcp_servers=mcp_servers, resume=session_id)
        self._cwds.pop(session_id, None)  # folded again from the start of its history
        for event in list(host.session.events):
            for update in self._updates(event, replay=True, sid=session_id):
                await self.conn.session_update(session_id=session_id, update=update)
        return LoadSessionResponse(modes=self._modes(host), config_options=self._options(host))

    async def set_session_mode(self, session_id: str, mode_id: str, **_kw: Any) -> Any:
        from acp import RequestError
        from acp.schema import SetSessionModeResponse

        from dsh_tui.runtime.permissions import set_preset

        host = self._host(session_id)
        try:
            set_preset(host.agent, mode_id)
        except ValueError as err:
            raise RequestError.invalid_params({"message": str(err)}) from None
        return SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: Any, **_kw: Any) -> Any:
        """``model``: the model of the session's provider that answers from the next request on."""
        from acp import RequestError
        from acp.schema import SetSessionConfigOptionResponse

        host = self._host(session_id)
        if config_id != "model":
            raise RequestError.invalid_params({"message": f"unknown config option {config_id!r} (dsh-tui offers "
                                                          "'model'; the permission presets are the modes)"})
        choices = self._models(host)
        if value not in choices:
            raise RequestError.invalid_params({"message": f"model {value!r} is not one of {', '.join(choices)}"})
        host.agent.config.model = value
        return SetSessionConfigOptionResponse(config_options=self._options(host))

    async def prompt(self, session_id: str, prompt: list[Any], **_kw: Any) -> Any:
        from acp import RequestError
        from acp.schema import PromptResponse

        host = self._host(session_id)
        text = self._prompt_text(prompt)
        has_images = any(getattr(block, "type", None) == "image" for block in prompt)
        if not text.strip() and not has_images:
            raise RequestError.invalid_params({"message": "the prompt holds no text"})
        content: Any = text
        if has_images:
            content = await self._prompt_with_images(host, prompt)
        start = len(host.session.events)
        host.agent.followup(content)
        await asyncio.sleep(0)
        await host.agent.wait_idle()
        await self._drain(session_id)
        reason: dict[str, Any] = {"kind": "none"}
        for e in host.session.events[start:]:
            if e["type"] == "turn/end":
                reason = e["data"].get("reason") or reason
        if reason.get("kind") == "error":
            err = reason.get("error") or {}
            raise RequestError.internal_error({"message": err.get("message", "the turn failed"),
                                               "code": err.get("code")})
        kind = reason.get("kind")
        return PromptResponse(stop_reason=STOP.get(kind, "end_turn") if isinstance(kind, str) else "end_turn")

    async def cancel(self, session_id: str, **_kw: Any) -> None:
        host = self.hosts.get(session_id)
        if host is not None and host.agent.status == "running":
            host.agent.cancel({"kind": "user"})

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **_kw: Any) -> Any:
        from acp.schema import ListSessionsResponse

        return ListSessionsResponse(sessions=[])

    # -- sessions ----------------------------------------------------------------------------------

    def _host(self, session_id: str) -> Any:
        from acp import RequestError

        host = self.hosts.get(session_id)
        if host is None:
            raise RequestError.invalid_params({"message": f"unknown session {session_id!r} (session/new or "
                                                          "session/load first)"})
        return host

    def _models(self, host: Any) -> list[str]:
        """The current model and every model the settings list for the session's provider."""
        current = str(host.agent.config.model)
        choices = [current]
        if self.replay is None:
            from dsh_tui.config import load_settings
            from dsh_tui.llm.registry import available_models
            from dsh_tui.session.errors import DshError

            try:
                pairs = available_models(load_settings())
            except DshError:
                pairs = []
            provider = host.agent.config.provider
            choices += [m for p, m in pairs if p == provider and m not in choices]
        return choices

    def _options(self, host: Any) -> list[Any]:
        from acp.schema import SessionConfigOptionSelect, SessionConfigSelectOption

        return [SessionConfigOptionSelect(
            id="model", name="Model", category="model", type="select", current_value=str(host.agent.config.model),
            options=[SessionConfigSelectOption(value=m, name=m) for m in self._models(host)])]

    def _modes(self, host: Any) -> Any:
        from acp.schema import SessionMode, SessionModeState

        return SessionModeState(current_mode_id=host.agent.config.preset,
                                available_modes=[SessionMode(id=i, name=n, description=d) for i, n, d in MODES])

    async def _open(self, *, cwd: str, mcp_servers: Any, resume: str | None = None) -> Any:
        from acp import RequestError

        from dsh_tui.runtime.host import AgentHost, HostSpec, open_session_store

        if not Path(cwd).is_dir():
            raise RequestError.invalid_params({"message": f"cwd is not a directory: {cwd}"})
        if self._store is None:
            self._store = open_session_store(self.root)
        provider, model, hint = self._route(Path(cwd).resolve())
        if provider is None:
            raise RequestError.internal_error({"message": hint})
        mcp = tuple(f"{s.name}={shlex.join([s.command, *s.args])}" for s in mcp_servers or []
                    if getattr(s, "command", None))
        if resume is not None:
            if not any(h.get("id") == resume for h in await asyncio.to_thread(self._store.list)):
                raise RequestError.resource_not_found(resume)
            spec = HostSpec(root=None, store=self._store, cwd=None, provider=provider, model=model, resume_id=resume,
                            mcp=mcp or None, close_provider=self.replay is not None, preset=self.preset)
        else:
            spec = HostSpec(root=None, store=self._store, cwd=Path(cwd).resolve(), provider=provider, model=model,
                            mcp=mcp or None, close_provider=self.replay is not None, preset=self.preset)
        host = await AgentHost.open(spec)
        sid = host.session.header["id"]
        self.hosts[sid] = host
        queue: asyncio.Queue = asyncio.Queue()
        self.pumps[sid] = queue
        asyncio.ensure_future(self._pump(sid, queue))

        def forward(_session: Any, event: dict[str, Any]) -> None:
            for update in self._updates(event, sid=sid):
                queue.put_nowait(update)

        host.session.subscribe(forward)
        host.agent.on("approval/request", lambda payload, _next=None: self._approve(sid, payload))
        return host

    def _route(self, cwd: Path) -> tuple[Any, str, str]:
        if self.replay is not None:  # a fresh replay per session, its {{cwd}} placeholders made real
            from dsh_tui.cli.run_cmd import replay_provider

            provider, model = replay_provider(self.replay, cwd, None)
            return provider, model, ""
        if self._provider is None:
            from dsh_tui.llm.route import model_route

            provider, model, hint = model_route()
            if provider is None:
                return None, "", hint
            self._provider, self._model = provider, model
        return self._provider, self._model, ""

    async def _pump(self, sid: str, queue: asyncio.Queue) -> None:
        while True:
            update = await queue.get()
            try:
                if update is not None:
                    await self.conn.session_update(session_id=sid, update=update)
            except Exception:  # noqa: BLE001 - a client that went away: the session still runs
                pass
            finally:
                queue.task_done()

    async def _drain(self, sid: str) -> None:
        queue = self.pumps.get(sid)
        if queue is not None:
            await queue.join()

    async def _approve(self, sid: str, payload: dict[str, Any]) -> Any:
        from acp.schema import PermissionOption, ToolCallUpdate

        from dsh_tui.runtime.permissions import SessionAllowances

        tool = str(payload.get("toolName") or "?")
        call_id = str(payload.get("callId") or "")
        call = self._tools.get(call_id, {})
        arguments = call.get("raw", "")
        allowances = self.allowed.setdefault(sid, SessionAllowances())
        if allowances.covers(tool, arguments):
            return "allowed-once"
        await self._drain(sid)  # the tool_call the client is asked about is on its screen first
        options = [PermissionOption(option_id="allow-once", name="Allow once", kind="allow_once"),
                   PermissionOption(option_id="allow-always", name="Allow for this session", kind="allow_always"),
                   PermissionOption(option_id="reject-once", name="Reject", kind="reject_once")]
        update = ToolCallUpdate(tool_call_id=call_id, title=self._title(tool, call.get("args", {})),
                                kind=KINDS.get(tool, "other"), status="pending", raw_input=call.get("args"))
        signal = payload.get("signal")
        asking = self.conn.request_permission(session_id=sid, tool_call=update, options=options)
        try:
            response = await (signal.race(asking) if signal is not None and hasattr(signal, "race") else asking)
        except Exception:  # noqa: BLE001 - no answer: fail closed
            return "unavailable"
        outcome = getattr(response, "outcome", None)
        chosen = getattr(outcome, "option_id", None)
        if chosen == "allow-always":
            allowances.add(tool, arguments)
            return "allowed-once"
        if chosen == "allow-once":
            return "allowed-once"
        return "cancelled" if getattr(outcome, "outcome", "") == "cancelled" else "rejected"

    # -- events → session updates ------------------------------------------------------------------

    def _route_takes_images(self) -> bool:
        try:
            provider, model, _hint = self._route(Path.cwd())
            return provider is not None and bool(provider.resolve_model(model).takes_images)
        except Exception:  # noqa: BLE001 - unknown capability is negative (dsh)
            return False

    async def _prompt_with_images(self, host: Any, prompt: list[Any]) -> list[dict[str, Any]]:
        """The prompt as ordered content: text runs and images admitted into the attachment store (dsh's
        ``admitAcpPrompt`` checks and texts)."""
        import base64
        import binascii

        from acp import RequestError

        from dsh_tui.store import attachments

        def invalid(message: str) -> Exception:
            return RequestError.invalid_params({"message": message})

        if not self._images:
            raise invalid("inline image prompts were not advertised by this connection")
        decoded: list[tuple[bytes, str]] = []
        for block in prompt:
            if getattr(block, "type", None) != "image":
                continue
            media = str(getattr(block, "mime_type", "") or "").lower()
            if media not in attachments.MEDIA_TYPES:
                raise invalid("image mimeType must be image/png, image/jpeg, image/webp, or image/gif")
            raw = str(getattr(block, "data", "") or "")
            try:
                data = base64.b64decode(raw, validate=True)
            except (binascii.Error, ValueError):
                data = None
            if data is None or base64.b64encode(data).decode() != raw:
                raise invalid("image data must be canonical base64")
            decoded.append((data, media))
        model = host.agent.config.model
        info = host.agent.provider.resolve_model(model) if host.agent.provider is not None else None
        if info is None or not info.takes_images:
            raise invalid(f'model "{model}" does not declare image input')
        try:
            refs = [await asyncio.to_thread(attachments.save_image, data, media) for data, media in decoded]
        except attachments.AttachmentError as err:
            raise invalid(str(err)) from None
        content: list[dict[str, Any]] = []
        for block in prompt:
            if getattr(block, "type", None) == "image":
                content.append({"type": "image", "attachment": refs.pop(0)})
                continue
            part = self._prompt_text([block])
            if not part:
                continue
            if content and content[-1]["type"] == "text":
                content[-1]["text"] += part
            else:
                content.append({"type": "text", "text": part})
        return content

    @staticmethod
    def _prompt_text(prompt: list[Any]) -> str:
        parts: list[str] = []
        for block in prompt:
            kind = getattr(block, "type", None)
            if kind == "text":
                parts.append(block.text)
            elif kind == "resource":
                res = block.resource
                text = getattr(res, "text", None)
                if text is not None:
                    parts.append(f'\n<file uri="{res.uri}">\n{text}\n</file>\n')
            elif kind == "resource_link":
                parts.append(f" @{block.uri} ")
            elif kind == "audio":
                parts.append(f"[{kind} omitted: this agent does not accept {kind} input]")
        return "".join(parts)

    @staticmethod
    def _title(name: str, args: dict[str, Any]) -> str:
        target = args.get("command") or args.get("file_path") or args.get("path") or args.get("pattern")
        return f"{name} {target}" if isinstance(target, str) and target else name

    def _absolute(self, sid: str, path: str) -> str:
        if os.path.isabs(path):
            return path
        cwd = self._cwds.get(sid)
        if cwd is None:
            host = self.hosts.get(sid)
            cwd = (host.session.header.get("cwd") if host is not None else None) or os.getcwd()
            self._cwds[sid] = cwd
        return os.path.normpath(os.path.join(cwd, path))

    def _updates(self, event: dict[str, Any], *, replay: bool = False, sid: str = "") -> list[Any]:
        from acp import (
            plan_entry,
            start_tool_call,
            text_block,
            tool_content,
            tool_diff_content,
            update_agent_message_text,
            update_agent_thought_text,
            update_plan,
            update_tool_call,
            update_user_message_text,
        )
        from acp.schema import ToolCallLocation

        t = event.get("type")
        data = event.get("data") or {}
        if t == "assistant/chunk" and not replay:
            chunk = data.get("chunk") or {}
            kind = chunk.get("type")
            key = (sid, data.get("turn"), data.get("step"), chunk.get("index"))
            if kind == "block-start":
                self._streamed[key] = False
            elif kind in ("text-delta", "reasoning-delta") and chunk.get("text"):
                self._streamed[key] = True
                send = update_agent_message_text if kind == "text-delta" else update_agent_thought_text
                return [send(chunk["text"])]
            elif kind == "block-end":  # a block whose text came whole (no deltas) is sent whole
                block = chunk.get("block") or {}
                if not self._streamed.pop(key, False) and isinstance(block.get("text"), str) and block["text"]:
                    if block.get("type") == "text":
                        return [update_agent_message_text(block["text"])]
                    if block.get("type") == "reasoning":
                        return [update_agent_thought_text(block["text"])]
            return []
        if t == "assistant/message" and replay:
            out: list[Any] = []  # the message's text and thought chunks, in order
            for block in (data.get("message") or {}).get("content") or []:
                if block.get("type") == "text" and block.get("text"):
                    out.append(update_agent_message_text(block["text"]))
                elif block.get("type") == "reasoning" and block.get("text"):
                    out.append(update_agent_thought_text(block["text"]))
            return out
        if t == "user/message" and replay and (data.get("source") or {}).get("kind") == "user":
            text = _text(data.get("content"))
            return [update_user_message_text(text)] if text else []
        if t == "working-directory/change" and isinstance(data.get("cwd"), str):
            self._cwds[sid] = data["cwd"]
            return []
        if t == "tool/call":
            name, raw = str(data.get("name", "")), data.get("arguments") or ""
            args = _args(raw)
            call_id = str(data.get("callId", ""))
            self._tools[call_id] = {"name": name, "args": args, "raw": raw}
            path = args.get("file_path") or args.get("path")
            # ACP's paths are absolute: a tool's relative path is the session's working directory's
            path = self._absolute(sid, path) if isinstance(path, str) and path else None
            locations = [ToolCallLocation(path=path)] if path else None
            content = None
            if name == "write" and isinstance(args.get("content"), str) and path:
                # the call is logged before it runs: a live write's old text is the file as it is now
                old = None if replay else _file_text(path)
                content = [tool_diff_content(path, args["content"], old)]
            elif name == "edit" and isinstance(path, str) and isinstance(args.get("new_string"), str):
                content = [tool_diff_content(path, args["new_string"], args.get("old_string"))]
            return [start_tool_call(call_id, self._title(name, args), kind=KINDS.get(name, "other"),
                                    status="in_progress", content=content, locations=locations, raw_input=args)]
        if t == "tool/result":
            message = data.get("message") or {}
            from dsh_tui.session.content import tool_result_block

            result = tool_result_block(message)  # v0's wrapper block or a v4 tool message
            call_id = str(result.get("toolCallId") or (message.get("source") or {}).get("callId") or "")
            text = _text(result.get("content"))
            failed = bool(result.get("isError"))
            return [update_tool_call(call_id, status="failed" if failed else "completed",
                                     content=[tool_content(text_block(text))] if text else None)]
        if t == "todo/write":
            todos = data.get("todos") or []
            entries = [plan_entry(str(td.get("content", "")), priority="medium", status=_plan_status(td.get("status")))
                       for td in todos if isinstance(td, dict)]
            return [update_plan(entries)]
        return []

    async def close(self) -> None:
        for host in list(self.hosts.values()):
            await host.close()
        self.hosts.clear()
        if self._provider is not None:
            from dsh_tui.runtime.host import close_provider

            await close_provider(self._provider)


def run(args: argparse.Namespace) -> int:
    from dsh_tui.session.errors import DshError

    try:
        import acp
    except ImportError:
        raise DshError("dsh-tui acp needs the agent-client-protocol package (pip install agent-client-protocol)") \
            from None
    if args.replay and not Path(args.replay).exists():
        raise DshError(f"replay log not found: {args.replay}")
    agent = AcpAgent(args.root, preset=args.preset, replay=args.replay)

    async def main() -> None:
        try:
            # acp's Agent protocol lists every method; its router looks each up with getattr and answers
            # method-not-found for those an agent leaves out (fork/resume/close_session, ext_*)
            await acp.run_agent(agent)  # type: ignore[arg-type]
        finally:
            await agent.close()

    asyncio.run(main())
    return 0
