"""The tool scheduler (docs/runtime.md, "Scheduler"): one step's tool calls, prepared and finished
strictly in model
order, with the bodies of parallel-safe calls overlapped in a rolling pool of ``max_parallel_tool_calls``
and exclusive calls acting as barriers. The per-call pipeline is ``runtime/tools.py`` (``ToolService``)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from dsh_tui.runtime.signal import AbortSignal
from dsh_tui.runtime.tools import Exec, ToolService, aborted_before_dispatch


def tool_result_data(ex: Exec, result: dict, turn: int, step: int) -> dict:
    block: dict[str, Any] = {"type": "tool-result", "toolCallId": ex.ctx.call_id,
                             "content": list(result.get("content") or []), "isError": bool(result.get("isError"))}
    message = {"id": str(uuid.uuid4()), "role": "user", "content": [block],
               "source": {"kind": "tool", "callId": ex.ctx.call_id}}
    data: dict[str, Any] = {"turn": turn, "step": step, "message": message}
    info = (result.get("error") or {}).get("info")
    if info:
        data["error"] = {"name": info["name"], "code": info["code"]}
    if result.get("meta") is not None:
        data["meta"] = result["meta"]
    return data


class Scheduler:
    def __init__(self, service: ToolService, turn: int, step: int, signal: AbortSignal) -> None:
        self.service = service
        self.agent = service.agent
        self.turn = turn
        self.step = step
        self.signal = signal
        self.concluded = False

    def _append_call(self, ex: Exec) -> None:
        ev = self.agent.session.append("tool/call", {"turn": self.turn, "step": self.step,
                                                      "callId": ex.ctx.call_id, "name": ex.ctx.name,
                                                      "arguments": ex.call.get("arguments", "")})
        ex.call_seq = ev["seq"]

    def _commit(self, ex: Exec, result: dict) -> None:
        self.agent.session.append("tool/result", tool_result_data(ex, result, self.turn, self.step),
                                  surface_op="append", source_event_seqs=[ex.call_seq])
        for msg in result.get("additionalContexts") or []:
            self.agent.inbox.append("next-step", msg)
        if result.get("concludesTurn") and not result.get("isError"):
            self.concluded = True

    async def run(self, calls: list[dict]) -> bool:
        """Execute ``calls`` (tool-call blocks in model order). True when a committed success concluded the turn."""
        nxt = 0
        n = len(calls)
        while nxt < n:
            mode = self.service.execution_mode(calls[nxt])
            group = calls[nxt:] if mode == "parallel" else [calls[nxt]]
            consumed, aborted = await self._run_group(group, nxt, mode)
            nxt += consumed
            if aborted:
                for i in range(nxt, n):
                    ex = self.service.make_exec(i, calls[i], self.turn, self.step)
                    self._append_call(ex)
                    self._commit(ex, aborted_before_dispatch())
                return self.concluded
        return self.concluded

    async def _run_group(self, group: list[dict], base: int, mode: str) -> tuple[int, bool]:
        svc = self.service
        signal = self.signal
        cap = max(1, int(self.agent.config.max_parallel_tool_calls or 1))
        execs: list[Exec] = []
        results: dict[int, dict] = {}
        in_flight: dict[asyncio.Future, int] = {}
        committed = 0
        closed = False
        failure: BaseException | None = None

        async def commit_ready() -> None:
            nonlocal committed
            while committed < len(execs) and committed in results:
                ex = execs[committed]
                result = await svc.finish(ex, results[committed], signal)
                self._commit(ex, result)
                committed += 1

        settled: list[asyncio.Future] = []
        wake = asyncio.Event()

        def on_settled(task: asyncio.Future) -> None:
            settled.append(task)
            wake.set()

        async def fill_pool() -> None:
            nonlocal closed
            while not closed and not signal.aborted and len(execs) < len(group) and len(in_flight) < cap:
                i = len(execs)
                call = group[i]
                if i > 0 and (mode != "parallel" or svc.execution_mode(call) != "parallel"):
                    closed = True  # barrier: an exclusive call runs alone after this group drains
                    break
                ex = svc.make_exec(base + i, call, self.turn, self.step)
                execs.append(ex)
                self._append_call(ex)
                await svc.prepare(ex, signal)
                if ex.final is not None:
                    results[i] = ex.final
                else:
                    task = asyncio.ensure_future(svc.dispatch(ex, signal))
                    in_flight[task] = i
                    task.add_done_callback(on_settled)
                await commit_ready()

        try:
            await fill_pool()
            while in_flight:
                if not settled:
                    wake.clear()
                    await wake.wait()
                batch, settled[:] = list(settled), []
                for task in batch:
                    i = in_flight.pop(task)
                    results[i] = task.result()
                await commit_ready()
                await fill_pool()
            await commit_ready()
        except BaseException as err:
            failure = err
            if in_flight:
                await asyncio.gather(*in_flight, return_exceptions=True)
            raise
        finally:
            if failure is None and in_flight:  # pragma: no cover - defensive
                await asyncio.gather(*in_flight, return_exceptions=True)
        return len(execs), signal.aborted
