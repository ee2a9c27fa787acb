"""The agent host: the one place that opens a session's store, builds the tools
and the agent, and closes them again.

The app (``dsh_tui.ui.harness``), ``run --headless``, ``resume --headless`` and the demo all go through
it, so the same input gives the same requests whichever way it is run. It sits below the UI and the CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh_tui.runtime.prompt import DEFAULT_PERSONA
from dsh_tui.runtime.subagent_state import SubagentState

MCP_LISTING_WAIT_S = 30.0  # a headless ``/mcp`` waits this long at most for the servers' first attempts

# -------------------------------------------------------------------------------------------------
# The one agent host: the app (``dsh_tui.ui.harness``), ``run --headless``, ``resume --headless`` and
# the demo all open their session, tools and agent here, and close them here.


@dataclass
class HostSpec:
    """How to open an agent on a session: a new one in ``root`` (``resume_id`` None) or a resumed one."""

    root: Path | str | None
    cwd: Path | None  # the agent's working directory; None on resume: the session's own
    provider: Any = None  # a dsh_tui.llm Provider; None = no model configured
    model: str = ""
    reasoning_effort: str | None = None
    preset: str = "workspace-write"
    resume_id: str | None = None
    # a resumed session keeps its own model (its last request/header's, same provider) and permission mode
    # (its last sandbox/mode, approval/policy); False: ``model`` is an explicit choice (``resume --model``)
    keep_model: bool = True
    prompts: tuple[str, ...] = ()  # the app's demo: sent one after another, each when the agent is idle
    clock: Any = None  # epoch-ms clock for the session and agent (screenshots freeze it)
    persona: str | None = DEFAULT_PERSONA  # the deployment persona section of the system prompt
    agent_options: dict[str, Any] = field(default_factory=dict)
    store: Any = None  # an already open store (else ``root``'s: ``open_session_store``)
    # Plugins: ``--plugin`` module names and plugin objects (the SDK) on top of the settings file and the
    # entry points; None = the process's options (``set_plugin_options``, from the command line).
    plugins: tuple[str, ...] | None = None
    plugin_objects: tuple[Any, ...] = ()
    strict_plugins: bool | None = None
    # ``--mcp NAME=COMMAND`` servers on top of the settings' [mcp.servers.*]; None = the process's options
    mcp: tuple[str, ...] | None = None
    on_plugin_failure: Any = None  # called with each failed (or skipped) PluginRecord (the app shows a notice)
    trust: bool | None = None  # trust the workspace (project plugins) first; None = the process's ``--trust``
    close_provider: bool = True  # close the provider with the host (the SDK keeps one across runs)
    # A subagent child (dsh_tui.extensions.subagents): header fields on top of a new session's (parentSession,
    # seedLength, origin, delegationDepth) and the seed events (a fork's parent prefix, a descriptor).
    header_fields: dict[str, Any] = field(default_factory=dict)
    seed: list[dict] | None = None
    session_format: str | None = None  # "v4" | "v0" for a new session; None: new_session_format's choice
    tool_options: dict[str, Any] = field(default_factory=dict)  # ``builtin_tools(**tool_options)``
    plugin_config: dict[str, dict[str, Any]] = field(default_factory=dict)  # built-in plugin id -> config
    # The OS sandbox for commands (docs/sandbox.md): "auto" | "bwrap" | "off"; None = the process's
    # ``--sandbox``, else ``DSH_TUI_SANDBOX``, else ``[sandbox] mode`` (default "auto").
    sandbox: str | None = None
    # an escalation out of the sandbox is allowed without asking (headless ``--allow-escalation``); None = the
    # process's option
    allow_escalation: bool | None = None
    # the session tree's subagent state (``dsh_tui.runtime.subagent_state``): a child host gets its root's;
    # None: a root host, which creates its own
    subagents: SubagentState | None = None


@dataclass
class TurnResult:
    """What one headless turn produced: the last assistant text and the turn-end reason."""

    session_id: str
    answer: str
    reason: dict[str, Any]


class AgentHost:
    """An open session with its writer, tools and agent. ``await AgentHost.open(spec)``, then ``close()``."""

    def __init__(self, spec: HostSpec, store: Any, session: Any, writer: Any, agent: Any) -> None:
        self.spec = spec
        self.store = store
        self.session = session
        self.writer = writer
        self.agent = agent
        self._closed = False
        self.sandbox: Any = None  # the ``dsh_tui.tools.sandbox.Sandbox`` commands run in, or None
        self.sandbox_note: str | None = None  # why there is none where one was asked for (one line)
        # the subagent state of this host's session tree: a root host's own, a child host's its root's
        self.subagents: SubagentState = spec.subagents if spec.subagents is not None else SubagentState()

    @classmethod
    async def open(cls, spec: HostSpec) -> AgentHost:
        from dsh_tui.runtime.agent import Agent, AgentConfig
        from dsh_tui.session.headers import make_header
        from dsh_tui.store import lifecycle
        from dsh_tui.tools import builtin_tools

        plugins = None
        if spec.cwd is not None or not spec.resume_id:  # else the workspace (project plugins) is the session's
            plugins = load_plugins(spec, spec.cwd or Path.cwd())
            plugins.prepare()  # imports and configs: a broken plugin (with --strict-plugins) stops before a write
        sandbox, sandbox_note = None, None
        if "sandbox" not in spec.tool_options:
            from dsh_tui.runtime import sandboxing

            sandbox, sandbox_note = await asyncio.to_thread(sandboxing.resolve, spec.sandbox)
            if sandbox is not None:  # dsh advertises the escalation fields under a sandboxing executor
                spec.tool_options = {**spec.tool_options, "sandbox": sandbox, "escalation": True}
            if spec.allow_escalation is None:
                spec.allow_escalation = sandboxing.process_allows_escalation()
        else:
            sandbox = spec.tool_options["sandbox"]
        store = spec.store if spec.store is not None else open_session_store(spec.root)
        if spec.resume_id:
            session, writer = await asyncio.to_thread(lifecycle.resume, store, spec.resume_id, spec.clock)
        else:
            fields = dict(spec.header_fields)
            parent = fields.pop("parentSession", None)
            # format v4 (dsh 0.2's) for a new top-level JSONL session unless [storage] format = "v0"; subagent
            # children and SQLite stores stay v0 (docs/format.md, "Format v4")
            version = 4 if parent is None and new_session_format(store, spec.session_format) == "v4" else 0
            new_cwd = spec.cwd if spec.cwd is not None else Path.cwd()  # none given: this process's
            header = make_header(str(fields.pop("id", None) or uuid.uuid4()), cwd=_text_cwd(new_cwd),
                                 created_at=spec.clock() if spec.clock else None,
                                 parent_session=parent,
                                 seed_length=fields.pop("seedLength", None), origin=fields.pop("origin", None),
                                 delegation_depth=fields.pop("delegationDepth", 0), version=version)
            session, writer = await asyncio.to_thread(lifecycle.start, store, header, clock=spec.clock,
                                                      seed=spec.seed)
        cwd = spec.cwd if spec.cwd is not None else (session.header.get("cwd") or os.getcwd())
        host = cls(spec, store, session, writer, None)
        host.sandbox, host.sandbox_note = sandbox, sandbox_note
        try:
            if plugins is None:
                plugins = load_plugins(spec, cwd)
                plugins.prepare()
            options = dict(spec.agent_options)
            if spec.allow_escalation:
                options["allow_escalation"] = True
            config = AgentConfig(provider=getattr(spec.provider, "name", "") or "", model=spec.model,
                                 reasoning_effort=spec.reasoning_effort, preset=spec.preset, cwd=cwd,
                                 persona=spec.persona, **options)
            agent = Agent(session, spec.provider, builtin_tools(**spec.tool_options), config=config,
                          checkpoint=writer.checkpoint, clock=spec.clock, plugins=plugins, host=host)
        except BaseException:
            await asyncio.to_thread(writer.close)
            raise
        agent.store = store  # /fork copies the committed log from it
        if spec.resume_id:
            from dsh_tui.runtime import permissions

            permissions.restore(agent)
            if spec.keep_model:
                keep_session_model(agent)
        host.agent = agent
        if agent.mcp is not None:  # servers with fail_on_startup_error: their first attempt must succeed
            try:
                await agent.mcp.startup()
            except BaseException:
                await host.close()
                raise
        return host

    async def run_turn(self, prompt: str | list, *, settle: bool = False) -> TurnResult:
        """One turn with ``prompt`` (headless): waits until the agent is idle again. ``settle``: also until
        every subagent it started has settled and the turns their notices start have ended (the answer is
        then the last one). Commands are interactive only, except that a prompt that is exactly ``/compact``
        compacts, ``/mcp [...]`` lists the MCP servers once each has made its first attempt and ``/hooks``
        the active hooks (the reply is the answer). ``prompt`` may be a list of content blocks (the SDK's ``run``), never a command."""
        command = prompt.strip() if isinstance(prompt, str) else ""
        if (command in ("/compact", "/hooks") or command.split(maxsplit=1)[:1] == ["/mcp"]) and \
                self.agent.commands.get(command.split()[0][1:]) is not None:
            if command.startswith("/mcp") and self.agent.mcp is not None:
                await self.agent.mcp.first_attempts(MCP_LISTING_WAIT_S)
            done = await self.agent.commands.run(self.agent, command)
            if done is not None:
                reason = {"kind": "completed"} if done.kind == "success" else \
                    {"kind": "error", "error": {"message": done.text, "code": "COMMAND_FAILED"}}
                return TurnResult(self.session.header["id"], done.text if done.kind == "success" else "", reason)
        start = len(self.session.events)
        self.agent.followup(prompt)
        await asyncio.sleep(0)
        await self.agent.wait_idle()
        if settle:
            await self._settle()
        await self.flush()
        return self.turn_result(start)

    async def _settle(self, timeout: float = 600.0) -> None:
        """Wait until the agent is idle with nothing queued, and with the subagents built-in until every child
        below it has settled too (its ``agent.settle_children``)."""
        settle_children = getattr(self.agent, "settle_children", None)
        if settle_children is not None:
            await settle_children(timeout)
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:  # no subagents: the same wait, for the agent alone
            await self.agent.wait_idle()
            await asyncio.sleep(0)
            if self.agent.status == "idle" and not self.agent.inbox.pending():
                return
            if loop.time() > deadline:
                raise TimeoutError("subagents did not settle")
            await asyncio.sleep(0.001)

    def turn_result(self, start: int) -> TurnResult:
        """The last answer and turn-end reason among the session's events from ``start`` on."""
        answer, reason = "", {"kind": "none"}
        for e in self.session.events[start:]:
            if e["type"] == "assistant/message":
                text = "".join(b.get("text", "") for b in e["data"]["message"].get("content", [])
                               if b.get("type") == "text")
                if text:
                    answer = text
            elif e["type"] == "turn/end":
                reason = e["data"].get("reason") or {"kind": "none"}
        return TurnResult(self.session.header["id"], answer, reason)

    async def run_turn_until_signal(self, prompt: str | list, signals: Any, *,
                                    settle: bool = False) -> TurnResult:
        """``run_turn``, but a signal of ``signals`` (an entered ``dsh_tui.tools.procs.ExitSignals``: SIGINT,
        SIGTERM, SIGHUP) ends it: the running turn is cancelled (``turn/end`` aborted, cause ``user``; a
        foreground subagent's run with it) and nothing more is waited for (background subagents are
        disposed when the host closes)."""
        if signals.got:
            return TurnResult(self.session.header["id"], "", {"kind": "aborted", "reason": {"kind": "user"}})
        off = signals.on_signal(lambda _signum: self.agent.cancel({"kind": "user"}))
        start = len(self.session.events)
        turn = asyncio.ensure_future(self.run_turn(prompt, settle=settle))
        stopping = asyncio.ensure_future(signals.event.wait())
        try:
            await asyncio.wait({turn, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if turn.done():
                return turn.result()
            try:  # the cancelled turn ends at its next check (a tool's process group is killed at once)
                await asyncio.wait_for(asyncio.shield(self.agent.wait_idle()), 30)
            except TimeoutError:
                pass
            turn.cancel()
            with contextlib.suppress(BaseException):
                await turn
            return self.turn_result(start)
        finally:
            stopping.cancel()
            off()

    async def flush(self) -> None:
        """Wait for work plugins run beside the turn (``session/flush``: the pending LLM title request)."""
        try:
            await self.agent.bus.parallel("session/flush", {"agent": self.agent}, scope=self.agent.id)
        except Exception:  # noqa: BLE001 - a failing flush listener must not lose the turn's result
            pass

    async def close(self) -> None:
        """Cancel a running turn, dispose the agent, flush and close the writer, close the provider."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.agent.status == "running":
                self.agent.cancel({"kind": "disposed"})
            await asyncio.wait_for(self.agent.wait_idle(), 10)
        except Exception:  # noqa: BLE001 - closing must reach the writer
            pass
        try:
            await self.agent.dispose()
        except Exception:  # noqa: BLE001
            pass
        try:
            await asyncio.to_thread(self.writer.close)
        finally:
            if self.spec.close_provider:
                await close_provider(self.agent.provider)


def keep_session_model(agent: Any) -> None:
    """Use the model the session last requested (its ``request/header``) when it is on the same provider:
    ``/model`` in an earlier run is what the log records (dsh logs a model change only as the next step's
    request header), so a resumed session goes on with it."""
    prior = agent.session.request_header()
    config = (prior or {}).get("config") or {}
    if config.get("model") and config.get("provider") == agent.config.provider:
        agent.config.model = config["model"]
        if config.get("reasoningEffort") and not (prior.get("adapterDefaults") or {}).get("reasoningEffort"):
            agent.config.reasoning_effort = config["reasoningEffort"]


_PROCESS_PLUGINS: dict[str, Any] = {"modules": (), "strict": False, "check_requests": False, "mcp": (),
                                    "trust": False}


def set_plugin_options(modules: tuple[str, ...] = (), strict: bool = False, check_requests: bool = False,
                       mcp: tuple[str, ...] = (), trust: bool = False) -> None:
    """The command line's ``--plugin``/``--strict-plugins``/``--check-requests``/``--mcp``/``--trust``: every
    agent this process opens (``run``, ``resume``, sessions opened from the browser, the demo) gets them."""
    _PROCESS_PLUGINS.update(modules=tuple(modules), strict=bool(strict), check_requests=bool(check_requests),
                            mcp=tuple(mcp), trust=bool(trust))
    if check_requests:
        os.environ["DSH_TUI_CHECK_REQUESTS"] = "1"


def _text_cwd(cwd: Path | str) -> str:
    """The new session's cwd for its header: refused (``UsageError``, before anything is written) when its
    name is not UTF-8, which a log cannot hold losslessly (the app's browser, the SDK and ``run`` alike)."""
    from dsh_tui.session.errors import UsageError

    text = os.fspath(Path(cwd).resolve())
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        shown = os.fsencode(text).decode("utf-8", "backslashreplace")
        raise UsageError(f"the working directory {shown} is not valid UTF-8 (byte "
                         f"{os.fsencode(text[err.start:err.end])[:1].hex()} at character {err.start}); "
                         "nothing was written") from None
    return text


def new_session_format(store: Any, explicit: str | None = None) -> str:
    """``v4`` or ``v0``: an explicit choice, else ``$DSH_TUI_SESSION_FORMAT``, else the ``[storage] format``
    setting, else ``v4`` (dsh 0.2's format, the default: the newest dsh opens it as it is; docs/storage.md); a
    SQLite store always ``v0`` (dsh's SQLite schema holds format 0)."""
    from dsh_tui.store.jsonl import JsonlStore

    if not isinstance(store, JsonlStore):
        return "v0"
    choice = explicit or os.environ.get("DSH_TUI_SESSION_FORMAT") or None
    if choice is None:
        from dsh_tui.config import load_settings

        try:
            choice = load_settings().storage().format
        except Exception:  # noqa: BLE001 - a broken settings file is reported where it is read for the model
            choice = None
    return "v0" if choice == "v0" else "v4"


def open_session_store(root: Path | str | None) -> Any:
    """The store of ``root`` with the backend chosen by ``dsh_tui.store.open``, the ``[storage]`` settings
    as its configured defaults (read here: the store layer reads no settings file)."""
    from dsh_tui.config import load_settings
    from dsh_tui.store.open import open_store

    storage = load_settings().storage()
    return open_store(root, default_backend=storage.backend, default_compression=storage.compression)


def trust_requested() -> bool:
    """The command line's ``--trust`` (``set_plugin_options``): trust the workspaces this process opens."""
    return bool(_PROCESS_PLUGINS["trust"])


_REPORTED_SKIPS: set[str] = set()  # a skipped project plugin is reported once per process (not per subagent)


def report_plugin_failure(record: Any) -> None:
    """The command line's report of a plugin that failed to load (or a project plugin skipped in a workspace
    not trusted): one line on stderr."""
    import sys

    if record.state == "skipped":
        if record.target in _REPORTED_SKIPS:
            return
        _REPORTED_SKIPS.add(record.target)
        print(f"dsh-tui: project plugin {record.id} ({record.target}) skipped: {record.error}", file=sys.stderr)
        return
    print(f"dsh-tui: plugin {record.id} ({record.source}) failed to load: {record.error}", file=sys.stderr)


def plugin_specs(modules: tuple[str, ...] = (), objects: tuple[Any, ...] = (),
                 workspace: Path | str | None = None, trusted: bool | None = None) -> list[Any]:
    """Every plugin the settings file, the entry points, ``workspace``'s project plugins (if trusted),
    ``modules`` and ``objects`` name (load order)."""
    from dsh_tui.config import load_settings
    from dsh_tui.runtime.plugins import discover

    return discover(load_settings(), modules, objects, workspace=workspace, trusted=trusted)


def load_plugins(spec: HostSpec, workspace: Path | str | None = None) -> Any:
    """The ``Plugins`` of a new agent (applied by the agent before ``agent/created``); ``workspace``: its
    working directory (project plugins). ``--trust`` (``spec.trust``) trusts it first if it needs trust."""
    from dsh_tui.runtime.plugins import Plugins

    modules = spec.plugins if spec.plugins is not None else _PROCESS_PLUGINS["modules"]
    strict = spec.strict_plugins if spec.strict_plugins is not None else _PROCESS_PLUGINS["strict"]
    mcp = spec.mcp if spec.mcp is not None else _PROCESS_PLUGINS["mcp"]
    trust_it = spec.trust if spec.trust is not None else _PROCESS_PLUGINS["trust"]
    if trust_it and workspace is not None:
        from dsh_tui.config import trust

        if trust.needs_trust(workspace) and not trust.is_trusted(workspace):
            try:
                trust.trust(workspace)
            except OSError as err:  # still trusted for this process, as asked
                import sys

                print(f"dsh-tui: could not remember the workspace as trusted: {err}", file=sys.stderr)
    specs = plugin_specs(tuple(modules), tuple(spec.plugin_objects), workspace, trusted=True if trust_it else None)
    for ps in specs:
        if ps.source == "builtin" and ps.id in spec.plugin_config:
            config = dict(spec.plugin_config[ps.id])
            enabled = config.pop("enabled", None)
            if isinstance(enabled, bool):  # false turns a built-in off, true turns an off-by-default one on
                ps.enabled = enabled
            ps.config = {**ps.config, **config}
        if mcp and ps.id == "mcp" and ps.source == "builtin":
            ps.config = {**ps.config, "cli": tuple(mcp)}
    return Plugins(specs, strict=strict, on_failure=spec.on_plugin_failure or report_plugin_failure)


async def close_provider(provider: Any) -> None:
    """Release the provider's connections (``aclose``); errors are not fatal."""
    aclose = getattr(provider, "aclose", None)
    if aclose is None:
        return
    try:
        await asyncio.wait_for(aclose(), 5)
    except Exception:  # noqa: BLE001 - shutting down: a provider that cannot close must not block quit
        pass
