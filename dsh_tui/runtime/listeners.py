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

from dsh_tui.llm.redact import redact
from dsh_tui.runtime.bus import WATERFALL
from dsh_tui.session.errors import DshError

DEFAULT_TIMEOUT_MS = 60_000


class PluginListenerError(DshError):
    """A plugin's listener raised (an ordinary exception, ``SystemExit`` or ``KeyboardInterrupt``) or did not
    return in time: the message names the plugin and the event."""


def _raised(plugin_id: str, event: str, err: BaseException) -> PluginListenerError:
    detail = redact(f"{type(err).__name__}: {err}") if str(err) else type(err).__name__
    return PluginListenerError(f"plugin {plugin_id}: listener for {event} raised {detail}")


def _named(plugin_id: str, event: str, err: Exception) -> PluginListenerError | None:
    """An ordinary exception a listener raised, as an error naming the plugin and the event; None for what
    must pass unchanged: dsh-tui's own errors (an abort, a tool error, a plugin's deliberate DshError) and
    whatever the rest of a waterfall chain raised through the listener's ``next()``."""
    from dsh_tui.runtime.signal import AbortError
    from dsh_tui.tools.base import ToolError

    if isinstance(err, (DshError, AbortError, ToolError)) or getattr(err, "_dsh_from_next", False):
        return None
    return _raised(plugin_id, event, err)


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
        except Exception as err:  # noqa: BLE001 - re-raised, named (outside this handler: no chained context)
            named = _named(plugin_id, event, err)
            if named is None:
                raise
        raise named

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
            except Exception as err:  # noqa: BLE001 - re-raised, named
                named = _named(plugin_id, event, err)
                if named is None:
                    raise
                out = None
            else:
                return bounded(out) if isawaitable(out) else out
            raise named

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
            except Exception as err:  # the rest of the chain failed: not this plugin's error
                err._dsh_from_next = True  # type: ignore[attr-defined]
                raise
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
            except Exception as err:  # noqa: BLE001 - re-raised, named
                named = _named(plugin_id, event, err)
                if named is None:
                    raise
            raise named

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
