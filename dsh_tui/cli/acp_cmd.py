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
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsh_tui.cli.acp_convert import KINDS, SessionUpdates, prompt_text, title

if TYPE_CHECKING:
    from acp.schema import StopReason

HELP = "serve an Agent Client Protocol agent on stdin/stdout (for editors and ACP front ends)"
MODES = (("read-only", "Read only", "Writes and shell commands ask first"),
         ("workspace-write", "Workspace write", "File changes inside the workspace run; commands ask"),
         ("full-access", "Full access", "Nothing asks"))
# A turn's end reason as a prompt's stopReason. dsh's agent answers ``end_turn`` for a turn that ended at the
# output limit (its recorded max-tokens-continue scenario); dsh-tui does the same.
STOP: dict[str, StopReason] = {"completed": "end_turn", "max-tokens": "end_turn", "aborted": "cancelled"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # not the runtime's: the parser is built before anything is imported
    from dsh_tui.cli.run_cmd import PRESETS

    parser.add_argument("--root", help="session root (default $DSH_HOME/sessions)")
    parser.add_argument("--preset", choices=PRESETS, default="workspace-write",
                        help="the permission mode new sessions start in (session/set_mode changes it)")
    parser.add_argument("--replay", metavar="FILE|DIR",
                        help="replay the model side of a recorded dsh log or scenario directory instead of calling "
                             "a model (offline; each new session replays it from the start in its own cwd)")


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
        self.updates = SessionUpdates(self._session_cwd)  # session events -> ACP updates (cli/acp_convert.py)
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
        self.updates.restart(session_id)  # folded again from the start of its history
        for event in list(host.session.events):
            for update in self.updates.of(event, replay=True, sid=session_id):
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
        text = prompt_text(prompt)
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
            for update in self.updates.of(event, sid=sid):
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
        call = self.updates.tools.get(call_id, {})
        arguments = call.get("raw", "")
        allowances = self.allowed.setdefault(sid, SessionAllowances())
        if allowances.covers(tool, arguments):
            return "allowed-once"
        await self._drain(sid)  # the tool_call the client is asked about is on its screen first
        options = [PermissionOption(option_id="allow-once", name="Allow once", kind="allow_once"),
                   PermissionOption(option_id="allow-always", name="Allow for this session", kind="allow_always"),
                   PermissionOption(option_id="reject-once", name="Reject", kind="reject_once")]
        update = ToolCallUpdate(tool_call_id=call_id, title=title(tool, call.get("args", {})),
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

    # -- prompts -----------------------------------------------------------------------------------

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
            part = prompt_text([block])
            if not part:
                continue
            if content and content[-1]["type"] == "text":
                content[-1]["text"] += part
            else:
                content.append({"type": "text", "text": part})
        return content

    def _session_cwd(self, sid: str) -> str | None:
        host = self.hosts.get(sid)
        return host.session.header.get("cwd") if host is not None else None

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
