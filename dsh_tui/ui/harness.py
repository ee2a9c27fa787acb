"""The real harness behind the chat screen: store + writer + Agent + tools, on the harness thread.

``open_harness(bridge, spec)`` is a bridge factory (it runs on the harness loop). It opens the session
and its agent through the agent host (``dsh_tui.runtime.host``, as ``run``/``resume --headless`` do),
forwards ``agent/status`` / ``agent/error`` to the UI as typed messages (``dsh_tui.harness_messages``:
``StatusChanged``, ``TurnFailed``, ...) and routes ``approval/request`` to the UI as ``ApprovalAsked`` (a
``concurrent.futures.Future`` the approval panel resolves with an ``ApprovalOutcome``). The UI thread reads
it only through the thread-safe reads of ``dsh_tui.ui.bridge.SessionBackend`` (copies, never the live agent).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from dsh_tui.harness_messages import (
    ApprovalClosed,
    ApprovalOutcome,
    BackendFailed,
    ModelChanged,
    Notice,
    PhaseChanged,
    PluginFailed,
    PresetChanged,
    QuestionClosed,
    SandboxChanged,
    StatusChanged,
    SubagentSnapshot,
    TurnFailed,
)
from dsh_tui.runtime.bus import BUILTIN
from dsh_tui.runtime.host import AgentHost, HostSpec
from dsh_tui.runtime.permissions import SessionAllowances
from dsh_tui.ui.bridge import BackendDefaults, Bridge

# How to open the chat's session: the agent host's spec (root, cwd, provider, model, resume id, ...).
HarnessSpec = HostSpec


class AgentHarness(BackendDefaults):
    """What the bridge drives (see ``dsh_tui.ui.bridge.SessionBackend``)."""

    def __init__(self, bridge: Bridge, host: AgentHost) -> None:
        self.bridge = bridge
        self.host = host
        self.session = host.session
        self.writer = host.writer
        self.agent = agent = host.agent
        self._offs: list[Any] = []
        # ``!command`` results the model gets just before the next message (``shell``)
        self.shell_context: list[dict[str, Any]] = []
        self._closed = False
        self._script: asyncio.Task | None = None
        self.root: Path | None = None  # the session root (a resume hint names it when it is not the default)
        on = agent.on
        self._offs.append(on("agent/status", lambda p: bridge.announce(StatusChanged(str(p.get("status"))))))
        self._offs.append(on("agent/error", self._on_error))
        # the host's answerer is built-in behaviour: a user plugin's approval/request listener runs first
        self._offs.append(on("approval/request", self._on_approval, tier=BUILTIN))
        # ask_user_question and the plan review: the question panel answers (dsh_tui/runtime/questions.py)
        self._offs.append(on("user-questions/request", self._on_question, tier=BUILTIN))
        # "allow for this session" answers (dsh logs no scope: they live here, for this open session)
        self.allowances = SessionAllowances()
        from dsh_tui.runtime.permissions import logged_allowances

        for tool, arguments in logged_allowances(self.session.events):  # a resumed session's allowances
            self.allowances.add(tool, arguments)
        # subagents below this agent (its host's subagent state): their live state for the cards and the status bar
        self.subagents = host.subagents
        self._offs.append(self.subagents.watch(self._on_child))
        self.announce_model()
        self.announce_preset()
        if host.sandbox_note:  # one clear line: no sandbox here, and what happens instead
            bridge.announce(Notice(host.sandbox_note))
        if getattr(agent, "mcp", None) is not None:  # the first request waits for the servers: say which
            agent.mcp.on_wait = lambda names: bridge.announce(PhaseChanged(
                f"connecting MCP {', '.join(names)}" if names else "waiting"))
            agent.mcp.on_report = lambda text: bridge.announce(Notice(text))  # e.g. a server needs a login

    def _on_child(self, child: Any) -> None:
        """A subagent below this agent changed: post its snapshot (at most one per child per loop turn)."""
        pid, seen = child.parent_id, set()
        while pid != self.agent.id:
            parent = self.subagents.children.get(pid)
            if parent is None or pid in seen:
                return
            seen.add(pid)
            pid = parent.parent_id
        pending = self.__dict__.setdefault("_child_pending", set())
        if child.id in pending:
            return
        pending.add(child.id)

        def post() -> None:
            pending.discard(child.id)
            from dsh_tui.extensions.subagents.children import snapshot

            self.bridge.announce(SubagentSnapshot(snapshot(child)))

        asyncio.get_running_loop().call_soon(post)

    def child_spans(self) -> list[dict[str, Any]]:
        """The direct children of this agent for the timeline: id, spawning call id, label, their first
        turn's start and last turn's end (epoch ms; end None while running) and the last turn-end kind."""
        out = []
        for child in list(self.subagents.children.values()):
            if child.parent_id != self.agent.id or child.session is None:
                continue
            start = end = state = None
            for e in list(child.session.events):
                if e.get("type") == "turn/start" and start is None:
                    start = e.get("time")
                elif e.get("type") == "turn/end":
                    end, state = e.get("time"), (e.get("data", {}).get("reason") or {}).get("kind")
            if start is None:
                continue
            running = child.agent is not None and child.agent.status == "running"
            out.append({"id": child.id, "callId": child.call_id, "label": child.label, "start": start,
                        "end": None if running else end, "state": None if running else state})
        return out

    def child_session(self, child_id: str) -> Any:
        """The session of a subagent below this agent (live or settled), or None."""
        child = self.subagents.children.get(child_id)
        return child.session if child is not None else None

    # -- thread-safe reads for the UI thread (``dsh_tui.ui.bridge.SessionBackend``): copies and plain values ----------
    def live(self) -> bool:
        return True

    def store_root(self) -> Path | None:
        root = getattr(self.writer.store, "root", None)
        return Path(root) if root else None

    def resume_point(self) -> tuple[str, Path | None] | None:
        if not self.session.events:
            return None  # nothing was written: there is no session to resume
        sid = self.session_id()
        return (sid, self.root) if sid else None

    def cwd(self) -> str | None:
        cwd = self.agent.config.cwd
        return str(cwd) if cwd is not None else super().cwd()

    def preset(self) -> str:
        return str(self.agent.config.preset or "")

    def commands(self) -> Any:
        return getattr(self.agent, "commands", None)

    def skills(self) -> list[tuple[str, str]]:
        service = getattr(self.agent, "skills", None)
        if service is None:
            return []
        try:
            return [(s.name, " ".join(s.description.split())) for s in service.discover() if s.user_invocable]
        except Exception:  # noqa: BLE001 - a broken skill folder: complete the commands anyway
            return []

    def terminals(self) -> Any:
        return getattr(self.agent, "terminals", None)

    def provider(self) -> Any:
        return self.agent.provider

    def provider_name(self) -> str:
        return str(self.agent.config.provider or "")

    def model_efforts(self) -> tuple[str | None, tuple[str, ...]]:
        model = self.agent.config.model
        try:
            return model, tuple(self.agent.provider.resolve_model(model).efforts)
        except Exception:  # noqa: BLE001 - a model the provider does not describe: no effort choices
            return model, ()

    def handover_spec(self, action: dict[str, Any]) -> HarnessSpec | None:
        """``/new`` (a new session in the same root and cwd) or ``/fork`` (``action["child"]``, resumed) on this
        session's provider and model, handed over (closing this harness does not close the provider). None:
        no provider to hand over."""
        agent, host = self.agent, self.host
        if agent.provider is None:
            return None
        host.spec.close_provider = False
        cfg = agent.config
        return HarnessSpec(root=host.spec.root, cwd=Path(str(cfg.cwd)), provider=agent.provider, model=cfg.model,
                           reasoning_effort=cfg.reasoning_effort, preset=cfg.preset,
                           resume_id=action.get("child") if action.get("kind") == "fork" else None,
                           keep_model=False)  # the live session's model goes on in the fork

    def announce_model(self) -> None:
        """Tell the UI the route the next request uses (the status bar shows it before any turn)."""
        cfg = self.agent.config
        effort = cfg.reasoning_effort
        if effort is None:
            resolve = getattr(self.agent.provider, "resolve_model", None)
            try:
                effort = resolve(cfg.model).default_effort if resolve is not None and cfg.model else None
            except Exception:  # noqa: BLE001 - the effort is a nicety of the status bar
                effort = None
        self.bridge.announce(ModelChanged(cfg.provider, cfg.model, effort))

    def _on_error(self, payload: dict[str, Any]) -> None:
        error = payload.get("error") or {}
        # a turn's error is on its footer too: TurnFailed is shown in the status bar, not toasted again
        kind = TurnFailed if payload.get("turn") else BackendFailed
        if isinstance(error, dict):
            self.bridge.announce(kind(f"{error.get('code', 'UNKNOWN')}: {error.get('message', '')}"))
        else:
            self.bridge.announce(kind(str(error)))

    async def _on_approval(self, payload: dict[str, Any], _next: Any = None) -> str | dict[str, Any]:
        call_id = payload.get("callId")
        arguments = ""
        for event in reversed(self.session.events):
            if event.get("type") == "tool/call" and event.get("data", {}).get("callId") == call_id:
                arguments = event["data"].get("arguments") or ""
                break
        tool = str(payload.get("toolName") or "?")
        if self.allowances.covers(tool, arguments):  # allowed for this session in the approval panel
            return "allowed-once"
        request = self.bridge.ask_approval(tool, arguments, str(payload.get("reason") or ""), call_id)
        signal = payload.get("signal")
        waiter = asyncio.wrap_future(request.future)
        if signal is not None and hasattr(signal, "race"):
            try:
                outcome = await signal.race(waiter)
            finally:
                # not answered by the UI (the race cancels the waiter, and with it the future): close the panel
                if not request.future.done() or request.future.cancelled():
                    request.future.cancel()
                    self.bridge.announce(ApprovalClosed(request))
        else:
            outcome = await waiter
        if not isinstance(outcome, ApprovalOutcome):  # the UI answers with one; anything else is refused
            outcome = ApprovalOutcome("rejected")
        if outcome.scope == "session":
            self.allowances.add(tool, arguments)
        return outcome.wire()  # the runtime logs a session scope (dsh_tui/runtime/approval.py)

    async def _on_question(self, payload: dict[str, Any], _next: Any = None) -> dict:
        from dsh_tui.runtime.questions import QuestionCancelled

        request = self.bridge.ask_question(list(payload.get("questions") or []), payload.get("callId"))
        signal = payload.get("signal")
        waiter = asyncio.wrap_future(request.future)
        try:
            answer = await (signal.race(waiter) if signal is not None and hasattr(signal, "race") else waiter)
        finally:
            if not request.future.done() or request.future.cancelled():  # not answered: close the panel
                request.future.cancel()
                self.bridge.announce(QuestionClosed(request))
        if answer is None:
            raise QuestionCancelled("the user cancelled ask_user_question")
        return answer

    async def set_plan_mode(self, active: bool) -> str:
        """Enter or leave plan mode (the key binding; ``/plan`` is the command): dsh's outcome word."""
        from dsh_tui.extensions.planmode import set_plan_mode

        return set_plan_mode(self.agent, active)

    async def send(self, text: str, mode: str, images: bool = True) -> None:
        """``images``: image files the prompt names go with it (unless the ``images`` built-in is off); False
        when the user chose to send the text alone."""
        from dsh_tui.extensions.images.prompt import find_images, prompt_content

        content: Any = text
        if images and not self.agent.plugins.disabled("images") and find_images(text, self.agent.config.cwd):
            content = await asyncio.to_thread(prompt_content, text, self.agent.config.cwd)
        put = self.agent.steer if mode == "steer" else self.agent.followup
        context, self.shell_context = self.shell_context, []
        if context:  # the user's ``!command``s and their output, then the message: one user message
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            put({"role": "user", "content": [*(b for m in context for b in m["content"]), *blocks]})
            return
        put(content)

    def images_enabled(self) -> bool:
        """Whether prompts take image attachments: the ``images`` built-in plugin is on."""
        return not self.agent.plugins.disabled("images")

    def image_route(self) -> tuple[str, bool]:
        """(model, whether it takes images): the composer asks before sending a prompt naming images."""
        model = self.agent.config.model
        try:
            info = self.agent.provider.resolve_model(model) if self.agent.provider is not None else None
        except Exception:  # noqa: BLE001 - unknown: treated as text-only
            info = None
        return model, bool(info is not None and getattr(info, "takes_images", False))

    async def set_model(self, model: str, effort: str | None = None) -> None:
        """Use ``model`` (and ``effort``, if given) from the next request on (logged as a ``request/header``
        change)."""
        self.agent.config.model = model
        if effort is not None:
            self.agent.config.reasoning_effort = effort
        self.announce_model()

    # -- turn control (dsh_tui/runtime/permissions.py, dsh_tui/runtime/turns.py) ---------------------
    def announce_preset(self) -> None:
        self.bridge.announce(PresetChanged(str(self.agent.config.preset or "")))
        self.bridge.announce(SandboxChanged(self.sandbox_label()))

    def sandbox_label(self) -> str:
        """What the status bar says of the OS sandbox: "sandbox" (commands run in it), "no sandbox" (one was
        asked for but cannot run here, or full access runs them unconfined), "" (turned off in the settings)."""
        if self.host.sandbox is not None:
            return "no sandbox" if self.agent.config.preset == "full-access" else "sandbox"
        return "no sandbox" if self.host.sandbox_note else ""

    async def set_preset(self, preset: str) -> str:
        """Switch the permission mode (logged as dsh logs ``/permission``); the next tool call obeys it."""
        from dsh_tui.runtime.permissions import set_preset

        preset = set_preset(self.agent, preset)
        self.announce_preset()
        return preset

    async def rewind(self, turn: int, files: bool = False, force: bool = False) -> str:
        """Fork this session just before ``turn`` (what is committed on disk); returns the child's id.
        ``files``: first put back the files the turns from ``turn`` on changed (``force``: also those changed
        since; else such files refuse the whole rewind)."""
        from dsh_tui.runtime.turns import fork_before_turn

        if files:
            await self.undo_files(turn, force)
        if self.agent.checkpoint is not None:
            await self.agent.checkpoint("fork")
        child = await asyncio.to_thread(fork_before_turn, self.host.store, self.session.id, turn)
        return str(child["id"])

    async def undo_files(self, turn: int | None, force: bool = False) -> str:
        """``/undo`` after the user said yes (and rewind "conversation and files"): the files put back, the undo
        in the log. Returns the line to show."""
        from dsh_tui.extensions.undo import undo_files

        turns, done = await undo_files(self.agent, turn, force=force)
        await self.writer.aflush()
        what = f"turn {turns[0]}" if len(turns) == 1 else f"turns {turns[0]}–{turns[-1]}"
        return f"Undid {what}: {len(done)} file{'s' if len(done) != 1 else ''} put back."

    async def set_title(self, text: str) -> dict:
        """Rename the open session (``n`` in the browser, ``/title``): a ``source: user`` title, appended by
        the live session (its log is locked by this process), which pins it."""
        from dsh_tui.extensions.titles import set_user_title

        event = set_user_title(self.session, text)
        await self.writer.aflush()  # on disk before the browser re-reads its rows
        return event

    async def cancel(self) -> None:
        self.agent.cancel({"kind": "user"})

    async def mcp_servers(self) -> list[Any]:
        """The ``/mcp`` listing (``dsh_tui.extensions.mcp.servers``), read on the harness loop."""
        from dsh_tui.extensions.mcp import servers

        return servers(self.agent)

    async def mcp_reconnect(self, name: str) -> bool:
        from dsh_tui.extensions.mcp import reconnect

        return reconnect(self.agent, name)

    async def run_command(self, text: str) -> Any:
        """Run a slash command (``dsh_tui.runtime.commands``); a ``CommandResult`` or None (not a command).
        The UI acts on ``result.action`` (a new session, the forked child, an export, the model)."""
        result = await self.agent.commands.run(self.agent, text)
        if result is None:
            return None
        action = result.action or {}
        if action.get("kind") == "model":
            self.announce_model()
        elif action.get("kind") == "preset":
            self.announce_preset()
        return result

    async def shell(self, command: str) -> Any:
        """``!command``: run it as the user; its output goes to the model with the next prompt
        (``dsh_tui.runtime.shellmode``). A ``ShellResult``."""
        from dsh_tui.runtime import shellmode

        result = await shellmode.run(command, str(self.agent.config.cwd or "."))
        self.shell_context.append(result.message())
        return result

    async def play(self, prompts: tuple[str, ...]) -> None:
        """Send each prompt once the agent is idle (the demo tour)."""
        for prompt in prompts:
            await self.agent.wait_idle()
            if self._closed:
                return
            self.agent.followup(prompt)
            await asyncio.sleep(0)
        await self.agent.wait_idle()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._script is not None:
            self._script.cancel()
        try:
            await self.host.close()
        finally:
            for off in self._offs:
                off()


_DECLINED: set[str] = set()  # workspaces the user chose not to trust in this process: not asked again


async def ask_trust(bridge: Bridge, spec: HarnessSpec) -> None:
    """A workspace with something that runs only once trusted (project plugins) and not trusted yet: ask the
    user once (the approval panel: keys typed for the composer never answer it). Trusted: remembered
    (``dsh_tui.config.trust``); declined: its project plugins are skipped (a notice says so), not asked again
    in this process. ``--trust`` trusts without asking (``load_plugins``)."""
    from dsh_tui.config import trust
    from dsh_tui.runtime.host import trust_requested

    if spec.cwd is None or spec.trust is not None or trust_requested():
        return
    root = str(Path(spec.cwd).resolve())
    if root in _DECLINED:
        return
    needs = await asyncio.to_thread(trust.needs_trust, root)
    if not needs or await asyncio.to_thread(trust.is_trusted, root):
        return
    request = bridge.ask_trust(root, needs)
    try:
        outcome = await asyncio.wrap_future(request.future)
    finally:
        bridge.announce(ApprovalClosed(request))
    if isinstance(outcome, ApprovalOutcome) and outcome.allowed:
        try:
            await asyncio.to_thread(trust.trust, root)
        except OSError as err:
            bridge.announce(PluginFailed(f"could not remember the workspace as trusted: {err}"))
        spec.trust = True  # this session loads them, as answered (even if it could not be remembered)
    else:
        _DECLINED.add(root)


async def open_harness(bridge: Bridge, spec: HarnessSpec) -> AgentHarness:
    """Bridge factory: start (or resume) the session and its agent on the harness loop (the agent host)."""
    if spec.on_plugin_failure is None:  # a plugin that fails to load is a notice in the app (the session
        said: set[str] = set()

        def report(record: Any) -> None:  # the session still opens: a notice, no note over the composer
            if record.state != "skipped":
                bridge.announce(PluginFailed(f"plugin {record.id}: {record.error}"))
            elif record.error not in said:  # one notice for all the workspace's project plugins
                said.add(record.error)
                bridge.announce(Notice(f"project plugins skipped: {record.error}"))

        spec.on_plugin_failure = report
    await ask_trust(bridge, spec)
    from dsh_tui.runtime.pluginlog import add_notices  # ctx.log: the file, and warnings as notices

    off_logs = add_notices(lambda level, text: bridge.announce(PluginFailed(text) if level >= 40 else Notice(text)))
    # a human answers here: dsh's ask_user_question is offered (headless has no such tool)
    spec.plugin_config = {**spec.plugin_config, "ask-user": {**spec.plugin_config.get("ask-user", {}),
                                                            "interactive": True}}
    try:
        harness = AgentHarness(bridge, await AgentHost.open(spec))
    except BaseException:
        off_logs()
        raise
    harness._offs.append(off_logs)
    harness.root = Path(spec.root) if spec.root is not None else None
    if spec.prompts:
        harness._script = asyncio.ensure_future(harness.play(spec.prompts))
    return harness
