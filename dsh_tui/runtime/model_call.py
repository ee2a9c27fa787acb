"""A step's model call (docs/runtime.md, "Turns and steps: the driver"): ``stream_attempt`` streams one
attempt into the log (``assistant/chunk`` rows, an interrupted ``assistant/message`` on abort) through
``boundary``, the final adapter boundary where any provider failure becomes one terminal finish chunk, and
``final_stream``, the innermost ``llm/stream`` step that hands the (checked, frozen) request to the provider."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from dsh_tui.llm.protocol import ABORTED, UNKNOWN, LlmError
from dsh_tui.runtime.assembler import BlockAssembler
from dsh_tui.runtime.failures import RequestInvariantError, error_chain
from dsh_tui.runtime.signal import AbortError, AbortSignal
from dsh_tui.session.surface import FrozenDict, FrozenList, MessagesView, freeze

if TYPE_CHECKING:
    from dsh_tui.runtime.agent import Agent


async def boundary(agent: Agent, request: dict, signal: AbortSignal) -> AsyncGenerator[dict, None]:
    """The final adapter boundary: any provider failure becomes one terminal finish chunk."""
    try:
        if agent.provider is None:
            raise LlmError("no provider is configured", "NO_ADAPTER")
        payload = {"agent": agent, "request": request}
        if agent.bus.has("llm/stream", agent.id):
            stream = await agent.bus.waterfall("llm/stream", payload, lambda: final_stream(agent, payload),
                                              scope=agent.id)
        else:
            stream = final_stream(agent, payload)
        finished = False
        try:
            async for chunk in stream:
                if finished:  # nothing after the finish chunk reaches the log
                    continue
                yield chunk
                finished = chunk.get("type") == "finish"
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
    except (asyncio.CancelledError, GeneratorExit, RequestInvariantError):
        raise
    except LlmError as err:
        failure = err.failure()
        kind = "aborted" if (signal.aborted or err.code == ABORTED) else "error"
        yield {"type": "finish", "reason": {"kind": kind, "failure": failure}}
    except Exception as err:  # noqa: BLE001
        kind = "aborted" if signal.aborted else "error"
        yield {"type": "finish", "reason": {"kind": kind, "failure": {"message": error_chain(err), "code": UNKNOWN}}}


def final_stream(agent: Agent, payload: dict) -> Any:
    """The innermost ``llm/stream`` step: the request as every listener left it goes to the provider.
    With ``check_requests`` it must equal what the log derives (messages and the latest
    ``request/header``) and is frozen first, so no listener can send the model unrecorded content."""
    request = payload["request"]
    if agent.config.check_requests and request.get("purpose") == "turn":  # not a compaction summary request
        agent.requests.check(request)
        messages = request["messages"]  # a view of the log's (immutable) messages: the list is frozen too
        messages = FrozenList(messages.to_list() if isinstance(messages, MessagesView) else freeze(messages))
        request = payload["request"] = FrozenDict({**freeze({k: v for k, v in request.items()
                                                             if k != "messages"}), "messages": messages})
    provider = agent.provider
    if provider is None:  # (_boundary checked it; an ``llm/stream`` listener may have run since)
        raise LlmError("no provider is configured", "NO_ADAPTER")
    return provider.stream(request)


async def stream_attempt(agent: Agent, request: dict, turn: int, step: int,
                         signal: AbortSignal) -> tuple[BlockAssembler, list[int]]:
    asm = BlockAssembler()
    seqs: list[int] = []
    session = agent.session

    async def consume() -> None:
        agen = boundary(agent, request, signal)
        try:
            async for chunk in agen:
                signal.throw_if_aborted()
                ev = session.append("assistant/chunk", {"turn": turn, "step": step, "chunk": chunk})
                seqs.append(ev["seq"])
                asm.feed(chunk)
        finally:
            await agen.aclose()

    try:
        await signal.race(consume())
        signal.throw_if_aborted()
    except AbortError:
        blocks = asm.interrupted_blocks()
        if blocks:
            source = {"kind": "model", "provider": request["config"]["provider"],
                      "model": request["config"]["model"]}
            message = {"id": str(uuid.uuid4()), "role": "assistant", "content": blocks, "source": source}
            data: dict[str, Any] = {"turn": turn, "step": step, "message": message, "interrupted": True}
            if asm.usage is not None:
                data["usage"] = asm.usage
            session.append("assistant/message", data, surface_op="append", source_event_seqs=list(seqs))
        raise
    return asm, seqs
