"""The agent: inbox, phase machine and the turn / step driver
(docs/runtime.md, "Turns and steps: the driver").

One ``Agent`` drives one ``Session`` inside one asyncio loop. Every request is derived from the log:
messages are ``session.derive_messages()``; config, system prompt and tools are the latest
``request/header``. The driver is written literally after the TypeScript ``turn()`` / ``step()``
including its abort checkpoints; the synchronous prefix of a turn (``turn/start`` and the first claim)
runs inline in the waking ``send()`` (JS runs an async function synchronously up to its first await).

One phase machine (inbox, phase, abort signal, the turn and step driver) whose methods share that state and
follow dsh's ``turn()`` / ``step()`` branch for branch. One concept a module around it: ``agent_config.py``,
``request.py`` (seed config, ``request/header`` rows, the request invariant), ``model_call.py`` (a step's
streamed model call), ``failures.py``, ``prompt.default_assembly``, ``inbox.user_message``, the tool
service, scheduler, retry and compaction. ``AgentConfig`` and ``user_message`` stay importable from here.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any

from dsh_tui.llm.protocol import ABORTED, UNKNOWN, Provider
from dsh_tui.runtime import model_call
from dsh_tui.runtime import prompt as prompt_mod
from dsh_tui.runtime.agent_config import AgentConfig
from dsh_tui.runtime.approval import PRESETS, ApprovalService
from dsh_tui.runtime.bus import USER, EventBus
from dsh_tui.runtime.commands import CommandRegistry
from dsh_tui.runtime.failures import FailureError, to_failure
from dsh_tui.runtime.inbox import NEXT_STEP, NEXT_TURN, Inbox, user_message
from dsh_tui.runtime.plugins import Plugins
from dsh_tui.runtime.request import RequestRecord
from dsh_tui.runtime.scheduler import Scheduler
from dsh_tui.runtime.signal import AbortError, AbortSignal
from dsh_tui.runtime.tool_calls import rename_duplicate_call_ids
from dsh_tui.runtime.tools import ToolService
from dsh_tui.session.errors import DshError
from dsh_tui.tools.base import ToolDefinition
from dsh_tui.tools.common import private_dir

log = logging.getLogger("dsh_tui.runtime.agent")

IDLE = "idle"
RUNNING = "running"
MAINTENANCE = "maintenance"
COMPACTION_OFF = "compaction is turned off ([plugins.compaction] enabled = false)"


class _TurnState:
    __slots__ = ("turn", "opened", "claimed", "exc")

    def __init__(self) -> None:
        self.turn = 0
        self.opened = False
        self.claimed: list[dict] = []
        self.exc: BaseException | None = None


class Agent:
    """See ``dsh_tui.runtime`` for the public API."""

    def __init__(
        self,
        session: Any,
        provider: Provider | None,
        tools: list[ToolDefinition] | None = None,
        *,
        config: AgentConfig | None = None,
        checkpoint: Callable[[str], Awaitable[Any]] | None = None,
        clock: Callable[[], int] | None = None,
        sleep: Callable[[float], Awaitable[Any]] | None = None,
        bus: EventBus | None = None,
        plugins: Plugins | None = None,
        host: Any = None,
    ) -> None:
        self.session = session
        self.provider = provider
        self.config = config or AgentConfig()
        if self.config.preset not in PRESETS:
            raise DshError(f"unknown preset {self.config.preset!r} (expected one of {', '.join(PRESETS)})")
        if provider is not None and not self.config.provider:
            self.config.provider = getattr(provider, "name", "") or ""
        if self.config.cwd is None:
            self.config.cwd = getattr(session, "cwd", None) or os.getcwd()
        self.checkpoint = checkpoint
        self.clock = clock or (lambda: int(time.time() * 1000))
        self.sleep = sleep or asyncio.sleep
        self.bus = bus or EventBus()
        self.id: str = session.id
        self.host: Any = host  # the AgentHost that opened this agent (subagents open children through it)
        self.tool_state: dict[str, Any] = {}
        self.spill_dir = Path(self.config.spill_dir) if self.config.spill_dir else _default_spill_dir(self.id)
        self.inbox = Inbox(session, self._notify)
        self.tools = ToolService(self, list(tools or []))
        self.approval = ApprovalService(self)
        self._context_tracker = prompt_mod.RuntimeContextTracker(session)
        self._phase = IDLE
        self._phase_turn = session.last_turn
        self._phase_step = 0
        self._abort = AbortSignal()
        self._wake_requested = False
        self._driver: asyncio.Task | None = None
        self._idle_waiters: list[asyncio.Future] = []
        self._assembly: prompt_mod.Assembly | None = None
        self.requests = RequestRecord(self)  # the request/header and request/context rows it recorded
        self._disposed = False
        self.statuses: list[str] = []
        self.phase_changed_at: int = self.clock()
        # Built-in behaviour (retry, compaction, ...) and user plugins, applied before agent/created so that
        # their listeners see it; user listeners run before the built-in ones (see runtime/plugins.py).
        self.compactor = None
        self.mcp = None  # the built-in mcp plugin's servers (dsh_tui.extensions.mcp.McpManager)
        self.skills = None  # the skills plugin's SkillService
        self.store = None  # the store holding this session, when a host opened it (/fork)
        self.commands = CommandRegistry()  # slash commands (ctx.commands.register)
        self.plugins = plugins if plugins is not None else Plugins()
        if self.plugins.disabled("runtime-context"):
            self.config.runtime_context = False
        if self.plugins.disabled("request-invariant"):
            self.config.check_requests = False
        self.plugins.apply(self)
        if self.bus.has("session/event", self.id):  # a plugin observes every appended event (dsh's session/event)
            self.session.subscribe(lambda _session, event: self._notify("session/event", {"event": event}))
        # Creation: agent/created, then agent/session-start once before any turn (global listeners of a
        # shared bus see these; a listener may inject() context for the first turn).
        self._notify("agent/created", {})
        resumed = getattr(session, "end_seed_seq", None) is not None
        self._notify("agent/session-start", {"source": "resume" if resumed else "startup"})

    # ---- events --------------------------------------------------------------------------------
    def on(self, name: str, listener: Callable[..., Any], mode: str | None = None, *, prepend: bool = False,
           scoped: bool = True, tier: int = USER) -> Callable[[], None]:
        """Register a listener for an agent/capability event; returns ``off()``. ``mode`` is informational.
        ``tier``: ``USER`` listeners run before ``BUILTIN`` ones (the host's own answerers use ``BUILTIN``)."""
        return self.bus.on(name, listener, scope=self.id if scoped else None, prepend=prepend, tier=tier)

    def _notify(self, name: str, payload: dict) -> None:
        self.bus.emit(name, {"agent": self, **payload}, scope=self.id)

    def _emit_error(self, err: BaseException | dict) -> None:
        failure = err if isinstance(err, dict) else to_failure(err)
        self._notify("agent/error", {"turn": self._phase_turn, "step": self._phase_step, "error": failure})

    # ---- status --------------------------------------------------------------------------------
    @property
    def status(self) -> str:
        return RUNNING if self._phase == RUNNING else IDLE

    @property
    def phase(self) -> dict:
        out: dict[str, Any] = {"kind": self._phase, "since": self.phase_changed_at}
        if self._phase == IDLE:
            out["lastTurn"] = self._phase_turn
        else:
            out["wakeRequested"] = self._wake_requested
            if self._phase == RUNNING:
                out["turn"], out["step"] = self._phase_turn, self._phase_step
        return out

    @property
    def signal(self) -> AbortSignal:
        return self._abort

    def _set_phase(self, phase: str) -> None:
        before = self.status
        self._phase = phase
        self.phase_changed_at = self.clock()
        self._notify("agent/phase", {"phase": self.phase})
        if self.status != before:
            self.statuses.append(self.status)
            self._notify("agent/status", {"status": self.status})

    async def wait_idle(self) -> None:
        while self._phase != IDLE or self._driver is not None:
            fut = asyncio.get_running_loop().create_future()
            self._idle_waiters.append(fut)
            await fut

    # ---- input ---------------------------------------------------------------------------------
    def send(self, message: str | list | dict, target: str = NEXT_TURN, wakeup: bool = True) -> dict:
        msg = user_message(message)
        if wakeup and self._phase != IDLE and self._abort.aborted:
            # a waking send after an abort is retargeted to the next turn (as dsh: not one during maintenance,
            # whose latched wake opens a turn that claims the next-step messages first anyway)
            target = NEXT_TURN
        self.inbox.append(target, msg)
        if wakeup:
            self._wake()
        return msg

    def followup(self, message: str | list | dict) -> dict:
        return self.send(message, NEXT_TURN, True)

    def steer(self, message: str | list | dict) -> dict:
        return self.send(message, NEXT_STEP, True)

    def inject(self, message: str | list | dict) -> dict:
        return self.send(message, NEXT_STEP, False)

    def cancel(self, reason: dict | None = None, *, keep_inbox: bool = False) -> None:
        reason = reason or {"kind": "user"}
        if not keep_inbox:
            self._wake_requested = False
            try:
                self.inbox.clear()
            except DshError:
                # Called from inside a session observer: appends are not re-entrant, defer the clear.
                asyncio.get_running_loop().call_soon(self.inbox.clear)
        if self._phase != IDLE:
            self._abort.abort(reason)

    async def dispose(self) -> None:
        self._disposed = True
        self.cancel({"kind": "disposed"})
        await self.wait_idle()
        self._notify("agent/disposed", {})
        await self.plugins.dispose()

    async def run_maintenance(self, job: Callable[[AbortSignal], Awaitable[Any]]) -> Any:
        """Run non-turn work from idle (status stays idle); waking input is latched until it ends."""
        if self._phase != IDLE:
            raise DshError("the agent is busy")
        self._abort = AbortSignal()
        self._set_phase(MAINTENANCE)
        try:
            return await job(self._abort)
        finally:
            self._set_phase(IDLE)
            self._after_idle()

    async def compact_now(self) -> bool:
        """Manual ``/compact``: compaction as maintenance from idle (``turn: null``), by the compactor the
        ``compaction`` built-in provides (``agent.compactor``; none when ``[plugins.compaction] enabled = false``)."""
        compactor = self.compactor
        if compactor is None:
            raise RuntimeError(COMPACTION_OFF)
        return await self.run_maintenance(lambda _signal: compactor.compact(mode="manual", turn=None))

    # ---- the driver ----------------------------------------------------------------------------
    def _wake(self) -> None:
        if self._disposed:
            return
        if self._phase == RUNNING and not self._abort.aborted:
            return
        if self._phase == MAINTENANCE or self._phase == RUNNING:
            if (self._abort.reason or {}).get("kind") != "disposed":
                self._wake_requested = True
            return
        loop = asyncio.get_running_loop()
        self._abort = AbortSignal()
        self._wake_requested = False
        self._phase_step = 0
        self._set_phase(RUNNING)
        first = self._turn_open()
        self._driver = loop.create_task(self._drive(first))

    def _turn_open(self) -> _TurnState:
        """The synchronous prefix of ``turn()``: abort check, ``turn/start``, first claim."""
        st = _TurnState()
        try:
            self._abort.throw_if_aborted()
            turn = self._phase_turn + 1
            try:
                self.session.append("turn/start", {"turn": turn})
            except Exception as err:
                self._emit_error(err)
                raise
            self._phase_turn = turn
            self._phase_step = 0
            st.turn = turn
            st.opened = True
            st.claimed = self.inbox.claim(NEXT_TURN, turn)
        except BaseException as err:  # noqa: BLE001 - handed to the async part
            st.exc = err
        return st

    async def _drive(self, first: _TurnState) -> None:
        try:
            st = first
            while True:
                more = await self._turn_run(st)
                if not more:
                    break
                st = self._turn_open()
        except AbortError:
            pass
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001 - the drain contains every failure
            log.debug("turn failed: %s", err)
        finally:
            self._driver = None
            self._set_phase(IDLE)
            self._after_idle()

    def _after_idle(self) -> None:
        waiters, self._idle_waiters = self._idle_waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)
        if self._wake_requested and self.inbox.pending() and not self._disposed:
            self._wake_requested = False
            self._wake()

    async def _turn_run(self, st: _TurnState) -> bool:
        if not st.opened:
            raise st.exc if st.exc is not None else DshError("turn did not open")
        signal = self._abort
        turn = st.turn
        turn_ends: dict | None = None
        try:
            if st.exc is not None:
                raise st.exc
            target = NEXT_TURN
            claimed: list[dict] | None = st.claimed
            while True:
                signal.throw_if_aborted()
                step = self._phase_step + 1
                decision = await self._pre_step(target, turn, step, claimed)
                claimed = None
                if decision.get("kind") == "reject":
                    turn_ends = {"kind": "blocked"}
                    return False
                messages = list(decision.get("messages") or [])
                if turn_ends is not None and not messages:
                    break
                if self._phase_step == 0 and not messages:
                    turn_ends = {"kind": "completed"}
                    return False
                signal.throw_if_aborted()
                self.session.append("step/start", {"turn": turn, "step": step})
                self._phase_step = step
                try:
                    if self.session.format == 4 and not self.session.surface_nodes:
                        # format v4: the system prompt is the log's first surface node (dsh 0.2's order)
                        self.session.set_system_prompt(
                            prompt_mod.render_system(self._assembly or self.assemble_default()), turn, step)
                    for m in messages:
                        self.session.append("user/message", m, surface_op="append")
                    step_end = await self._step(turn, step)
                    if turn_ends is None or turn_ends.get("kind") != "max-tokens":
                        turn_ends = step_end
                finally:
                    self.session.append("step/end", {"turn": turn, "step": step})
                    if self.bus.has("agent/step-end", self.id):
                        self._notify("agent/step-end", {"turn": turn, "step": step, "signal": signal})
                signal.throw_if_aborted()
                if turn_ends is not None and not self.inbox.next_step:
                    await self.bus.serial("agent/turn-stopping", {"agent": self, "turn": turn, "signal": signal},
                                          scope=self.id)
                    signal.throw_if_aborted()
                if turn_ends is not None and not self.inbox.next_step:
                    break
                target = NEXT_STEP
        except BaseException as err:
            if isinstance(err, asyncio.CancelledError) and not signal.aborted:
                signal.abort({"kind": "disposed"})
            if signal.aborted:
                turn_ends = {"kind": "aborted", "reason": signal.reason}
                raise
            turn_ends = {"kind": "error", "error": to_failure(err)}
            self._emit_error(turn_ends["error"])
            raise
        finally:
            self.session.append("turn/end", {"turn": turn, "reason": turn_ends})
        if self.inbox.pending():
            self._abort = AbortSignal()
            self._wake_requested = False
            self._phase_step = 0
            return True
        return False

    # ---- pre-step ------------------------------------------------------------------------------
    def assemble_default(self) -> prompt_mod.Assembly:
        return prompt_mod.default_assembly(self)

    async def _pre_step(self, target: str, turn: int, step: int, claimed: list[dict] | None) -> dict:
        signal = self._abort
        if claimed is None:
            claimed = self.inbox.claim(target, turn)
        if self.checkpoint is not None:
            await signal.race(self.checkpoint("pre-step"))
        signal.throw_if_aborted()
        assembly = await self.bus.waterfall("system-prompt/assemble", {"agent": self, "signal": signal},
                                            self.assemble_default, scope=self.id)
        signal.throw_if_aborted()
        rendered = prompt_mod.render_sections(assembly.contexts, assembly.variables, "context")
        snapshot = self._context_tracker.project(rendered) if self.config.runtime_context or rendered else None
        self._assembly = assembly
        entered = list(claimed) + ([snapshot] if snapshot is not None else [])
        payload = {"agent": self, "messages": list(claimed), "turn": turn, "step": step, "signal": signal}
        decision = await self.bus.waterfall("agent/pre-step", payload,
                                            lambda: {"kind": "enter", "messages": entered}, scope=self.id)
        signal.throw_if_aborted()
        if decision is None:
            decision = {"kind": "enter", "messages": entered}
        return decision

    # ---- step ----------------------------------------------------------------------------------


    def context_window(self, model: str | None = None) -> int | None:
        if self.config.context_window:
            return self.config.context_window
        if self.provider is None:
            return None
        try:
            return self.provider.resolve_model(model or self.config.model).context_window
        except Exception:  # noqa: BLE001
            return None



    async def _step(self, turn: int, step: int) -> dict | None:
        signal = self._abort
        assembly = self._assembly or self.assemble_default()
        system = prompt_mod.render_system(assembly)
        tools = assembly.tools
        while True:
            signal.throw_if_aborted()
            # Snapshotted before agent/request (dsh's code).
            # An O(1) immutable view equal to derive_messages(),
            # so a step's cost does not grow with the length of the history.
            messages = self.session.messages_view()
            seed = self.requests.seed_config()

            def seeded(s: dict = seed) -> dict:  # this step's seed, bound now
                return s

            config = await self.bus.waterfall("agent/request", {"agent": self, "turn": turn, "step": step,
                                                                "signal": signal}, seeded, scope=self.id)
            if not config or not config.get("provider") or not config.get("model"):
                raise DshError(f"agent {self.id} has no provider/model")
            signal.throw_if_aborted()
            if self.session.format == 4:  # format v4 keeps the system prompt in the log, not in the header
                self.session.set_system_prompt(system, turn, step)
            self.requests.log(config, system, tools)
            request = {"config": config, "system": system or None, "tools": tools, "messages": messages,
                       "sessionId": self.id, "purpose": "turn"}
            if self.checkpoint is not None:
                await signal.race(self.checkpoint("request"))
            signal.throw_if_aborted()
            asm, seqs = await model_call.stream_attempt(self, request, turn, step, signal)
            kind = asm.finish_kind
            if kind in ("error", "aborted"):
                failure = dict((asm.finish or {}).get("failure") or {"message": "model call failed", "code": UNKNOWN})
                if kind == "aborted" and "code" not in failure:
                    failure["code"] = ABORTED
                payload = {"agent": self, "turn": turn, "step": step, "provider": config["provider"],
                           "failure": failure, "retryPolicy": self._retry_policy(), "signal": signal}
                action = await self.bus.waterfall("agent/request-error", payload, lambda: None, scope=self.id)
                signal.throw_if_aborted()
                if isinstance(action, dict) and action.get("kind") == "retry":
                    continue
                raise FailureError(failure)
            source: dict[str, Any] = {"kind": "model", "provider": config["provider"], "model": config["model"]}
            blocks, replay = asm.assembled()
            if replay is not None:
                source["replayState"] = replay
            renamed = rename_duplicate_call_ids(blocks)
            message = {"id": str(uuid.uuid4()), "role": "assistant", "content": blocks, "source": source}
            data: dict[str, Any] = {"turn": turn, "step": step, "message": message}
            if asm.usage is not None:
                data["usage"] = asm.usage
            self.session.append("assistant/message", data, surface_op="append", source_event_seqs=seqs)
            if kind == "max-tokens":
                return {"kind": "max-tokens"}
            calls = [b for b in blocks if b.get("type") == "tool-call"]
            if not calls:
                return {"kind": "completed"}
            self.tools.duplicate_ids = renamed
            concluded = await Scheduler(self.tools, turn, step, signal).run(calls)
            return {"kind": "completed"} if concluded else None

    def _retry_policy(self) -> Any:
        try:
            return self.provider.retry_policy() if self.provider is not None else None
        except Exception:  # noqa: BLE001
            return None

    def _boundary(self, request: dict, signal: AbortSignal) -> AsyncGenerator[dict, None]:
        """The final adapter boundary (``model_call.boundary``; compaction streams its summary through it)."""
        return model_call.boundary(self, request, signal)




def _default_spill_dir(agent_id: object) -> Path | None:
    """``$TMPDIR/dsh-tui-<uid>/spill/<agent>``: private to this user (``tools.common.private_dir``); None
    (nothing spilled, results cut all the same) when no private directory can be made."""
    try:
        return private_dir() / "spill" / str(agent_id)
    except OSError:
        return None
