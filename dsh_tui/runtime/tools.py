"""The tool service: pipeline, result format and spill
(docs/runtime.md, "Tool pipeline, result format and spill"); the scheduler is
``runtime/scheduler.py``.

Per call: ``prepare`` (pre-execute waterfall -> approval -> guards) -> ``dispatch`` (``tools/execute``
waterfall around argument validation, the body and its timeout) -> ``finish`` (``tools/post-execute``
waterfall, spill, cancellation override, ``tools/result`` emit). The scheduler runs prepares and
finishes strictly in model order and overlaps only the bodies of parallel-safe calls, with a rolling
pool of ``max_parallel_tool_calls`` and exclusive calls acting as barriers.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsh_tui.runtime import approval as approval_mod
from dsh_tui.runtime.permissions import rejection_text
from dsh_tui.runtime.schema import check_schema, violations
from dsh_tui.runtime.signal import AbortError, AbortSignal
from dsh_tui.runtime.tool_calls import (
    DUPLICATE_CALL_ID_INFO,
    TOOL_NAME,
    TooDeepArguments,
    aborted_before_dispatch,
    aborted_result,
    error_result,
    parse_arguments,
)
from dsh_tui.session.jsonutil import MAX_ARGUMENT_DEPTH, check_lossless
from dsh_tui.tools.base import ToolContext, ToolDefinition, ToolError, ToolSchema
from dsh_tui.tools.common import SPILL_RETRIEVAL_HINT as SPILL_HINT
from dsh_tui.tools.common import save_spill

if TYPE_CHECKING:
    from dsh_tui.runtime.agent import Agent

RELAY_SOURCE = {"kind": "plugin", "plugin": "tool", "form": "relay"}
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass
class RunToolContext(ToolContext):
    """``ToolContext`` plus the loop-facing capabilities of dsh's ``exec``."""

    arguments: Any = None
    turn: int = 0
    step: int = 0
    agent: Any = None
    deferred: list[dict] = field(default_factory=list)
    concludes: bool = False

    def defer_context(self, message: dict | str) -> None:
        """Queue a user message for the next step boundary (attached as ``additionalContexts``).

        A message dict without ``id``/``source`` gets a fresh id and the relay source (the inbox refuses
        an id-less message, which would otherwise end the turn with an error after the tool succeeded)."""
        if isinstance(message, str):
            message = {"id": str(uuid.uuid4()), "role": "user", "content": [{"type": "text", "text": message}],
                       "source": dict(RELAY_SOURCE)}
        elif not message.get("id") or not message.get("source"):
            rest = {k: v for k, v in message.items() if k not in ("id", "source")}
            message = {"id": message.get("id") or str(uuid.uuid4()), **rest,
                       "source": message.get("source") or dict(RELAY_SOURCE)}
        self.deferred.append(message)

    def conclude_turn(self) -> None:
        self.concludes = True


@dataclass
class Exec:
    index: int
    call: dict
    args: Any
    tool: ToolDefinition | None
    ctx: RunToolContext
    final: dict | None = None  # set when prepare already decided the outcome
    skip_post: bool = False
    body_invoked: bool = False
    result: dict | None = None
    call_seq: int = -1


class ToolService:
    def __init__(self, agent: Agent, tools: list[ToolDefinition]) -> None:
        self.agent = agent
        self.tools: dict[str, ToolDefinition] = {}
        self.guards: list[Any] = []
        self.duplicate_ids: dict[str, str] = {}  # this step's renamed duplicate call ids -> the original id
        self._paths_key: tuple | None = None
        self._paths: tuple[Path, Path] = (Path("."), Path("."))
        for t in tools:
            self.register(t)

    # ---- registry ----------------------------------------------------------------------------
    def register(self, tool: ToolDefinition) -> None:
        name = tool.name
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            # what OpenAI-compatible providers accept: a bad name would fail every request of the session
            raise ValueError(f"tool name {name!r} is not valid: use 1-64 letters, digits, '_' or '-' "
                             "(what model providers accept)")
        if tool.name in self.tools:
            raise ValueError(f'duplicate tool "{tool.name}"')
        if tool.name == "run_code":
            raise ValueError('tool name "run_code" is reserved')
        check_schema(tool.parameters, f"{tool.name}.parameters")
        self.tools[tool.name] = tool

    def schemas(self) -> list[ToolSchema]:
        order = self.agent.config.tool_order
        names = sorted(self.tools)
        if order:
            listed = [n for n in order if n != "*"]
            for n in listed:
                if n not in self.tools:
                    raise ValueError(f'tool order lists unregistered tool "{n}"')
            rest = [n for n in names if n not in listed]
            if "*" in order:
                i = order.index("*")
                names = [n for n in order[:i]] + rest + [n for n in order[i + 1 :]]
            else:
                names = listed + rest
        return [self.tools[n].schema() for n in names]

    def tool_of(self, call: dict) -> ToolDefinition | None:
        """The registered tool a model's call names (None: no such tool, or no name)."""
        name = call.get("name")
        return self.tools.get(name) if isinstance(name, str) else None

    def execution_mode(self, call: dict) -> str:
        tool = self.tool_of(call)
        if tool is None or tool.is_concurrency_safe is None:
            return "exclusive"
        args = parse_arguments(call.get("arguments", ""))
        if not isinstance(args, dict) or violations(tool.parameters, args):
            return "exclusive"
        try:
            return "parallel" if tool.is_concurrency_safe(args) is True else "exclusive"
        except Exception:  # noqa: BLE001 - fail closed
            return "exclusive"

    # ---- pipeline ------------------------------------------------------------------------------
    def make_exec(self, index: int, call: dict, turn: int, step: int) -> Exec:
        agent = self.agent
        cfg = agent.config
        args = parse_arguments(call.get("arguments", ""))
        key = (cfg.cwd, cfg.workspace)
        if key != self._paths_key:
            self._paths_key = key
            self._paths = (Path(cfg.resolved_cwd()), Path(cfg.workspace or cfg.resolved_cwd()))
        cwd, workspace = self._paths
        ctx = RunToolContext(
            call_id=call.get("id", ""),
            name=call.get("name", ""),
            cwd=cwd,
            workspace=workspace,
            allow_outside=cfg.preset == "full-access",
            sandbox_mode=approval_mod.DSH_MODES.get(cfg.preset),
            spill_dir=agent.spill_dir,
            state=agent.tool_state,
            emit_event=lambda t, d: agent.session.append(t, d),
            arguments=args,
            turn=turn,
            step=step,
            agent=agent,
        )
        ex = Exec(index=index, call=call, args=args, tool=self.tool_of(call), ctx=ctx)
        original = self.duplicate_ids.get(ctx.call_id)
        if original is not None:
            ex.final = error_result(f'duplicate tool call id "{original}" in one response '
                                    f'(renamed "{ctx.call_id}"; not run)', dict(DUPLICATE_CALL_ID_INFO))
            ex.skip_post = True
        return ex

    def _payload(self, ex: Exec, signal: AbortSignal, **extra: Any) -> dict:
        return {"agent": self.agent, "callId": ex.ctx.call_id, "name": ex.ctx.name, "arguments": ex.args,
                "exec": ex, "signal": signal, **extra}

    async def prepare(self, ex: Exec, signal: AbortSignal) -> None:
        agent = self.agent
        if ex.final is not None:  # decided when the call was made (a duplicate call id)
            return
        if signal.aborted:
            ex.final, ex.skip_post = aborted_before_dispatch(), True
            return
        try:
            tool = ex.tool
            cfg = agent.config

            def preset_default() -> dict:
                if tool is None:
                    return {"kind": "allow"}
                return approval_mod.decide_preset(cfg.preset, tool.access, ex.args, ex.ctx.cwd,
                                                  ex.ctx.workspace, tool.name, sandboxed=tool.sandboxed)

            if agent.bus.has("tools/pre-execute", agent.id):
                decision = await agent.bus.waterfall("tools/pre-execute", self._payload(ex, signal), preset_default,
                                                     scope=agent.id)
            else:
                decision = preset_default()
            kind = (decision or {}).get("kind", "allow")
            if kind == "deny":
                ex.final = error_result(decision.get("reason") or f'tool "{ex.ctx.name}" was denied')
                ex.final["error"].pop("info", None)
                return
            if kind == "ask":
                escalation = decision.get("escalation")
                answer = "allowed-once" if escalation and cfg.allow_escalation else None
                try:
                    outcome = await agent.approval.request(tool_name=ex.ctx.name, call_id=ex.ctx.call_id,
                                                           reason=decision.get("reason"), signal=signal,
                                                           answer=answer)
                except AbortError:
                    ex.final, ex.skip_post = aborted_before_dispatch(), True
                    return
                if outcome != "allowed-once":
                    if signal.aborted:
                        ex.final, ex.skip_post = aborted_before_dispatch(), True
                    else:
                        reason = agent.approval.reasons.pop(ex.ctx.call_id, None)
                        problem = agent.approval.problems.pop(ex.ctx.call_id, None)
                        if escalation:
                            from dsh_tui.tools.sandbox import escalation_outcome_text

                            text = escalation_outcome_text(outcome, str(escalation))
                            if outcome == "rejected" and reason and reason.strip():
                                text += ". The user's reason: " + " ".join(reason.split())
                        elif outcome == "rejected":
                            text = rejection_text(ex.ctx.name, reason)
                        elif outcome == "unavailable" and problem:
                            text = f'tool "{ex.ctx.name}" requires approval, but {problem}'
                        else:
                            text = approval_mod.outcome_text(outcome, ex.ctx.name)
                        ex.final = error_result(text)
                    return
                if escalation:  # exactly this call runs in the wider mode it asked for
                    ex.ctx.sandbox_mode = str(escalation)
                    ex.ctx.allow_outside = escalation == "danger-full-access"
                else:
                    ex.ctx.allow_outside = True
            for guard in self.guards:
                reason = guard(ex)
                if isinstance(reason, str) and reason:
                    ex.final = error_result(reason)
                    return
        except AbortError:
            ex.final, ex.skip_post = aborted_before_dispatch(), True
            return
        except Exception as err:  # noqa: BLE001 - any pipeline throw becomes a result
            ex.final, ex.skip_post = self._normalize(err), True
            return
        if signal.aborted:
            ex.final, ex.skip_post = aborted_before_dispatch(), True

    def _normalize(self, err: BaseException) -> dict:
        if isinstance(err, ToolError):
            info = {"name": err.name, "code": err.code} if err.code else None
            return error_result(err.message, info)
        if isinstance(err, AbortError):
            return aborted_result()
        code = getattr(err, "code", None)
        if isinstance(code, str) and code:
            return error_result(str(err), {"name": getattr(err, "name", type(err).__name__), "code": code})
        return error_result(str(err) if str(err) else type(err).__name__)

    async def _run_body(self, ex: Exec, signal: AbortSignal) -> dict:
        tool = ex.tool
        if tool is None:
            return error_result(f'unknown tool "{ex.ctx.name}"', {"name": "ToolNotFoundError", "code": "UNKNOWN_TOOL"})
        if isinstance(ex.args, TooDeepArguments):
            return error_result(f'invalid arguments: "arguments" nested more than {MAX_ARGUMENT_DEPTH} levels deep',
                                {"name": "ToolArgsError", "code": "INVALID_ARGS"})
        bad = violations(tool.parameters, ex.args)
        if bad:
            return error_result("invalid arguments: " + "; ".join(bad),
                                {"name": "ToolArgsError", "code": "INVALID_ARGS"})
        ex.body_invoked = True
        ctx = ex.ctx
        task = asyncio.ensure_future(tool.execute(ex.args, ctx))
        grace = self.agent.config.tool_grace_s
        timers: list[asyncio.TimerHandle] = []

        def on_abort(_reason: Any = None) -> None:
            # The body sees ``cancelled`` and should stop; one that ignores it is cancelled after the grace.
            ctx.cancelled.set()
            timers.append(asyncio.get_running_loop().call_later(grace, task.cancel))

        off = signal.on_abort(on_abort)
        if signal.aborted:
            on_abort()
        timeout = tool.timeout_ms / 1000 if tool.timeout_ms else None
        timed_out = False
        try:
            done, _ = await asyncio.wait({task}, timeout=timeout)
            if not done:
                timed_out = True
                ctx.cancelled.set()
                done, _ = await asyncio.wait({task}, timeout=grace)
                if not done:
                    task.cancel()
                    await asyncio.wait({task})
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            off()
            for timer in timers:
                timer.cancel()
            # whatever the body ends with (an abort error after a timeout, say) is taken here: never
            # "Task exception was never retrieved" and a traceback on the user's stderr
            task.add_done_callback(_retrieve)
        if timed_out:
            return error_result(f"tool call timed out after {tool.timeout_ms}ms",
                                {"name": "ToolTimeoutError", "code": "TOOL_TIMEOUT"})
        if task.cancelled():
            return aborted_result()
        err = task.exception()
        if err is not None:
            return self._normalize(err)
        value = task.result()
        try:
            content = tool.content(ex.args, value)
            if not isinstance(content, list) or not all(isinstance(b, dict) and b.get("type") for b in content):
                raise ValueError('"value" must render to a list of content blocks')
            check_lossless(content, "value")
            result: dict[str, Any] = {"isError": False, "value": value, "content": list(content)}
            if tool.presentation_meta is not None:
                meta = tool.presentation_meta(ex.args, value)
                if meta is not None:
                    check_lossless(meta, "value")
                    result["meta"] = meta
        except Exception as render_err:  # noqa: BLE001
            return error_result(f'tool "{tool.name}" returned invalid output: {render_err}',
                                {"name": "ToolOutputError", "code": "INVALID_TOOL_OUTPUT"})
        if signal.aborted:
            return aborted_result()
        return result

    async def dispatch(self, ex: Exec, signal: AbortSignal) -> dict:
        agent = self.agent
        try:
            if agent.checkpoint is not None:
                try:
                    await signal.race(agent.checkpoint("tool"))
                except AbortError:
                    ex.skip_post = True
                    return aborted_before_dispatch()
            if agent.bus.has("tools/execute", agent.id):
                result = await agent.bus.waterfall("tools/execute", self._payload(ex, signal),
                                                   lambda: self._run_body(ex, signal), scope=agent.id)
            else:
                result = await self._run_body(ex, signal)
        except AbortError:
            return aborted_result() if ex.body_invoked else aborted_before_dispatch()
        except Exception as err:  # noqa: BLE001
            ex.skip_post = True
            return self._normalize(err)
        if ex.ctx.deferred:
            result = {**result, "additionalContexts": list(ex.ctx.deferred)}
        if ex.ctx.concludes and not result.get("isError"):
            result = {**result, "concludesTurn": True}
        return result

    async def finish(self, ex: Exec, result: dict, signal: AbortSignal) -> dict:
        agent = self.agent
        if not ex.skip_post and not agent.bus.has("tools/post-execute", agent.id):
            result = self._spill(ex, result)
        elif not ex.skip_post:
            try:
                decision = await agent.bus.waterfall(
                    "tools/post-execute", self._payload(ex, signal, result=result), lambda: {"kind": "accept"},
                    scope=agent.id)
                decision = decision or {"kind": "accept"}
                if decision.get("kind") == "block":
                    blocked: dict[str, Any] = {"isError": True, "error": {"message": "blocked by post-execute"},
                                               "content": list(decision.get("feedback") or [])}
                    if decision.get("additionalContexts"):
                        blocked["additionalContexts"] = list(decision["additionalContexts"])
                    result = blocked
                else:
                    if "content" in decision:
                        result = {**result, "content": list(decision["content"])}
                    if decision.get("additionalContexts"):
                        result = {**result, "additionalContexts":
                                  list(result.get("additionalContexts") or []) + list(decision["additionalContexts"])}
                    result = self._spill(ex, result)
            except Exception as err:  # noqa: BLE001
                result = self._normalize(err)
        if signal.aborted and not result.get("isError"):
            contexts = result.get("additionalContexts")
            result = aborted_result() if ex.body_invoked else aborted_before_dispatch()
            if contexts:
                result["additionalContexts"] = contexts
        if agent.bus.has("tools/result", agent.id):
            agent.bus.emit("tools/result", {"agent": agent, "callId": ex.ctx.call_id, "name": ex.ctx.name,
                                            "arguments": ex.args, "exec": ex, "result": result}, scope=agent.id)
        return result

    def _spill(self, ex: Exec, result: dict) -> dict:
        cap = self.agent.config.max_inline_bytes
        if not cap or result.get("isError") or ex.ctx.name == "read":
            return result
        content = result.get("content") or []
        if not content or any(b.get("type") != "text" for b in content):
            return result
        text = "".join(b.get("text", "") for b in content)
        data = _utf8(text)
        if len(data) <= cap:
            return result
        path = save_spill(ex.ctx, f"{ex.ctx.name}.txt", data)
        # not saved (no private directory, a full disk): the result is cut all the same, and says so
        where = f"Full formatted result stored at: {path}. {SPILL_HINT}" if path is not None \
            else "The complete result could not be saved."
        omitted_guess = len(data)
        for _ in range(3):  # the footer length depends on the omitted count; converge
            footer = f"\n\n(Omitted {omitted_guess} bytes. {where})"
            budget = max(0, cap - len(footer.encode("utf-8")))
            omitted = len(data) - budget
            if omitted == omitted_guess:
                break
            omitted_guess = omitted
        head_n = budget // 2
        tail_n = budget - head_n
        head = data[:head_n].decode("utf-8", "ignore")
        tail = data[len(data) - tail_n :].decode("utf-8", "ignore") if tail_n else ""
        kept = len(head.encode("utf-8")) + len(tail.encode("utf-8"))
        footer = f"\n\n(Omitted {len(data) - kept} bytes. {where})"
        return {**result, "content": [{"type": "text", "text": head + tail + footer}]}


def _retrieve(task: asyncio.Future) -> None:
    if not task.cancelled():
        task.exception()


def _utf8(text: str) -> bytes:
    """``Buffer.from(text)``: UTF-8 with each lone surrogate (a non-UTF-8 file name, say) as U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")
