"""A user plugin's listeners under guard (``Context.on`` wraps each; built-in listeners are not wrapped).

- ``SystemExit`` or ``KeyboardInterrupt`` raised by a listener (or by the coroutine it returns) becomes a
  ``PluginListenerError`` naming the plugin and the event: it is contained like any other listener error
  (``emit``: logged; the other modes: the turn's error), never the end of the process, never "Task
  exception was never retrieved".
- An async listener gets ``listener_timeout_ms`` (``[plugins.<id>] listener_timeout_ms``, 60,000 by
  default) to finish; a waterfall listener's own time excludes the time spent in ``next()`` (the rest of
  the chain: the model's stream, the tool's body). Over it, the listener is cancelled and fails with
  ``plugin <id>: listener for <event> did not return within N ms (listener_timeout_ms)``.

A plain (synchronous) listener that never returns blocks the event loop and cannot be bounded from inside
it; nor can a coroutine that swallows its cancellation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from inspect import isawaitable
from typing import Any

from dsh_tui.runtime.bus import WATERFALL
from dsh_tui.session.errors import DshError

DEFAULT_TIMEOUT_MS = 60_000


class PluginListenerError(DshError):
    """A plugin's listener raised ``SystemExit``/``KeyboardInterrupt`` or did not return in time."""


def _raised(plugin_id: str, event: str, err: BaseException) -> PluginListenerError:
    detail = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    return PluginListenerError(f"plugin {plugin_id}: listener for {event} raised {detail}")


def _timed_out(plugin_id: str, event: str, timeout_ms: float) -> PluginListenerError:
    return PluginListenerError(f"plugin {plugin_id}: listener for {event} did not return within "
                               f"{timeout_ms:g} ms (listener_timeout_ms)")


def guard(plugin_id: str, event: str, fn: Callable[..., Any], mode: str, timeout_ms: float) -> Callable[..., Any]:
    """``fn`` as a listener of ``event`` (dispatch ``mode``) that cannot end the process or hang the turn."""
    timeout = timeout_ms / 1000

    async def contained(aw: Awaitable[Any]) -> Any:
        try:
            return await aw
        except (SystemExit, KeyboardInterrupt) as err:
            raise _raised(plugin_id, event, err) from None

    async def bounded(aw: Awaitable[Any]) -> Any:
        task = asyncio.ensure_future(contained(aw))
        try:
            done, _ = await asyncio.wait({task}, timeout=timeout)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not done:
            task.cancel()
            raise _timed_out(plugin_id, event, timeout_ms)
        return task.result()

    if mode != WATERFALL:
        def listener(payload: Any) -> Any:
            try:
                out = fn(payload)
            except (SystemExit, KeyboardInterrupt) as err:
                raise _raised(plugin_id, event, err) from None
            return bounded(out) if isawaitable(out) else out

        return listener

    async def waterfall(payload: Any, nxt: Callable[[], Any]) -> Any:
        loop = asyncio.get_running_loop()
        own = [0.0]  # time spent in the listener itself, outside next()
        since = [loop.time()]
        inside = [0]

        async def timed_next() -> Any:
            if not inside[0]:
                own[0] += loop.time() - since[0]
            inside[0] += 1
            try:
                return await nxt()
            finally:
                inside[0] -= 1
                if not inside[0]:
                    since[0] = loop.time()

        async def body() -> Any:
            try:
                out = fn(payload, timed_next)
                if isawaitable(out):
                    out = await out
                return out
            except (SystemExit, KeyboardInterrupt) as err:
                raise _raised(plugin_id, event, err) from None

        task = asyncio.ensure_future(body())
        try:
            while True:
                used = own[0] + (0.0 if inside[0] else loop.time() - since[0])
                done, _ = await asyncio.wait({task}, timeout=timeout if inside[0] else max(timeout - used, 0.0))
                if done:
                    return task.result()
                if not inside[0] and own[0] + loop.time() - since[0] >= timeout:
                    task.cancel()
                    raise _timed_out(plugin_id, event, timeout_ms)
        except asyncio.CancelledError:
            task.cancel()
            raise

    return waterfall
